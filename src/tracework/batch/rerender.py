"""``tracework rerender``: re-render many reports at a new commit, in parallel.

Each report renders in its own worker process (its own kernel, no shared state), at
``--commit`` or at the head of its subject's tracked ref (``--latest``).  A report is
skipped when its notebook, register, target commit and tracework version are what its
last good render used (content hashes, not times).  A failure in one report never
stops the others, and its previous good output stays in place.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.util
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from tracework.drift.first_change import STATES
from tracework.errors import TraceworkError, check_iso_date
from tracework.fsio import locked
from tracework.git.subjects import fetch, load_subject, open_mirror, tracked_commit
from tracework.kernels.warm import next_kernel, prestart, release, shutdown
from tracework.logs import show, shown, swallowed
from tracework.readers import DataError
from tracework.records.artefacts import (
    BatchOutcome,
    absence_outcomes,
    changed_quotes,
    quote_counts,
    read_manifest,
    read_records,
)
from tracework.register.models import GitSource
from tracework.register.store import load
from tracework.render.inputs import inputs_key
from tracework.render.notebooks import load_nbformat
from tracework.render.pipeline import render
from tracework.version import __version__
from tracework.workspace import Workspace, check_name

log = logging.getLogger(__name__)
T = TypeVar("T")


def report_names(ws: Workspace, names: Sequence[str], every: bool) -> list[str]:
    """The reports to re-render: those named, or with ``--all`` every notebook with a register."""
    known = known_reports(ws)
    if every:
        if not known:
            raise TraceworkError(
                "no reports in this workspace (notebooks/NAME.ipynb + registers/NAME.yaml)"
            )
        return known
    if not names:
        raise TraceworkError("name the reports to re-render, or give --all")
    chosen = [check_name(n, "report") for n in names]
    unknown = [n for n in chosen if n not in known]
    if unknown:
        listed = ", ".join(unknown)
        shown = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
        raise TraceworkError(
            f"no report{'s' if len(unknown) > 1 else ''} {listed} in this workspace "
            "(a report is notebooks/NAME.ipynb + registers/NAME.yaml)",
            hint=f"the reports here: {shown}"
            if known
            else "there are none yet: create one with `tracework new NAME --subject S --commit C`",
        )
    return chosen


def known_reports(ws: Workspace) -> list[str]:
    """Every report of the workspace: a notebook with a register of the same name."""
    return sorted(
        p.stem for p in ws.notebooks.glob("*.ipynb") if (ws.registers / f"{p.stem}.yaml").is_file()
    )


def targets(
    ws: Workspace, names: list[str], commit: str | None, latest: bool, do_fetch: bool
) -> dict[str, str]:
    """Each report's target commit (full id), validated before anything renders."""
    if (commit is None) == (not latest):
        raise TraceworkError("give exactly one of --commit COMMIT or --latest")
    subjects: dict[str, str] = {}
    for name in names:
        register = load(ws.registers / f"{name}.yaml")
        gits = [s for s in register.sources.values() if isinstance(s, GitSource)]
        if not gits:
            raise TraceworkError(f"register {name} has no git source")
        subjects[name] = gits[0].subject
    if do_fetch:
        for subject in sorted(set(subjects.values())):
            fetch(ws, subject)
    resolved: dict[str, str] = {}  # one git lookup per subject, not per report
    for subject in sorted(set(subjects.values())):
        mirror = open_mirror(ws, subject)
        if commit is not None:
            resolved[subject] = mirror.resolve_commit(commit)
        else:
            head = tracked_commit(ws, load_subject(ws, subject), mirror)
            if head is None:
                raise TraceworkError(
                    f"subject {subject} has no commit yet, so no newest one to render",
                    hint=f"run `tracework fetch {subject}` once the subject has commits",
                )
            resolved[subject] = head
    return {name: resolved[subject] for name, subject in subjects.items()}


def up_to_date(ws: Workspace, name: str, commit: str, analysis_date: str | None = None) -> bool:
    """Whether the last good render at ``commit`` used exactly today's inputs.

    A manifest or records.json that cannot be read as its model is not a good render:
    the report renders again.
    """
    folder = ws.reports / name / commit[:12]
    manifest = _read(folder / "manifest.json", read_manifest)
    if manifest is None or _read(folder / "records.json", read_records) is None:
        return False
    return manifest.inputs_sha256 == inputs_key(ws, name, commit, analysis_date)


def _read(path: Path, read: Callable[[Path], T]) -> T | None:
    """A file a render wrote, through its model; None when it is missing, unreadable or
    not what the model says (the report renders again)."""
    try:
        return read(path)
    except (OSError, DataError, ValidationError) as exc:  # DataError: not UTF-8, not JSON, …
        log.debug("%s is not a good render's: %s", path, exc)
        return None


def recapture(
    ws: Workspace, plan: dict[str, str], on_update: Callable[[str, str], None]
) -> dict[str, str]:
    """Make each capture the planned reports cite again at their target commits (the
    environment built or reused first: rebuilt when the subject's lock changed); returns
    the reports whose capture failed, with why."""
    from tracework.capture.pipeline import capture, environment
    from tracework.register.models import CaptureSource

    wanted: dict[tuple[str, str], list[str]] = {}
    for name, commit in plan.items():
        for source in load(ws.registers / f"{name}.yaml").sources.values():
            if isinstance(source, CaptureSource):
                wanted.setdefault((source.capture, commit), []).append(name)
    failed: dict[str, str] = {}
    for (capture_name, commit), names in sorted(wanted.items()):
        for name in names:
            on_update(name, "capturing")
        try:
            environment(ws, capture_name, commit)
            capture(ws, capture_name, commit)
        except TraceworkError as exc:
            for name in names:
                failed[name] = f"capture {capture_name} at {commit[:12]}: {exc.message}"
    return failed


def render_one(
    root: str, name: str, commit: str, warm: bool = True, analysis_date: str | None = None
) -> BatchOutcome:
    """Render one report in this (worker) process; never raises for a report's failure.

    With ``warm``, the report runs in a kernel booted while the previous one rendered
    (see :mod:`tracework.kernels.warm`).
    """
    ws = Workspace(Path(root))
    km = None
    try:
        with locked(ws.reports / name / f"{commit[:12]}.render", timeout=3600):
            km = next_kernel(ws.root) if warm else None
            result = render(ws, name, commit, analysis_date, km=km)
        return _outcome(name, commit, "rendered", result.directory / "records.json")
    except TraceworkError as exc:
        return _failed(name, commit, exc.message)
    except Exception as exc:  # a worker must report, not die: the batch goes on
        log.debug("rendering %s at %s failed", name, commit[:12], exc_info=True)
        return _failed(name, commit, f"{type(exc).__name__}: {exc}")
    finally:
        if km is not None:
            shutdown(km)


def render_in_place(root: str, name: str, commit: str, analysis_date: str | None) -> BatchOutcome:
    """:func:`render_one` on a Dask worker that sees the workspace (``--shared-workspace``),
    with warm kernels where the worker runs one task at a time (as a shipped render:
    see :func:`tracework.batch.shipping.render_shipped`)."""
    from tracework.batch.shipping import WARM, worker_place

    warm = worker_place()[1] == 1 and WARM.acquire(blocking=False)
    try:
        return render_one(root, name, commit, warm, analysis_date)
    finally:
        if warm:
            WARM.release()


def start_pool_worker(root: str, parent: int, verbose: bool) -> None:
    """A pool worker's start: :func:`start_worker`, and leave when the batch is gone.

    A worker shows its debug records on stderr when the batch does (``tracework -v``):
    it is spawned, so it has none of its parent's logging set up.

    Ctrl-C is the batch's to handle: a worker ignores SIGINT (it started with SIGINT
    blocked, see :func:`_sigint_blocked`, so a Ctrl-C during its start left it alone
    too) and so do the kernel hosts it starts; the batch stops its workers itself.
    A batch killed outright (SIGKILL, or SIGTERM from a scheduler) runs no clean-up,
    so each worker watches for its parent's exit and then stops its kernel host (whose
    kernels die with it) and itself.
    """
    with suppress(ValueError, OSError, AttributeError):  # not the main thread; not POSIX
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a pending Ctrl-C is dropped too
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        with swallowed(log, "stopping the kernels of a worker whose batch is gone"):
            release()
        os._exit(1)

    if verbose:
        show(True)
    threading.Thread(target=watch, name="tracework-parent-watch", daemon=True).start()
    # the last of a worker's exit handlers: leave without tearing down the interpreter
    # (a spawned worker ends in sys.exit, which unloads nbconvert, papermill and the
    # rest for a quarter of a second that the batch would wait for)
    multiprocessing.util.Finalize(None, _leave_now, exitpriority=-100)
    start_worker(root)


def _leave_now() -> None:
    """End this worker at once, after its exit handlers ran (see above)."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):
            stream.flush()
    os._exit(0)


def start_worker(root: str) -> None:
    """Ready a worker before its first report: its first kernel starts booting, then
    papermill and nbconvert load and the report template compiles, side by side.

    Never raises: whatever fails here fails again, and is reported, in the render.
    """
    with swallowed(log, "readying a worker"):
        load_nbformat()  # before any thread: it swaps modules in sys.modules
        prestart(Path(root))
        import papermill  # noqa: F401  (its import is most of a worker's start)

        from tracework.render.export import html_exporter

        html_exporter().template  # noqa: B018  (loads and compiles the templates)


def skipped(ws: Workspace, name: str, commit: str) -> BatchOutcome:
    """The outcome of a report whose last render is current, read from its records.json."""
    return _outcome(name, commit, "skipped", ws.reports / name / commit[:12] / "records.json")


def _outcome(
    name: str, commit: str, status: Literal["rendered", "skipped"], records_json: Path
) -> BatchOutcome:
    """A rendered or skipped report's outcome, from the drift in its records.json (none
    when it cannot be read: the report's next render makes it again)."""
    records = _read(records_json, read_records)
    if records is None:
        return BatchOutcome(
            name=name,
            commit=commit,
            status=status,
            counts=dict.fromkeys(STATES, 0),
            first_changed={},
            first_content_change={},
            format_only=[],
            uncited=dict.fromkeys(STATES, 0),
            absences={},
            needs_review=[],
            changed={},
            error=None,
        )
    drift = records.drift
    cited, uncited = quote_counts(records)
    return BatchOutcome(
        name=name,
        commit=commit,
        status=status,
        counts=cited,
        first_changed=drift.first_changed,
        first_content_change=drift.first_content_change,
        format_only=drift.format_only,
        uncited=uncited,
        absences=absence_outcomes(records),
        needs_review=drift.needs_review,
        changed=changed_quotes(records),
        error=None,
    )


def _failed(name: str, commit: str, error: str) -> BatchOutcome:
    return BatchOutcome(
        name=name,
        commit=commit,
        status="failed",
        counts={},
        first_changed={},
        first_content_change={},
        format_only=[],
        uncited={},
        absences={},
        needs_review=[],
        changed={},
        error=error,
    )


def rerender(
    ws: Workspace,
    plan: dict[str, str],
    *,
    jobs: int | None = None,
    force: bool = False,
    scheduler: str | None = None,
    analysis_date: str | None = None,
    capture: bool = False,
    shared_workspace: bool = False,
    on_update: Callable[[str, str], None] = lambda name, state: None,
) -> list[BatchOutcome]:
    """Render every report of ``plan`` (name → commit); results in the plan's order.

    ``analysis_date`` (YYYY-MM-DD) overrides each notebook's parameter of that name: the
    date the evidence was checked, shown on the report and the site.  With ``capture``,
    the runtime captures each report's register cites are made again at its target first
    (the only way a batch runs subject code: asked for by name); a report whose capture
    fails is failed, and the others go on.  On a Dask ``scheduler``, each task carries
    its inputs unless ``shared_workspace`` says the workers see this workspace.
    """
    if analysis_date is not None:
        check_iso_date(analysis_date, "--analysis-date")
    results: dict[str, BatchOutcome] = {}
    if capture:
        for name, error in recapture(ws, plan, on_update).items():
            results[name] = _failed(name, plan[name], error)
            on_update(name, "failed")
    todo = []
    for name, commit in plan.items():
        if name in results:
            continue
        if not force and up_to_date(ws, name, commit, analysis_date):
            results[name] = skipped(ws, name, commit)
            on_update(name, "skipped")
        else:
            todo.append(name)
            on_update(name, "queued")
    # a worker keeps under one core busy (its kernel runs while it waits on kernel output)
    default = os.cpu_count() or 1
    workers = max(1, min(jobs or default, len(todo) or 1))
    if todo and scheduler is not None:
        results.update(
            _on_dask(ws, plan, todo, scheduler, analysis_date, on_update, shared_workspace)
        )
    elif todo and workers == 1:
        start_worker(str(ws.root))
        try:
            for name in todo:
                on_update(name, "rendering")
                results[name] = render_one(str(ws.root), name, plan[name], True, analysis_date)
                on_update(name, results[name].status)
        finally:
            release()  # the kernel booted for a next report, and the kernel host
    elif todo:
        results.update(_in_pool(ws, plan, todo, workers, analysis_date, on_update))
    return [results[name] for name in plan]


def _in_pool(
    ws: Workspace,
    plan: dict[str, str],
    todo: list[str],
    workers: int,
    analysis_date: str | None,
    on_update: Callable[[str, str], None],
) -> dict[str, BatchOutcome]:
    """Render ``todo`` in a pool of worker processes.

    On Ctrl-C (KeyboardInterrupt here; the workers ignore SIGINT) the workers are
    stopped at once rather than left to finish their renders: each one's kernel host
    and kernels die with it, and what an unfinished render staged is swept by that
    report's next render.
    """
    results: dict[str, BatchOutcome] = {}
    # spawned, not forked: a worker must not inherit the parent's threads and loops
    spawn = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=spawn,
        initializer=start_pool_worker,
        initargs=(str(ws.root), os.getpid(), shown()),
    )
    try:
        with _sigint_blocked():  # workers are spawned as jobs are submitted
            futures: dict[Future[BatchOutcome], str] = {}
            for name in todo:
                job = pool.submit(render_one, str(ws.root), name, plan[name], True, analysis_date)
                futures[job] = name
                on_update(name, "rendering")
        for future in as_completed(futures):
            name = futures[future]
            results[name] = future.result()
            on_update(name, results[name].status)
    except KeyboardInterrupt:
        for process in list((pool._processes or {}).values()):
            with suppress(OSError, ValueError):  # gone already
                process.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results


@contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Block SIGINT in this thread while worker processes start, so that they start with
    it blocked (a blocked signal stays blocked across fork and exec) until they ignore
    it: a Ctrl-C then never interrupts a worker's interpreter start-up or initializer,
    which printed tracebacks ("init_sys_streams", "Exception in initializer").  A Ctrl-C
    meanwhile is not lost: it is delivered here when the block ends (or at once to
    another of this process's threads)."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX: nothing to block
        yield
        return
    # multiprocessing's resource tracker unblocks SIGINT in this thread when it starts:
    # start it first (spawned workers need it anyway)
    with swallowed(log, "starting multiprocessing's resource tracker"):
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _on_dask(
    ws: Workspace,
    plan: dict[str, str],
    todo: list[str],
    scheduler: str,
    analysis_date: str | None,
    on_update: Callable[[str, str], None],
    shared_workspace: bool = False,
) -> dict[str, BatchOutcome]:
    """Run the renders on a Dask distributed cluster (``tracework[dask]``).

    By default each task carries what its render reads and the result is written here
    (:mod:`tracework.batch.shipping`): the workers need tracework installed, not the
    workspace.  With ``shared_workspace`` the workers see this workspace at the same
    path (a shared file system) and each render is the same function as locally.  Either
    way a worker of one thread keeps warm kernels, as a local worker does (they die with
    it, however it ends), and every worker must run this tracework version.
    """
    from tracework.batch import shipping

    try:
        from distributed import Client, as_completed
    except ImportError:
        raise TraceworkError(
            "--executor dask needs the dask extra", hint="install tracework[dask]"
        ) from None
    try:
        client = Client(scheduler, timeout=30)
    except (OSError, TimeoutError) as exc:
        raise TraceworkError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    results: dict[str, BatchOutcome] = {}
    with client:
        _same_version(client, shipping.worker_version)
        if not shared_workspace:
            events = shipping.shipped(client, as_completed, ws, plan, todo, analysis_date)
            for event in events:
                name, commit = event.name, plan[event.name]
                if not event.done:
                    on_update(name, "rendering")
                    continue
                if event.error is not None:
                    results[name] = _failed(name, commit, event.error)
                else:
                    records = ws.reports / name / commit[:12] / "records.json"
                    results[name] = _outcome(name, commit, "rendered", records)
                on_update(name, results[name].status)
            return results
        futures = {
            client.submit(
                render_in_place, str(ws.root), name, plan[name], analysis_date, pure=False
            ): name
            for name in todo
        }
        for name in todo:
            on_update(name, "rendering")
        for future in as_completed(futures):
            name = futures[future]
            try:
                results[name] = future.result()
            except Exception as exc:  # the task itself failed: a worker lost, say
                error = f"the Dask task failed: {type(exc).__name__}: {exc}"
                results[name] = _failed(name, plan[name], error)
            on_update(name, results[name].status)
    return results


def _same_version(client: Any, version: Callable[[], str]) -> None:
    """Refuse a cluster whose workers run another tracework (or none): what they render
    would say another version made it, and every next batch would render it again."""
    try:
        versions = client.run(version)
    except Exception as exc:  # the function cannot be loaded there: no tracework
        raise TraceworkError(
            f"the Dask workers cannot run tracework: {type(exc).__name__}: {exc}",
            hint=f"install tracework[dask] {__version__} on every worker",
        ) from None
    for address, theirs in sorted(versions.items()):
        if theirs != __version__:
            raise TraceworkError(
                f"the Dask worker at {address} runs tracework {theirs}, this machine {__version__}",
                hint="install the same version on every worker",
            )
