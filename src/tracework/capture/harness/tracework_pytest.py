"""The pytest reporter of ``capture.tests``: each test's outcome, as pytest itself has it.

``capture.tests(…, runner="pytest")`` runs ``python -m pytest -p no:cacheprovider -p
tracework_pytest …`` as a child of the harness, with this folder on ``PYTHONPATH`` and
``TRACEWORK_TESTS_OUT`` naming a file in the sandbox's private /tmp.  This plugin appends
one JSON line to that file when the session starts (pytest's version) and one each time a
test's outcome becomes known or changes; the harness reads the file once pytest has
ended and sends the case itself (a child may not send on the results socket).

A plugin rather than ``--junit-xml``: it sees pytest's own reports, so it keeps what
JUnit XML loses — an expected failure apart from a skip, an unexpected pass apart from a
pass, the node id as pytest prints it (XML splits it into a dotted class name and a
name), a collection error as the error of the file it is in — and it never writes a
duration, a time stamp or a host name, which the XML holds and which would have to be
stripped.

A test's outcome combines its phases as pytest's summary does: a failing setup or
collection is ``error``; a call that fails is ``failed`` (a strict unexpected pass too),
one that passes is ``passed`` (``xpassed`` when marked xfail), a skip is ``skipped``
(``xfailed`` when marked xfail); a teardown that fails after a passing call makes it
``error``.  Ids are relative to the folder pytest was started in (the tree), whatever
pytest chose as its root.  Standard library and pytest only, Python 3.8 syntax.
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for the type checker only: at run time (Python 3.8 too) all are dicts
    from typing import Literal, NotRequired, TypedDict

    class Started(TypedDict):
        """The file's first line: the runner and its version."""

        t: Literal["start"]
        runner: str
        version: str

    class Outcome(TypedDict):
        """A test's outcome as it became known (a later line for its id replaces it)."""

        t: Literal["test"]
        id: str
        outcome: str
        message: NotRequired[str]

    class Finished(TypedDict):
        """The last line: the runner finished, with this exit status."""

        t: Literal["finish"]
        exit: int


#: The most characters of a failure's message, or a skip's reason, that are kept.
MESSAGE_CHARS = 2000

_outcomes: dict[str, str] = {}
_prefix = ""  # the root pytest chose, relative to the folder it was started in


def _write(entry: Started | Outcome | Finished) -> None:
    path = os.environ.get("TRACEWORK_TESTS_OUT")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")


def _tree_id(nodeid: str) -> str:
    """The node id relative to the folder pytest was started in."""
    if not _prefix or not nodeid:
        return nodeid or "."
    return f"{_prefix}/{nodeid}"


def _message(report: Any) -> str | None:
    """A failure's crash message, or a skip's reason: never a path or a line number."""
    longrepr = report.longrepr
    text = None
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        text = str(longrepr[2])  # a skip: (path, line, reason)
    elif getattr(longrepr, "reprcrash", None) is not None:
        text = getattr(longrepr.reprcrash, "message", None)
    elif longrepr is not None:  # a collection error's report: its last line says what
        lines = [ln for ln in str(longrepr).splitlines() if ln.strip()]
        text = re.sub(r"^E\s+", "", lines[-1].strip()) if lines else None
    wasxfail = getattr(report, "wasxfail", None)
    if not text and isinstance(wasxfail, str) and wasxfail:
        text = wasxfail
    return None if not text else text[:MESSAGE_CHARS]


def _set(nodeid: str, outcome: str, message: str | None) -> None:
    test = _tree_id(nodeid)
    if _outcomes.get(test) == outcome:
        return
    _outcomes[test] = outcome
    entry: Outcome = {"t": "test", "id": test, "outcome": outcome}
    if message:
        entry["message"] = message
    _write(entry)


def pytest_sessionstart(session: Any) -> None:
    global _prefix
    import pytest

    config = session.config
    root = str(config.rootpath)
    start = str(config.invocation_params.dir)
    relative = os.path.relpath(root, start)
    _prefix = "" if relative == "." else relative.replace(os.sep, "/")
    _write({"t": "start", "runner": "pytest", "version": pytest.__version__})


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _set(report.nodeid, "error", _message(report))


def pytest_runtest_logreport(report: Any) -> None:
    test = _tree_id(report.nodeid)
    before = _outcomes.get(test)
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.passed:
            outcome = "xpassed" if xfail else "passed"
        elif report.failed:
            outcome = "failed"
        else:
            outcome = "xfailed" if xfail else "skipped"
    elif report.failed:
        if report.when == "teardown" and before in ("failed", "error"):
            return  # the test's own failure is what it is counted by
        outcome = "error"
    elif report.skipped:  # a skip in setup: the call never ran
        outcome = "xfailed" if xfail else "skipped"
    else:
        return  # a setup or teardown that passed says nothing of the test
    _set(report.nodeid, outcome, _message(report) if outcome != "passed" else None)


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    _write({"t": "finish", "exit": int(exitstatus)})
