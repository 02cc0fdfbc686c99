"""A control group for one sandbox, where the machine lets tracework make one.

Resource limits (``setrlimit``) bind each process alone: three processes under
``memory_mib = 1024`` may hold 3 GiB between them, and the private ``/tmp``'s files
cost kernel memory that no limit of a process counts.  A control group bounds the
sandbox as a whole: its memory (the pages of its ``/tmp`` included, and the kernel's
own for its files) and the number of its processes.  tracework makes one below the
group it runs in, for each run, when that group lets it (cgroup v2 with the memory
and pids controllers delegated, or the v1 memory and pids hierarchies writable, as
for root); otherwise the per-process limits alone are in force, and the capture's
manifest says which it was.

The sandbox's starter joins the group before it starts (``sh`` writes its own pid,
then execs the starter), so every process of the sandbox is born in it.  When the
run ends, whatever is left in the group is killed and the group removed.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

ROOT = Path("/sys/fs/cgroup")
_serial = itertools.count(1)


@dataclass(frozen=True)
class Group:
    """A run's control group: its folders (one on v2; memory and pids on v1)."""

    version: Literal["v1", "v2"]
    folders: tuple[Path, ...]

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process of the group for going over its memory."""
        for folder in self.folders:
            for name in ("memory.events", "memory.oom_control"):  # v2, v1
                with contextlib.suppress(OSError):
                    for line in (folder / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill" and value.strip() not in ("", "0"):
                            return True
        return False

    def join_command(self) -> list[str]:
        """A shell that puts itself in the group, then runs the rest of the line."""
        joins = "".join(f'echo $$ > "{f}/cgroup.procs" && ' for f in self.folders)
        return ["/bin/sh", "-c", f'{joins}exec "$@"', "sh"]


def _own(controller: str) -> Path | None:
    """Where this process is in the hierarchy of ``controller`` (``""``: cgroup v2)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, names, path = line.split(":", 2)
        if controller and controller in names.split(","):
            return ROOT / controller / path.lstrip("/")
        if not controller and not names:
            unified = ROOT if (ROOT / "cgroup.controllers").exists() else ROOT / "unified"
            return unified / path.lstrip("/")
    return None


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(value)


@contextlib.contextmanager
def run_group(memory_bytes: int, processes: int) -> Iterator[Group | None]:
    """A new group bounding memory and processes for one run, or None where the
    machine does not let tracework make one (said at debug level)."""
    made: list[Path] = []
    group: Group | None = None
    name = f"tracework-{os.getpid()}-{next(_serial)}"
    try:
        group = _v2(name, memory_bytes, processes, made) or _v1(name, memory_bytes, processes, made)
    except OSError as exc:
        log.debug("no control group for the sandbox: %s", exc)
        _remove(made)
        made, group = [], None
    try:
        yield group
    finally:
        _remove(made)


def _v2(name: str, memory: int, processes: int, made: list[Path]) -> Group | None:
    own = _own("")
    if own is None or not (own / "cgroup.subtree_control").exists():
        return None
    enabled = (own / "cgroup.subtree_control").read_text().split()
    if not {"memory", "pids"} <= set(enabled):
        return None  # not delegated to us (enabling them here would be the machine's call)
    folder = own / name
    folder.mkdir()
    made.append(folder)
    _write(folder / "memory.max", str(memory))
    _write(folder / "memory.swap.max", "0")
    _write(folder / "pids.max", str(processes))
    return Group("v2", (folder,))


def _v1(name: str, memory: int, processes: int, made: list[Path]) -> Group | None:
    memory_own, pids_own = _own("memory"), _own("pids")
    if memory_own is None or pids_own is None:
        return None
    if not (memory_own / "memory.limit_in_bytes").exists():
        return None
    folders = []
    for own in (memory_own, pids_own):
        folder = own / name
        folder.mkdir()
        made.append(folder)
        folders.append(folder)
    memory_folder, pids_folder = folders
    _write(memory_folder / "memory.limit_in_bytes", str(memory))
    with contextlib.suppress(OSError):  # no swap accounting: memory alone is bounded
        _write(memory_folder / "memory.memsw.limit_in_bytes", str(memory))
    _write(pids_folder / "pids.max", str(processes))
    return Group("v1", tuple(folders))


#: Seconds given to what is left in a group to die once killed, polled from 1 ms up to
#: every ``_POLL`` s: the kernel empties a group whose PID namespace ended within a
#: millisecond or two, and each run waits for it.
_EMPTYING = 1.0
_POLL = 0.02


def _remove(folders: list[Path]) -> None:
    """Kill what is left in each group, then remove it (a group must be empty)."""
    for folder in reversed(folders):
        delay, waited = 0.001, 0.0
        while waited < _EMPTYING:
            try:
                pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
            except OSError:
                break
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(delay)
            waited += delay
            delay = min(delay * 2, _POLL)
        try:
            folder.rmdir()
        except OSError as exc:
            log.debug("control group %s not removed: %s", folder, exc)
