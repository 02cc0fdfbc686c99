"""The unittest runner of ``capture.tests``: run the suite, write each test's outcome.

``capture.tests(…, runner="unittest")`` starts ``python -m tracework_unittest PATH…``
as a child of the harness, with ``TRACEWORK_TESTS_OUT`` naming a file in the sandbox's
private /tmp.  Each ``PATH`` is a folder (its ``test*.py`` files are discovered, with
the tree as the top of the import path when every folder down to it is a package, else
the folder itself), a ``.py`` file, or a dotted name (a module, class or method); none
discovers from the tree's root.  Outcomes are written as :mod:`tracework_pytest` writes
them: ``passed``, ``failed``, ``error`` (a module that does not import, or a failing
``setUp``/``setUpClass``), ``skipped``, ``xfailed`` (``expectedFailure``) and
``xpassed`` (an unexpected success).  Ids are unittest's own (``module.Class.method``).
The runner's progress and failures go to stderr, the capture's log.  It exits 0 once
the run is complete, whatever the outcomes: those are in the file.

Standard library only, Python 3.8 syntax.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import unittest
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


MESSAGE_CHARS = 2000


def _write(entry: Started | Outcome | Finished) -> None:
    path = os.environ.get("TRACEWORK_TESTS_OUT")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, sort_keys=True) + "\n")


def _last_line(err: Any) -> str:
    kind, value = err[0], err[1]
    text = f"{kind.__name__}: {value}" if str(value) else kind.__name__
    return text[:MESSAGE_CHARS]


class _Result(unittest.TextTestResult):
    def _out(self, test: Any, outcome: str, message: str | None = None) -> None:
        entry: Outcome = {"t": "test", "id": test.id(), "outcome": outcome}
        if message:
            entry["message"] = message[:MESSAGE_CHARS]
        _write(entry)

    def addSuccess(self, test: Any) -> None:
        super().addSuccess(test)
        self._out(test, "passed")

    def addFailure(self, test: Any, err: Any) -> None:
        super().addFailure(test, err)
        self._out(test, "failed", _last_line(err))

    def addError(self, test: Any, err: Any) -> None:
        super().addError(test, err)
        self._out(test, "error", _last_line(err))

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._out(subtest, "failed" if failed else "error", _last_line(err))

    def addSkip(self, test: Any, reason: str) -> None:
        super().addSkip(test, reason)
        self._out(test, "skipped", reason)

    def addExpectedFailure(self, test: Any, err: Any) -> None:
        super().addExpectedFailure(test, err)
        self._out(test, "xfailed", _last_line(err))

    def addUnexpectedSuccess(self, test: Any) -> None:
        super().addUnexpectedSuccess(test)
        self._out(test, "xpassed")


def _is_package_chain(folder: str) -> bool:
    """Whether every folder from the tree's root down to ``folder`` is a package."""
    parts = [p for p in os.path.normpath(folder).split(os.sep) if p not in ("", ".")]
    return bool(parts) and all(
        os.path.isfile(os.path.join(*parts[: n + 1], "__init__.py")) for n in range(len(parts))
    )


def _load(loader: unittest.TestLoader, path: str) -> unittest.TestSuite:
    if os.path.isdir(path):
        top = "." if _is_package_chain(path) else path
        return loader.discover(path, top_level_dir=top)
    if path.endswith(".py") and os.path.isfile(path):
        name = os.path.normpath(path)[: -len(".py")].replace(os.sep, ".")
        return loader.loadTestsFromName(name)
    return loader.loadTestsFromName(path)


def main(argv: list[str]) -> int:
    _write({"t": "start", "runner": "unittest", "version": platform.python_version()})
    sys.path.insert(0, os.getcwd())
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    for path in argv or ["."]:
        try:
            suite.addTest(_load(loader, path))
        except Exception as exc:  # a folder that cannot be discovered: its own error
            _write({"t": "test", "id": path, "outcome": "error", "message": str(exc)[:2000]})
            sys.stderr.write(f"tracework: cannot load tests from {path}: {exc}\n")
    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=2)
    runner.resultclass = _Result  # type: ignore[assignment]
    runner.run(suite)
    _write({"t": "finish", "exit": 0})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
