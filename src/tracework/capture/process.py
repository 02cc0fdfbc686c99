"""Supervising one sandboxed run: its two pipes, its limits, its clock, its end.

The run's stdout and stderr share one pipe (the log); the protocol has its own.
Both are read as they fill, each up to the output limit; past it, or past the
timeout, the whole process group is killed (the sandbox's PID namespace then takes
everything the harness started with it), and the run says why it was stopped.  A
run that closed both pipes is given a moment to exit on its own; then the group is
killed, at the end of every run, however it ended.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass


@dataclass(frozen=True)
class Run:
    """What one run left: its protocol lines, its log, how it ended."""

    lines: list[bytes]
    log: bytes
    returncode: int
    stopped: str | None  # why tracework stopped it, when it did


def run_sandboxed(
    argv_for: Callable[[int], list[str]],
    env: dict[str, str],
    *,
    timeout: float,
    output_limit: int,
) -> Run:
    """Start ``argv_for(fd)`` — ``fd`` is the protocol pipe's write end, passed on —
    and read both pipes until the run ends, is too slow, or says too much."""
    proto_r, proto_w = os.pipe()
    log_r, log_w = os.pipe()
    try:
        proc = subprocess.Popen(
            argv_for(proto_w),
            stdin=subprocess.DEVNULL,
            stdout=log_w,
            stderr=log_w,
            pass_fds=(proto_w,),
            env=env,
            start_new_session=True,
        )
    except BaseException:
        for fd in (proto_r, proto_w, log_r, log_w):
            os.close(fd)
        raise
    os.close(proto_w)
    os.close(log_w)
    buffers = {proto_r: bytearray(), log_r: bytearray()}
    names = {proto_r: "results", log_r: "output (stdout and stderr)"}
    stopped = None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        for fd in buffers:
            selector.register(fd, selectors.EVENT_READ)
        try:
            while selector.get_map() and stopped is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    stopped = f"it ran past its timeout of {timeout:g} s"
                    break
                for key, _ in selector.select(min(left, 1.0)):
                    fd = int(key.fd)
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        selector.unregister(fd)
                        continue
                    if len(buffers[fd]) + len(chunk) > output_limit:
                        mib = output_limit // (1 << 20)
                        stopped = f"its {names[fd]} went over the limit of {mib} MiB"
                        break
                    buffers[fd] += chunk
            if stopped is None:  # both pipes closed: the run is ending on its own
                with suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(0.1, min(5.0, deadline - time.monotonic())))
        finally:
            _kill_group(proc)
            for fd in buffers:
                os.close(fd)
    returncode = proc.wait()
    lines = bytes(buffers[proto_r]).split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return Run(lines, bytes(buffers[log_r]), returncode, stopped)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the run's process group: the sandbox's starter, and with it (its PID
    namespace's first process dies) everything inside."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
