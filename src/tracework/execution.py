"""Executing an analyst notebook with papermill, in render mode, at one commit.

Parameters are validated before any kernel starts; the kernel is this environment's
own Python (a ``tracework`` kernelspec written beside it on first use).  The
executed notebook is normalised — papermill's and nbclient's timings and machine
paths are removed — so that the same inputs give the same bytes.
"""

from __future__ import annotations

import importlib
import json
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
    ``1e10`` stays a string (its ``-p`` option would turn it into a number).
    """
    load_nbformat()
    import papermill
    from papermill.exceptions import PapermillExecutionError

    kernel = ensure_kernelspec()
    clients = _clients_of(km) if km is not None else []
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
        )
    except PapermillExecutionError as exc:
        # a TraceworkError raised in the kernel carries its own hint line; keep one
        text = f"{exc.ename}: {str(exc.evalue).split(chr(10))[0]}"
        if exc.ename == "ChecksFailed":
            raise ChecksFailed(text) from None
        raise RenderError(f"the notebook failed in cell {exc.exec_count}: {text}") from None
    except TraceworkError:
        raise
    except Exception as exc:  # a dead kernel, a missing kernel, a papermill refusal
        raise RenderError(
            f"the notebook could not be executed: {type(exc).__name__}: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else 'no detail'}"
        ) from None
    finally:
        for client in clients:
            with suppress(Exception):  # never hide the run's own error behind this
                client.stop_channels()
    import nbformat

    nb = normalise(nbformat.read(output, as_version=4))
    return nb


def _clients_of(km: Any) -> list[Any]:
    """The kernel clients ``km`` makes from now on, to be closed after the run.

    nbclient closes its client only when it started the kernel itself; with a kernel
    it was given, it leaves the client's sockets, heartbeat thread and zmq context
    open, about ten file descriptors and three threads per report in a batch worker.
    """
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
