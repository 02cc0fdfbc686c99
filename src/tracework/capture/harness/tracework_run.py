"""Run one harness inside the sandbox: limits, working folder, protocol, then the harness.

tracework starts this file with the subject environment's Python, inside the
isolation, as ``python -s -B tracework_run.py FD HARNESS TREE HOME LIMITS``.  It sets
the resource limits before any harness or subject code is imported (the hard limit
too, so nothing can raise them again), makes the fresh home folder, enters the
exported tree, opens the protocol pipe, and runs the harness as ``__main__``.  An
exception the harness does not catch is sent to tracework with its traceback.

Standard library only, Python 3.8 syntax: it runs in the subject's environment.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import runpy
import sys
import traceback


def _limit(which: int, value: int) -> None:
    resource.setrlimit(which, (value, value))


def main(argv: list[str]) -> int:
    fd, harness, tree, home, limits_json = int(argv[1]), argv[2], argv[3], argv[4], argv[5]
    limits = json.loads(limits_json)
    mib = 1024 * 1024
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_AS, limits["memory_mib"] * mib)
    _limit(resource.RLIMIT_NPROC, limits["processes"])
    _limit(resource.RLIMIT_FSIZE, limits["output_mib"] * mib)
    _limit(resource.RLIMIT_CPU, limits["cpu_seconds"])
    os.makedirs(home, exist_ok=True)
    os.chdir(tree)
    th = importlib.import_module("tracework_harness")  # beside this file, on the path

    th._connect(fd)
    try:
        runpy.run_path(harness, run_name="__main__")
    except SystemExit as stop:
        if stop.code not in (None, 0):
            th._failed("SystemExit", f"the harness exited with status {stop.code!r}", "")
            return 1
    except BaseException as exc:  # everything the harness raised goes to tracework
        trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        th._failed(type(exc).__name__, str(exc), trace)
        return 1
    try:
        th._finish()
    except th.HarnessError as exc:
        th._failed("HarnessError", str(exc), "")
        return 1
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no interpreter teardown: threads the subject left cannot hang the exit
