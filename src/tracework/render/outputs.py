"""What ran, made reproducible and bounded: nbconvert preprocessors for an executed notebook.

papermill and nbclient record timings, machine paths and random ids in what they run,
and a cell may print megabytes.  :func:`what_ran` applies two preprocessors, in order,
to every executed notebook a run keeps (a failed run's too), so that the same inputs
give the same bytes and each output stays within its cap:

1. :class:`StripVolatilePreprocessor` drops what differs from one run to the next;
2. :class:`CapOutputsPreprocessor` keeps each output to about ``output_cap`` bytes.

Both are nbconvert preprocessors (``preprocess(nb, resources)``, configurable traits),
as ``ClearOutputPreprocessor`` is for the outputs a source notebook was saved with
(:func:`tracework.render.notebooks.without_outputs`); an exporter can list them among its
``preprocessors``.  How text and HTML are cut is :mod:`tracework.render.cuts`.

Importing this module imports nbconvert, and so nbformat: import it after
:func:`~tracework.render.notebooks.load_nbformat`, as :mod:`.execution` does.
"""

from __future__ import annotations

from typing import Any

import nbformat
from nbconvert.preprocessors import Preprocessor
from traitlets import Integer, List, Unicode

from tracework.readers import Table
from tracework.render.cuts import SETTING, amount, cut_html, cut_text, utf8_size
from tracework.workspace import RENDER_DEFAULTS

#: Output kinds that are text, whose head and tail a reader can be shown; other kinds
#: (images, SVG, LaTeX, scripts) cannot be cut without breaking them.
_CUTTABLE = ("text/plain", "text/markdown")


#: nbconvert's resources: the dictionary its preprocessors and exporters hand along, its
#: keys theirs (nbconvert types it no further).
Resources = dict[str, Any]


class _Preprocessor(Preprocessor):
    """nbconvert's ``Preprocessor``, typed where tracework calls it."""

    def __init__(self, **kw: Any) -> None:
        Preprocessor.__init__(self, **kw)

    def preprocess(
        self, nb: nbformat.NotebookNode, resources: Resources
    ) -> tuple[nbformat.NotebookNode, Resources]:
        done: tuple[nbformat.NotebookNode, Resources] = Preprocessor.preprocess(self, nb, resources)
        return done


class StripVolatilePreprocessor(_Preprocessor):
    """Drop the timings, machine paths and random ids that papermill and nbclient record:
    papermill's notebook metadata but the parameters, each cell's ``volatile_cell_keys``,
    and the random id papermill gives the cell it injects (``injected-parameters``)."""

    volatile_cell_keys = List(
        Unicode(),
        default_value=["execution", "papermill"],
        help="Cell metadata keys dropped from an executed notebook.",
    ).tag(config=True)

    def preprocess(
        self, nb: nbformat.NotebookNode, resources: Resources
    ) -> tuple[nbformat.NotebookNode, Resources]:
        papermill = nb.metadata.get("papermill", {})
        nb.metadata["papermill"] = {"parameters": papermill.get("parameters", {})}
        return super().preprocess(nb, resources)

    def preprocess_cell(
        self, cell: nbformat.NotebookNode, resources: Resources, index: int
    ) -> tuple[nbformat.NotebookNode, Resources]:
        for key in self.volatile_cell_keys:
            cell.metadata.pop(key, None)
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell["id"] = "injected-parameters"  # papermill gives it a random id
        return cell, resources


class CapOutputsPreprocessor(_Preprocessor):
    """Keep each cell output to about ``output_cap`` bytes.

    A cell that prints 27 MB made a 27 MB page that took a second of CPU per megabyte
    and hundreds of megabytes to export.  Now the report, the kept ``report.ipynb`` and
    ``records.json`` stay bounded whatever a cell shows:

    * a run of one cell's stream output (stdout or stderr, shown as one block) and plain
      text keep their first and last ``output_cap / 2`` bytes, cut at line ends, with a
      line saying how much was cut from the middle (:func:`~.cuts.cut_text`);
    * strings inside JSON output (records.json's data among them) are cut the same way;
    * HTML is cut between tags (:func:`~.cuts.cut_html`); images and other rich output
      over the cap are left out, and their plain-text form says so;
    * error tracebacks are cut line by line.

    A cell with every output within the cap is kept as it is, the very same object; a
    cell with one over it is replaced by a new cell, so the cell given is never changed.
    """

    output_cap = Integer(
        RENDER_DEFAULTS["output_cap"],
        help="Bytes of one cell output kept ([render] output_cap in tracework.toml).",
    ).tag(config=True)

    def preprocess_cell(
        self, cell: nbformat.NotebookNode, resources: Resources, index: int
    ) -> tuple[nbformat.NotebookNode, Resources]:
        outputs = cell.get("outputs")
        if outputs:
            kept = _capped_outputs(outputs, self.output_cap)
            if kept is not outputs:
                cell = type(cell)({**cell, "outputs": kept})
        return cell, resources


def what_ran(nb: nbformat.NotebookNode, cap: int) -> nbformat.NotebookNode:
    """The executed notebook ``nb``, normalised and each output capped to ``cap`` bytes,
    by the preprocessors in order (``nb`` itself: its cells list is updated in place)."""
    resources: Resources = {}
    for preprocessor in (StripVolatilePreprocessor(), CapOutputsPreprocessor(output_cap=cap)):
        nb, resources = preprocessor.preprocess(nb, resources)
    return nb


def capped(nb: nbformat.NotebookNode, cap: int) -> nbformat.NotebookNode:
    """A copy of ``nb`` with each cell output kept to about ``cap`` bytes
    (:class:`CapOutputsPreprocessor`); ``nb`` is not changed, and the copy shares every
    cell that needed no cut."""
    shallow = type(nb)({**nb, "cells": list(nb.cells)})
    kept, _ = CapOutputsPreprocessor(output_cap=cap).preprocess(shallow, {})
    return kept


def _capped_outputs(outputs: list[Any], cap: int) -> list[Any]:
    kept: list[Any] = []
    changed = False
    i = 0
    while i < len(outputs):
        out = outputs[i]
        if out.get("output_type") == "stream":
            end = i + 1
            while (
                end < len(outputs)
                and outputs[end].get("output_type") == "stream"
                and outputs[end].get("name") == out.get("name")
            ):
                end += 1
            texts = [_text(o.get("text", "")) for o in outputs[i:end]]
            if sum(map(utf8_size, texts)) > cap:
                kept.append(type(out)({**out, "text": cut_text("".join(texts), cap)}))
                changed = True
            else:
                kept.extend(outputs[i:end])
            i = end
            continue
        new = _capped_output(out, cap)
        changed = changed or new is not out
        kept.append(new)
        i += 1
    return kept if changed else outputs


def _capped_output(out: Any, cap: int) -> Any:
    if out.get("output_type") == "error":
        fields = {key: out[key] for key in ("evalue", "traceback") if key in out}
        cut = {key: _capped_json(value, cap) for key, value in fields.items()}
        if all(cut[key] is fields[key] for key in fields):
            return out
        return type(out)({**out, **cut})
    data = out.get("data")
    if not isinstance(data, dict):
        return out
    kept: Table = {}  # a MIME bundle: nbformat's JSON
    left_out: list[str] = []
    for mime, value in data.items():
        if mime == "application/json" or mime.endswith("+json"):
            kept[mime] = _capped_json(value, cap)
            continue
        text = _text(value)
        size = utf8_size(text)
        if size <= cap:
            kept[mime] = value
        elif mime in _CUTTABLE:
            kept[mime] = cut_text(text, cap)
        elif mime == "text/html":
            kept[mime] = cut_html(text, cap)
        else:
            left_out.append(
                f"[tracework left out this output's {mime} form, {amount(size)}: "
                f"over the cap of {amount(cap)} per output ({SETTING})]"
            )
    if left_out:
        plain = kept.get("text/plain")
        kept["text/plain"] = "\n".join(left_out) + (f"\n{_text(plain)}" if plain else "")
    if not left_out and all(kept[m] is data[m] for m in data):
        return out
    return type(out)({**out, "data": type(data)(kept)})


def _capped_json(value: Any, cap: int) -> Any:
    """``value`` with every string over ``cap`` cut; the same object when none is."""
    if isinstance(value, str):
        return cut_text(value, cap) if utf8_size(value) > cap else value
    if isinstance(value, dict):
        items = {key: _capped_json(item, cap) for key, item in value.items()}
        same = all(items[key] is value[key] for key in value)
        return value if same else type(value)(items)
    if isinstance(value, list):
        elements = [_capped_json(item, cap) for item in value]
        return value if all(a is b for a, b in zip(elements, value, strict=True)) else elements
    return value


def _text(value: Any) -> str:
    """Notebook text: a string, or (as files store it) a list of lines."""
    return value if isinstance(value, str) else "".join(value)
