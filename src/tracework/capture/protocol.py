"""The harness protocol, tracework's side: JSON lines on a pipe, checked one by one.

:mod:`tracework_harness` sends one JSON object per line: ``hello`` first, then for
each case ``case``, its ``record``/``check``/``status``/``observe`` messages and
``end`` (a model-driven case run as trials sends a ``trial`` message before each
trial's records and observation), with ``table`` and ``normalise`` messages at any
point between cases, and finally ``done`` (or ``error`` when the harness raised).
Each message is validated by a frozen model, and its place in that order is checked,
so a line that is not JSON, a message of an unknown kind, a record for a case that is
not open or a run that stops half-way is one clear error naming the message's number.

What one run may send is capped by the declaration's ``[limits]`` (``cases``,
``tables``, ``rows``, ``rules``): the first message past a cap ends the reading, so
nothing the harness sends after it is validated or kept, and every check here is
linear in what was sent (a case id or a table name is looked up in a set, not in the
list of those before it).
"""

# No ``from __future__ import annotations`` here: pydantic would evaluate each field's
# annotation from its string (a compile and an eval apiece), and a capture imports this
# module while its first run is waited on.

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from tracework.capture.config import Limits
from tracework.errors import validation_problem

PROTOCOL = 1
CaseId = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9._-]{0,63}$")]
Name = Annotated[
    str, Field(pattern=r"^[^\x00-\x1f\x7f]*[^\x00-\x1f\x7f ][^\x00-\x1f\x7f]*$", max_length=100)
]
Text = Annotated[str, Field(min_length=1)]
Arm = Literal["scripted", "model-driven"]
Status = Literal["PASS", "FAIL", "UNKNOWN"]


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Hello(_Message):
    t: Literal["hello"]
    protocol: int


class CaseOpened(_Message):
    t: Literal["case"]
    id: CaseId
    question: Text
    arm: Arm


class Recorded(_Message):
    t: Literal["record"]
    case: CaseId
    name: Name
    value: Any


class Checked(_Message):
    t: Literal["check"]
    case: CaseId
    criterion: Text
    holds: bool | None
    observed: Text


class Stated(_Message):
    t: Literal["status"]
    case: CaseId
    status: Status
    criterion: Text
    observed: Text


class Observed(_Message):
    t: Literal["observe"]
    case: CaseId
    observed: Text
    criterion: Text | None


class TrialStarted(_Message):
    t: Literal["trial"]
    case: CaseId
    condition: Name | None
    number: Annotated[int, Field(ge=1)]


class Ended(_Message):
    t: Literal["end"]
    case: CaseId


class Tabled(_Message):
    t: Literal["table"]
    name: Name
    columns: list[Text]
    rows: list[list[Any]]
    notes: Text | None
    arm: Arm


class Normalise(_Message):
    t: Literal["normalise"]
    # bounded, so one pass of every rule over the capture stays linear in what was sent
    pattern: Annotated[str, Field(min_length=1, max_length=1000)]
    placeholder: Annotated[str, Field(min_length=1, max_length=100)]


class Failure(_Message):
    t: Literal["error"]
    type: str
    message: str
    traceback: str


class Done(_Message):
    t: Literal["done"]


Message = Annotated[
    Hello
    | CaseOpened
    | Recorded
    | Checked
    | Stated
    | Observed
    | TrialStarted
    | Ended
    | Tabled
    | Normalise
    | Failure
    | Done,
    Field(discriminator="t"),
]
_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)


class ProtocolProblem(ValueError):
    """A message that is malformed or out of place (its number is in the text)."""


class OverLimit(ValueError):
    """A message past a cap of the declaration's ``[limits]``; ``setting`` names the key."""

    def __init__(self, message: str, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


#: The caps of a declaration that gives none.
DEFAULT_LIMITS = Limits()


#: How many conditions one case's trials may have (as the harness API allows).
MAX_CONDITIONS = 100


@dataclass
class RawTrial:
    """One trial of a model-driven case, as the harness sent it."""

    opened: TrialStarted
    records: list[Recorded] = field(default_factory=list)
    observed: Observed | None = None


@dataclass
class RawCase:
    """One case as the harness sent it, before normalisation."""

    opened: CaseOpened
    records: list[Recorded] = field(default_factory=list)
    checks: list[Checked] = field(default_factory=list)
    stated: Stated | None = None
    observed: Observed | None = None
    ended: bool = False
    trials: list[RawTrial] = field(default_factory=list)
    conditions: dict[str | None, int] = field(default_factory=dict)  # trials of each


@dataclass
class RawCapture:
    """Everything one run sent, in order."""

    cases: list[RawCase] = field(default_factory=list)
    tables: list[Tabled] = field(default_factory=list)
    rules: list[Normalise] = field(default_factory=list)
    failure: Failure | None = None
    done: bool = False


def parse(
    lines: Iterable[bytes], limits: Limits = DEFAULT_LIMITS, trials: int | None = None
) -> RawCapture:
    """The run's messages, checked; raises :class:`ProtocolProblem` at the first fault,
    and :class:`OverLimit` at the first message past a cap of ``limits``, reading no
    line after it.  ``trials`` is ``[model] trials`` (None without ``[model]``: a
    ``trial`` message is then a fault)."""
    raw = RawCapture()
    open_case: RawCase | None = None
    ids: set[str] = set()  # lower-cased: ids are compared ignoring case
    names: set[str] = set()
    rows = 0
    for number, line in enumerate(lines, 1):
        message = _message(number, line)
        where = f"protocol message {number} ({message.t})"
        if number == 1:
            if not isinstance(message, Hello) or message.protocol != PROTOCOL:
                raise ProtocolProblem(f"{where}: the run must start with hello, protocol 1")
            continue
        if raw.done or raw.failure is not None:
            raise ProtocolProblem(f"{where}: after the run ended")
        if isinstance(message, Hello):
            raise ProtocolProblem(f"{where}: a second hello")
        if isinstance(message, CaseOpened):
            if open_case is not None:
                raise ProtocolProblem(
                    f"{where}: case {message.id} opened while case {open_case.opened.id} "
                    "was open (it ended by an exception the harness caught, or never ended)"
                )
            if message.id.lower() in ids:
                raise ProtocolProblem(
                    f"{where}: case {message.id} was already run (ids are compared "
                    "ignoring case: their transcripts must not collide on any file system)"
                )
            if len(raw.cases) == limits.cases:
                raise _over(where, f"more than {limits.cases:,} cases", "cases", limits.cases)
            ids.add(message.id.lower())
            open_case = RawCase(message)
            raw.cases.append(open_case)
        elif isinstance(message, Recorded | Checked | Stated | Observed | TrialStarted | Ended):
            if open_case is None or open_case.opened.id != message.case:
                raise ProtocolProblem(f"{where}: case {message.case} is not open")
            _add(open_case, message, where, trials)
            if open_case.ended:
                open_case = None
        elif isinstance(message, Tabled):
            if message.name in names:
                raise ProtocolProblem(f"{where}: a second table named {message.name}")
            if any(len(row) != len(message.columns) for row in message.rows):
                raise ProtocolProblem(f"{where}: a row of table {message.name} is not as wide")
            if len(raw.tables) == limits.tables:
                raise _over(where, f"more than {limits.tables:,} tables", "tables", limits.tables)
            rows += len(message.rows)
            if rows > limits.rows:
                raise _over(
                    where, f"more than {limits.rows:,} table rows in all", "rows", limits.rows
                )
            names.add(message.name)
            raw.tables.append(message)
        elif isinstance(message, Normalise):
            if len(raw.rules) == limits.rules:
                raise _over(
                    where, f"more than {limits.rules:,} normalise rules", "rules", limits.rules
                )
            raw.rules.append(message)
        elif isinstance(message, Failure):
            raw.failure = message
        else:
            if open_case is not None:
                raise ProtocolProblem(f"{where}: case {open_case.opened.id} never ended")
            raw.done = True
    return raw


def _over(where: str, what: str, setting: str, cap: int) -> OverLimit:
    return OverLimit(f"{where}: {what}, the cap of [limits] {setting} = {cap}", setting)


#: How deep a message's values may nest (the harness API records deeper values as repr).
MAX_DEPTH = 100


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _no_constant(text: str) -> float:
    raise ValueError(f"{text} is not JSON")


def _depth(data: Any) -> int:
    """How deep ``data`` nests, counted without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_DEPTH:
            children = value.values() if isinstance(value, dict) else value
            if isinstance(value, dict | list):
                stack.extend((child, depth + 1) for child in children)
    return deepest


def _message(number: int, line: bytes) -> Message:
    """One line as a checked message.  What the standard library's JSON accepts but JSON
    does not (NaN, Infinity, 1e400) is refused, and so is nesting deeper than
    :data:`MAX_DEPTH`, which would otherwise exhaust the recursion of what follows."""
    try:
        data = json.loads(line, parse_float=_finite, parse_constant=_no_constant)
    except ValueError:
        shown = line[:80].decode("utf-8", errors="replace")
        raise ProtocolProblem(f"protocol message {number} is not JSON: {shown!r}") from None
    except RecursionError:
        raise ProtocolProblem(f"protocol message {number} nests too deep to read") from None
    if _depth(data) > MAX_DEPTH:
        raise ProtocolProblem(f"protocol message {number} nests deeper than {MAX_DEPTH} levels")
    try:
        return _MESSAGE.validate_python(data)
    except ValidationError as exc:
        kind = data.get("t") if isinstance(data, dict) else None
        problem = validation_problem(exc).replace("Extra inputs are not permitted", "unknown field")
        raise ProtocolProblem(
            f"protocol message {number} ({kind or 'no kind'}): {problem}"
        ) from None


def _trial(case: RawCase, message: TrialStarted, where: str, trials: int | None) -> None:
    """A trial of a model-driven case: after the last one observed, within ``[model]
    trials``, each condition and number once."""
    if case.opened.arm != "model-driven":
        raise ProtocolProblem(f"{where}: a trial in scripted case {case.opened.id}")
    if trials is None:
        raise ProtocolProblem(f"{where}: a trial, but the declaration has no [model] table")
    if case.observed is not None:
        raise ProtocolProblem(f"{where}: a trial in a case that observed as a whole")
    if case.trials and case.trials[-1].observed is None:
        raise ProtocolProblem(f"{where}: a trial began before the last one observed")
    condition, number = message.condition, message.number
    if condition not in case.conditions and len(case.conditions) == MAX_CONDITIONS:
        raise ProtocolProblem(f"{where}: more than {MAX_CONDITIONS} conditions")
    if number > trials or number != case.conditions.get(condition, 0) + 1:
        raise ProtocolProblem(
            f"{where}: trial {number} of condition {condition!r} out of order "
            f"([model] trials = {trials})"
        )
    case.conditions[condition] = number
    case.trials.append(RawTrial(message))


def _trials_complete(case: RawCase, where: str, trials: int | None) -> None:
    last = case.trials[-1]
    if last.observed is None:
        raise ProtocolProblem(
            f"{where}: case {case.opened.id} ended before its last trial observed"
        )
    short = [c for c, n in case.conditions.items() if n != trials]
    if short:
        raise ProtocolProblem(
            f"{where}: case {case.opened.id} ran {case.conditions[short[0]]} trials of "
            f"condition {short[0]!r}, not {trials}"
        )


def _add(case: RawCase, message: Any, where: str, trials: int | None = None) -> None:
    scripted = case.opened.arm == "scripted"
    trial = case.trials[-1] if case.trials else None
    if isinstance(message, TrialStarted):
        _trial(case, message, where, trials)
    elif isinstance(message, Recorded):
        (trial.records if trial is not None else case.records).append(message)
    elif isinstance(message, Checked):
        if not scripted or case.stated is not None:
            raise ProtocolProblem(f"{where}: a check in a model-driven or stated case")
        case.checks.append(message)
    elif isinstance(message, Stated):
        if not scripted or case.stated is not None or case.checks:
            raise ProtocolProblem(f"{where}: a second status, or one in a model-driven case")
        case.stated = message
    elif isinstance(message, Observed):
        if scripted:
            raise ProtocolProblem(f"{where}: observe in a scripted case")
        if trial is not None:
            trial.observed = message
        else:
            case.observed = message
    else:
        if scripted and case.stated is None and not case.checks:
            raise ProtocolProblem(f"{where}: case {case.opened.id} ended without a status")
        if trial is not None:
            _trials_complete(case, where, trials)
        elif not scripted and case.observed is None:
            raise ProtocolProblem(f"{where}: case {case.opened.id} ended without observe")
        case.ended = True
