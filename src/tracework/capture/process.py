"""Supervising one sandboxed run: its log, its results channel, its clock, its end.

The run's stdout and stderr share one pipe (the log).  The results travel on a Unix
socket of their own, read with ``SO_PASSCRED``: the kernel stamps every chunk with
the process that wrote it and never joins chunks of two writers into one read, so
the channel accepts the process that sent the first chunk (the runner's hello, sent
before the harness is imported) and no other.  A child the harness forked that
writes to the inherited descriptor stops the run: its results cannot be forged.

Both are read as they fill, each up to the output limit; past it, or past the
timeout, the whole process group is killed (the sandbox's PID namespace then takes
everything the harness started with it), and the run says why it was stopped.  A
run that closed both is given a moment to exit on its own; then the group is
killed, at the end of every run, however it ended.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Literal

from tracework.capture.cgroup import Group
from tracework.capture.isolation import Launch


@dataclass(frozen=True)
class Run:
    """What one run left: its protocol lines, its log, how it ended."""

    lines: list[bytes]
    log: bytes
    returncode: int
    stopped: str | None  # why tracework stopped it, when it did
    group: Literal["v1", "v2"] | None = None  # the control group it ran in, if any


def run_sandboxed(
    launch_for: Callable[[int], Launch],
    *,
    timeout: float,
    output_limit: int,
    group: Group | None = None,
    watch: Callable[[], str | None] | None = None,
    started: Callable[[], object] | None = None,
) -> Run:
    """Start ``launch_for(fd)`` — ``fd`` is the results socket's sandbox end, passed
    on — and read both until the run ends, is too slow, says too much, or a process
    other than the harness writes a result; in control group ``group``, if given.
    ``watch``, polled at least once a second, says why the run must stop (the model
    relay past a bound), or None.  ``started`` is called once the sandbox is started,
    before its output is read (to begin what may be done while the run is waited on)."""
    results, sandbox_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    results.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    proto_r, proto_w = results.fileno(), sandbox_end.detach()
    log_r, log_w = os.pipe()
    try:
        launch = launch_for(proto_w)
        try:
            proc = subprocess.Popen(
                [*(group.join_command() if group is not None else []), *launch.argv],
                stdin=subprocess.PIPE,
                stdout=log_w,
                stderr=log_w,
                pass_fds=(proto_w, *launch.fds),
                env=launch.env,
                start_new_session=True,
            )
        finally:
            launch.close()
    except BaseException:
        results.close()
        for fd in (proto_w, log_r, log_w):
            os.close(fd)
        raise
    os.close(proto_w)
    os.close(log_w)
    _give(proc, launch.stdin)
    if started is not None:
        started()
    buffers = {proto_r: bytearray(), log_r: bytearray()}
    names = {proto_r: "results", log_r: "output (stdout and stderr)"}
    stopped = None
    writer: int | None = None  # the pid that sent the first result: the harness
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        for fd in buffers:
            selector.register(fd, selectors.EVENT_READ)
        try:
            while selector.get_map() and stopped is None:
                stopped = watch() if watch is not None else None
                if stopped is not None:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    stopped = f"it ran past its timeout of {timeout:g} s"
                    break
                for key, _ in selector.select(min(left, 1.0)):
                    fd = int(key.fd)
                    if fd == proto_r:
                        chunk, sender = _receive(results)
                        writer = sender if writer is None else writer
                        if chunk and sender != writer:
                            stopped = (
                                f"a process other than the harness (pid {sender}, not "
                                f"{writer}) wrote to the results channel: a process the "
                                "harness or the subject started cannot send results"
                            )
                            break
                    else:
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
                stopped = watch() if watch is not None else None
        finally:
            _kill_group(proc)
            results.close()
            os.close(log_r)
    returncode = proc.wait()
    if group is not None and group.out_of_memory():  # the cause, also of a timeout it led to
        stopped = "its processes together went over their memory limit and were killed"
    lines = bytes(buffers[proto_r]).split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    version = group.version if group is not None else None
    return Run(lines, bytes(buffers[log_r]), returncode, stopped, version)


def _give(proc: subprocess.Popen[bytes], data: bytes) -> None:
    """Write the starter's arguments to its stdin and close it (a starter that died
    first is seen when its run is read)."""
    assert proc.stdin is not None
    with suppress(BrokenPipeError):
        proc.stdin.write(data)
    with suppress(BrokenPipeError):
        proc.stdin.close()


#: Room for one SCM_CREDENTIALS message (pid, uid, gid: three 32-bit integers).
_CREDENTIALS = socket.CMSG_SPACE(struct.calcsize("3i"))


def _receive(sock: socket.socket) -> tuple[bytes, int | None]:
    """One chunk of the results socket and the pid of the process that wrote it (the
    kernel's stamp, translated into our PID namespace; None with no stamp)."""
    data, ancillary, _flags, _address = sock.recvmsg(1 << 16, _CREDENTIALS)
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid, _uid, _gid = struct.unpack("3i", payload[: struct.calcsize("3i")])
            return data, pid
    return data, None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the run's process group: the sandbox's starter, and with it (its PID
    namespace's first process dies) everything inside."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
