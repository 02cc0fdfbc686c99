"""Atomic writes and file locks: nothing half-written, nothing lost to a race."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder and a rename.

    A reader sees the old file or the new one, never a mix; a crash leaves the old
    file in place (and at worst a stray ``.tmp`` file beside it).
    """
    import tempfile  # with shutil, ~3 ms of every command's start-up; only writers need them

    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600; give the file the mode it had, or what open() would give
        os.chmod(tmp, _mode_for(path))
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is None:  # a full disk says so without naming the file
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode_for(path: Path) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~_umask()


class LockTimeout(TimeoutError):
    """Another process held the lock for longer than the caller would wait."""


@contextmanager
def locked(path: Path, timeout: float = 60.0) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (a ``.NAME.lock`` file beside it) while the
    block runs, waiting at most ``timeout`` seconds for another process to let it go.

    ``flock(2)``, as :func:`held` uses, polled: what the filelock package does on POSIX
    (the only platform the sandbox runs on), without its ~15 ms of imports on every
    command that writes.  The kernel releases the lock when its process dies, even by
    SIGKILL, so a crash never leaves a workspace locked."""
    import fcntl
    import time

    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW  # a lock is never a link
    fd = os.open(path.parent / f".{path.name}.lock", flags, 0o666)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"{path} is locked by another process") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock


def staging_dir(parent: Path, name: str) -> Path:
    """A new, empty folder beside where ``name`` will go, with the mode a plain ``mkdir``
    would give (``mkdtemp``'s 0700 would otherwise stay on the published folder)."""
    import tempfile

    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".staging", dir=parent))
    os.chmod(staging, 0o777 & ~_umask())
    return staging


@contextmanager
def held(folder: Path) -> Iterator[None]:
    """Hold an flock on ``folder`` while the block runs: the sign, to
    :func:`sweep_staging`, that the process that made it still works in it (the kernel
    drops the lock when a process dies, even by SIGKILL)."""
    import fcntl

    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


#: A staging folder younger than this is never swept: its maker may not hold it yet.
STAGING_GRACE_SECONDS = 60.0


def sweep_staging(parent: Path, name: str | None = None) -> list[Path]:
    """Remove the staging folders in ``parent`` that no live process holds (see
    :func:`held`): what a writer killed outright left.  With ``name``, only that name's
    (``.NAME.<random>.staging``, as :func:`staging_dir` makes them): for a parent that is
    not tracework's alone, such as publish's ``--out``'s.  Returns what it removed."""
    import fcntl
    import shutil
    import time

    removed = []
    for folder in sorted(parent.glob(".*.staging")):
        if name is not None and not _staging_of(folder.name, name):
            continue
        try:
            if time.time() - folder.lstat().st_mtime < STAGING_GRACE_SECONDS:
                continue
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue  # gone meanwhile, or not a folder of ours
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue  # a live render's
        try:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        finally:
            os.close(fd)
    return removed


def _staging_of(folder: str, name: str) -> bool:
    """Whether ``folder`` is a name :func:`staging_dir` gives for ``name`` (its random part
    has no dot, so ``.site.x.<random>.staging`` is not one of ``site``'s)."""
    prefix, suffix = f".{name}.", ".staging"
    if not (folder.startswith(prefix) and folder.endswith(suffix)):
        return False
    middle = folder[len(prefix) : -len(suffix)]
    return len(folder) > len(prefix) + len(suffix) and "." not in middle


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def replace_dir(staging: Path, final: Path) -> None:
    """Swap a finished staging folder in for ``final``: the old folder is renamed aside,
    the new one renamed in, the old one removed.  A failure leaves the old folder; for
    the instant between the two renames neither exists (two folders cannot be swapped
    in one rename).  The caller holds ``locked(final)``."""
    import shutil

    old = final.with_name(f".{final.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.replace(final, old)
    os.replace(staging, final)
    shutil.rmtree(old, ignore_errors=True)
