"""Pre-started kernels for batch renders: a fresh kernel per notebook, booted ahead.

Kernel start-up and importing tracework inside the kernel dominate a small render.
While one report executes, the next report's kernel boots and imports tracework in
the background; each kernel still runs exactly one notebook and is then shut down,
so no state passes between reports.
"""

from __future__ import annotations

import atexit
import multiprocessing.util
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any

from .execution import ensure_kernelspec

PRELOAD = "import tracework.notebook, tracework.rendering  # warm-up, before any report"


class WarmKernel:
    """A kernel started now, with tracework imported by a background thread."""

    def __init__(self, cwd: Path) -> None:
        from jupyter_client.manager import KernelManager

        self.cwd = cwd
        self.km: Any = KernelManager(kernel_name=ensure_kernelspec())
        self.km.start_kernel(cwd=str(cwd))
        self._thread = threading.Thread(target=self._preload, daemon=True)
        self._thread.start()

    def _preload(self) -> None:
        client = self.km.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=120)
            msg_id = client.execute(PRELOAD, silent=True, store_history=False)
            while True:
                reply = client.get_shell_msg(timeout=120)
                if reply["parent_header"].get("msg_id") == msg_id:
                    break
        except Exception:  # a slow or broken warm-up only costs the time it saved
            pass
        finally:
            client.stop_channels()

    def take(self) -> Any:
        """The kernel manager, once the warm-up has finished."""
        self._thread.join(timeout=180)
        return self.km

    def discard(self) -> None:
        """Kill an unused kernel outright (also safe while the process is exiting)."""
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        with suppress(Exception):  # already gone: nothing left to stop
            if process is not None:
                process.kill()
                process.wait(timeout=10)
            Path(self.km.connection_file).unlink(missing_ok=True)


def shutdown(km: Any) -> None:
    """Stop a kernel, quietly: it ran its one notebook (or was never used)."""
    with suppress(Exception):  # a kernel that died on its own needs no shutdown
        if km.has_kernel:
            km.shutdown_kernel(now=True)


_spare: WarmKernel | None = None


def next_kernel(cwd: Path) -> Any:
    """A booted kernel for this render; the one for the next render starts booting now."""
    global _spare
    current = _spare if _spare is not None and _spare.cwd == cwd else None
    if current is None and _spare is not None:
        _spare.discard()
    try:
        if current is None:
            current = WarmKernel(cwd)
        _spare = WarmKernel(cwd)
    except Exception:  # no kernel could be started here: let papermill try its own way
        _spare = None
        return current.take() if current is not None else None
    return current.take()


def discard_spare() -> None:
    """Stop the kernel booted for a next report that never came."""
    global _spare
    if _spare is not None:
        _spare.discard()
        _spare = None


# the main process runs atexit handlers; multiprocessing workers leave through os._exit
# and run only their registered finalizers, so register in both ways
atexit.register(discard_spare)
multiprocessing.util.Finalize(None, discard_spare, exitpriority=100)
