"""Kernel hosts: one process per batch worker that imports ipykernel and tracework
once, then forks each kernel from that state, as multiprocessing's forkserver does.

The host never runs a notebook; each fork is a new process that runs exactly one
notebook and is then killed, so no state passes between reports.  A forked kernel is
what ``python -m ipykernel_launcher`` would have been: the same arguments,
environment, working directory and ``sys.path``, a session and process group of its
own.  A kernel dies with its host and a host with its worker.  Where a host cannot work
(no ``pidfd_open``: not Linux) or fails, kernels start the usual way.  The warm-kernel
pool that uses it is :mod:`tracework.kernels.warm`.
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, NoReturn, TypedDict, final

from tracework.logs import swallowed

#: What the kernel host imports before it forks: ipykernel's application, kernel and
#: debugger (debugpy: the kernelspec enables it), and what a warm kernel's preload imports.
HOST_IMPORTS = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.debugger",
    "tracework.notebook.workbench",
)


def _can_host() -> bool:
    """Whether this platform can host kernels: Linux, where a pidfd names a process that
    is not our child without the risk of a recycled pid (probed: a kernel or a sandbox
    may lack the call even where Python has it)."""
    if not (hasattr(os, "fork") and hasattr(os, "pidfd_open") and hasattr(socket, "send_fds")):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


HOSTED = _can_host()

log = logging.getLogger(__name__)

#: Every wait of the kernel machinery that ran out its limit, as (what, seconds).  A
#: batch's normal path, its shutdown above all, never reaches one: each would be a
#: stall the user sits through.  The tests assert that this stays empty; each is
#: also logged as a warning, which a batch's worker prints on its stderr.
timeouts_reached: list[tuple[str, float]] = []


def waited_out(what: str, seconds: float) -> None:
    """Say that a wait for ``what`` ran out its limit of ``seconds``."""
    timeouts_reached.append((what, seconds))
    log.warning("tracework: waited out the %g s limit for %s", seconds, what)


# `python -c` puts "" first on sys.path; ipykernel_launcher drops it while it loads
# (IPython puts it back), and so does the host.  "ipykernel" in the command line keeps
# the host and its kernels findable as kernels (`pgrep -f ipykernel`).
_HOST_CODE = (
    "import os, sys\n"
    "if sys.path and sys.path[0] in ('', os.getcwd()): del sys.path[0]\n"
    "from tracework.kernels.host import host_main\n"
    "host_main(int(sys.argv[1]))  # forks ipykernel kernels\n"
    "os._exit(0)  # nothing to flush: skip tearing down ipykernel's modules (0.25 s)"
)


# -- the kernel host: the worker's side ------------------------------------------------


class KernelHost:
    """A kernel host process for kernels that run in ``cwd`` (see the module docstring)."""

    def __init__(self, cwd: Path) -> None:
        ours, theirs = socket.socketpair()
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _HOST_CODE, str(theirs.fileno())],
                cwd=cwd,
                env=_kernel_env(),
                stdin=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()],
                start_new_session=True,  # Ctrl-C is the worker's to handle; the host follows
            )
        self.cwd = cwd
        ours.settimeout(120)  # the first reply waits for the host's imports
        self._sock = ours
        self._lock = threading.Lock()

    def runs(self, cmd: list[str], cwd: Path) -> bool:
        """Whether ``cmd`` in ``cwd`` is a kernel this host can fork, and the host is up."""
        launcher = [sys.executable, "-m", "ipykernel_launcher"]
        return cmd[:3] == launcher and cwd == self.cwd and self.process.poll() is None

    def fork(self, cmd: list[str], env: dict[str, str]) -> ForkedKernel:
        """Fork a kernel running ``cmd`` with ``env``; waits for the host's imports once."""
        asked: ForkRequest = {"argv": cmd[3:], "env": env}
        request = json.dumps(asked).encode() + b"\n"
        with self._lock:
            try:
                self._sock.sendall(request)
                reply, fds, _, _ = socket.recv_fds(self._sock, 4096, 1)
            except OSError:  # gone, or hung: a reply may still come, so never ask again
                self.process.kill()
                raise
        if not fds:
            raise OSError(f"the kernel host forked no kernel: {reply.decode(errors='replace')}")
        return ForkedKernel(int(reply), fds[0], self)

    def exit_status(self, pid: int) -> int | None:
        """How the host's kernel ``pid``, which has exited, ended: its exit code, or minus
        the number of the signal that killed it (as ``Popen.returncode``); None when the
        host cannot tell (it is gone, or has not seen the kernel end)."""
        asked: StatusRequest = {"status": pid}
        request = json.dumps(asked).encode() + b"\n"
        with self._lock:
            try:
                self._sock.sendall(request)
                reply = self._sock.recv(64)
            except OSError:  # as in fork(): a late reply would answer the next request
                self.process.kill()
                return None
        try:
            return int(reply)
        except ValueError:
            return None

    def close(self) -> None:
        """Stop the host, which kills the kernels it forked before it exits."""
        self._sock.close()  # the host reads the end of its requests and stops
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            waited_out("a kernel host to stop", 10)
            self.process.kill()
            self.process.wait()


class ForkedKernel:
    """A forked kernel as jupyter_client's LocalProvisioner uses a ``Popen``.

    It is the host's child, not ours: it is watched and signalled through a pidfd,
    so a recycled pid can never be signalled by mistake.  Its exit status stays
    with the host, which reaps it; ``returncode`` is 0 once it has exited, and
    :meth:`exit_status` asks the host for the real one.
    """

    stdin = stdout = stderr = None

    def __init__(self, pid: int, pidfd: int, host: KernelHost | None = None) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._host = host
        self._status: int | None = None
        os.set_inheritable(pidfd, False)
        self._pidfd = pidfd
        # poll() and wait() run on several threads (a warm-up's and the worker's): the
        # pidfd is closed exactly once, never while another thread may still use it
        self._lock = threading.RLock()

    def _ready(self, timeout: float | None) -> bool:
        waiter = select.poll()
        waiter.register(self._pidfd, select.POLLIN)
        return bool(waiter.poll(None if timeout is None else int(timeout * 1000)))

    def poll(self) -> int | None:
        with self._lock:
            if self.returncode is None and self._ready(0):
                self._exited()
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        with self._lock:
            if self.returncode is None:
                if not self._ready(timeout):
                    raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout or 0)
                self._exited()
            return 0

    def send_signal(self, signum: int) -> None:
        with self._lock:
            if self.poll() is None:
                signal.pidfd_send_signal(self._pidfd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def exit_status(self) -> int | None:
        """The kernel's exit code, or minus the signal that killed it, from its host;
        None while it runs or when the host cannot tell."""
        if self.poll() is None:
            return None
        if self._status is None and self._host is not None:
            self._status = self._host.exit_status(self.pid)
        return self._status

    def _exited(self) -> None:
        self.returncode = 0
        os.close(self._pidfd)

    def __del__(self) -> None:
        if self.returncode is None:
            self.returncode = 0
            with suppress(OSError):
                os.close(self._pidfd)


@functools.cache
def hosted_provisioner() -> type:
    """jupyter_client's LocalProvisioner, launching through a kernel host when it can."""
    from jupyter_client.connect import KernelConnectionInfo
    from jupyter_client.provisioning.local_provisioner import LocalProvisioner

    class HostedProvisioner(LocalProvisioner):
        host: KernelHost | None = None

        async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
            cwd = Path(kwargs.get("cwd") or os.getcwd())
            if self.host is not None and self.host.runs(cmd, cwd):
                try:
                    kernel = self.host.fork(cmd, kwargs["env"])
                except OSError:
                    pass  # the host is gone: start this kernel the usual way
                else:
                    # a Popen in every call LocalProvisioner makes of it
                    self.process = kernel  # type: ignore[assignment]
                    self.pid = self.pgid = kernel.pid  # setsid: its own group
                    self.cwd = cwd
                    return self.connection_info
            connection: KernelConnectionInfo = await super().launch_kernel(cmd, **kwargs)
            return connection

    return HostedProvisioner


def _kernel_env() -> dict[str, str]:
    """The environment jupyter_client gives a Python kernel (before JPY_PARENT_PID)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONEXECUTABLE"}


# -- the kernel host: the host's side --------------------------------------------------


def _prctl() -> Any:
    """The C library's ``prctl`` (Linux), or None."""
    with swallowed(log, "finding prctl"):  # not Linux, or no C library to ask
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    return None


def die_with_parent() -> None:
    """Be killed when the process that started this one dies (Linux ``PR_SET_PDEATHSIG``);
    elsewhere a no-op.  If the parent is already gone, exit now."""
    parent = os.getppid()
    prctl = _prctl()
    if prctl is not None:
        prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent or parent == 1:
        os._exit(1)


def dies_with_this_thread() -> Callable[[], None] | None:
    """A ``preexec_fn`` for ``Popen`` that has the child killed (SIGKILL) when the thread
    starting it ends, its process with it, however it ends: SIGKILL, SIGTERM, a crash
    (Linux ``PR_SET_PDEATHSIG`` follows the thread that forks).  None where Linux's
    ``prctl`` is missing.

    ipykernel also watches its parent, but from a Python thread, which never runs while
    the kernel's main thread holds the interpreter in C code (a regular expression that
    backtracks for hours, say): such a kernel outlived its render at 100% CPU.
    """
    prctl = _prctl()  # looked up here: the child runs as little Python as it can
    if prctl is None:
        return None
    parent = os.getpid()

    def arm() -> None:
        prctl(1, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(1)

    return arm


@final
class ForkRequest(TypedDict):
    """Fork a kernel: the arguments after ``python -m ipykernel_launcher``, and its
    environment."""

    argv: list[str]
    env: dict[str, str]


@final
class StatusRequest(TypedDict):
    """How did kernel ``status`` (a pid) end?"""

    status: int


#: What a worker asks its host, one JSON line each.
Request = ForkRequest | StatusRequest


def host_main(fd: int) -> None:
    """The kernel host (``python -c``): import once, then fork one kernel per request.

    Requests come one at a time over the socket ``fd``: a JSON line with the kernel's
    arguments and environment, answered with the kernel's pid and a pidfd for it
    (opened before the host could reap it); or ``{"status": pid}``, answered with how
    that kernel ended (its exit code or minus its signal, as ``Popen.returncode``; ``?``
    when unknown).  When the worker closes the socket or dies, the host kills every
    kernel it forked and exits.
    """
    die_with_parent()  # a host outlives no worker (its kernels die with it, in turn)
    before = dict(os.environ)
    # a kernel says nothing at start-up (what it writes before its first request goes
    # to no cell); so the host's imports write nowhere (debugpy warns about frozen
    # modules, for one)
    stderr = os.dup(2)
    with open(os.devnull, "wb") as null:
        os.dup2(null.fileno(), 2)
    try:
        for name in HOST_IMPORTS:
            with swallowed(log, f"importing {name} ahead"):  # a kernel says why, again
                importlib.import_module(name)
        with swallowed(log, "warming up the kernel host"):
            warm_lexers()
    finally:
        sys.stderr.flush()
        os.dup2(stderr, 2)
        os.close(stderr)
    # what the imports put in the environment (debugpy's settings, say): a kernel
    # that imported them itself would have them too
    added = {k: v for k, v in os.environ.items() if before.get(k) != v}
    sock = socket.socket(fileno=fd)
    children: set[int] = set()
    ended: dict[int, int] = {}  # how reaped kernels ended, until the worker asks
    try:
        while (request := _next_request(sock, children, ended)) is not None:
            if "status" in request:
                status = ended.pop(request["status"], None)
                sock.sendall(b"?" if status is None else str(status).encode())
                continue
            try:
                pid = os.fork()
            except OSError as exc:  # this kernel starts the usual way; the others run on
                sock.sendall(f"fork: {exc}".encode())
                continue
            if pid == 0:
                _be_kernel(sock, request, added)
            children.add(pid)
            pidfd = os.pidfd_open(pid)
            try:
                socket.send_fds(sock, [str(pid).encode()], [pidfd])
            finally:
                os.close(pidfd)
    except OSError:
        pass  # the worker is gone
    finally:
        for pid in children:
            with suppress(OSError):
                os.killpg(pid, signal.SIGKILL)  # the kernel and what it started
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)  # in case it had not yet made its group
        for pid in children:
            with suppress(ChildProcessError):
                os.waitpid(pid, 0)


def warm_lexers() -> None:
    """Compile what nearly every report's first quote compiles: once for all kernels in
    the kernel host, and in a kernel of its own while it waits for its first cell
    (:data:`tracework.kernels.warm.PRELOAD`).

    pygments matches a file name against every lexer's patterns and compiles a lexer's
    tables on first use: 0.06 s of CPU in each kernel otherwise.  Library tables only;
    nothing of any report is read.
    """
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import DiffLexer, get_lexer_for_filename

    highlight("def f(x):\n    return x  # note\n", get_lexer_for_filename("f.py"), HtmlFormatter())
    highlight("-a\n+b\n", DiffLexer(), HtmlFormatter())


def _next_request(sock: socket.socket, children: set[int], ended: dict[int, int]) -> Request | None:
    """The next request, reaping exited kernels while waiting; None at the end."""
    data = b""
    while not data.endswith(b"\n"):
        if not select.select([sock], [], [], 1.0)[0]:
            _reap(children, ended)
            continue
        chunk = sock.recv(1 << 16)
        if not chunk:
            return None
        data += chunk
    _reap(children, ended)
    request: Request = json.loads(data)  # the worker's own line (it is our parent)
    return request


#: How many ended kernels' statuses a host keeps for a worker that may ask (it asks
#: only about a kernel that died under a render; the others are never asked about).
KEPT_STATUSES = 256


def _reap(children: set[int], ended: dict[int, int]) -> None:
    for pid in list(children):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # reaped already: how it ended is not known
            children.discard(pid)
            continue
        if done == pid:
            children.discard(pid)
            ended[pid] = os.waitstatus_to_exitcode(status)
            while len(ended) > KEPT_STATUSES:
                del ended[next(iter(ended))]  # the oldest


def _be_kernel(sock: socket.socket, request: ForkRequest, added: dict[str, str]) -> NoReturn:
    """In the forked child: become the kernel ``python -m ipykernel_launcher`` would be."""
    code = 1
    try:
        sock.close()
        die_with_parent()  # ipykernel's own parent watch was set up in the host: it is off
        os.setsid()  # as jupyter_client's launcher does: a session of its own
        os.environ.clear()
        os.environ.update(request["env"])
        for key, value in added.items():
            os.environ.setdefault(key, value)
        os.environ["JPY_PARENT_PID"] = str(os.getppid())  # it exits if the host dies
        from importlib.util import find_spec

        from ipykernel import kernelapp

        launcher = find_spec("ipykernel_launcher")
        sys.argv = [
            str(launcher.origin if launcher else "ipykernel_launcher"),
            *request["argv"],
            # ipykernel read JPY_PARENT_PID when the host imported it: say it again
            f"--IPKernelApp.parent_handle={os.getppid()}",
        ]
        kernelapp.launch_new_instance()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException:
        traceback.print_exc()
    finally:
        with suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
