"""Warm kernels: a fresh kernel per notebook, cheap to start, booted ahead (a single render
starts one while papermill loads; a batch worker boots the next while one report runs).

Starting a kernel costs about half a second of CPU: Python, IPython and ipykernel
start (0.3 s), then the notebook's ``import tracework`` loads pydantic and the models
(0.25 s).  In a batch of small reports that is most of the work, so a batch worker
keeps two things:

* a **kernel host** (:mod:`tracework.kernels.host`): a process that imports ipykernel
  and tracework once, then forks each kernel from that state; each fork runs exactly
  one notebook and is then killed, so no state passes between reports.
* a **warm kernel**: while one report executes, the next report's kernel starts.
"""

from __future__ import annotations

import atexit
import functools
import logging
import math
import multiprocessing.util
import os
import queue
import signal
import subprocess
import threading
import time
import uuid
from contextlib import suppress
from pathlib import Path
from typing import Any

from tracework.kernels.host import (
    HOSTED,
    KernelHost,
    dies_with_this_thread,
    hosted_provisioner,
)
from tracework.kernels.host import waited_out as _waited_out
from tracework.kernels.spec import ensure_kernelspec
from tracework.logs import swallowed

#: What a notebook's ``import tracework as tw; tw.open(...)`` loads, and the lexers its
#: first quote's card compiles (:func:`~tracework.kernels.host.warm_lexers`; nothing in a
#: kernel forked from the host, which did it), and no more: the kernel never renders, and
#: ``tracework.render`` would pull in nbformat, nbconvert and jsonschema, over a second of
#: CPU per kernel for nothing.
PRELOAD = (
    "import tracework.notebook.workbench, tracework.kernels.host  # warm-up, before any report\n"
    "tracework.kernels.host.warm_lexers()"
)

log = logging.getLogger(__name__)


def _join(thread: threading.Thread, what: str, seconds: float) -> None:
    """Join ``thread``, saying so when the limit ran out."""
    thread.join(timeout=seconds)
    if thread.is_alive():
        _waited_out(what, seconds)


# -- warm kernels ---------------------------------------------------------------------


class WarmKernel:
    """A kernel starting now, then importing tracework in a background thread.

    A kernel forked by a kernel host dies with the host, and the host with this process.
    Without a host, the kernel is launched at once in the calling thread, armed to be
    killed when that thread ends, with its process or otherwise
    (:func:`dies_with_this_thread`): the signal follows the thread that forks, so the
    launch cannot be left to the background thread, which ends after the warm-up.
    """

    def __init__(self, cwd: Path, host: KernelHost | None = None) -> None:
        from jupyter_client.manager import KernelManager

        self.cwd = cwd
        self.km: Any = KernelManager(kernel_name=ensure_kernelspec())
        if host is not None:
            self.km.kernel_id = str(uuid.uuid4())
            provisioner: Any = hosted_provisioner()(
                kernel_id=self.km.kernel_id, kernel_spec=self.km.kernel_spec, parent=self.km
            )
            provisioner.host = host
            self.km.provisioner = provisioner
        self._started = False
        self._launched = threading.Event()
        self._cancelled = threading.Event()  # discard(): stop warming, at once
        self._thread = threading.Thread(target=self._boot, daemon=True)
        if host is None:
            armed = dies_with_this_thread()
            self._launch(**({"preexec_fn": armed} if armed is not None else {}))
        self._thread.start()

    def _launch(self, **options: Any) -> None:
        try:
            self.km.start_kernel(cwd=str(self.cwd), **options)
            self._started = True
        except Exception:  # take() says there is no kernel; papermill starts its own
            log.debug("a kernel failed to start", exc_info=True)
        finally:
            self._launched.set()

    def _boot(self) -> None:
        if not self._launched.is_set():
            self._launch()  # through the kernel host, which waits for its imports once
        if not self._started:
            return
        client = self.km.client()
        client.start_channels()
        try:
            self._preload(client)
        except Exception:  # a slow or broken warm-up only costs the time it saved
            log.debug("warm-up of a kernel failed", exc_info=True)
        finally:
            client.stop_channels()

    def _preload(self, client: Any) -> None:
        """Run :data:`PRELOAD` and wait for its reply, in short polls, so that
        :meth:`discard` never waits on a kernel it has killed.  (The request waits in
        the shell socket's queue until the kernel is up: no ``wait_for_ready``, whose
        blocking wait a killed kernel would leave to run out its limit.)"""
        msg_id = client.execute(PRELOAD, silent=True, store_history=False)
        deadline = time.monotonic() + 120
        while not self._cancelled.is_set():
            if time.monotonic() > deadline:
                _waited_out("a kernel's warm-up", 120)
                return
            try:
                reply = client.get_shell_msg(timeout=0.05)
            except queue.Empty:
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                return

    def take(self) -> Any:
        """The kernel manager once the warm-up has finished, or None when no kernel
        started or it died meanwhile (a port taken by another worker, say): papermill
        then starts a kernel of its own, the usual way."""
        _join(self._thread, "a kernel to boot", 180)
        if not self._started:
            return None
        alive = False
        with swallowed(log, "asking whether a warm kernel is alive"):
            alive = bool(self.km.is_alive())
        if not alive:
            self.discard()
            return None
        return self.km

    def discard(self) -> None:
        """Kill an unused kernel outright, and wait for its warm-up to stop (also safe
        while the process is exiting).  The warm-up sees the cancellation within one
        poll: a batch's last report never waits for the kernel booted after it."""
        self._cancelled.set()
        if not self._launched.wait(timeout=60):
            _waited_out("a kernel to launch", 60)
        with swallowed(log, "stopping a discarded kernel"):  # already gone, say
            _kill(self.km.provisioner)
            Path(self.km.connection_file).unlink(missing_ok=True)
        if self._thread is not threading.current_thread():
            _join(self._thread, "a discarded kernel's warm-up", 30)


def shutdown(km: Any) -> None:
    """Stop a kernel, quietly: it ran its one notebook (or was never used).

    The kernel's process group is killed and reaped here, at once: jupyter_client's
    ``shutdown_kernel(now=True)`` does the same but polls for the exit every 0.1 s,
    a tenth of a second per report.  It then only releases the connection file,
    ports and sockets.
    """
    with swallowed(log, "shutting a kernel down"):  # one that died on its own needs none
        if km.has_kernel:
            _kill(km.provisioner)
            from jupyter_core.utils import run_sync

            run_sync(km.provisioner.wait)()  # closes its pipes, marks the kernel as gone
            km.shutdown_kernel(now=True)


@functools.cache
def ready_client() -> type:
    """jupyter_client's asynchronous kernel client, ready as soon as the kernel is.

    jupyter_client's own ``wait_for_ready`` asks for the kernel's info, sees IOPub
    connected by one message, then reads IOPub until 0.2 s pass without one: a fifth of
    a second of every render spent waiting on a kernel that is idle.  This one reads
    IOPub up to the kernel's idle status for that request, the last message the request
    makes, so every message before it is read too; a kernel whose IOPub says nothing for
    0.2 s is asked again, as jupyter_client asks.  For clients a kernel manager makes
    (nbclient's): jupyter_client waits for a heartbeat only from others.
    """
    from jupyter_client.asynchronous.client import AsyncKernelClient

    class ReadyClient(AsyncKernelClient):
        async def wait_for_ready(self, timeout: float | None = None) -> None:
            deadline = time.monotonic() + (math.inf if timeout is None else timeout)
            while True:
                asked = self.kernel_info()
                try:
                    reply = await self.shell_channel.get_msg(timeout=1)
                except queue.Empty:
                    pass
                else:
                    if reply["msg_type"] == "kernel_info_reply" and await self._idle_after(asked):
                        self._handle_kernel_info_reply(reply)
                        return
                if not await self._async_is_alive():
                    raise RuntimeError("Kernel died before replying to kernel_info")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")

        async def _idle_after(self, asked: str) -> bool:
            """Whether IOPub says the kernel went idle after request ``asked``, each of
            its messages until then coming within 0.2 s of the one before."""
            while True:
                try:
                    msg = await self.iopub_channel.get_msg(timeout=0.2)
                except queue.Empty:
                    return False
                if (
                    msg["msg_type"] == "status"
                    and msg["content"].get("execution_state") == "idle"
                    and msg["parent_header"].get("msg_id") == asked
                ):
                    return True

    return ReadyClient


def _kill(provisioner: Any) -> None:
    """SIGKILL a kernel's process group (it has a session of its own) and wait for it."""
    process = getattr(provisioner, "process", None)
    if process is None:
        return
    if process.poll() is None:
        with suppress(OSError):  # the group is already gone
            os.killpg(provisioner.pgid or process.pid, signal.SIGKILL)
        with suppress(OSError):
            process.kill()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        _waited_out("a killed kernel to exit", 10)
        raise


_spare: WarmKernel | None = None
_host: KernelHost | None = None


def _kernel_host(cwd: Path) -> KernelHost | None:
    """This process's kernel host for ``cwd``, started on first use (None: no host)."""
    global _host
    if _host is not None and (_host.cwd != cwd or _host.process.poll() is not None):
        _host.close()
        _host = None
    if _host is None and HOSTED:
        with suppress(OSError):  # no host: kernels start the usual way
            _host = KernelHost(cwd)
    return _host


def prestart(cwd: Path) -> None:
    """Start the first report's kernel now, while the caller does other work."""
    global _spare
    if _spare is not None and _spare.cwd == cwd:
        return
    release()
    with swallowed(log, "starting a warm kernel ahead"):  # next_kernel tries again
        _spare = WarmKernel(cwd, _kernel_host(cwd))


def next_kernel(cwd: Path) -> Any:
    """A booted kernel for this render; the one for the next render starts booting now."""
    global _spare
    current = _spare if _spare is not None and _spare.cwd == cwd else None
    if current is None and _spare is not None:
        _spare.discard()
    try:
        if current is None:
            current = WarmKernel(cwd, _kernel_host(cwd))
        _spare = WarmKernel(cwd, _kernel_host(cwd))
    except Exception:  # no kernel could be started here: let papermill try its own way
        log.debug("no warm kernel could be started", exc_info=True)
        _spare = None
        return current.take() if current is not None else None
    return current.take()


def release() -> None:
    """Stop the kernel booted for a next report that never came, and the kernel host."""
    global _spare, _host
    if _spare is not None:
        _spare.discard()
        _spare = None
    if _host is not None:
        _host.close()
        _host = None


# the main process runs atexit handlers; multiprocessing workers leave through os._exit
# after their registered finalizers (a pool worker: see batch.start_pool_worker), so
# register in both ways
atexit.register(release)
multiprocessing.util.Finalize(None, release, exitpriority=100)
