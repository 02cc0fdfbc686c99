"""Executing an analyst notebook with papermill, in render mode, at one commit.

Parameters are validated before any kernel starts; the kernel is this environment's
own Python (a ``tracework`` kernelspec written beside it on first use).  The
executed notebook is normalised — papermill's and nbclient's timings and machine
paths are removed — so that the same inputs give the same bytes.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import signal
import sys
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ChecksFailed, RenderError, TraceworkError
from .hashing import sha256_hex

if TYPE_CHECKING:  # nbformat costs a second to import (jsonschema); load it on use
    import nbformat

KERNEL_NAME = "tracework"
RECORDS_MIME = "application/vnd.tracework.records+json"


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


def ensure_kernelspec() -> str:
    """Write the ``tracework`` kernelspec for this interpreter if it is missing or stale.

    It lives in ``<sys.prefix>/share/jupyter/kernels/tracework`` (the project's
    ``.venv`` in this repository), so papermill and JupyterLab both run notebooks with
    the environment tracework itself runs in.
    """
    spec = {
        # the kernel's own log (transport warnings, shutdown noise) is not for readers;
        # cell errors still reach the notebook as error outputs
        "argv": [
            sys.executable,
            "-m",
            "ipykernel_launcher",
            "-f",
            "{connection_file}",
            "--IPKernelApp.log_level=CRITICAL",
        ],
        "display_name": "tracework (Python 3)",
        "language": "python",
        "metadata": {"debugger": True},
    }
    text = json.dumps(spec, indent=1, sort_keys=True) + "\n"
    for base in _kernel_dirs():
        target = base / KERNEL_NAME / "kernel.json"
        try:
            if target.is_file() and target.read_text(encoding="utf-8") == text:
                return KERNEL_NAME
            target.parent.mkdir(parents=True, exist_ok=True)
            from .fsio import write_atomic

            write_atomic(target, text)
            return KERNEL_NAME
        except OSError:
            continue
    raise RenderError(
        "cannot write a jupyter kernelspec for tracework",
        hint="check that the environment's share/jupyter folder is writable",
    )


def _kernel_dirs() -> list[Path]:
    from jupyter_core.paths import jupyter_data_dir

    return [
        Path(sys.prefix) / "share" / "jupyter" / "kernels",
        Path(jupyter_data_dir()) / "kernels",
    ]


# -- source notebook checks (DESIGN §6.5) ---------------------------------------------


def notebook_problems(nb: nbformat.NotebookNode) -> list[str]:
    """A source notebook carries no outputs and has a cell tagged ``parameters``."""
    problems = []
    tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not tagged:
        problems.append("no cell is tagged `parameters` (papermill injects parameters after it)")
    dirty = [
        i + 1
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    ]
    if dirty:
        problems.append(
            f"cells {', '.join(map(str, dirty[:10]))} carry outputs or execution counts; "
            "commit notebooks without outputs (e.g. `jupyter nbconvert --clear-output`)"
        )
    return problems


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """Read a notebook with a clear error when it is missing or malformed."""
    if not path.is_file():
        raise TraceworkError(
            f"no notebook at {path}",
            hint="create one with `tracework new NAME --subject S --commit C`",
        )
    try:
        load_nbformat()
        import nbformat

        nb: nbformat.NotebookNode = nbformat.read(path, as_version=4)
    except Exception as exc:  # nbformat raises several unrelated types
        raise TraceworkError(f"{path}: not a readable notebook ({exc})") from None
    return nb


# -- execution -----------------------------------------------------------------------


def execute(
    notebook: Path, output: Path, parameters: Mapping[str, Any], cwd: Path, km: Any = None
) -> nbformat.NotebookNode:
    """Run ``notebook`` with papermill into ``output``; raise with the failing cell's error.

    Parameters go through papermill's Python API, so a commit id like ``1234567`` or
    ``1e10`` stays a string (its ``-p`` option would turn it into a number).  A kernel
    that dies (a cell calls ``os._exit``, the OOM killer) fails the render with one
    message naming the cell and, where it is known, how the kernel ended.
    """
    load_nbformat()
    import papermill
    from nbclient.exceptions import DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    _quiet_papermill_log()
    kernel = ensure_kernelspec()
    clients = _clients_of(km) if km is not None else []
    sent: list[int] = []  # the code cells sent to the kernel, by index
    try:
        papermill.execute_notebook(
            notebook,
            output,
            parameters=dict(parameters),
            kernel_name=kernel,
            cwd=cwd,
            progress_bar=False,
            log_output=False,
            request_save_on_cell_execute=False,
            km=km,  # a pre-started kernel (batch renders), else papermill starts one
            on_cell_execute=lambda cell, cell_index: sent.append(cell_index),
        )
    except PapermillExecutionError as exc:
        # a TraceworkError raised in the kernel carries its own hint line; keep one
        text = f"{exc.ename}: {str(exc.evalue).split(chr(10))[0]}"
        if exc.ename == "ChecksFailed":
            raise ChecksFailed(text) from None
        raise RenderError(f"the notebook failed in cell {exc.exec_count}: {text}") from None
    except DeadKernelError:
        # the cell that was running is the len(sent)th executed: the count it would show
        where = f" in cell {len(sent)}" if sent else ""
        raise RenderError(
            f"the notebook could not be executed: the kernel died{where}{_how_it_ended(km)}"
        ) from None
    except TraceworkError:
        raise
    except Exception as exc:  # a missing kernel, a papermill refusal
        raise RenderError(
            f"the notebook could not be executed: {type(exc).__name__}: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else 'no detail'}"
        ) from None
    except BaseException:  # Ctrl-C in the middle of a cell
        _end_abandoned_tasks()
        raise
    finally:
        for client in clients:
            with suppress(Exception):  # never hide the run's own error behind this
                client.stop_channels()
    import nbformat

    nb = normalise(nbformat.read(output, as_version=4))
    return nb


def _quiet_papermill_log() -> None:
    """Keep papermill's and nbclient's log lines (nbclient logs through papermill's
    logger) off stderr: with no handler anywhere, Python's last-resort handler prints
    every warning raw ("Kernel died while waiting for execute reply."), beside the one
    message tracework gives for the same failure.  An application that configures
    logging still receives them (the records propagate)."""
    log = logging.getLogger("papermill")
    if not any(isinstance(h, logging.NullHandler) for h in log.handlers):
        log.addHandler(logging.NullHandler())


def _end_abandoned_tasks() -> None:
    """End the tasks an interrupted cell left pending on this thread's event loop.

    nbclient runs each cell as tasks on that loop; Ctrl-C leaves them pending, and the
    next use of the loop (the kernel's shutdown) resumed them: they failed on the dead
    kernel with no one to retrieve the error, and asyncio printed "Task exception was
    never retrieved" and a traceback after tracework's "interrupted".
    """
    with suppress(Exception):  # a clean-up: never hide the interrupt itself
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
    with suppress(Exception):  # no process (papermill's kernel), or its host is gone
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


def extract_records(nb: nbformat.NotebookNode) -> dict[str, Any] | None:
    """The records.json object the notebook's ``wb.done()`` displayed, if it ran."""
    found = None
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if RECORDS_MIME in data:
                found = data[RECORDS_MIME]
    return dict(found) if found is not None else None


def file_sha256(path: Path) -> str | None:
    return sha256_hex(path.read_bytes()) if path.is_file() else None
