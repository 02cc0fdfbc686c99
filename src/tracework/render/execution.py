"""Executing an analyst notebook with papermill, in render or author mode, at one commit.

The kernel is this environment's own Python (a ``tracework`` kernelspec written beside
it on first use), started here or given (a batch boots one ahead); each cell runs within
its time limit and the render's; a kernel that dies or a cell that fails is one message
naming the cell.  What ran is written to ``report.ipynb`` (a failed run's too),
normalised and capped by the output preprocessors (:mod:`tracework.render.outputs`).
The notebook given was read and checked before (:mod:`tracework.render.notebooks`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import signal
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracework.errors import ChecksFailed, RenderError, TraceworkError
from tracework.fsio import write_atomic
from tracework.kernels.spec import ensure_kernelspec
from tracework.kernels.warm import WarmKernel, ready_client, shutdown
from tracework.logs import swallowed
from tracework.render.notebooks import load_nbformat
from tracework.text import cell_name
from tracework.workspace import Workspace

if TYPE_CHECKING:  # nbformat loads with the run (load_nbformat)
    import nbformat


log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """How long a render's notebook may run, and how much of each output it keeps
    (``[render]`` in tracework.toml; see :class:`~tracework.workspace.Workspace`)."""

    cell_timeout: int
    render_timeout: int
    output_cap: int

    @classmethod
    def of(cls, ws: Workspace) -> Limits:
        """The workspace's limits."""
        return cls(ws.cell_timeout, ws.render_timeout, ws.output_cap)


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

    def stopped(self, cell: str, exc: Exception) -> RenderError:
        """The message for a cell that ran out of time (``cell``: its name, as JupyterLab
        shows it: :func:`cell_named`)."""
        if "IOPub" in str(exc):  # the reply came, its output never finished arriving
            return RenderError(
                f"the output of {cell} was still arriving "
                f"{IOPUB_TIMEOUT} s after the cell finished; the render was stopped"
            )
        if self.render_bound:
            return RenderError(
                f"the render ran past its limit of {self.limits.render_timeout} s, "
                f"in {cell}, and was stopped",
                hint="raise [render] timeout in tracework.toml if the notebook needs longer",
            )
        return RenderError(
            f"{cell} ran past the limit of {self.limits.cell_timeout} s for one cell, "
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
    it.  What ran is normalised and its outputs capped (:func:`.outputs.what_ran`).

    Parameters go through papermill's Python API, so a commit id like ``1234567`` or
    ``1e10`` stays a string (its ``-p`` option would turn it into a number).  A cell
    that runs past ``limits`` is stopped; a kernel that dies (a cell calls ``os._exit``,
    the OOM killer) fails the render too; each with one message naming the cell and,
    for a death, how the kernel ended where it is known.

    Without a kernel ``km`` (a batch gives one it booted ahead), the kernel is started
    here, armed to die with this process however it ends, SIGKILL included; it boots
    while papermill loads, and is stopped when the run ends.  ``km`` may also be a
    :class:`~tracework.kernels.warm.WarmKernel` still booting (a render starts one as
    soon as its inputs are checked): it is then this run's own, taken once papermill
    has loaded and stopped when the run ends, as one started here would be.
    """
    kernel = ensure_kernelspec()
    own = km if isinstance(km, WarmKernel) else None
    if km is None:
        own = WarmKernel(cwd)
    try:
        _load_runner()  # while the kernel boots
        return _run(nb, output, parameters, cwd, limits, kernel, own.take() if own else km)
    finally:
        if own is not None:  # however the run ended, even before the kernel was taken:
            own.discard()  # its warm-up stopped, the kernel killed and reaped
            shutdown(own.km)  # its connection file, ports and sockets released


def _load_runner() -> None:
    """Import papermill, nbclient and the output preprocessors: half a second of imports
    that a kernel's start-up hides when they come before the wait for it.  All of them
    import nbformat, which comes first (see load_nbformat)."""
    load_nbformat()
    import nbclient  # noqa: F401
    import papermill  # noqa: F401

    import tracework.render.outputs  # noqa: F401


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
    # loaded by _load_runner, while the kernel booted (see there)
    import papermill
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    from tracework.render.outputs import what_ran

    _quiet_papermill_log()
    clients = _clients_of(km) if km is not None else []
    sent: list[tuple[int, str | None]] = []  # the cells sent to the kernel: index, id
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
            on_cell_execute=lambda cell, cell_index: sent.append((cell_index, cell.get("id"))),
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
        failed = next((c for i, c in sent if i == exc.cell_index), None)
        raise RenderError(
            f"the notebook failed in {cell_named(nb, failed)}: {text}", hint=hint
        ) from None
    except CellTimeoutError as exc:
        stopped = clock.stopped(cell_named(nb, sent[-1][1] if sent else None), exc)
        stopped.hint = "; ".join(h for h in (stopped.hint, _keep(running, output, limits)) if h)
        raise stopped from None
    except DeadKernelError:
        # the cell that was running is the last one sent
        where = f" in {cell_named(nb, sent[-1][1])}" if sent else ""
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
    running.clear()  # each uncapped cell goes as soon as its capped one replaces it
    return _write_notebook(output, what_ran(executed, limits.output_cap))


def cell_named(nb: nbformat.NotebookNode, cell_id: str | None) -> str:
    """Cell ``cell_id`` of the notebook as the analyst's JupyterLab shows it: its place
    among the notebook's cells, and its id (:func:`~tracework.text.cell_name`).  Never
    papermill's execution count, which skips Markdown and counts the parameters cell it
    injects; that cell is named for what it is."""
    for position, cell in enumerate(nb.cells, start=1):
        if cell_id is not None and cell.get("id") == cell_id:
            return cell_name(position, len(nb.cells), cell_id)
    return "the cell of parameters papermill injects after the cell tagged parameters"


def _keep(running: list[nbformat.NotebookNode], output: Path, limits: Limits) -> str | None:
    """Write what ran of a failed run to ``output`` (normalised and capped); a hint when
    it could not be written, so that the run's own error still comes first."""
    if not running:
        return None
    from tracework.render.outputs import what_ran  # loaded by _run (see there)

    try:
        _write_notebook(output, what_ran(running[0], limits.output_cap))
    except OSError as exc:
        return f"what ran could not be kept ({exc.strerror or exc})"
    return None


def _write_notebook(path: Path, nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Write ``nb`` to ``path`` (keys sorted); return it as written, so that the render's
    later stages read the same key order as any reader of report.ipynb."""
    import nbformat  # loaded by _run (see there)

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
        from jupyter_core.utils import ensure_event_loop  # loaded with the kernel

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
    """Make the kernel clients ``km`` makes from now on asynchronous, and ready as soon
    as the kernel answers (:func:`~tracework.kernels.warm.ready_client`), and list them,
    to be closed after the run.

    nbclient runs cells on an asyncio loop and awaits its client: a blocking client (what
    a synchronous ``KernelManager`` makes) blocks that loop in each wait, so the task that
    checks whether the kernel is alive never runs, and a render whose kernel died waited
    forever for its output.  And nbclient closes its client only when it started the
    kernel itself; with a kernel it was given, it leaves the client's sockets, heartbeat
    thread and zmq context open, about ten file descriptors and three threads per report
    in a batch worker.  A kernel given for run after run (kept warm by its caller) is
    wrapped once: each run lists the clients made during it alone.
    """
    km.client_factory = ready_client()  # asynchronous; ready without 0.2 s of silence
    clients: list[Any] = []
    make = getattr(km, "_tracework_make_client", None) or km.client
    km._tracework_make_client = make  # the manager's own, for the next run

    def client(**kwargs: Any) -> Any:
        made = make(**kwargs)
        clients.append(made)
        return made

    km.client = client
    return clients
