"""``tracework preview``: the draft report served on loopback, rendered again on each save.

The analyst's loop, as ``quarto preview`` is for Quarto: the report is rendered in
render mode into ``reports/NAME/preview/``, served on 127.0.0.1
(:mod:`tracework.render.preview_server`), and rendered again whenever one of its inputs
is saved: the notebook, the register, a rubric of the workspace, a capture the register
cites (:func:`watched`).  The page then reloads itself.

Each run is the render's own stages, in order (:func:`~tracework.render.inputs.prepare`,
:func:`~tracework.render.pipeline.run`, :func:`~.pipeline.check`,
:func:`~.pipeline.manifest_for`, :func:`~.pipeline.write_page`), in a kernel that was
ready before the save: a kernel host imported ipykernel and tracework once, and a
fresh kernel forked from it, its imports done, waits for the next run
(:func:`tracework.kernels.warm.next_kernel`).  Each run has a kernel of its own, killed
when it ends, so no state passes from one run to the next, as in a render.

What it never does: write ``reports/NAME/<commit12>/`` or the report's ``history.json``
(the page shows the history a render would, with this run's entry), or write the
register.  The notebook runs in render mode: an author run writes the quotes it adds to
the register, which the preview watches, so each run would start the next, and a run
must read the bytes it hashed.  Quotes are added with ``tracework quote`` or in
JupyterLab; the register's save renders the report again.

A run that fails keeps the last good page, served with the error's line and hint over it
(its executed notebook is kept in ``reports/NAME/failed-preview/``); the next save that
renders takes the error away.  One preview per report at a time.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from tracework.errors import TraceworkError
from tracework.fsio import LockTimeout, locked
from tracework.kernels.warm import next_kernel, prestart, release, shutdown
from tracework.records.artefacts import (
    CheckSummary,
    HistoryEntry,
    write_manifest,
    write_records,
)
from tracework.records.rubrics import rubric_names, rubric_path
from tracework.register.models import CaptureSource
from tracework.render.history import history_entry, read_history, with_entry
from tracework.render.inputs import Plan, plan_key, prepare
from tracework.render.pipeline import RENDER_FILES, check, manifest_for, run, write_page
from tracework.render.preview_server import Board, PreviewServer, Problem
from tracework.staging import Staging
from tracework.workspace import Workspace, check_name

log = logging.getLogger(__name__)

#: The preview's folder in ``reports/NAME/``: its own, never a render's or the draft
#: ``tracework author`` writes (both may run while it does).
FOLDER = "preview"
#: Seconds between two looks at the watched files' times and sizes.
POLL = 0.1
#: Seconds a changed file must stay unchanged before a run starts (an editor that
#: writes a file in several steps is read once it has finished).
SETTLE = 0.03

#: A file's identity and state as the watch compares them; None: not there.
Stat = tuple[int, int, int, int] | None


@dataclass(frozen=True)
class Outcome:
    """One run of the preview: how long it took, and its checks or its error."""

    seconds: float
    summary: CheckSummary | None = None  # when it rendered
    problem: Problem | None = None  # when it did not
    cleared: int = 0  # code cells whose saved outputs were cleared in the run's copy
    unchanged: bool = False  # the inputs were the bytes of the page shown: not run again
    page: bytes = field(default=b"", repr=False)
    files: dict[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return self.problem is None


def watched(ws: Workspace, name: str, captures: frozenset[str] = frozenset()) -> list[Path]:
    """What a run of report ``name`` reads that an analyst saves: its notebook and
    register, every rubric of the workspace, and each manifest of the ``captures`` its
    register cites (see :func:`cited_captures`)."""
    paths = [ws.notebooks / f"{name}.ipynb", ws.registers / f"{name}.yaml"]
    paths += [rubric_path(ws, rubric) for rubric in rubric_names(ws)]
    for capture in sorted(captures):
        paths += sorted((ws.captures / capture).glob("*/manifest.json"))
    return paths


def cited_captures(ws: Workspace, name: str) -> frozenset[str]:
    """The captures register ``name`` cites, as it reads now (none when it does not
    read: the run says why)."""
    import tracework.register.store as reg

    try:
        register = reg.load(ws.registers / f"{name}.yaml")
    except (TraceworkError, OSError):
        return frozenset()
    return frozenset(s.capture for s in register.sources.values() if isinstance(s, CaptureSource))


def _stat(path: Path) -> Stat:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size, st.st_ctime_ns)


class Preview:
    """A preview of report ``name`` at ``commit`` (default: the register's pin), served
    on 127.0.0.1 at ``port`` (0: one the system picks).  Use it as a context manager:
    entering takes the report's preview lock, starts the first kernel and the server;
    leaving stops the server and every kernel, however the block ended."""

    def __init__(
        self,
        ws: Workspace,
        name: str,
        commit: str | None = None,
        analysis_date: str | None = None,
        port: int = 0,
    ) -> None:
        check_name(name, "report")
        for path, what in (
            (ws.notebooks / f"{name}.ipynb", "notebook"),
            (ws.registers / f"{name}.yaml", "register"),
        ):
            if not path.is_file():
                raise TraceworkError(
                    f"report {name} has no {what}: {path.relative_to(ws.root).as_posix()} "
                    "is not there",
                    hint=f"make the report with `tracework new {name} --subject S --commit C`",
                )
        self.ws, self.name, self.commit, self.analysis_date = ws, name, commit, analysis_date
        self.port = port
        self.root = ws.reports / name
        self.folder = self.root / FOLDER
        self.board = Board(f"notebooks/{name}.ipynb")
        self._server: PreviewServer | None = None
        self._cited: tuple[Stat, frozenset[str]] | None = None
        self._shown_key: str | None = None  # what the page shown was rendered from
        self._stack = ExitStack()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the preview is not serving: use it as a context manager")
        return self._server.url

    def __enter__(self) -> Preview:
        with ExitStack() as stack:
            try:
                stack.enter_context(locked(self.root / f"{FOLDER}.session", timeout=0))
            except LockTimeout:
                raise TraceworkError(
                    f"another `tracework preview {self.name}` is running",
                    hint="open the address it printed, or stop it (Ctrl-C) first",
                ) from None
            stack.callback(release)  # the kernel booted for a next run, and the kernel host
            prestart(self.ws.root)  # the first run's kernel boots while the server starts
            try:
                server = PreviewServer(self.board, self.port)
            except OSError as exc:
                raise TraceworkError(
                    f"cannot serve the preview on 127.0.0.1:{self.port}: {exc.strerror or exc}",
                    hint="choose another port with --port, or --port 0 for any free one",
                ) from None
            stack.callback(server.close)
            self._server = server.start()
            self._stack = stack.pop_all()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the server, then every kernel, then let go of the lock."""
        self._server = None
        self._stack.close()

    # -- the loop ---------------------------------------------------------------------

    def watch(
        self,
        report: Callable[[Outcome], None],
        stop: threading.Event | None = None,
        poll: float = POLL,
    ) -> None:
        """Render now, then again each time a watched file is saved, until ``stop`` is
        set (or Ctrl-C); ``report`` hears of each run.  A run whose inputs were saved
        again while it ran and that failed is not shown: the next run is already due,
        and its error may only be that edit."""
        stop = stop or threading.Event()
        while not stop.is_set():
            seen = self.signature()
            self.board.rendering()
            outcome = self.render_once()
            if not outcome.ok and self.signature() != seen:
                self.board.idle()
                continue
            self.show(outcome)
            report(outcome)
            while not stop.is_set() and not self._changed(seen, poll, stop):
                pass

    def signature(self) -> list[tuple[Path, Stat]]:
        """The watched files' states now (see :func:`watched`); the register is read
        again for the captures it cites only when it changed."""
        register = self.ws.registers / f"{self.name}.yaml"
        state = _stat(register)
        if self._cited is None or self._cited[0] != state:
            self._cited = (state, cited_captures(self.ws, self.name))
        return [(path, _stat(path)) for path in watched(self.ws, self.name, self._cited[1])]

    def _changed(self, seen: list[tuple[Path, Stat]], poll: float, stop: threading.Event) -> bool:
        """Whether a watched file differs from ``seen`` after ``poll`` seconds, and then
        stayed as it is for :data:`SETTLE` seconds."""
        stop.wait(poll)
        now = self.signature()
        if now == seen:
            return False
        while not stop.is_set():
            stop.wait(SETTLE)
            again = self.signature()
            if again == now:
                return True
            now = again
        return False

    def show(self, outcome: Outcome) -> None:
        """Show a run's page, or its error over the last good page."""
        if outcome.unchanged:
            self.board.idle()
        elif outcome.problem is not None:
            self.board.failed(outcome.problem)
        else:
            self.board.rendered(outcome.page, outcome.files)

    # -- one run ------------------------------------------------------------------------

    def render_once(self) -> Outcome:
        """Render the report into ``reports/NAME/preview/`` (replaced only when the run
        succeeded); what it gave, or its error as one line and its hint.  Inputs whose
        bytes are those of the page shown (a save that changed nothing) are not run
        again: a render of them gives the same bytes."""
        started = time.perf_counter()
        stage = Staging(self.root, FOLDER, RENDER_FILES)
        cleared = 0
        try:
            plan = prepare(self.ws, self.name, self.commit, self.analysis_date)
            cleared = plan.cleared
            key = plan_key(self.ws, plan)
            if key == self._shown_key and self.board.shown.problem is None:
                return Outcome(time.perf_counter() - started, cleared=cleared, unchanged=True)
            history = read_history(self.root / "history.json")
            with stage.hold() as folder:
                try:
                    summary = self._stages(plan, folder, history)
                except TraceworkError as exc:
                    kept = self._keep_failed(stage)
                    if kept:
                        exc.hint = "; ".join(h for h in (exc.hint, kept) if h)
                    raise
                page = (folder / "report.html").read_bytes()
                files = _served_files(folder)
                stage.swap()
                stage.drop_failed()
                self._shown_key = key
        except TraceworkError as exc:
            problem = Problem(exc.message, exc.hint)
            return Outcome(time.perf_counter() - started, problem=problem, cleared=cleared)
        except OSError as exc:  # a file of the report, or its folder, refused
            where = f": {exc.filename}" if exc.filename else ""
            problem = Problem(f"{exc.strerror or exc}{where}")
            return Outcome(time.perf_counter() - started, problem=problem, cleared=cleared)
        return Outcome(
            time.perf_counter() - started, summary, cleared=cleared, page=page, files=files
        )

    def _stages(self, plan: Plan, folder: Path, history: list[HistoryEntry]) -> CheckSummary:
        """The render's stages, into ``folder``, in a fresh warm kernel."""
        km = next_kernel(self.ws.root)
        try:
            executed = run(self.ws, plan, folder, km)
        finally:
            if km is not None:
                shutdown(km)
        records = check(self.ws, plan, executed)
        write_records(folder / "records.json", records)
        manifest = manifest_for(self.ws, plan)
        write_manifest(folder / "manifest.json", manifest)
        shown = with_entry(history, history_entry(records))  # as a render's page shows it
        write_page(folder, executed, records, plan.inputs.register, manifest, shown)
        return records.checks

    def _keep_failed(self, stage: Staging) -> str | None:
        """Keep a failed run's executed notebook in ``reports/NAME/failed-preview/``;
        where, in words (None when the run left none)."""
        if not (stage.folder / "report.ipynb").exists():
            return None
        kept = stage.keep_failed()
        shown = kept.folder.relative_to(self.ws.root).as_posix()
        if kept.in_the_way is not None:
            return f"the executed notebook could not be kept: {shown} is {kept.in_the_way}"
        return f"the executed notebook is kept in {shown}/"


def _served_files(folder: Path) -> dict[str, bytes]:
    """What the page loads from beside it (its scripts) and the diagrams' sources, by the
    path the page names them with."""
    found = {}
    for sub in ("assets", "diagrams"):
        for path in sorted((folder / sub).glob("*")):
            if path.is_file() and not path.is_symlink():
                found[f"{sub}/{path.name}"] = path.read_bytes()
    return found
