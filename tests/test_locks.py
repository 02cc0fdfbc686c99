"""The writers' lock (``tracework.fsio.locked``): one holder at a time across processes,
a wait that ends in :class:`~tracework.fsio.LockTimeout`, and nothing left locked by a
holder that died, even by SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tracework import fsio

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tracework.fsio import locked
    with locked(Path(sys.argv[1])):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
        Path(sys.argv[1] + ".letting-go").touch()  # still held: written before the release
    """
)


def _hold(target: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process holding the lock on ``target``, once it said so; just before it
    lets go, it leaves ``<target>.letting-go``."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(target), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "held\n"
    return proc


def test_a_lock_another_process_holds_times_out_and_is_had_once_it_lets_go(tmp_path):
    target = tmp_path / "register.yaml"
    holder = _hold(target, 3.0)  # held well past the 0.2 s a waiter gives it
    letting_go = tmp_path / "register.yaml.letting-go"
    try:
        start = time.monotonic()
        with (
            pytest.raises(fsio.LockTimeout, match="locked by another process"),
            fsio.locked(target, timeout=0.2),
        ):
            pytest.fail("the lock was had while another process held it")
        assert time.monotonic() - start >= 0.2
        with fsio.locked(target, timeout=60):  # waits for the holder to let go
            assert letting_go.exists()  # had only after the holder was done with it
        assert holder.wait(timeout=60) == 0
    finally:
        holder.kill()
        holder.wait()
    assert (tmp_path / ".register.yaml.lock").is_file()
    assert not target.exists()  # the lock is beside the file, never the file itself


def test_a_holder_killed_outright_leaves_nothing_locked(tmp_path):
    target = tmp_path / "out"
    holder = _hold(target, 60)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with fsio.locked(target, timeout=0):
        pass


def test_the_lock_is_released_when_the_block_raises(tmp_path):
    target = tmp_path / "x"
    with pytest.raises(RuntimeError), fsio.locked(target):
        raise RuntimeError("inside")
    with fsio.locked(target, timeout=0):
        pass


def test_a_lock_file_that_is_a_link_is_refused_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (tmp_path / ".x.lock").symlink_to(elsewhere)
    with pytest.raises(OSError), fsio.locked(tmp_path / "x", timeout=0):
        pass
    assert not elsewhere.exists()
