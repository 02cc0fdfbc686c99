"""A capture as evidence in a report: cases and transcript excerpts, their state at the
commit rendered, and how the report shows them.

The register holds a capture as a source (``kind: capture``) with every file's SHA-256:
that is the reviewed baseline, captured at one commit.  A report rendered at that commit
cites it as it is; at another commit it cites the capture made there when there is one
(``tracework capture NAME --commit C``, or ``rerender --capture``) — ``verified`` when a
cited case keeps its status and a cited excerpt its value, ``changed`` otherwise — and
otherwise the baseline, ``stale (captured at …)``.

An excerpt is a path into a case's transcript: its first segment names a recorded value
(``c.record("model requests", …)``), the rest walks into it (``[0].prompt``), so
``cap.transcript("F-01", "model requests[0].prompt")``.  Its hash is the SHA-256 of the
value's canonical JSON.  A report shows the value as a reader reads it (a chat request as
a conversation: :mod:`.readable`), with what it was compared with (:mod:`.compare`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from tracework.capture.compare import Comparison
from tracework.capture.store import (
    Capture,
    CaseResult,
    canonical,
    captured_commits,
    load_capture,
)
from tracework.errors import TraceworkError
from tracework.hashing import sha256_hex
from tracework.workspace import Workspace

EvidenceState = Literal["verified", "changed", "stale"]

_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\[\"((?:[^\"\\]|\\.)*)\"\]")


@dataclass(frozen=True)
class CapturedAt:
    """A cited capture: the registered baseline and what is cited at the commit rendered."""

    source: str  # the register's capture source (SRC-n)
    baseline: Capture
    current: Capture | None  # the capture made at the commit rendered, when there is one
    commit: str  # the commit rendered

    @property
    def stale(self) -> bool:
        """No capture at the commit rendered: its evidence is the baseline's, older."""
        return self.current is None and self.baseline.commit != self.commit

    @property
    def shown(self) -> Capture:
        return self.current or self.baseline


@dataclass(frozen=True)
class CaseInfo:
    """A cited case and its state at the commit rendered."""

    key: str  # SRC-n/CASE
    capture: CapturedAt
    case: CaseResult
    state: EvidenceState
    was: str | None = None  # the baseline's status when it changed

    @property
    def anchor(self) -> str:
        return anchor_of(self.key)


@dataclass(frozen=True)
class ExcerptInfo:
    """A cited excerpt of a transcript, its value, hash and state at the commit rendered."""

    key: str  # SRC-n/CASE/PATH
    capture: CapturedAt
    case: str
    path: str
    value: Any
    sha256: str
    state: EvidenceState
    comparisons: tuple[Comparison, ...] = ()  # what the analyst compared it with

    @property
    def anchor(self) -> str:
        return anchor_of(self.key)


def anchor_of(key: str) -> str:
    """An HTML id for evidence whose key may hold spaces (record names do)."""
    return re.sub(r"\s", "_", key)


def find_case(capture: Capture, case_id: str) -> CaseResult:
    """A case of the capture by id, scripted or model-driven; a clear error otherwise."""
    arms = [capture.results] + ([capture.model_arm] if capture.model_arm else [])
    for arm in arms:
        for case in arm.cases:
            if case.id == case_id:
                return case
    known = ", ".join(c.id for arm in arms for c in arm.cases) or "none"
    raise TraceworkError(
        f"capture {capture.name} at {capture.commit[:12]} has no case {case_id!r}",
        hint=f"its cases: {known}",
    )


def case_info(at: CapturedAt, case_id: str) -> CaseInfo:
    """A case as cited at the commit rendered (see the module docstring for its state)."""
    base = find_case(at.baseline, case_id)
    key = f"{at.source}/{case_id}"
    if at.current is None:
        return CaseInfo(key, at, base, "stale" if at.stale else "verified")
    now = find_case(at.current, case_id)
    same = now.status == base.status
    return CaseInfo(key, at, now, "verified" if same else "changed", None if same else base.status)


def excerpt_info(ws_root: Any, at: CapturedAt, case_id: str, path: str) -> ExcerptInfo:
    """An excerpt as cited at the commit rendered: the value now, compared with the
    baseline's value at the same path."""
    from pathlib import Path

    root = Path(ws_root)
    base_value = extract(_transcript(root, at.baseline, case_id), path, at.baseline, case_id)
    key = f"{at.source}/{case_id}/{path}"
    digest = sha256_hex(canonical(base_value))
    if at.current is None:
        state: EvidenceState = "stale" if at.stale else "verified"
        return ExcerptInfo(key, at, case_id, path, base_value, digest, state)
    value = extract(_transcript(root, at.current, case_id), path, at.current, case_id)
    now = sha256_hex(canonical(value))
    return ExcerptInfo(
        key, at, case_id, path, value, now, "verified" if now == digest else "changed"
    )


def value_at(root: Any, capture: Capture, case_id: str, path: str) -> Any:
    """The value at ``path`` of a case's transcript in ``capture`` (an error names what
    is not there)."""
    from pathlib import Path

    return extract(_transcript(Path(root), capture, case_id), path, capture, case_id)


def previous_capture(ws: Workspace, capture: Capture, ancestors: list[str]) -> Capture | None:
    """The capture of the same name at the nearest of ``ancestors`` (the commits before
    ``capture``'s, nearest first) that has one, or None."""
    made = captured_commits(ws, capture.name)
    for commit in ancestors:
        if commit[:12] in made:
            return load_capture(ws, capture.name, commit)
    return None


def _transcript(root: Any, capture: Capture, case_id: str) -> Any:
    case = find_case(capture, case_id)
    if case.transcript is None:
        raise TraceworkError(f"case {case_id} of capture {capture.name} recorded no transcript")
    return json.loads((root / capture.folder / case.transcript).read_bytes())


def extract(transcript: Any, path: str, capture: Capture, case_id: str) -> Any:
    """The value at ``path`` in a transcript: the recorded value named by its first
    segment, then ``.key``, ``[n]`` or ``["key"]`` steps into it."""
    records = transcript.get("records", []) if isinstance(transcript, dict) else []
    names = [r.get("name") for r in records if isinstance(r, dict)]
    start = [n for n in names if isinstance(n, str) and path.startswith(n)]
    start = [n for n in start if path[len(n) : len(n) + 1] in ("", ".", "[")]
    where = f"capture {capture.name} case {case_id}"
    if not start:
        raise TraceworkError(
            f"{where}: {path!r} names no recorded value",
            hint="start the path with one of: " + ", ".join(repr(n) for n in names),
        )
    name = max(start, key=len)
    if names.count(name) > 1:
        raise TraceworkError(f"{where}: {name!r} was recorded {names.count(name)} times")
    value = next(r["value"] for r in records if r.get("name") == name)
    rest = path[len(name) :]
    while rest:
        step = _STEP.match(rest)
        if step is None:
            raise TraceworkError(f"{where}: cannot read {rest!r} of {path!r}")
        key, index, quoted = step.groups()
        if index is not None:
            if not isinstance(value, list) or int(index) >= len(value):
                raise TraceworkError(f"{where}: {path!r}: no item [{index}] there")
            value = value[int(index)]
        else:
            field = key if key is not None else json.loads(f'"{quoted}"')
            if not isinstance(value, dict) or field not in value:
                raise TraceworkError(f"{where}: {path!r}: no key {field!r} there")
            value = value[field]
        rest = rest[step.end() :]
    return value
