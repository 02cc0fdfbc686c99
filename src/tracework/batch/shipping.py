"""Renders on Dask workers that cannot see the workspace: each task carries its inputs.

A cluster rented by the hour (Kubernetes, cloud VMs) has no file system its workers share
with the machine that starts the batch, so ``rerender --executor dask`` sends each render
what it reads and gets back what it wrote; only the calling machine touches the workspace.

What a task carries (:class:`Packer`), as files at their workspace paths:

- the report's own: ``notebooks/NAME.ipynb``, ``registers/NAME.yaml`` (the YAML, not its
  compiled copy: that copy is sealed with a key of this user's, which a worker does not
  hold), ``reports/NAME/history.json`` and the documents its register cites;
- what every report shares: ``tracework.toml`` (the render's limits), ``uv.lock`` when the
  workspace has one (the manifest pins it), every rubric, and every subject and capture
  declaration (``sources/*.toml``, ``captures/*.toml``: small, and the messages that list
  them stay the same);
- each capture the register cites: every capture made of it (``captures/CAP/<commit12>/``:
  a render compares with the capture at the target and with earlier ones);
- each subject's mirror as a git bundle of all its refs and the commits the renders start
  from (:func:`bundle`).  Not the blobs of the commits it reads alone: a render reads more
  commits than its pin and target (the first-change search bisects into branches merged
  since the pin, review stamps and earlier captures name their own commits), and an
  object left out would not fail the render but read as "not in the mirror" and change
  the report.  A bundle is sent once per subject and batch (``scatter``) and unpacked
  once per worker, with every object checked (``index-pack --strict``, fetch's fsck).

Who computes what.  The worker runs :func:`~tracework.render.pipeline.render` itself,
unchanged, in a scratch workspace holding those files (:func:`render_shipped`; a worker of
one thread keeps a kernel booted for its next report, as a local worker does): the
executed notebook, records.json (drift and first changes included), manifest.json and
report.html, whose history section it builds from the history shipped with it, as a local
render builds it from the history it read before its kernel started.  The calling machine
checks what came back (:func:`deliver`: only the files a render writes, the inputs it sent
hashed in the manifest, the same tracework version) and writes it as a local render does:
under the report's render lock, through the same staging folder and swap, and then
history.json, computed here from the history as it is now under its lock and the returned
records.json, with the same function a local render uses.  The same inputs therefore give
the same bytes in every file; a failed render keeps its executed notebook in
``failed-<commit12>/`` here, and its error is the local render's, naming this workspace's
paths.

Nothing runs on a worker but the render and its kernel; no network but Dask's connection.
The batch (:func:`shipped`) keeps a few tasks per worker thread in flight, so its memory
does not grow with the number of reports.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from tracework.errors import TraceworkError
from tracework.fsio import locked, write_atomic
from tracework.git.env import run_git
from tracework.git.subjects import open_mirror
from tracework.hashing import is_document_url, sha256_hex
from tracework.readers import DataError
from tracework.records.artefacts import read_manifest, read_records, write_history
from tracework.register.models import CaptureSource, DocumentSource, GitSource
from tracework.register.store import load
from tracework.render.history import history_entry, read_history, with_entry
from tracework.render.inputs import inputs_key
from tracework.render.pipeline import RENDER_FILES
from tracework.staging import Staging
from tracework.version import __version__
from tracework.workspace import MARKER, Workspace

log = logging.getLogger(__name__)

#: Bytes of a report's own files sent inside its task; more go ahead (``scatter``), as
#: Dask asks of large arguments.
INLINE = 1 << 20

#: What every render writes; ``diagrams/`` and ``assets/`` only with diagrams.
REQUIRED = ("report.ipynb", "records.json", "manifest.json", "report.html")


@dataclass(frozen=True)
class Files:
    """Workspace files for a worker: each POSIX path relative to the workspace root, with
    its bytes.  ``key`` names the set by content, so a set many reports share (the
    rubrics, a capture) is sent once."""

    files: tuple[tuple[str, bytes], ...]
    key: str

    @classmethod
    def of(cls, files: dict[str, bytes]) -> Files:
        items = tuple(sorted(files.items()))
        digest = hashlib.sha256()
        for rel, data in items:
            digest.update(f"{rel}\0{len(data)}\0".encode())
            digest.update(data)
        return cls(items, digest.hexdigest())


@dataclass(frozen=True)
class Mirror:
    """A subject's mirror as a git bundle (every ref, and the commits named), with the
    branch its HEAD names."""

    subject: str
    bundle: bytes
    head: str | None
    key: str


@dataclass(frozen=True)
class Parcel:
    """One render's task: what to render, and how to name this workspace in its error
    (``root``: the calling machine's path, a string the worker never opens)."""

    name: str
    commit: str
    analysis_date: str | None
    root: str
    version: str = __version__


@dataclass(frozen=True)
class Expected:
    """What the calling machine checks a returned render against: the hashes of the
    inputs it sent."""

    notebook_sha256: str
    register_sha256: str
    inputs_sha256: str


@dataclass(frozen=True)
class Returned:
    """What a worker sends back: the render's folder (paths relative to it), or its
    error and the folder a failed render keeps.  tracework's own assets (the Mermaid
    library, report.js) come back as digests: the calling machine writes its copies."""

    name: str
    commit: str
    version: str
    files: dict[str, bytes] = field(default_factory=dict)
    assets: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    kept: dict[str, bytes] = field(default_factory=dict)


# -- the calling machine: what each task carries ---------------------------------------


@dataclass(frozen=True)
class Task:
    """One report packed: its parcel, the parts it needs (by key) and what to check its
    result against."""

    parcel: Parcel
    needs: tuple[str, ...]
    expected: Expected


class Packer:
    """Packs the batch's reports one at a time, as they are sent (so a batch of hundreds
    holds only the tasks in flight): what a task carries is in the module's docstring.

    What cannot be read is left out, and the render on the worker says so as a local one
    would (no notebook, a broken register); a mirror that cannot be bundled fails the
    reports that need it, with git's reason.  Parts many reports share (the common files,
    a capture, a mirror) are made once and kept in :attr:`parts` by key."""

    def __init__(
        self, ws: Workspace, plan: dict[str, str], todo: list[str], analysis_date: str | None
    ) -> None:
        self.ws, self.plan, self.analysis_date = ws, plan, analysis_date
        self.parts: dict[str, Files | Mirror] = {}
        self._common = self._add(Files.of(_common_files(ws)))
        self._captures: dict[str, str] = {}
        self._mirrors: dict[str, str | TraceworkError] = {}
        self._commits = _commits_by_subject(ws, plan, todo)

    def _add(self, part: Files | Mirror) -> str:
        self.parts.setdefault(part.key, part)
        return part.key

    def pack(self, name: str) -> Task | str:
        """Report ``name``'s task, or why it cannot be sent (its one-line error)."""
        ws, commit = self.ws, self.plan[name]
        mine = _report_files(ws, name)
        needs = [self._common]
        try:
            register = load(ws.registers / f"{name}.yaml")
        except TraceworkError:
            register = None  # the worker's render names the problem
        subjects: set[str] = set()
        for source in register.sources.values() if register is not None else ():
            if isinstance(source, GitSource):
                subjects.add(source.subject)
            elif isinstance(source, CaptureSource):
                subjects.add(source.subject)
                if source.capture not in self._captures:
                    files = Files.of(_capture_files(ws, source.capture))
                    self._captures[source.capture] = self._add(files)
                needs.append(self._captures[source.capture])
            elif isinstance(source, DocumentSource) and not is_document_url(source.location):
                data = _document(ws.root, source.location)
                if data is not None:
                    mine[PurePosixPath(source.location).as_posix()] = data
        for subject in sorted(subjects):
            if subject not in self._mirrors:
                try:
                    made = bundle(ws, subject, self._commits.get(subject, ()))
                    self._mirrors[subject] = self._add(made)
                except TraceworkError as exc:
                    self._mirrors[subject] = exc
            got = self._mirrors[subject]
            if isinstance(got, TraceworkError):
                return got.message
            needs.append(got)
        expected = Expected(
            sha256_hex(mine.get(f"notebooks/{name}.ipynb", b"")),
            sha256_hex(mine.get(f"registers/{name}.yaml", b"")),
            inputs_key(ws, name, commit, self.analysis_date),
        )
        own = Files.of(mine)
        self.parts[own.key] = own  # sent with this task alone: see :func:`shipped`
        parcel = Parcel(name, commit, self.analysis_date, str(ws.root))
        return Task(parcel, (*needs, own.key), expected)


def _common_files(ws: Workspace) -> dict[str, bytes]:
    """What every render reads of the workspace: settings, lock, rubrics, declarations."""
    files: dict[str, bytes] = {}
    for rel in (MARKER, "uv.lock"):
        _read_into(files, ws.root, rel)
    for folder, pattern in (("registers/rubrics", "*.yaml"), ("sources", "*.toml")):
        for path in sorted((ws.root / folder).glob(pattern)):
            if not path.name.startswith("."):
                _read_into(files, ws.root, f"{folder}/{path.name}")
    for path in sorted(ws.captures.glob("*.toml")):
        _read_into(files, ws.root, f"captures/{path.name}")
    return files


def _report_files(ws: Workspace, name: str) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for rel in (
        f"notebooks/{name}.ipynb",
        f"registers/{name}.yaml",
        f"reports/{name}/history.json",
    ):
        _read_into(files, ws.root, rel)
    return files


def _capture_files(ws: Workspace, capture: str) -> dict[str, bytes]:
    """Every capture made of ``capture`` (``captures/CAP/<commit12>/``): not what a writer
    is staging, a failed run's folder, locks, nor a symbolic link."""
    files: dict[str, bytes] = {}
    top = ws.captures / capture
    if top.is_symlink() or not top.is_dir():
        return files
    for made in sorted(top.iterdir()):
        if made.name.startswith((".", "failed-")) or made.is_symlink() or not made.is_dir():
            continue
        for path in _regular_files(made):
            _read_into(files, ws.root, path.relative_to(ws.root).as_posix())
    return files


def _regular_files(folder: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(folder):  # never follows links
        dirnames.sort()
        for filename in sorted(filenames):
            path = Path(dirpath) / filename
            if stat.S_ISREG(path.lstat().st_mode):
                yield path


def _read_into(files: dict[str, bytes], root: Path, rel: str) -> None:
    """The regular file at ``rel``, if there is one (a link is not followed)."""
    path = root / rel
    with suppress(OSError):
        if stat.S_ISREG(path.lstat().st_mode):
            files[rel] = path.read_bytes()


def _document(root: Path, location: str) -> bytes | None:
    """A document source's bytes, read as the check hashes it: a regular file inside the
    workspace (after links), else none (the worker's check then finds it missing)."""
    base = root.resolve()
    try:
        real = (base / location).resolve(strict=True)
        if base not in real.parents or not real.is_file():
            return None
        return real.read_bytes()
    except (OSError, RuntimeError):
        return None


def _commits_by_subject(
    ws: Workspace, plan: dict[str, str], todo: list[str]
) -> dict[str, set[str]]:
    """The commits each subject's renders start from (targets, pins, captures' commits):
    bundled even when no ref reaches them any longer."""
    found: dict[str, set[str]] = {}
    for name in todo:
        with suppress(TraceworkError):
            sources = list(load(ws.registers / f"{name}.yaml").sources.values())
            gits = [s for s in sources if isinstance(s, GitSource)]
            if gits:
                found.setdefault(gits[0].subject, set()).add(plan[name])
            for source in sources:
                if isinstance(source, GitSource | CaptureSource):
                    found.setdefault(source.subject, set()).add(source.commit)
    return found


def bundle(ws: Workspace, subject: str, commits: Iterable[str] = ()) -> Mirror:
    """The subject's mirror as a git bundle: every ref (branches, tags, the pins tracework
    keeps), HEAD, and ``commits`` (full ids) with all they reach."""
    mirror = open_mirror(ws, subject)
    named = sorted(commits)
    data = run_git(mirror.git_dir, ["bundle", "create", "-", "--all", *named]).stdout
    head = mirror.head_branch()
    digest = hashlib.sha256(data)
    digest.update(f"\0{head or ''}".encode())
    return Mirror(subject, data, head, digest.hexdigest())


# -- the worker --------------------------------------------------------------------------


def worker_version() -> str:
    """The tracework version a Dask worker runs (asked before anything is sent)."""
    return __version__


#: Held by the render that uses this worker's warm kernels (one at a time).
WARM = threading.Lock()


def render_shipped(parcel: Parcel, *parts: Files | Mirror) -> Returned:
    """Render ``parcel`` in a scratch workspace made of ``parts`` on this worker; never
    raises for a report's failure.

    On a worker of one thread the scratch workspace is the same folder every time
    (emptied before and after), so that the next report's kernel boots while this one
    renders, forked from a kernel host, as in a local batch (each kernel still runs one
    notebook; both die with the worker, however it ends).  A worker running tasks side
    by side gives each its own folder, removed afterwards, and a cold kernel."""
    from tracework.kernels.warm import next_kernel, shutdown
    from tracework.render.pipeline import render

    base, threads = worker_place()
    warm = threads == 1 and WARM.acquire(blocking=False)
    if warm:
        scratch = base / "tracework-scratch"
        _empty(scratch / "ws")
    else:
        scratch = Path(tempfile.mkdtemp(prefix="tracework-render-", dir=base))
    root = scratch / "ws"
    km = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        for part in parts:
            if isinstance(part, Files):
                for rel, data in part.files:
                    path = root / _safe(rel)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(data)
        mirrors = root / "sources" / ".mirrors"
        for part in parts:
            if isinstance(part, Mirror):
                mirrors.mkdir(parents=True, exist_ok=True)
                (mirrors / f"{part.subject}.git").symlink_to(installed(base, part))
        ws = Workspace(root)
        try:
            km = next_kernel(root) if warm else None
            result = render(ws, parcel.name, parcel.commit, parcel.analysis_date, km=km)
        except TraceworkError as exc:
            error = exc.message
        except Exception as exc:  # as a local worker does: the batch goes on
            log.debug("rendering %s failed", parcel.name, exc_info=True)
            error = f"{type(exc).__name__}: {exc}"
        else:
            files, assets = _outputs(result.directory)
            return Returned(parcel.name, parcel.commit, __version__, files, assets)
        kept = ws.reports / parcel.name / f"failed-{parcel.commit[:12]}"
        return Returned(
            parcel.name,
            parcel.commit,
            __version__,
            error=error.replace(str(root), parcel.root),
            kept=_folder_files(kept) if kept.is_dir() else {},
        )
    except TraceworkError as exc:  # the scratch workspace could not be made
        return Returned(parcel.name, parcel.commit, __version__, error=exc.message)
    except OSError as exc:
        return Returned(
            parcel.name,
            parcel.commit,
            __version__,
            error=f"the Dask worker cannot make its scratch workspace: {exc.strerror or exc}",
        )
    finally:
        if km is not None:
            shutdown(km)
        if warm:
            _empty(root)  # the folder stays: the next kernel, booting, works in it
            WARM.release()
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def _empty(folder: Path) -> None:
    """Remove what is in ``folder`` (links themselves, never what they point to)."""
    with suppress(FileNotFoundError):
        for child in folder.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                with suppress(OSError):
                    child.unlink()


def worker_place() -> tuple[Path, int]:
    """Where this worker keeps scratch workspaces and unpacked mirrors (the Dask worker's
    own folder, removed with the worker; else the temporary folder), and how many tasks
    it runs at once (0: not a Dask worker)."""
    try:
        from distributed import get_worker

        worker = get_worker()
        return Path(worker.local_directory), int(worker.state.nthreads)
    except (ImportError, ValueError, AttributeError):  # not on a Dask worker
        return Path(tempfile.gettempdir()), 0


def _outputs(folder: Path) -> tuple[dict[str, bytes], dict[str, str]]:
    """The render's files; tracework's own assets as their digests (if they are ours)."""
    files = _folder_files(folder)
    assets = {}
    for rel, own in own_assets().items():
        data = files.get(rel)
        if data is not None and own is not None and data == own:
            assets[rel] = sha256_hex(files.pop(rel))
    return files, assets


@cache
def own_assets() -> dict[str, bytes | None]:
    """tracework's own files a render copies into ``assets/``, as this install has them
    (read once per process)."""
    from tracework.render.notebooks import load_nbformat

    load_nbformat()  # before the export module imports it: not the grammar nbformat skips
    from tracework.render.export import mermaid_js, report_js

    bundle = mermaid_js()
    return {
        "assets/mermaid.min.js": bundle.read_bytes() if bundle is not None else None,
        "assets/report.js": report_js().read_bytes(),
    }


def _folder_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in _regular_files(folder)}


def installed(base: Path, mirror: Mirror) -> Path:
    """The bare repository unpacked from ``mirror`` on this worker, once per bundle:
    every object checked as fetch checks it (``index-pack --strict``), then the refs."""
    cache = base / "tracework-mirrors"
    final = cache / f"{mirror.key}.git"
    cache.mkdir(parents=True, exist_ok=True)
    with locked(final, timeout=3600):
        if final.is_dir():
            return final
        fmt, refs, pack = _read_bundle(mirror)
        work = Path(tempfile.mkdtemp(prefix=f".{mirror.key[:12]}.", dir=cache))
        try:
            run_git(None, ["init", "-q", "--bare", f"--object-format={fmt}", str(work)])
            run_git(work, ["index-pack", "--strict", "--stdin"], input=pack)
            updates = "".join(f"create {ref} {oid}\n" for ref, oid in refs if ref != "HEAD")
            run_git(work, ["update-ref", "--stdin"], input=updates.encode())
            if mirror.head and any(ref == mirror.head for ref, _ in refs):
                run_git(work, ["symbolic-ref", "HEAD", mirror.head])
            os.replace(work, final)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    return final


def _read_bundle(mirror: Mirror) -> tuple[str, list[tuple[str, str]], bytes]:
    """A bundle's object format, refs and pack (see ``gitformat-bundle``): complete (no
    prerequisites), or refused."""
    data = mirror.bundle
    head, sep, pack = data.partition(b"\n\n")
    lines = head.decode("utf-8", errors="replace").split("\n")
    if not sep or lines[0] not in ("# v2 git bundle", "# v3 git bundle"):
        raise TraceworkError(f"the mirror of {mirror.subject} sent is not a git bundle")
    fmt, refs = "sha1", []
    for line in lines[1:]:
        if line.startswith("@object-format="):
            fmt = line.removeprefix("@object-format=")
        elif line.startswith("-"):
            raise TraceworkError(f"the bundle of {mirror.subject} needs objects it lacks")
        elif line and not line.startswith("@"):
            oid, _, ref = line.partition(" ")
            refs.append((ref, oid))
    return fmt, refs, pack


def _safe(rel: str) -> str:
    """A path a parcel or a worker names: relative, without ``..`` or empty parts."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or "\\" in rel or any(p in ("", ".", "..") for p in parts):
        raise TraceworkError(f"{rel!r} is not a path inside the workspace")
    return rel


# -- the calling machine: what came back -------------------------------------------------


def deliver(ws: Workspace, parcel: Parcel, returned: Returned, expected: Expected) -> str | None:
    """Check what a worker returned for ``parcel`` and write it as a local render writes
    its own: under the report's render lock, through a staging folder swapped in, then
    history.json.  None when written, else the report's one-line error.  A failed
    render's executed notebook is kept as a local render keeps it."""
    name, commit = parcel.name, parcel.commit
    out_root = ws.reports / name
    with locked(out_root / f"{commit[:12]}.render", timeout=3600):
        if not isinstance(returned, Returned) or (returned.name, returned.commit) != (name, commit):
            return f"the Dask worker's render of {name} returned another report's result"
        if returned.version != __version__:
            return _other_version(returned.version)
        if returned.error is not None:
            _keep_failed(out_root, commit, returned.kept)
            return returned.error
        problem = _wrong_files(returned)
        if problem is not None:
            return f"the Dask worker's render of {name} returned {problem}"
        return _publish(ws, returned, expected)


def _other_version(version: str) -> str:
    return (
        f"the Dask worker runs tracework {version}, this machine {__version__}: "
        "install the same version on every worker"
    )


def _wrong_files(returned: Returned) -> str | None:
    """What is wrong with the files a worker returned, if anything: only what a render
    writes, at paths inside its folder, each of tracework's assets the one installed here."""
    for rel in [*returned.files, *returned.assets]:
        try:
            _safe(rel)
        except TraceworkError:
            return f"a file at {rel!r}"
        if rel.split("/")[0] not in RENDER_FILES:
            return f"{rel}, which no render writes"
    missing = [r for r in REQUIRED if r not in returned.files]
    if missing:
        return f"no {missing[0]}"
    own = own_assets() if returned.assets else {}
    for rel, digest in returned.assets.items():
        mine = own.get(rel)
        if mine is None or sha256_hex(mine) != digest:
            return f"{rel} other than this machine's tracework has"
    return None


def _publish(ws: Workspace, returned: Returned, expected: Expected) -> str | None:
    """Write the returned render as :func:`~tracework.render.pipeline.render` writes its
    own (a failed write names the report's file; the previous good report stays)."""
    name, commit = returned.name, returned.commit
    out_root = ws.reports / name
    history_path = out_root / "history.json"
    try:
        read_history(history_path)  # a broken history stops us before anything is written
        out_root.mkdir(parents=True, exist_ok=True)
        stage = Staging(out_root, commit[:12], RENDER_FILES)
        shown = stage.final.relative_to(ws.root).as_posix()
        stage.sweep()
        with stage.hold() as staging:
            try:
                own = own_assets() if returned.assets else {}
                for rel, data in sorted(returned.files.items()):
                    write_atomic(staging / rel, data)
                for rel in sorted(returned.assets):
                    write_atomic(staging / rel, own.get(rel) or b"")
            except OSError as exc:
                return _write_failed(exc, staging, shown)
            problem = _wrong_render(staging, returned, expected)
            if problem is not None:
                return f"the Dask worker's render of {name} {problem}"
            records = read_records(staging / "records.json")
            stage.swap()
            stage.drop_failed()
            with locked(history_path):
                entries = with_entry(read_history(history_path), history_entry(records))
                try:
                    write_history(history_path, entries)
                except OSError as exc:
                    return _write_failed(exc, staging, shown)
    except TraceworkError as exc:
        return exc.message
    return None


def _wrong_render(staging: Path, returned: Returned, expected: Expected) -> str | None:
    """Whether the render is of the commit asked for, from the inputs sent."""
    try:
        manifest = read_manifest(staging / "manifest.json")
        records = read_records(staging / "records.json")
    except (DataError, ValidationError, OSError) as exc:
        what = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return f"returned a manifest.json or records.json that is not tracework's ({what})"
    if manifest.commit != returned.commit or records.commit != returned.commit:
        return f"rendered commit {manifest.commit[:12]}, not {returned.commit[:12]}"
    if (manifest.notebook_sha256, manifest.register_sha256, manifest.inputs_sha256) != (
        expected.notebook_sha256,
        expected.register_sha256,
        expected.inputs_sha256,
    ):
        return (
            "read other inputs than were sent (the notebook, register, rubrics or a capture "
            "changed while the report rendered)"
        )
    return None


def _write_failed(exc: OSError, staging: Path, shown: str) -> str:
    """A refused write as the message naming the report's file (never the staging
    folder), as a local render says it."""
    target = Path(exc.filename) if exc.filename else None
    if target is not None and target.is_relative_to(staging):
        named = f"{shown}/{target.relative_to(staging).as_posix()}"
    else:
        named = str(target) if target is not None else shown
    return f"cannot write {named}: {exc.strerror or exc}"


def _keep_failed(out_root: Path, commit: str, kept: dict[str, bytes]) -> None:
    """Keep a failed render's executed notebook in ``failed-<commit12>/`` beside the good
    report, as a local render does (never over what tracework did not write there)."""
    if "report.ipynb" not in kept or any(
        rel.split("/")[0] not in RENDER_FILES or not _is_safe(rel) for rel in kept
    ):
        return
    out_root.mkdir(parents=True, exist_ok=True)
    stage = Staging(out_root, commit[:12], RENDER_FILES)
    stage.sweep()
    with suppress(OSError), stage.hold() as staging:
        for rel, data in sorted(kept.items()):
            write_atomic(staging / rel, data)
        stage.keep_failed()


def _is_safe(rel: str) -> bool:
    try:
        _safe(rel)
    except TraceworkError:
        return False
    return True


# -- the batch ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """What :func:`shipped` reports: a report sent (``done`` false), or finished and
    written here (``error`` None) or failed with its one-line error."""

    name: str
    done: bool
    error: str | None = None


def shipped(
    client: Any,
    as_completed: Any,
    ws: Workspace,
    plan: dict[str, str],
    todo: list[str],
    analysis_date: str | None,
) -> Iterator[Event]:
    """Render ``todo`` on the cluster of ``client``, each task carrying its inputs.

    Parts shared by many reports are sent once (``scatter``) and kept for the batch; a
    report's own files go inside its task (ahead of it when large) and are let go when it
    is done.  Only a few tasks per worker thread are in flight at once, so the batch's
    memory, here and on the cluster, does not grow with the number of reports.  Each
    result is checked and written here (:func:`deliver`) as it arrives."""
    packer = Packer(ws, plan, todo, analysis_date)
    sent: dict[str, Any] = {}  # shared parts, scattered once: key → future
    queue = list(todo)
    running: dict[Any, Task] = {}
    pending = as_completed()

    def window() -> int:
        try:
            threads = int(sum(client.nthreads().values()))
        except Exception:  # a scheduler that does not say: a small window
            threads = 0
        return max(4, 3 * threads)

    def send() -> Iterator[Event]:
        limit = window()
        while queue and len(running) < limit:
            name = queue.pop(0)
            try:
                task = packer.pack(name)
            except TraceworkError as exc:
                task = exc.message
            if isinstance(task, str):
                yield Event(name, True, task)
                continue
            for key in task.needs[:-1]:
                if key not in sent:
                    sent[key] = client.scatter(packer.parts[key], hash=False)
            mine: Any = packer.parts.pop(task.needs[-1])
            if sum(len(data) for _, data in mine.files) > INLINE:
                mine = client.scatter(mine, hash=False)
            args = [sent[key] for key in task.needs[:-1]] + [mine]
            future = client.submit(render_shipped, task.parcel, *args, pure=False)
            running[future] = task
            pending.add(future)
            yield Event(name, False)

    yield from send()
    for future in pending:
        task = running.pop(future)
        name = task.parcel.name
        try:
            returned = future.result()
        except Exception as exc:  # the task itself failed: a worker lost, say
            error: str | None = f"the Dask task failed: {type(exc).__name__}: {exc}"
        else:
            try:
                error = deliver(ws, task.parcel, returned, task.expected)
            except TraceworkError as exc:
                error = exc.message
            except Exception as exc:  # as a local worker: one report fails, the batch goes on
                log.debug("writing %s failed", name, exc_info=True)
                error = f"{type(exc).__name__}: {exc}"
        future.release()
        yield Event(name, True, error)
        yield from send()
