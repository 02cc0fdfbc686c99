"""The analyst's notebook before it runs: read, parsed, checked, and cleared in a copy.

Everything here happens before a kernel starts, so a notebook that cannot run is one
clear message (exit 2): there is no notebook, it is not one, or no cell is tagged
``parameters`` (DESIGN §6.5).  Outputs it was saved with are not refused (JupyterLab
saves them) but cleared in the run's own copy; the analyst's file is never written.
"""

from __future__ import annotations

import copy
import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tracework.errors import TraceworkError
from tracework.readers import DataError, load_json

if TYPE_CHECKING:  # imported by load_nbformat, the first time a notebook is read
    import nbformat


#: The optional packages jsonschema's format checkers import when they are installed
#: (JupyterLab's event schemas ask for them): ``rfc3987_syntax`` compiles a grammar,
#: ``isoduration`` loads arrow and dateutil; no notebook reader checks a format.
FORMAT_CHECKERS = (
    "rfc3987_syntax",
    "rfc3987",
    "isoduration",
    "fqdn",
    "idna",
    "jsonpointer",
    "rfc3339_validator",
    "rfc3986_validator",
    "uri_template",
    "webcolors",
)


def load_nbformat() -> None:
    """Import nbformat, keeping jsonschema from building a grammar no notebook needs.

    nbformat validates notebooks with jsonschema.  When the optional ``rfc3987_syntax``
    package is installed (JupyterLab's event schemas ask for it), importing jsonschema
    compiles a Lark Earley parser for its ``iri`` format checks: a second or more of
    CPU in every process that reads a notebook, and the other checkers' packages
    another tenth (:data:`FORMAT_CHECKERS`).  nbformat, papermill, nbclient and
    nbconvert never check formats, so jsonschema is imported with those packages
    hidden; each stays importable for anything else in the process.
    (So the render imports nbformat, nbconvert and papermill only after this has run:
    :mod:`.outputs`, the one module that imports them at its top, is imported by
    :mod:`.execution` once it has.)
    """
    if "jsonschema" not in sys.modules:
        hidden = [name for name in FORMAT_CHECKERS if name not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]  # its import fails
        try:
            importlib.import_module("jsonschema")
        finally:
            for name in hidden:
                del sys.modules[name]
    import nbformat  # noqa: F401


def read_notebook_bytes(path: Path) -> bytes:
    """A notebook file's bytes, or a clear error when there is none."""
    if not path.is_file():
        raise TraceworkError(
            f"no notebook at {path}",
            hint="create one with `tracework new NAME --subject S --commit C`",
        )
    return path.read_bytes()


def parse_notebook(raw: bytes, path: Path) -> nbformat.NotebookNode:
    """The notebook in ``raw`` (read from ``path``), or one clear error naming the file
    (a notebook nested past the readers' bound says so, as every file tracework reads)."""
    try:
        load_json(raw)
    except DataError as exc:
        raise TraceworkError(f"{path}: not a readable notebook ({exc})") from None
    try:
        load_nbformat()
        import nbformat  # here, after load_nbformat (see there)

        nb: nbformat.NotebookNode = nbformat.reads(raw.decode("utf-8"), as_version=4)
    except Exception as exc:  # nbformat raises several unrelated types
        raise TraceworkError(f"{path}: not a readable notebook ({exc})") from None
    return with_cell_ids(nb)


def with_cell_ids(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Give every cell an id, derived from its place (``cell-3``), as nbformat 4.5 wants.

    A notebook without ids (nbformat < 4.5, and what many generators write) would get
    random ones when upgraded on the way to the kernel, and two renders would differ in
    their ``cell-id`` attributes.  Ids a cell has are kept; a derived one never repeats
    another."""
    taken = {cell.get("id") for cell in nb.cells if cell.get("id")}
    for index, cell in enumerate(nb.cells):
        if not cell.get("id"):
            candidate, n = f"cell-{index}", 1
            while candidate in taken:
                n += 1
                candidate = f"cell-{index}-{n}"
            cell["id"] = candidate
            taken.add(candidate)
    if (nb.nbformat, nb.nbformat_minor) < (4, 5):
        nb.nbformat_minor = 5
    return nb


def notebook_problems(nb: nbformat.NotebookNode) -> list[str]:
    """A source notebook has a cell tagged ``parameters`` (outputs it carries are cleared
    by :func:`without_outputs`, not refused: JupyterLab saves them)."""
    tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not tagged:
        return ["no cell is tagged `parameters` (papermill injects parameters after it)"]
    return []


def without_outputs(nb: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, int]:
    """A copy of ``nb`` with every code cell's outputs and execution count cleared, and
    how many cells carried any.  A notebook saved from JupyterLab keeps its outputs; a
    render runs it as if clean, in its own copy, and the analyst's file is never
    written.  nbconvert's ``ClearOutputPreprocessor`` does the clearing, as
    ``jupyter nbconvert --clear-output`` would."""
    dirty = sum(
        1
        for c in nb.cells
        if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    )
    if not dirty:
        return nb, 0
    # nbconvert loads only for a notebook saved with outputs: a quarter second before
    # the kernel starts, which a clean notebook does not pay
    from nbconvert.preprocessors import ClearOutputPreprocessor

    cleared, _ = ClearOutputPreprocessor().preprocess(copy.deepcopy(nb), {})
    return cleared, dirty
