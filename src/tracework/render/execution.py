"""Executing an analyst notebook with papermill, in render mode, at one commit.

Parameters are validated before any kernel starts; the kernel is this environment's
own Python (a ``tracework`` kernelspec written beside it on first use).  The
executed notebook is normalised — papermill's and nbclient's timings and machine
paths are removed — so that the same inputs give the same bytes.
"""

from __future__ import annotations

import asyncio
import copy
import html
import importlib
import json
import logging
import math
import re
import signal
import sys
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracework.errors import ChecksFailed, RenderError, TraceworkError
from tracework.hashing import sha256_hex
from tracework.kernels.spec import ensure_kernelspec
from tracework.kernels.warm import WarmKernel, shutdown
from tracework.logs import swallowed
from tracework.readers import DataError, load_json
from tracework.records.artefacts import RECORDS_MIME

if TYPE_CHECKING:  # nbformat costs a second to import (jsonschema); load it on use
    import nbformat


log = logging.getLogger(__name__)


def load_nbformat() -> None:
    """Import nbformat, keeping jsonschema from building a grammar no notebook needs.

    nbformat validates notebooks with jsonschema.  When the optional ``rfc3987_syntax``
    package is installed (JupyterLab's event schemas ask for it), importing jsonschema
    compiles a Lark Earley parser for its ``iri`` format checks: a second or more of
    CPU in every process that reads a notebook.  nbformat, papermill, nbclient and
    nbconvert never check formats, so jsonschema is imported with that package
    hidden; the package itself stays importable for anything else in the process.
    """
    if "jsonschema" not in sys.modules:
        hidden = "rfc3987_syntax" not in sys.modules
        if hidden:
            sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # import fails
        try:
            importlib.import_module("jsonschema")
        finally:
            if hidden:
                del sys.modules["rfc3987_syntax"]
    import nbformat  # noqa: F401


# -- source notebook checks (DESIGN §6.5) ---------------------------------------------


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
    from nbconvert.preprocessors import ClearOutputPreprocessor

    cleared, _ = ClearOutputPreprocessor().preprocess(copy.deepcopy(nb), {})
    return cleared, dirty


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
        import nbformat

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


# -- execution -----------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """How long a render's notebook may run, and how much of each output it keeps
    (``[render]`` in tracework.toml; see :class:`~tracework.workspace.Workspace`)."""

    cell_timeout: int
    render_timeout: int
    output_cap: int


class _Clock:
    """Each cell's time limit, which nbclient asks for as the cell starts: the limit per
    cell, or what is left of the render's when that is less."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.deadline = time.monotonic() + limits.render_timeout
        self.render_bound = False  # whether the running cell's limit is the render's

    def timeout_for(self, cell: Any) -> int:
        left = math.ceil(self.deadline - time.monotonic())
        self.render_bound = left < self.limits.cell_timeout
        return max(1, left) if self.render_bound else self.limits.cell_timeout

    def stopped(self, cell: int, exc: Exception) -> RenderError:
        """The message for a cell that ran out of time (``cell``: the count it shows)."""
        if "IOPub" in str(exc):  # the reply came, its output never finished arriving
            return RenderError(
                f"the output of cell {cell} was still arriving "
                f"{IOPUB_TIMEOUT} s after the cell finished; the render was stopped"
            )
        if self.render_bound:
            return RenderError(
                f"the render ran past its limit of {self.limits.render_timeout} s, "
                f"in cell {cell}, and was stopped",
                hint="raise [render] timeout in tracework.toml if the notebook needs longer",
            )
        return RenderError(
            f"cell {cell} ran past the limit of {self.limits.cell_timeout} s for one cell, "
            "and was stopped",
            hint="raise [render] cell_timeout in tracework.toml if the cell needs longer",
        )


#: Seconds nbclient waits for a cell's output to finish arriving after its reply (its
#: own default, named here for the message that says it ran out).
IOPUB_TIMEOUT = 4


def execute(
    nb: nbformat.NotebookNode,
    output: Path,
    parameters: Mapping[str, Any],
    cwd: Path,
    limits: Limits,
    km: Any = None,
) -> nbformat.NotebookNode:
    """Run the notebook ``nb`` with papermill; write what ran to ``output``, also when
    it fails, so that the failing cell shows where (not when it is interrupted); return
    it.  What ran is normalised and its outputs capped (:func:`capped`).

    Parameters go through papermill's Python API, so a commit id like ``1234567`` or
    ``1e10`` stays a string (its ``-p`` option would turn it into a number).  A cell
    that runs past ``limits`` is stopped; a kernel that dies (a cell calls ``os._exit``,
    the OOM killer) fails the render too; each with one message naming the cell and,
    for a death, how the kernel ended where it is known.

    Without a kernel ``km`` (a batch gives one it booted ahead), the kernel is started
    here, armed to die with this process however it ends, SIGKILL included; it boots
    while papermill loads, and is stopped when the run ends.
    """
    kernel = ensure_kernelspec()
    own = None
    if km is None:
        own = WarmKernel(cwd)
    try:
        return _run(nb, output, parameters, cwd, limits, kernel, own.take() if own else km)
    finally:
        if own is not None:  # however the run ended, even before the kernel was taken:
            own.discard()  # its warm-up stopped, the kernel killed and reaped
            shutdown(own.km)  # its connection file, ports and sockets released


def _run(
    nb: nbformat.NotebookNode,
    output: Path,
    parameters: Mapping[str, Any],
    cwd: Path,
    limits: Limits,
    kernel: str,
    km: Any,
) -> nbformat.NotebookNode:
    """:func:`execute`'s run, in kernel ``km`` (None: papermill starts one)."""
    load_nbformat()
    import papermill
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    _quiet_papermill_log()
    clients = _clients_of(km) if km is not None else []
    sent: list[int] = []  # the code cells sent to the kernel, by index
    running: list[nbformat.NotebookNode] = []  # the notebook nbclient fills, once it starts
    clock = _Clock(limits)
    try:
        executed = papermill.execute_notebook(
            nb,
            None,  # papermill writes nothing: what ran is written here, capped
            parameters=dict(parameters),
            kernel_name=kernel,
            cwd=cwd,
            progress_bar=False,
            log_output=False,
            request_save_on_cell_execute=False,
            km=km,
            execution_timeout=limits.cell_timeout,
            timeout_func=clock.timeout_for,
            iopub_timeout=IOPUB_TIMEOUT,
            on_notebook_start=lambda notebook: running.append(notebook),
            on_cell_execute=lambda cell, cell_index: sent.append(cell_index),
        )
    except PapermillExecutionError as exc:
        # a TraceworkError raised in the kernel carries its hint on a line of its own:
        # the message stays one line, and the hint names the fix before what was kept
        first, *rest = str(exc.evalue).split("\n")
        inner = next(
            (line.strip()[6:].strip() for line in rest if line.strip()[:5] == "hint:"), None
        )
        kept = _keep(running, output, limits)
        hint = "; ".join(h for h in (inner, kept) if h) or None
        text = f"{exc.ename}: {first}"
        if exc.ename == "ChecksFailed":
            raise ChecksFailed(text, hint=hint) from None
        raise RenderError(
            f"the notebook failed in cell {exc.exec_count}: {text}", hint=hint
        ) from None
    except CellTimeoutError as exc:
        stopped = clock.stopped(len(sent), exc)
        stopped.hint = "; ".join(h for h in (stopped.hint, _keep(running, output, limits)) if h)
        raise stopped from None
    except DeadKernelError:
        # the cell that was running is the len(sent)th executed: the count it would show
        where = f" in cell {len(sent)}" if sent else ""
        raise RenderError(
            f"the notebook could not be executed: the kernel died{where}{_how_it_ended(km)}",
            hint=_keep(running, output, limits),
        ) from None
    except TraceworkError:
        raise
    except Exception as exc:  # a missing kernel, a papermill refusal
        log.debug("the notebook could not be executed", exc_info=True)
        raise RenderError(
            f"the notebook could not be executed: {type(exc).__name__}: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else 'no detail'}",
            hint=_keep(running, output, limits),
        ) from None
    except BaseException:  # Ctrl-C in the middle of a cell
        _end_abandoned_tasks()
        raise
    finally:
        for client in clients:
            with swallowed(log, "stopping a kernel client"):  # never hide the run's error
                client.stop_channels()
    running.clear()  # the uncapped notebook goes as soon as the capped one is made
    result = capped(normalise(executed), limits.output_cap)
    del executed
    return _write_notebook(output, result)


def _keep(running: list[nbformat.NotebookNode], output: Path, limits: Limits) -> str | None:
    """Write what ran of a failed run to ``output`` (normalised and capped); a hint when
    it could not be written, so that the run's own error still comes first."""
    if not running:
        return None
    try:
        _write_notebook(output, capped(normalise(running[0]), limits.output_cap))
    except OSError as exc:
        return f"what ran could not be kept ({exc.strerror or exc})"
    return None


def _write_notebook(path: Path, nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Write ``nb`` to ``path`` (keys sorted); return it as written, so that the render's
    later stages read the same key order as any reader of report.ipynb."""
    import nbformat

    from tracework.fsio import write_atomic

    text = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    write_atomic(path, text)
    written: nbformat.NotebookNode = nbformat.from_dict(json.loads(text))
    return written


def _quiet_papermill_log() -> None:
    """Keep papermill's and nbclient's log lines (nbclient logs through papermill's
    logger) off stderr: with no handler anywhere, Python's last-resort handler prints
    every warning raw ("Kernel died while waiting for execute reply."), beside the one
    message tracework gives for the same failure.  An application that configures
    logging still receives them (the records propagate)."""
    papermill_log = logging.getLogger("papermill")
    if not any(isinstance(h, logging.NullHandler) for h in papermill_log.handlers):
        papermill_log.addHandler(logging.NullHandler())


def _end_abandoned_tasks() -> None:
    """End the tasks an interrupted cell left pending on this thread's event loop.

    nbclient runs each cell as tasks on that loop; Ctrl-C leaves them pending, and the
    next use of the loop (the kernel's shutdown) resumed them: they failed on the dead
    kernel with no one to retrieve the error, and asyncio printed "Task exception was
    never retrieved" and a traceback after tracework's "interrupted".
    """
    with swallowed(log, "ending an interrupted cell's tasks"):  # never hide the interrupt
        from jupyter_core.utils import ensure_event_loop

        loop = ensure_event_loop()
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        if loop.is_running() or not pending:
            return
        for task in pending:
            task.cancel()
        done, _ = loop.run_until_complete(asyncio.wait(pending, timeout=10))
        for task in done:
            if not task.cancelled():
                task.exception()  # retrieved: never reported as lost


def _how_it_ended(km: Any) -> str:
    """`` (exit code 3)`` or `` (killed by SIGKILL)`` for a batch kernel that died, where
    it can be told ("" otherwise: papermill's own kernel is gone with its manager)."""
    process: Any = getattr(getattr(km, "provisioner", None), "process", None)
    code: int | None = None
    with swallowed(log, "asking how a kernel ended"):  # papermill's own, or its host gone
        exit_status = getattr(process, "exit_status", None)  # a forked kernel's host knows
        code = exit_status() if callable(exit_status) else process.poll()
    if code is None:
        return ""
    if code < 0:
        with suppress(ValueError):
            return f" (killed by {signal.Signals(-code).name})"
        return f" (killed by signal {-code})"
    return f" (exit code {code})"


def _clients_of(km: Any) -> list[Any]:
    """Make the kernel clients ``km`` makes from now on asynchronous, and list them, to
    be closed after the run.

    nbclient runs cells on an asyncio loop and awaits its client: a blocking client (what
    a synchronous ``KernelManager`` makes) blocks that loop in each wait, so the task that
    checks whether the kernel is alive never runs, and a render whose kernel died waited
    forever for its output.  And nbclient closes its client only when it started the
    kernel itself; with a kernel it was given, it leaves the client's sockets, heartbeat
    thread and zmq context open, about ten file descriptors and three threads per report
    in a batch worker.
    """
    from jupyter_client.asynchronous.client import AsyncKernelClient

    km.client_factory = AsyncKernelClient
    clients: list[Any] = []
    make = km.client

    def client(**kwargs: Any) -> Any:
        made = make(**kwargs)
        clients.append(made)
        return made

    km.client = client
    return clients


_VOLATILE_CELL_KEYS = ("execution", "papermill")


def normalise(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drop timings, machine paths and random ids that papermill and nbclient record."""
    pm = nb.metadata.get("papermill", {})
    nb.metadata["papermill"] = {"parameters": pm.get("parameters", {})}
    for cell in nb.cells:
        for key in _VOLATILE_CELL_KEYS:
            cell.metadata.pop(key, None)
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell["id"] = "injected-parameters"  # papermill gives it a random id
    return nb


# -- output caps ----------------------------------------------------------------------

#: Output kinds that are text, whose head and tail a reader can be shown; other kinds
#: (images, SVG, LaTeX, scripts) cannot be cut without breaking them.
_CUTTABLE = ("text/plain", "text/markdown")
_SETTING = "[render] output_cap in tracework.toml"


def capped(nb: nbformat.NotebookNode, cap: int) -> nbformat.NotebookNode:
    """``nb`` with each cell output kept to about ``cap`` bytes (``nb`` is not changed).

    A cell that prints 27 MB made a 27 MB page that took a second of CPU per megabyte
    and hundreds of megabytes to export.  Now the report, the kept ``report.ipynb`` and
    ``records.json`` stay bounded whatever a cell shows:

    * a run of one cell's stream output (stdout or stderr, shown as one block) and plain
      text keep their first and last ``cap / 2`` bytes, cut at line ends, with a line
      saying how much was cut from the middle (:func:`cut_text`);
    * strings inside JSON output (records.json's data among them) are cut the same way;
    * HTML, images and other rich output over the cap are left out, and their plain-text
      form says so;
    * error tracebacks are cut line by line.

    Output within the cap is kept as it is, object for object.
    """
    cells = []
    for cell in nb.cells:
        outputs = cell.get("outputs")
        if outputs:
            kept = _capped_outputs(outputs, cap)
            if kept is not outputs:
                cell = type(cell)({**cell, "outputs": kept})
        cells.append(cell)
    return type(nb)({**nb, "cells": cells})


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
            if sum(map(_size, texts)) > cap:
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
    kept: dict[str, Any] = {}
    left_out: list[str] = []
    for mime, value in data.items():
        if mime == "application/json" or mime.endswith("+json"):
            kept[mime] = _capped_json(value, cap)
            continue
        text = _text(value)
        size = _size(text)
        if size <= cap:
            kept[mime] = value
        elif mime in _CUTTABLE:
            kept[mime] = cut_text(text, cap)
        elif mime == "text/html":
            kept[mime] = cut_html(text, cap)
        else:
            left_out.append(
                f"[tracework left out this output's {mime} form, {_amount(size)}: "
                f"over the cap of {_amount(cap)} per output ({_SETTING})]"
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
        return cut_text(value, cap) if _size(value) > cap else value
    if isinstance(value, dict):
        items = {key: _capped_json(item, cap) for key, item in value.items()}
        same = all(items[key] is value[key] for key in value)
        return value if same else type(value)(items)
    if isinstance(value, list):
        elements = [_capped_json(item, cap) for item in value]
        return value if all(a is b for a, b in zip(elements, value, strict=True)) else elements
    return value


def cut_text(text: str, cap: int) -> str:
    """``text``'s first and last ``cap / 2`` bytes (UTF-8), cut at line ends when one is
    near, with a line between them saying how much was cut."""
    data = text.encode("utf-8", "surrogatepass")
    half = cap // 2
    head_end = _char_start(data, half)
    newline = data.rfind(b"\n", 0, head_end)
    if newline >= half // 2:
        head_end = newline + 1
    tail_start = _char_start(data, len(data) - half)
    newline = data.find(b"\n", tail_start, tail_start + half // 2)
    if newline >= 0:
        tail_start = newline + 1
    middle = data[head_end:tail_start]
    lines = middle.count(b"\n")
    counted = f", {lines:,} lines" if lines else ""
    head = data[:head_end].decode("utf-8", "surrogatepass")
    return (
        head
        + ("" if not head or head.endswith("\n") else "\n")
        + f"[… {_amount(len(middle))}{counted} cut from the middle of this output: a report "
        f"keeps the first and last {_amount(half)} of an output over {_amount(cap)} "
        f"({_SETTING}) …]\n" + data[tail_start:].decode("utf-8", "surrogatepass")
    )


def cut_html(page: str, cap: int) -> str:
    """HTML output's first and last ``cap / 2`` bytes or so, with a note between them.

    Both cuts fall between tags, never inside one or inside an entity, so no tag is
    broken and none is made; an element the cut leaves open is closed by the browser as
    any unclosed element is.  (A record card with a huge field keeps its head and tail,
    rather than the whole records section being left out.)
    """
    half = cap // 2
    head_end = _html_text_position(page, _char_index(page, half), backwards=True)
    tail_start = _html_text_position(page, _char_index(page, _size(page) - half), backwards=False)
    if tail_start <= head_end:  # no place between tags to cut at: the note alone
        head_end, tail_start = 0, len(page)
    middle = _size(page[head_end:tail_start])
    note = html.escape(
        f"[… {_amount(middle)} cut from the middle of this output: a report keeps the first "
        f"and last {_amount(half)} of an output over {_amount(cap)} ({_SETTING}) …]"
    )
    return f'{page[:head_end]}<div class="tw-cut">{note}</div>{page[tail_start:]}'


def _html_text_position(page: str, at: int, *, backwards: bool) -> int:
    """``at``, moved to a place between tags and outside any entity (``&amp;``)."""
    opening, closing = page.rfind("<", 0, at), page.rfind(">", 0, at)
    if opening > closing:  # inside a tag: to its start, or past its end
        at = opening if backwards else page.find(">", at) + 1 or len(page)
    entity = page.rfind("&", max(0, at - 32), at)
    if entity >= 0 and _ENTITY_START.fullmatch(page, entity, at):  # inside an entity
        end = page.find(";", at, at + 32)
        at = entity if backwards or end < 0 else end + 1
    return at


_ENTITY_START = re.compile(r"&#?[0-9A-Za-z]*")


def _char_index(text: str, size: int) -> int:
    """The index in ``text`` at which its first ``size`` UTF-8 bytes end (about)."""
    if text.isascii():
        return max(0, min(size, len(text)))
    prefix = text.encode("utf-8", "surrogatepass")[: max(0, size)]
    return len(prefix.decode("utf-8", "ignore"))


def _char_start(data: bytes, at: int) -> int:
    """``at``, moved back to the first byte of the UTF-8 character it falls in."""
    while 0 < at < len(data) and data[at] & 0xC0 == 0x80:
        at -= 1
    return at


def _text(value: Any) -> str:
    """Notebook text: a string, or (as files store it) a list of lines."""
    return value if isinstance(value, str) else "".join(value)


def _size(text: str) -> int:
    """UTF-8 bytes of ``text`` (the encoding skipped when it is all ASCII)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _amount(size: int) -> str:
    if size >= 1 << 20:
        return f"{size / (1 << 20):.1f} MiB".replace(".0 MiB", " MiB")
    if size >= 1 << 10:
        return f"{size / (1 << 10):.1f} KiB".replace(".0 KiB", " KiB")
    return f"{size} bytes"


def extract_records(nb: nbformat.NotebookNode) -> object | None:
    """The JSON the notebook last displayed as records.json (``wb.done()`` does), if any.

    Untyped on purpose: any cell may display that type, with data of any shape, so the
    render reads it through the model (:class:`~tracework.records.artefacts.KernelRecords`),
    whose refusal names what is wrong.
    """
    found = None
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if RECORDS_MIME in data:
                found = data[RECORDS_MIME]
    return found


def file_sha256(path: Path) -> str | None:
    return sha256_hex(path.read_bytes()) if path.is_file() else None
