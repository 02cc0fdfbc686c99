"""What renders left in ``reports/``: each report's renders, history and register.

The published site is built from this and nothing else (nothing is re-executed).  A
render folder is ``reports/NAME/<commit12>/`` with records.json, manifest.json and
report.html; one that cannot be read is skipped and named, never fatal.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import register as reg
from .hashing import sha256_hex
from .history import read_history
from .models import Register
from .rubrics import Rubric, load_rubric, rubric_names
from .workspace import Workspace

RENDER_FOLDER = re.compile(r"[0-9a-f]{12}")
#: Quote states that count as drift on the index (a format-only change does not).
DRIFT_STATES = ("changed", "ambiguous", "missing")


class _Read(BaseModel):
    """What the site reads of a file a render wrote; anything else in it is ignored."""

    model_config = ConfigDict(extra="ignore")


class _QuoteState(_Read):
    state: str
    path: str
    lines: tuple[int, int]
    format_only: bool = False


class _RecordEntry(_Read):
    id: str
    kind: str
    label: str = ""
    evidence: list[str] = Field(default_factory=list)


class _AbsenceState(_Read):
    holds: bool


class _MarkEntry(_Read):
    present: bool
    needs_review: list[str] = Field(default_factory=list)


class _RubricMarks(_Read):
    title: str
    sha256: str
    mechanisms: int
    carries: int
    marks: dict[str, _MarkEntry]


class _Drift(_Read):
    commits_since_pin: int = 0


class RenderedRecords(_Read):
    """The parts of a render's records.json the site shows."""

    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    commit_date: str
    pin: str = Field(pattern=r"^[0-9a-f]{40}$")
    subject: str
    quotes: dict[str, _QuoteState]
    records: list[_RecordEntry]
    absences: dict[str, _AbsenceState]
    marks: dict[str, _RubricMarks] = Field(default_factory=dict)
    drift: _Drift = Field(default_factory=_Drift)


class _ChangedIn(_Read):
    path: str
    commit: str


class HistoryEntry(_Read):
    """One entry of a report's history.json."""

    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    date: str = ""
    commits_since_pin: int = 0
    ok: bool = False
    checked: str | None = None
    changed_in: dict[str, _ChangedIn] = Field(default_factory=dict)


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "top level"
    return f"{where}: {first['msg']}"


@dataclass(frozen=True)
class Render:
    """One rendered commit of a report: its folder and what the render recorded."""

    folder: str
    records: dict[str, Any]
    manifest: dict[str, Any]

    @property
    def commit(self) -> str:
        return str(self.records["commit"])

    @property
    def order(self) -> tuple[int, str, str]:
        drift = self.records.get("drift") or {}
        return (int(drift.get("commits_since_pin", 0)), self.records["commit_date"], self.commit)

    def status(self) -> tuple[str, str]:
        """("holds" | "drift", a one-line account of the cited evidence at this render)."""
        quotes = list(self.records.get("quotes", {}).values())
        states = Counter(
            "changed (format only)" if q.get("format_only") else q["state"] for q in quotes
        )
        broken = sum(1 for a in self.records.get("absences", {}).values() if not a["holds"])
        at, total = self.commit[:12], len(quotes)
        drift_of = [s for s in DRIFT_STATES if states[s]]
        drift = [f"{states[s]} {s}" for s in drift_of]
        if broken:
            drift.append(f"{broken} broken absence" + ("s" if broken > 1 else ""))
        benign = [
            f"{n} {s}" for s, n in sorted(states.items()) if s != "verified" and s not in drift_of
        ]
        also = f" ({', '.join(benign)})" if benign else ""
        if drift:
            return "drift", f"drift: {', '.join(drift)} at {at}{also}"
        if benign:
            return "holds", f"{total}/{total} hold at {at}{also}"
        return "holds", f"{total}/{total} verified at {at}"


@dataclass
class Report:
    """A report as the site shows it: its renders oldest first, history and register."""

    name: str
    renders: list[Render]
    history: list[dict[str, Any]]
    register: Register | None
    register_text: str | None
    register_sha256: str | None

    @property
    def newest(self) -> Render:
        return self.renders[-1]

    @property
    def title(self) -> str:
        return f"{self.name} runtime report"

    def last_checked(self) -> str | None:
        """The latest date a check ran: a render's, or one recorded with ``check --record``."""
        dates = [str(e["checked"]) for e in self.history if e.get("checked")]
        if self.register is not None:
            dates += [c.date for c in self.register.checks]
        return max(dates) if dates else None

    def marks(self) -> dict[str, Any]:
        return dict(self.newest.records.get("marks") or {})


@dataclass
class Site:
    """Everything a publish writes, gathered before a byte is written."""

    ws: Workspace
    title: str
    reports: list[Report]
    rubrics: dict[str, tuple[Rubric, str]]
    skipped: list[str] = field(default_factory=list)


def gather(ws: Workspace, out: Path) -> Site:
    """Read every report's renders, history and register, and every rubric."""
    settings = ws.settings().get("site", {})
    title = settings.get("title") if isinstance(settings, dict) else None
    rubrics = {name: load_rubric(ws, name) for name in rubric_names(ws)}
    site = Site(ws, str(title) if title else "Reports", [], rubrics)
    if not ws.reports.is_dir():
        return site
    for folder in sorted(ws.reports.iterdir()):
        if not folder.is_dir() or folder.name.startswith(".") or folder.resolve() == out:
            continue
        renders = _renders(folder, site.skipped)
        if not renders:
            continue
        register_path = ws.registers / f"{folder.name}.yaml"
        register, text, digest = None, None, None
        if register_path.is_file():
            register = reg.load(register_path)
            raw = register_path.read_bytes()
            text, digest = raw.decode("utf-8"), sha256_hex(raw)
        history = _history(folder / "history.json", site.skipped)
        site.reports.append(Report(folder.name, renders, history, register, text, digest))
    return site


def _renders(folder: Path, skipped: list[str]) -> list[Render]:
    out = []
    for sub in sorted(folder.iterdir()):
        if not (sub.is_dir() and RENDER_FOLDER.fullmatch(sub.name)):
            continue
        try:
            if not (sub / "report.html").is_file():
                raise OSError("no report.html")
            raw = (sub / "records.json").read_bytes()
            records = RenderedRecords.model_validate_json(raw).model_dump(mode="json")
            manifest = json.loads((sub / "manifest.json").read_text(encoding="utf-8"))
            if not isinstance(manifest, dict):
                raise ValueError("manifest.json is not an object")
            if not records["commit"].startswith(sub.name):
                raise ValueError("records.json is not this render's")
        except ValidationError as exc:
            skipped.append(f"reports/{folder.name}/{sub.name}: records.json: {_problem(exc)}")
            continue
        except (OSError, ValueError) as exc:
            skipped.append(f"reports/{folder.name}/{sub.name}: {exc}")
            continue
        out.append(Render(sub.name, records, manifest))
    return sorted(out, key=lambda r: r.order)


def _history(path: Path, skipped: list[str]) -> list[dict[str, Any]]:
    """The report's history.json entries the site can show; others are named and left out."""
    out = []
    for entry in read_history(path):
        try:
            out.append(HistoryEntry.model_validate(entry).model_dump(mode="json"))
        except ValidationError as exc:
            skipped.append(f"reports/{path.parent.name}/history.json: an entry's {_problem(exc)}")
    return out
