"""The ``tracework`` program's exit (:func:`tracework.cli.run`): out without the
interpreter's teardown, yet everything said, every exit handler run, the exit code
kept, and a thread still running waited for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _program(folder: Path, *args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """``tracework ARGS`` as the installed program runs it, after ``prelude``, its
    standard streams buffered as they are by default."""
    argv = f"import sys\nsys.argv[1:] = {list(args)!r}"
    code = f"{prelude}\n{argv}\nfrom tracework.cli import run\nrun()"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
    )


def test_what_the_command_printed_is_all_there_and_it_exits_0(tmp_path):
    # a pipe: stdout is block-buffered; click.echo flushes it, an exit handler's print not
    done = _program(
        tmp_path, "--help", prelude="import atexit\natexit.register(print, 'said last')"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: ")
    assert "render" in done.stdout and done.stdout.endswith("\nsaid last\n")


def test_an_error_keeps_its_message_and_code_and_the_exit_handlers_run(tmp_path):
    marker = tmp_path / "handled"
    prelude = f"import atexit, pathlib\natexit.register(pathlib.Path({str(marker)!r}).touch)"
    done = _program(tmp_path, "render", "nosuch", prelude=prelude)
    assert done.returncode == 2
    assert done.stderr.startswith("tracework: error: "), done.stderr
    assert marker.exists()


def test_a_thread_still_running_is_waited_for(tmp_path):
    marker = tmp_path / "finished"
    prelude = (
        "import pathlib, threading, time\n"
        "threading.Thread(target=lambda: (time.sleep(0.5), "
        f"pathlib.Path({str(marker)!r}).touch())).start()"
    )
    done = _program(tmp_path, "--version", prelude=prelude)
    assert done.returncode == 0, done.stderr
    assert "tracework" in done.stdout
    assert marker.exists()


def test_a_message_given_to_exit_is_printed_with_code_1(tmp_path):
    prelude = (
        "import tracework.cli\n"
        "def said(): raise SystemExit('stopped: a reason')\n"
        "tracework.cli.main = said"
    )
    done = _program(tmp_path, prelude=prelude)
    assert done.returncode == 1
    assert done.stderr == "stopped: a reason\n"
