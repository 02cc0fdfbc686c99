"""A writer's folder replaced whole: built in a staging folder beside it, swapped in when
complete, or kept as ``failed-<name>`` for diagnosis, but only in place of a failed folder
that writer made.

Render (``reports/NAME/<commit12>``), capture (``captures/NAME/<commit12>``) and publish
(the site) all write this way, next to folders an analyst may have made, so what may be
replaced or removed is decided here, once.  A ``failed-<name>`` that is a symbolic link, a
file, or a folder holding anything the writer does not write is never followed, written
through or removed, and the run's own error stays the message: a capture once deleted an
analyst's file there, and a symbolic link there hid the harness's error behind "Not a
directory".  The file primitives (staging names, flocks, the swap) are in
:mod:`tracework.fsio`.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tracework.fsio import held, locked, replace_dir, staging_dir, sweep_staging


@dataclass(frozen=True)
class Kept:
    """Where :meth:`Staging.keep_failed` kept a failed run's folder, or why it could not."""

    folder: Path  # the failed-<name> folder
    in_the_way: str | None = None  # what is there instead, in words; None: kept there

    @property
    def kept(self) -> bool:
        return self.in_the_way is None


class Staging:
    """The staging of ``parent/name`` by one writer, which puts the top-level names
    ``writes`` in its folders (what makes a ``failed-<name>`` one of its own).

    In order: :meth:`sweep` what a killed writer left; in a :meth:`hold` block, write into
    the folder it gives, then :meth:`swap` it in (and :meth:`drop_failed`) or, on a failure,
    :meth:`keep_failed`; whatever neither placed is removed when the block ends.  A writer
    that must hold the final's lock throughout (capture, publish) wraps this in
    :meth:`locked`; :meth:`swap` takes the lock otherwise.
    """

    def __init__(self, parent: Path, name: str, writes: frozenset[str] = frozenset()) -> None:
        self.parent = parent
        self.name = name
        self.writes = writes
        self.final = parent / name
        self.failed = parent / f"failed-{name}"
        self._folder: Path | None = None
        self._live = False  # the staging folder is there, neither swapped in nor kept
        self._locking = 0

    @property
    def folder(self) -> Path:
        """The staging folder :meth:`hold` made (after a swap or a keep, where it was)."""
        if self._folder is None:
            raise RuntimeError("no staging folder: use it inside Staging.hold()")
        return self._folder

    def sweep(self, *, every_name: bool = True) -> list[Path]:
        """Remove the staging folders beside ``name`` that no live process holds: every
        name's, or only this name's where the parent is not tracework's alone."""
        return sweep_staging(self.parent, None if every_name else self.name)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the final folder's lock (:func:`tracework.fsio.locked`)."""
        with locked(self.final):
            self._locking += 1
            try:
                yield
            finally:
                self._locking -= 1

    @contextmanager
    def hold(self) -> Iterator[Path]:
        """Make the staging folder and hold its flock (the sign to a sweep that it is in
        use) while the block runs; on leaving, remove it unless swapped in or kept."""
        self.parent.mkdir(parents=True, exist_ok=True)
        self._folder = staging_dir(self.parent, self.name)
        self._live = True
        try:
            with held(self._folder):
                yield self._folder
        finally:
            self.discard()

    def discard(self) -> None:
        """Remove the staging folder, unless it was swapped in or kept."""
        if self._live:
            shutil.rmtree(self.folder, ignore_errors=True)
            self._live = False

    def swap(self) -> None:
        """Swap the staging folder in for the final one, under the final's lock (taken
        here unless a :meth:`locked` block holds it)."""
        folder = self._staged()
        if self._locking:
            replace_dir(folder, self.final)
        else:
            with locked(self.final):
                replace_dir(folder, self.final)
        self._live = False

    def keep_failed(self) -> Kept:
        """Keep the staging folder as ``failed-<name>``, beside (never over) the final one.

        An earlier failed folder of this writer's is replaced; anything else there is left
        as it is, the staging folder is removed, and the answer says what is in the way.
        """
        folder = self._staged()
        in_the_way = self.in_the_way()
        if in_the_way is None:
            try:
                if os.path.lexists(self.failed):
                    shutil.rmtree(self.failed)  # refuses a symbolic link put there meanwhile
                os.replace(folder, self.failed)
            except OSError as exc:
                in_the_way = f"in the way ({exc.strerror or exc})"
            else:
                self._live = False
                return Kept(self.failed)
        self.discard()
        return Kept(self.failed, in_the_way)

    def drop_failed(self) -> bool:
        """Remove ``failed-<name>`` (a good run made it history) when it is one this
        writer kept; never a link, a file or a folder of other files.  Whether it did."""
        if os.path.lexists(self.failed) and self.in_the_way() is None:
            shutil.rmtree(self.failed, ignore_errors=True)
            return True
        return False

    def in_the_way(self) -> str | None:
        """What ``failed-<name>`` is when it is not a failed folder this writer kept, in
        words; None when nothing is there or it is one of ours.  Only the top level is
        read: what is inside a folder of ours (``transcripts/``, ``run-2/``) is ours."""
        try:
            mode = self.failed.lstat().st_mode
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(mode):
            return f"a symbolic link (to {os.readlink(self.failed)})"
        if not stat.S_ISDIR(mode):
            return "a file, not a folder"
        try:
            others = sorted(set(os.listdir(self.failed)) - self.writes)
        except OSError as exc:
            return f"a folder tracework cannot read ({exc.strerror or exc})"
        if others:
            return f"a folder tracework did not write (it holds {', '.join(others[:3])})"
        return None

    def _staged(self) -> Path:
        if not self._live:
            raise RuntimeError("the staging folder was already swapped in, kept or removed")
        return self.folder
