"""The harness API: what a harness (``captures/NAME.py``) imports to state its cases.

    from tracework_harness import capture

    with capture.case("M-01", "What does the store receive?") as c:
        c.record("store", rows)                      # a transcript entry: any value
        c.check("each row names its source", holds=False, observed="columns: id, text")
    capture.table("expiry", ["age (days)", "recalled"], [[1, True], [8, False]])
    capture.normalise(r"req-[0-9]+", "<request>")    # a volatile value of this subject

This module runs inside the subject's own environment, so it uses the standard
library only and the syntax of Python 3.8.  It never writes a file: every message
goes to tracework through a pipe that the runner opens (not stdout, so the subject's
own prints cannot pass for a result).  Run by hand, without tracework, it writes a
one-line summary of each case to stderr instead.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import threading
from types import TracebackType
from typing import Any

__all__ = ["HarnessError", "capture"]

#: The protocol's version; tracework refuses messages of another.
PROTOCOL = 1
STATUSES = ("PASS", "FAIL", "UNKNOWN")
ARMS = ("scripted", "model-driven")
_ID = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,63}\Z")
#: Names of records and tables: one line of printable text.
_NAME = re.compile(r"[^\x00-\x1f\x7f]{1,100}\Z")
#: Containers nested deeper than this are recorded as their repr.
_MAX_DEPTH = 64


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

    def send(self, message: dict[str, Any]) -> None:
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


class Capture:
    """The one capture of this run: ``from tracework_harness import capture``."""

    def __init__(self) -> None:
        self._channel = _Channel()
        self._open: Case | None = None
        self._ids: set[str] = set()

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
            raise HarnessError(f"case {case_id} opened inside case {self._open.id}")
        self._ids.add(case_id.lower())
        opened = Case(self, case_id, _text(question, "question") or "", arm)
        self._channel.send({"t": "case", "id": case_id, "question": question, "arm": arm})
        self._open = opened
        return opened

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


#: The capture of this run.
capture = Capture()


def _connect(fd: int) -> None:
    """Called by tracework's runner: send every message to ``fd`` from now on."""
    capture._channel.fd = fd
    capture._channel.pid = os.getpid()
    capture._channel.send({"t": "hello", "protocol": PROTOCOL})


def _finish() -> None:
    """Called by the runner after the harness returned: the run is complete."""
    if capture._open is not None:
        raise HarnessError(f"case {capture._open.id} was never closed")
    capture._channel.send({"t": "done"})


def _failed(kind: str, message: str, trace: str) -> None:
    """Called by the runner when the harness raised: what, and where."""
    capture._open = None
    capture._channel.send({"t": "error", "type": kind, "message": message, "traceback": trace})
