"""The harness API: what a harness (``captures/NAME.py``) imports to state its cases.

    from tracework_harness import capture

    with capture.case("M-01", "What does the store receive?") as c:
        c.record("store", rows)                      # a transcript entry: any value
        c.check("each row names its source", holds=False, observed="columns: id, text")
    capture.table("expiry", ["age (days)", "recalled"], [[1, True], [8, False]])
    capture.normalise(r"req-[0-9]+", "<request>")    # a volatile value of this subject
    capture.tests("T-01", "Do its own tests pass?", ["tests/unit"])  # a scripted case
    for trial in capture.trials("M-01", "Is it followed?", ["stated", "control"]):
        trial.record("reply", ask_the_model(trial.condition))  # N per condition
        trial.observe("the reply ends with it")              # never graded

This module runs inside the subject's own environment, so it uses the standard
library only and the syntax of Python 3.8.  It never writes a file: every message
goes to tracework through a pipe that the runner opens (not stdout, so the subject's
own prints cannot pass for a result).  Run by hand, without tracework, it writes a
one-line summary of each case to stderr instead.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for the type checker: at run time (Python 3.8 too) these are dicts
    from typing import NotRequired, TypedDict

    #: A message to tracework: one JSON object, whose ``t`` names its kind and whose
    #: other keys are that kind's fields (tracework's reader checks each of them).
    Message = dict[str, Any]

    class ModelTable(TypedDict):
        """The declaration's ``[model]`` as the runner gives it."""

        listen: list[list[Any]]  # [host, port] of each address the relay listens on
        socket: str  # the relay's Unix socket
        trials: int  # how many trials of each condition

    class Label(TypedDict):
        """What the model relay tags the bytes it carries with."""

        case: str
        condition: NotRequired[str | None]
        trial: NotRequired[int]

    #: The ``runner`` record of a case run by :meth:`Capture.tests`.
    RunnerRecord = TypedDict(
        "RunnerRecord",
        {
            "runner": str,
            "version": str | None,
            "paths": list[str],
            "args": list[str],
            "exit status": int | None,
        },
    )

__all__ = ["HarnessError", "TestRun", "Trial", "capture"]

#: The protocol's version; tracework refuses messages of another.
PROTOCOL = 1
STATUSES = ("PASS", "FAIL", "UNKNOWN")
ARMS = ("scripted", "model-driven")
_ID = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,63}\Z")
#: Names of records and tables: one line of printable text.
_NAME = re.compile(r"[^\x00-\x1f\x7f]{1,100}\Z")
#: Containers nested deeper than this are recorded as their repr.
_MAX_DEPTH = 64
#: The test runners capture.tests knows, and what each test's outcome may be.
RUNNERS = ("pytest", "unittest")
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
#: A test's outcome as the counts name it ("errors", as pytest's summary says).
_COUNTED = {"error": "errors"}
#: How many conditions one case's trials may have.
MAX_CONDITIONS = 100


class HarnessError(ValueError):
    """A harness used this API wrongly (an unknown status, a case without one…)."""


def jsonable(value: Any, _depth: int = 0) -> Any:
    """``value`` as JSON data: dicts, lists, strings, numbers, booleans and None as they
    are (tuples as lists, keys that are not strings as their repr); anything else —
    an object, bytes, a set, NaN — as its ``repr``, so nothing is ever refused."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if _depth >= _MAX_DEPTH:
        return repr(value)
    if isinstance(value, dict):
        return {
            (k if isinstance(k, str) else repr(k)): jsonable(v, _depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [jsonable(v, _depth + 1) for v in value]
    return repr(value)


def _text(value: Any, what: str, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise HarnessError(f"{what} must be a non-empty string, not {value!r}")
    return value


class _Channel:
    """Where messages go: the runner's pipe, or (run by hand) nowhere but a summary."""

    def __init__(self) -> None:
        self.fd: int | None = None
        self.pid = os.getpid()
        self.lock = threading.Lock()

    def send(self, message: Message) -> None:
        # ASCII on the wire: a lone surrogate travels as an escape, never as bad UTF-8
        data = (json.dumps(message, allow_nan=False, separators=(",", ":")) + "\n").encode()
        if self.fd is None:
            return
        if os.getpid() != self.pid:
            raise HarnessError(
                "only the harness's own process may send results (this is a child it forked)"
            )
        with self.lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]


class Case:
    """One case: its transcripts, and its status — stated, or computed from checks."""

    def __init__(self, owner: Capture, case_id: str, question: str, arm: str) -> None:
        self._owner = owner
        self.id = case_id
        self.question = question
        self.arm = arm
        self._status: str | None = None
        self._checks: list[bool | None] = []
        self._observed = False
        self._trials = False  # run by capture.trials: its trials observe, not the case

    def _send(self, kind: str, **fields: Any) -> None:
        if self._owner._open is not self:
            raise HarnessError(f"case {self.id} has ended; record inside its `with` block")
        self._owner._channel.send({"t": kind, "case": self.id, **fields})

    def record(self, name: str, value: Any) -> None:
        """Add a transcript entry: ``value`` as JSON (objects that are not, as repr)."""
        if not isinstance(name, str) or not _NAME.match(name) or not name.strip():
            raise HarnessError(f"record name {name!r}: one line of text, 1 to 100 characters")
        self._send("record", name=name, value=jsonable(value))

    def check(self, criterion: str, holds: bool | None, observed: str) -> None:
        """One criterion of a scripted case, judged from recorded data: ``holds`` is
        True, False, or None when the fixture cannot show it.  Without an explicit
        :meth:`status`, the case is FAIL if any check fails, PASS if all hold, and
        UNKNOWN otherwise."""
        self._scripted_only("check")
        if holds not in (True, False, None):
            raise HarnessError(f"check {criterion!r}: holds must be True, False or None")
        if self._status is not None:
            raise HarnessError(f"case {self.id}: checks and an explicit status do not mix")
        self._send(
            "check",
            criterion=_text(criterion, "criterion"),
            holds=holds,
            observed=_text(observed, "observed"),
        )
        self._checks.append(holds)

    def status(self, status: str, *, criterion: str, observed: str) -> None:
        """State the case's status, the criterion it was judged by and what was seen."""
        self._scripted_only("status")
        if status not in STATUSES:
            raise HarnessError(f"case {self.id}: status {status!r} is not one of {STATUSES}")
        if self._status is not None or self._checks:
            raise HarnessError(f"case {self.id} already has a status")
        self._send(
            "status",
            status=status,
            criterion=_text(criterion, "criterion"),
            observed=_text(observed, "observed"),
        )
        self._status = status

    def observe(self, observed: str, *, criterion: str | None = None) -> None:
        """What a model-driven case saw (it is never graded, so it has no status)."""
        if self.arm != "model-driven":
            raise HarnessError(f"case {self.id} is scripted: give it a status or checks")
        if self._trials:
            raise HarnessError(f"case {self.id} runs trials: each trial observes (trial.observe)")
        self._send(
            "observe",
            observed=_text(observed, "observed"),
            criterion=_text(criterion, "criterion", required=False),
        )
        self._observed = True

    def _scripted_only(self, what: str) -> None:
        if self.arm != "scripted":
            raise HarnessError(
                f"case {self.id} is model-driven, so it is never graded: "
                f"use c.observe(…) instead of c.{what}(…)"
            )

    @property
    def outcome(self) -> str:
        """The status as it stands (for the summary printed when run by hand)."""
        if self.arm != "scripted":
            return "model-driven"
        if self._status is not None:
            return self._status
        if False in self._checks:
            return "FAIL"
        return "PASS" if self._checks and all(self._checks) else "UNKNOWN"

    def __enter__(self) -> Case:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if kind is not None:
            self._owner._open = None  # the runner reports the exception
            return
        if self.arm == "scripted" and self._status is None and not self._checks:
            raise HarnessError(
                f"case {self.id} ended without a status: call c.status(…) or c.check(…)"
            )
        if self.arm == "model-driven" and not self._observed:
            raise HarnessError(f"case {self.id} ended without c.observe(…)")
        self._send("end")
        self._owner._open = None
        if self._owner._channel.fd is None:
            sys.stderr.write(f"{self.id}  {self.outcome}  {self.question}\n")


class Trial:
    """One trial of a model-driven case run by :meth:`Capture.trials`: its condition
    (None when the case has one unnamed condition), its number (1 to N), what it
    recorded and what it observed.  The model exchanges made while it is the trial
    running are kept with it by tracework."""

    def __init__(self, case: Case, condition: str | None, number: int) -> None:
        self._case = case
        self.condition = condition
        self.number = number
        self._observed = False
        self._current = True

    def __repr__(self) -> str:
        return f"<trial {self.number} of case {self._case.id}, condition {self.condition!r}>"

    def _live(self, what: str) -> None:
        if not self._current:
            raise HarnessError(
                f"case {self._case.id}: trial {self.number} has ended; {what} inside its loop"
            )

    def record(self, name: str, value: Any) -> None:
        """Add an entry to this trial's transcript: ``value`` as JSON (else its repr)."""
        self._live("record")
        self._case.record(name, value)

    def observe(self, observed: str, *, criterion: str | None = None) -> None:
        """What this trial saw (never graded: a trial has no status)."""
        self._live("observe")
        self._case._send(
            "observe",
            observed=_text(observed, "observed"),
            criterion=_text(criterion, "criterion", required=False),
        )
        self._observed = True


class TestRun:
    """What :meth:`Capture.tests` saw: the runner and its version, the exit status, each
    test's outcome by id, the counts, and the status and observation of the case."""

    __test__ = False  # not a test class, whatever pytest would guess from its name

    def __init__(self, runner: str, paths: list[str], args: list[str]) -> None:
        self.runner = runner
        self.paths = paths
        self.args = args
        self.version: str | None = None
        self.returncode: int | None = None
        self.outcomes: dict[str, str] = {}
        self.messages: dict[str, str] = {}
        self.reason: str | None = None  # why the run says nothing, when it does not
        self.status = "UNKNOWN"
        self.observed = ""

    @property
    def counts(self) -> dict[str, int]:
        """How many tests had each outcome (``errors`` for ``error``)."""
        found = {_COUNTED.get(o, o): 0 for o in OUTCOMES}
        for outcome in self.outcomes.values():
            found[_COUNTED.get(outcome, outcome)] += 1
        return found

    def _judge(self) -> None:
        """PASS when a test ran and none failed or errored, FAIL when one did, UNKNOWN
        when none ran or the runner did not finish; the observation says which."""
        counts = self.counts
        said = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no test"
        who = self.runner + (f" {self.version}" if self.version else "")
        ran = sum(counts[k] for k in ("passed", "failed", "errors", "xfailed", "xpassed"))
        if counts["failed"] or counts["errors"]:
            self.status = "FAIL"
        elif self.reason is None and self.returncode == 5 and not ran:
            self.reason = "no test was collected"
        elif self.reason is None and self.returncode != 0:
            self.reason = f"{who} exited with status {self.returncode} (see the log)"
        elif self.reason is None and not ran:
            self.reason = "no test ran"
        elif self.reason is None:
            self.status = "PASS"
        self.observed = said + (f"; {self.reason}" if self.reason else "")
        if self.returncode is not None:
            self.observed += f" ({who}, exit status {self.returncode})"


class Capture:
    """The one capture of this run: ``from tracework_harness import capture``."""

    def __init__(self) -> None:
        self._channel = _Channel()
        self._open: Case | None = None
        self._ids: set[str] = set()
        self._paths: list[str] = []  # the tree's folders on the import path (the runner's)
        self._model: ModelTable | None = None
        self._trial: Trial | None = None

    def case(self, case_id: str, question: str, *, arm: str = "scripted") -> Case:
        """Open a case; use it as ``with capture.case(…) as c:``."""
        if not isinstance(case_id, str) or not _ID.match(case_id):
            raise HarnessError(
                f"case id {case_id!r}: start with a letter; letters, digits, '.', '_', '-'"
            )
        if case_id.lower() in self._ids:
            raise HarnessError(
                f"case {case_id} was already run (ids are compared ignoring case: "
                "transcripts/ID.json must not collide on any file system)"
            )
        if arm not in ARMS:
            raise HarnessError(f"case {case_id}: arm {arm!r} is not one of {ARMS}")
        if self._open is not None:
            raise HarnessError(
                f"case {case_id} opened inside case {self._open.id}{_loop(self._open)}"
            )
        self._ids.add(case_id.lower())
        opened = Case(self, case_id, _text(question, "question") or "", arm)
        self._channel.send({"t": "case", "id": case_id, "question": question, "arm": arm})
        self._open = opened
        return opened

    def tests(
        self,
        case_id: str,
        question: str,
        paths: Sequence[str] = (),
        *,
        runner: str = "pytest",
        args: Sequence[str] = (),
        timeout: float | None = None,
    ) -> TestRun:
        """Run the subject's own test suite as scripted case ``case_id``: ``paths`` (files,
        folders or, for unittest, dotted names; none: the runner's own default) with
        ``runner`` — ``pytest`` (``python -m pytest -p no:cacheprovider`` in the capture's
        environment) or ``unittest`` — as a child process, its output in the log.  The
        case records the runner, the counts and every test's id and outcome; it is PASS
        when at least one test ran and none failed or errored, FAIL when one did, and
        UNKNOWN when none was collected, the runner did not finish (``timeout`` seconds,
        when given) or pytest is not installed.  Returns what was seen."""
        if runner not in RUNNERS:
            raise HarnessError(f"case {case_id}: runner {runner!r} is not one of {RUNNERS}")
        chosen = _strings(paths, f"case {case_id}: paths")
        extra = _strings(args, f"case {case_id}: args")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
        ):
            raise HarnessError(f"case {case_id}: timeout must be a number of seconds above 0")
        with self.case(case_id, question) as c:
            run = _run_tests(runner, chosen, extra, timeout, self._paths)
            c.record("runner", _runner_record(run))
            c.record("counts", run.counts)
            c.record(
                "tests",
                [
                    dict({"id": test, "outcome": outcome}, **_message(run, test))
                    for test, outcome in sorted(run.outcomes.items())
                ],
            )
            c.status(
                run.status,
                criterion="at least one test ran, and none failed or errored",
                observed=run.observed,
            )
        return run

    def trials(
        self, case_id: str, question: str, conditions: Sequence[str] | None = None
    ) -> Iterator[Trial]:
        """Run model-driven case ``case_id`` as trials: ``[model] trials`` (N) of each of
        ``conditions`` (none: one unnamed condition), trial 1 of every condition, then
        trial 2…, so a drift of the model server falls on every condition alike.  Use it
        as ``for trial in capture.trials(…):``, recording and observing each trial;
        tracework keeps the model exchanges made during each trial with it.  Never
        graded.  Run by hand, without tracework, each condition runs once."""
        if conditions is None:
            names: list[str | None] = [None]
        else:
            if isinstance(conditions, str) or not isinstance(conditions, (list, tuple)):
                raise HarnessError(f"case {case_id}: conditions must be a list of names")
            names = []
            for condition in conditions:
                if (
                    not isinstance(condition, str)
                    or not _NAME.match(condition)
                    or not (condition.strip())
                ):
                    raise HarnessError(
                        f"case {case_id}: condition {condition!r}: one line of text, "
                        "1 to 100 characters"
                    )
                if condition in names:
                    raise HarnessError(f"case {case_id}: condition {condition!r} is named twice")
                names.append(condition)
            if not 1 <= len(names) <= MAX_CONDITIONS:
                raise HarnessError(f"case {case_id}: give 1 to {MAX_CONDITIONS} conditions")
        if self._channel.fd is None:
            count = 1
        elif self._model is None:
            raise HarnessError(
                f"case {case_id}: capture.trials needs a [model] table in the capture's "
                "declaration (its endpoint, and trials = N per condition)"
            )
        else:
            count = int(self._model["trials"])
        return self._run_trials(case_id, question, names, count)

    def _run_trials(
        self, case_id: str, question: str, names: list[str | None], count: int
    ) -> Iterator[Trial]:
        case = self.case(case_id, question, arm="model-driven")
        case._trials = True
        for number in range(1, count + 1):
            for condition in names:
                trial = Trial(case, condition, number)
                case._send("trial", condition=condition, number=number)
                self._trial = trial
                try:
                    yield trial
                finally:
                    trial._current = False
                    self._trial = None
                if not trial._observed:
                    shown = "" if condition is None else f" ({condition})"
                    raise HarnessError(
                        f"case {case_id}: trial {number}{shown} ended without trial.observe(…)"
                    )
        case._observed = True
        case.__exit__(None, None, None)

    def _model_label(self) -> Label | None:
        """What the model relay tags the bytes it carries now with: the model-driven case
        open, and its trial; None outside a model-driven case (nothing is carried)."""
        case, trial = self._open, self._trial
        if case is None or case.arm != "model-driven":
            return None
        if trial is None or trial._case is not case:
            return {"case": case.id}
        return {"case": case.id, "condition": trial.condition, "trial": trial.number}

    def table(
        self,
        name: str,
        columns: list[str],
        rows: list[list[Any]],
        *,
        notes: str | None = None,
        arm: str = "scripted",
    ) -> None:
        """A results table computed from the runs (each row as long as ``columns``)."""
        if not isinstance(name, str) or not _NAME.match(name) or not name.strip():
            raise HarnessError(f"table name {name!r}: one line of text, 1 to 100 characters")
        if arm not in ARMS:
            raise HarnessError(f"table {name}: arm {arm!r} is not one of {ARMS}")
        cols = [_text(c, f"table {name}: a column name") for c in columns]
        body = [jsonable(list(row)) for row in rows]
        for number, row in enumerate(body, 1):
            if len(row) != len(cols):
                raise HarnessError(
                    f"table {name}: row {number} has {len(row)} cells for {len(cols)} columns"
                )
        self._channel.send(
            {
                "t": "table",
                "name": name,
                "columns": cols,
                "rows": body,
                "notes": _text(notes, "notes", required=False),
                "arm": arm,
            }
        )

    def normalise(self, pattern: str, placeholder: str) -> None:
        """Replace what ``pattern`` (a regular expression in RE2 syntax: no
        back-references or look-arounds) matches with ``placeholder`` everywhere in the
        capture, after tracework's own rules (UUIDs, times, addresses, paths)."""
        self._channel.send(
            {
                "t": "normalise",
                "pattern": _text(pattern, "pattern"),
                "placeholder": _text(placeholder, "placeholder"),
            }
        )


def _loop(case: Case) -> str:
    """Why a case of trials is still open: its loop was left early."""
    if not case._trials:
        return ""
    return " (its loop over capture.trials was left before the last trial: a break?)"


def _strings(values: Sequence[str], what: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise HarnessError(f"{what} must be a list of strings, not {values!r}")
    for value in values:
        if not isinstance(value, str) or not value or "\x00" in value:
            raise HarnessError(f"{what}: {value!r} is not a non-empty string")
    return list(values)


def _runner_record(run: TestRun) -> RunnerRecord:
    return {
        "runner": run.runner,
        "version": run.version,
        "paths": run.paths,
        "args": run.args,
        "exit status": run.returncode,
    }


def _message(run: TestRun, test: str) -> dict[str, str]:
    message = run.messages.get(test)
    return {} if message is None else {"message": message}


def _run_tests(
    runner: str, paths: list[str], args: list[str], timeout: float | None, tree: list[str]
) -> TestRun:
    """Run the suite as a child process, whose outcomes a reporter of ours writes to a
    file in the private /tmp: a child cannot send on the results socket, so this process
    reads the file and sends the case itself."""
    run = TestRun(runner, paths, args)
    if runner == "pytest" and importlib.util.find_spec("pytest") is None:
        run.reason = "pytest is not installed in the capture environment"
        run._judge()
        return run
    lib = os.path.dirname(os.path.abspath(__file__))
    module = "pytest" if runner == "pytest" else "tracework_unittest"
    argv = [sys.executable, "-m", module]
    if runner == "pytest":
        argv += ["-p", "no:cacheprovider", "-p", "tracework_pytest"]
    argv += [*args, *paths]
    folder = tempfile.mkdtemp(prefix="tracework-tests-")
    out = os.path.join(folder, "outcomes.jsonl")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([lib, *tree])
    env["TRACEWORK_TESTS_OUT"] = out
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        child = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, close_fds=True)
        try:
            run.returncode = child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            run.reason = f"{runner} did not finish within {timeout:g} s"
        _read_outcomes(run, out)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    run._judge()
    return run


def _read_outcomes(run: TestRun, path: str) -> None:
    """The reporter's lines: its runner's version, then each test's outcome as it became
    known (a later line for the same id replaces an earlier one)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        if run.reason is None:
            run.reason = f"{run.runner} stopped before its reporter started (see the log)"
        return
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line the run was stopped in the middle of
        if not isinstance(entry, dict):
            continue
        if entry.get("t") == "start" and isinstance(entry.get("version"), str):
            run.version = entry["version"]
        elif entry.get("t") == "test" and entry.get("outcome") in OUTCOMES:
            test = entry.get("id")
            if isinstance(test, str) and test:
                run.outcomes[test] = entry["outcome"]
                message = entry.get("message")
                if isinstance(message, str) and message:
                    run.messages[test] = message
                else:
                    run.messages.pop(test, None)


#: The capture of this run.
capture = Capture()


def _connect(fd: int) -> None:
    """Called by tracework's runner: send every message to ``fd`` from now on."""
    capture._channel.fd = fd
    capture._channel.pid = os.getpid()
    capture._channel.send({"t": "hello", "protocol": PROTOCOL})


def _configure(paths: list[str], model: ModelTable | None) -> None:
    """Called by the runner: the tree's folders on the import path (a test run's child
    gets them too) and the declaration's ``[model]`` (its ``trials``), or None."""
    capture._paths = list(paths)
    capture._model = model


def _finish() -> None:
    """Called by the runner after the harness returned: the run is complete."""
    if capture._open is not None:
        raise HarnessError(f"case {capture._open.id} was never closed{_loop(capture._open)}")
    capture._channel.send({"t": "done"})


def _failed(kind: str, message: str, trace: str) -> None:
    """Called by the runner when the harness raised: what, and where."""
    capture._open = None
    capture._channel.send({"t": "error", "type": kind, "message": message, "traceback": trace})
