"""Run one harness inside the sandbox: limits, working folder, protocol, then the harness.

tracework starts this file with the subject environment's Python, inside the
isolation, as ``python -s -B tracework_run.py FD HARNESS TREE HOME LIMITS PATHS MODEL``,
under ``prlimit``: the resource limits (soft and hard) are in force before the
interpreter starts, so nothing that runs at its start-up (a ``.pth`` file of an
installed package, a ``sitecustomize``) can lift them.  The tree is not on the path
when the interpreter starts (no ``PYTHONPATH``), so a ``sitecustomize.py`` or
``__future__.py`` at its root is just a file.  This runner checks that the limits
hold, makes the fresh home folder, enters the tree, announces itself on the results
socket, puts the tree's ``PATHS`` on the import path and runs the harness as
``__main__``.  An exception the harness does not catch is sent to tracework with its
traceback.  ``MODEL`` is ``null``, or the declaration's ``[model]`` as the sandbox sees
it (the addresses to listen on, the relay's socket, the trials per condition): then the
model relay (:mod:`tracework_relay`) listens before the harness runs.

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


def _limits_not_in_force(limits: dict[str, int]) -> list[str]:
    """The limits that are not as the launcher was told to set them (none, normally)."""
    mib = 1024 * 1024
    wanted = (
        ("core", resource.RLIMIT_CORE, 0),
        ("memory_mib", resource.RLIMIT_AS, limits["memory_mib"] * mib),
        ("processes", resource.RLIMIT_NPROC, limits["processes"]),
        ("output_mib", resource.RLIMIT_FSIZE, limits["output_mib"] * mib),
        ("cpu_seconds", resource.RLIMIT_CPU, limits["cpu_seconds"]),
    )
    return [name for name, which, value in wanted if resource.getrlimit(which) != (value, value)]


def main(argv: list[str]) -> int:
    fd, harness, tree, home = int(argv[1]), argv[2], argv[3], argv[4]
    limits, paths = json.loads(argv[5]), json.loads(argv[6])
    model = json.loads(argv[7]) if len(argv) > 7 else None
    th = importlib.import_module("tracework_harness")  # beside this file, sys.path[0]
    th._connect(fd)  # before the tree is importable: the hello is the runner's own
    wrong = _limits_not_in_force(limits)
    if wrong:
        th._failed("SystemExit", "the limits are not in force: " + ", ".join(wrong), "")
        return 1
    th._configure(paths, model)
    if model is not None:
        relay = importlib.import_module("tracework_relay")
        problems = relay.start(model["listen"], model["socket"], th.capture._model_label)
        if len(problems) == len(model["listen"]):
            said = "; ".join(problems)
            th._failed("SystemExit", f"cannot listen on the model endpoint inside: {said}", "")
            return 1
    os.makedirs(home, exist_ok=True)
    os.chdir(tree)
    sys.path[1:1] = paths  # where PYTHONPATH would put them, now that the harness runs
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
