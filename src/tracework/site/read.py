"""What renders left in ``reports/``: each report's renders, history and register.

The published site is built from this and nothing else (nothing is re-executed).  A
render folder is ``reports/NAME/<commit12>/`` with records.json, manifest.json and
report.html; one that cannot be read is skipped and named, never fatal.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

import tracework.register.store as reg
from tracework.errors import TraceworkError, validation_problem
from tracework.hashing import sha256_hex
from tracework.readers import DataError
from tracework.records.artefacts import (
    HistoryEntry,
    RenderManifest,
    ReportRecords,
    RubricMarks,
    quote_counts,
    read_manifest,
    read_records,
)
from tracework.records.kinds import DRIFT_STATES
from tracework.records.rubrics import Rubric, load_rubric, rubric_names
from tracework.register.models import GitSource, Register
from tracework.render.history import history_data
from tracework.text import visible_name
from tracework.workspace import NAME, Workspace

RENDER_FOLDER = re.compile(r"[0-9a-f]{12}")
T = TypeVar("T")


@dataclass(frozen=True)
class Render:
    """One rendered commit of a report: its folder and what the render recorded."""

    folder: str
    records: ReportRecords
    manifest: RenderManifest

    @property
    def commit(self) -> str:
        return self.records.commit

    def order(self, current_pin: str | None) -> tuple[bool, str, int, str]:
        """Sort key, oldest first: renders against the register's current pin come last
        (a re-pinned report's old renders never count as its newest), then by commit time
        in UTC, then by commits since the pin."""
        when = dt.datetime.fromisoformat(self.records.commit_date).astimezone(dt.UTC)
        return (
            self.records.pin == current_pin,
            when.isoformat(),
            self.records.drift.commits_since_pin,
            self.commit,
        )

    def status(self) -> tuple[str, str]:
        """("holds" | "drift", a one-line account of the cited evidence at this render)."""
        quotes = list(self.records.quotes.values())
        states = Counter(
            "changed (format only)" if q.format_only and q.state == "changed" else q.state
            for q in quotes
        )
        broken = sum(1 for a in self.records.absences.values() if not a.holds)
        at, total = self.commit[:12], len(quotes)
        drift_of = [s for s in DRIFT_STATES if states[s]]
        drift = [f"{states[s]} {s}" for s in drift_of]
        if broken:
            drift.append(f"{broken} broken absence" + ("s" if broken > 1 else ""))
        benign = [
            f"{n} {s}" for s, n in sorted(states.items()) if s != "verified" and s not in drift_of
        ]
        also = f" ({', '.join(benign)})" if benign else ""
        _cited, uncited = quote_counts(self.records)
        if sum(uncited.values()):  # the register's quotes no record cites, counted apart
            held = ", ".join(f"{n} {s}" for s, n in uncited.items() if n)
            also += f"; uncited quotes: {held}"
        if drift:
            return "drift", f"drift: {', '.join(drift)} at {at}{also}"
        if benign:
            return "holds", f"{total}/{total} hold at {at}{also}"
        return "holds", f"{total}/{total} verified at {at}{also}"


@dataclass
class Report:
    """A report as the site shows it: its renders oldest first, history and register."""

    name: str
    renders: list[Render]
    history: list[HistoryEntry]
    register: Register | None
    register_text: str | None
    register_sha256: str | None

    @property
    def newest(self) -> Render:
        return self.renders[-1]

    @property
    def title(self) -> str:
        """The newest render's title (see rendering.report_title)."""
        return self.newest.records.title or f"{self.name} {self.kind}"

    @property
    def kind(self) -> str:
        return self.newest.records.kind or "runtime report"

    def last_checked(self) -> str | None:
        """The latest date evidence was checked: a render's analysis date, or a check
        recorded with ``check --record``."""
        dates = [e.checked for e in self.history if e.checked]
        if self.register is not None:
            dates += [c.date for c in self.register.checks]
        return max(dates) if dates else None

    def marks(self) -> dict[str, RubricMarks]:
        return dict(self.newest.records.marks)


@dataclass
class Site:
    """Everything a publish writes, gathered before a page is written."""

    ws: Workspace
    title: str
    reports: list[Report]
    rubrics: dict[str, tuple[Rubric, str]]
    skipped: list[str] = field(default_factory=list)


#: The file that marks a folder as a published site (publish replaces only such folders).
SITE_MARKER = ".tracework-site"


def gather(ws: Workspace, staging: Path) -> Site:
    """Read every report's renders, history and register, and every rubric.

    Each render folder is first linked into ``staging`` (where the site is being built)
    and then read from there, so the pages always describe the files published beside
    them, even when a render replaces the folder meanwhile.  Whatever cannot be read is
    left out and named in ``skipped``.
    """
    settings = ws.settings().get("site", {})
    title = settings.get("title") if isinstance(settings, dict) else None
    site = Site(ws, str(title) if title else "Reports", [], {})
    for name in rubric_names(ws):
        try:
            site.rubrics[name] = load_rubric(ws, name)
        except TraceworkError as exc:
            site.skipped.append(f"rubric {name}: {exc.message}")
    if not ws.reports.is_dir():
        return site
    for folder in sorted(ws.reports.iterdir()):
        if not folder.is_dir() or folder.name.startswith(".") or (folder / SITE_MARKER).exists():
            continue
        if not NAME.fullmatch(folder.name):  # no render makes it; its links would break
            site.skipped.append(f"reports/{visible_name(folder.name)}: not a report name")
            continue
        renders = _renders(folder, staging / "reports" / folder.name, site.skipped)
        if not renders:
            continue
        register, text, digest = _register(ws, folder.name, site.skipped)
        history = _history(folder / "history.json", site.skipped)
        sources = register.sources.values() if register else ()
        current = next((s.commit for s in sources if isinstance(s, GitSource)), None)
        renders.sort(key=lambda r: r.order(current))
        site.reports.append(Report(folder.name, renders, history, register, text, digest))
    return site


def _register(
    ws: Workspace, name: str, skipped: list[str]
) -> tuple[Register | None, str | None, str | None]:
    """The report's register, its text and SHA-256; (None, None, None) when missing or bad."""
    path = ws.registers / f"{name}.yaml"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, None, None
    except OSError as exc:
        skipped.append(f"registers/{name}.yaml: {exc.strerror}")
        return None, None, None
    try:
        register = reg.load(path, raw)  # these bytes, not a second read: one version
    except TraceworkError as exc:
        skipped.append(f"registers/{name}.yaml: {exc.message}")
        return None, None, None
    return register, raw.decode("utf-8"), sha256_hex(raw)


def _renders(folder: Path, staged: Path, skipped: list[str]) -> list[Render]:
    out = []
    for sub in sorted(folder.iterdir()):
        if not (sub.is_dir() and RENDER_FOLDER.fullmatch(sub.name)):
            continue
        where = f"reports/{folder.name}/{sub.name}"
        target = staged / sub.name
        try:
            link_tree(sub, target)
            if not (target / "report.html").is_file():
                raise ValueError("no report.html")
            records = _render_file(target / "records.json", read_records)
            manifest = _render_file(target / "manifest.json", read_manifest)
            if not records.commit.startswith(sub.name):
                raise ValueError("records.json is not this render's")
        except OSError as exc:
            problem = f"{exc.strerror or exc} ({Path(exc.filename or '').name})"
        except ValueError as exc:
            problem = str(exc)
        else:
            out.append(Render(sub.name, records, manifest))
            continue
        skipped.append(f"{where}: {problem}")
        shutil.rmtree(target, ignore_errors=True)
    return out


def _render_file(path: Path, read: Callable[[Path], T]) -> T:
    """A file a render wrote, read through its model, or a ``ValueError`` naming it and
    what is wrong (nesting bounded)."""
    try:
        return read(path)
    except DataError as exc:
        raise ValueError(f"{path.name}: {exc}") from None
    except ValidationError as exc:
        raise ValueError(f"{path.name}: {validation_problem(exc)}") from None


def link_tree(src: Path, dst: Path) -> None:
    """Put a render's files in the site: hard links where the file system allows (renders
    replace folders, never files in place), else copies."""
    for path in sorted(src.rglob("*")):
        if path.name.startswith(".") or path.is_symlink():
            continue
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
        except OSError:
            shutil.copyfile(path, target)


def _history(path: Path, skipped: list[str]) -> list[HistoryEntry]:
    """The report's history.json entries the site can show; others are named and left out."""
    out = []
    try:
        entries = history_data(path)
    except TraceworkError as exc:
        skipped.append(exc.message)
        return []
    for entry in entries:
        try:
            out.append(HistoryEntry.model_validate(entry))
        except ValidationError as exc:
            skipped.append(
                f"reports/{path.parent.name}/history.json: an entry's {validation_problem(exc)}"
            )
    return out
