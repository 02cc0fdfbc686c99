"""The notebook API: ``wb = tw.open(register)``, quotes, records, ``wb.done()``.

One :class:`Workbench` per report.  In ``author`` mode (the default when a notebook
is opened by hand) a new quote is added to the register at the pin; in ``render``
mode (what ``tracework render`` passes through papermill) the register is never
written and a quote it does not hold is an error.  Every mistake raises one
:class:`~tracework.errors.TraceworkError` in the cell that made it, shown as a
short message rather than a traceback.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from . import __version__
from . import register as reg
from .absences import AbsenceResult
from .checks import CheckItem, CheckReport, check_documents, check_register
from .declare import RecordDeclarations
from .diagrams import (
    DIRECTIONS,
    DiagramError,
    from_authority_paths,
    from_routes,
    name_pattern,
    parse,
)
from .diagrams import check as check_diagram
from .errors import ChecksFailed, QuoteNotInRegister, RegisterError, TraceworkError, check_iso_date
from .evidence import QuoteRequest, add_quote, make_quote, quotable_lines, same_evidence
from .execution import RECORDS_MIME
from .fsio import write_atomic
from .hashing import sha256_hex
from .jupyter import Html, QuoteView, cell_id, display, install_error_display
from .marks import Mark, marks_json, marks_section
from .models import DocumentSource, GitSource, Register
from .records import DRIFT_STATES, KINDS, AuthorityPath, Record, Route
from .rubrics import Rubric
from .screen import Screen
from .subjects import load_subject, open_mirror
from .views import (
    Diagram,
    QuoteInfo,
    diagram_note_html,
    records_section,
    screen_html,
    summary_html,
)
from .workspace import Workspace

Mode = Literal["author", "render"]


class SourceHandle:
    """A git source of the register, for quoting: ``wb.source("SRC-1").quote(...)``."""

    def __init__(self, wb: Workbench, sid: str) -> None:
        self.wb, self.id = wb, sid

    def quote(
        self,
        path: str,
        lines: tuple[int, int] | None = None,
        *,
        symbol: str | None = None,
        match: str | None = None,
        context: int = 0,
        id: str | None = None,
    ) -> QuoteView:
        """Quote a span at the pin by lines, ``symbol=`` or ``match=`` (with ``context=``)."""
        span = (int(lines[0]), int(lines[1])) if lines else None
        request = QuoteRequest(span, symbol, match, context)
        return self.wb._quote(self.id, path, request, id)

    def __repr__(self) -> str:
        src = self.wb.register.git_source(self.id)
        return f"<source {self.id}: {src.subject} @ {src.commit[:12]}>"


class Workbench(RecordDeclarations):
    """One report's register, opened at a commit, collecting records and checking them."""

    def __init__(
        self,
        ws: Workspace,
        register_path: Path,
        *,
        commit: str | None,
        mode: Mode,
        analysis_date: str | None,
        output_dir: Path | None,
    ) -> None:
        self.ws, self.register_path, self.mode = ws, register_path, mode
        self.analysis_date = analysis_date
        self._read_register()
        gits = [(sid, s) for sid, s in self.register.sources.items() if isinstance(s, GitSource)]
        if not gits:
            raise RegisterError(
                f"register {self.register.name} has no git source",
                hint="add one with `tracework register add-source`",
            )
        self.primary, source = gits[0]
        self.subject = load_subject(ws, source.subject)
        self.pin = source.commit
        mirror = open_mirror(ws, source.subject)
        self.commit = mirror.resolve_commit(commit) if commit else self.pin
        self.commit_info = mirror.commit_info(self.commit)
        self.pin_info = mirror.commit_info(self.pin)
        self.output_dir = output_dir or ws.reports / self.register.name / "draft"
        self._records: dict[str, Record] = {}
        self._cells: dict[str, str | None] = {}
        self._quotes: dict[str, QuoteInfo] = {}
        self._absences: dict[str, AbsenceResult] = {}
        self._marks: dict[str, Mark] = {}
        self._rubrics: dict[str, tuple[Rubric, str]] = {}
        self._checks: dict[str, CheckReport] = {}
        self._records_shown = False
        self._quotes_shown: set[str] = set()
        self._diagrams: dict[str, Diagram] = {}
        self._texts: list[bytes] | None = None
        self._screen: Screen | None = None
        install_error_display()

    def _read_register(self) -> None:
        """Load the register, keeping the SHA-256 of the very bytes read: records.json
        carries it, so that a render can tell that the register it hashed before the
        kernel started is the one the notebook read (an edit meanwhile fails the render
        instead of being recorded as what ran)."""
        try:
            raw = self.register_path.read_bytes()
        except FileNotFoundError:
            reg.load(self.register_path)  # says there is no register, and how to make one
            raise
        self.register: Register = reg.load(self.register_path, raw)
        self.register_sha256 = sha256_hex(raw)

    # -- sources and quotes ------------------------------------------------------------

    @property
    def at_pin(self) -> bool:
        return self.commit == self.pin

    def source(self, sid: str) -> SourceHandle:
        """A git source of the register by id (``SRC-1``)."""
        self.register.git_source(sid)
        return SourceHandle(self, sid)

    def _commit_for(self, sid: str) -> str:
        src = self.register.git_source(sid)
        return self.commit if src.subject == self.subject.name else src.commit

    def _check(self, sid: str) -> CheckReport:
        if sid not in self._checks:
            commit = self._commit_for(sid)
            at = commit if commit != self.register.git_source(sid).commit else None
            self._checks[sid] = check_register(self.ws, self.register, at=at, only=sid)
        return self._checks[sid]

    def _info(self, qid: str) -> QuoteInfo:
        quote = self.register.quotes[qid]
        items = {i.id: i for i in self._check(quote.source).items if i.kind == "quote"}
        return QuoteInfo(
            qid,
            quote,
            self.register.git_source(quote.source).commit,
            self._commit_for(quote.source),
            self._url(quote.source),
            items.get(qid),
        )

    def _url(self, sid: str) -> str:
        subject = self.register.git_source(sid).subject
        return (
            self.subject.url if subject == self.subject.name else load_subject(self.ws, subject).url
        )

    def _quote(self, sid: str, path: str, request: QuoteRequest, qid: str | None) -> QuoteView:
        if self.mode == "author":
            qid, _ = add_quote(self.ws, self.register_path, sid, path, request, qid)
            self._read_register()
            self._checks.clear()
        else:
            qid = self._find_in_register(sid, path, request, qid)
        info = self._info(qid)
        self._quotes[qid] = info
        return QuoteView(qid, info)

    def _find_in_register(self, sid: str, path: str, request: QuoteRequest, qid: str | None) -> str:
        src = self.register.git_source(sid)
        mirror = open_mirror(self.ws, src.subject)
        data = quotable_lines(mirror, mirror.entry(src.commit, path), path)
        span, anchor = request.locate(data, path)
        wanted = make_quote(sid, path, data, span, anchor)
        candidates = [qid] if qid else list(self.register.quotes)
        for cid in candidates:
            have = self.register.quotes.get(cid)
            if have is not None and same_evidence(have, wanted):
                return cid
        where = f"{path}:{span.first}-{span.last}"
        raise QuoteNotInRegister(
            f"{qid or 'the quote'} ({where} at {src.commit[:12]}) is not in register "
            f"{self.register.name}",
            hint="open the notebook in author mode (JupyterLab) to add it; render mode "
            "never writes to the register",
        )

    # -- sections and the end ----------------------------------------------------------

    def _drifted(self) -> dict[str, list[str]]:
        """Per record, the cited evidence that no longer holds at the commit."""
        out: dict[str, list[str]] = {}
        for record in self._records.values():
            quotes = [self._quotes[e] for e in record.evidence if e in self._quotes]
            bad = [q.quote_id for q in quotes if q.state in DRIFT_STATES]
            if record.id in self._absences and not self._absences[record.id].holds:
                bad.append(record.id)
            if bad:
                out[record.id] = bad
        return out

    def diagram(
        self,
        name: str,
        source: str | None = None,
        *,
        caption: str,
        routes: Sequence[str] = (),
        records: Sequence[str] = (),
        direction: str = "TB",
    ) -> None:
        """Draw a Mermaid flowchart: hand-written ``source``, or generated from ``routes``
        (their progression through components and objects) or from authority-path
        ``records`` (retained material to consumers).  It is parsed and checked at once:
        bound nodes must name declared records, `` `identifiers` `` in labels must exist
        in the registered files at the commit.
        """
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", name):
            raise DiagramError(f"{name!r} is not a diagram name (letters, digits, - and _)")
        cell = cell_id()
        if name in self._diagrams and (cell is None or self._diagrams[name].cell != cell):
            raise DiagramError(f"diagram {name} is drawn twice")
        if direction not in DIRECTIONS:
            raise DiagramError(f"direction {direction!r} is not one of {', '.join(DIRECTIONS)}")
        if sum(bool(x) for x in (source, routes, records)) != 1:
            raise DiagramError(f"diagram {name}: give exactly one of source, routes or records")
        kind = "hand-written" if source else "generated"
        titles = {rid: r.label or rid for rid, r in self._records.items()}
        if routes:
            chosen = [self._record_of(rid, Route, name) for rid in routes]
            source = from_routes(chosen, titles, direction)
        elif records:
            paths = [self._record_of(rid, AuthorityPath, name) for rid in records]
            source = from_authority_paths(paths, titles, direction)
        assert source is not None
        parsed = parse(source)
        result = check_diagram(name, parsed, self._records, self._defined)
        drawn = Diagram(name, caption, source, result, kind, cell)
        self._diagrams[name] = drawn
        if self.mode == "author":
            write_atomic(self.output_dir / "diagrams" / f"{name}.mmd", source)
        meta = {"tracework": {"diagram": name, "caption": caption, "bindings": result.bindings}}
        display(
            {"text/vnd.mermaid": source, "text/plain": f"diagram {name}: {caption}"},
            raw=True,
            metadata=meta,
        )
        display(
            Html(diagram_note_html(drawn), f"diagram {name}"),
            metadata={"tracework": "diagram-note"},
        )

    def _record_of(self, rid: str, kind: type[Record], diagram: str) -> Any:
        record = self._records.get(rid)
        if not isinstance(record, kind):
            raise DiagramError(
                f"diagram {diagram}: {rid} is not a declared {kind.kind}",
                hint="declare the record above the diagram",
            )
        return record

    def _defined(self, identifier: str) -> bool:
        """Whether an identifier's last part is defined or called in a registered file."""
        pattern = name_pattern(identifier)
        if pattern is None:
            return False
        if self._texts is None:
            self._texts = []
            for sid, src in self.register.sources.items():
                if isinstance(src, GitSource):
                    mirror = open_mirror(self.ws, src.subject)
                    tree = mirror.tree(self._commit_for(sid))
                    entries = [tree[p] for p in src.files if p in tree and tree[p].kind == "file"]
                    blobs = mirror.read_blobs(e.oid for e in entries)
                    self._texts += [b.data for b in blobs.values() if b.data is not None]
        return any(pattern.search(text) for text in self._texts)

    def screen(self) -> None:
        """Show the screen of the subject at the commit (see ``tracework screen``) as a
        section, and keep its findings for records.json."""
        from .screen import screen

        self._screen = screen(open_mirror(self.ws, self.subject.name), self.commit)
        display(Html(screen_html(self._screen), f"screen: {self._screen.counts()}"))

    def records(self) -> None:
        """Display the "Shared records" section: records by kind, then the quoted evidence.
        (``done()`` shows it when the notebook never does, and then the rubric marks.)"""
        display(
            Html(
                records_section(
                    self._records.values(), self._quotes, self._absences, self._drifted()
                ),
                f"{len(self._records)} records",
            )
        )
        self._records_shown = True
        self._quotes_shown = set(self._quotes)

    def _show_marks(self) -> None:
        """The "Rubric marks" section, with the cards of quotes first cited by a mark, so
        that every link to a mark or its evidence lands on an anchor."""
        rubrics = {name: rubric for name, (rubric, _) in self._rubrics.items()}
        late = [self._quotes[q] for q in sorted(set(self._quotes) - self._quotes_shown)]
        display(
            Html(
                marks_section(self._marks.values(), rubrics, self._marks_drifted(), late),
                f"{len(self._marks)} rubric marks",
            )
        )

    def summary(self) -> dict[str, Any]:
        """Every check on this report at its commit, as data (the records.json "checks")."""
        problems: list[str] = []
        reports = [
            self._check(sid) for sid, s in self.register.sources.items() if isinstance(s, GitSource)
        ]
        items = [i for r in reports for i in r.items] + self._document_items()
        allowed = {"verified"} if self.at_pin else {"verified", "moved"}
        bad = [
            i for i in items if i.state not in allowed and not (i.format_only and not self.at_pin)
        ]
        problems += [f"{i.kind} {i.id}: {i.state} ({i.detail})" for i in bad]
        counts = {
            k: dict(sorted(Counter(i.state for i in items if i.kind == k).items()))
            for k in ("file", "quote")
        }
        if not self._records:
            problems.append("no records declared")
        broken = [rid for rid, res in self._absences.items() if not res.holds]
        problems += [f"absence {rid}: the patterns now match" for rid in broken]
        uncited = sorted(set(self.register.quotes) - set(self._quotes))
        bare = sum(
            1 for r in self._records.values() if not r.evidence and r.id not in self._absences
        )
        failing = [d for d in self._diagrams.values() if not d.check.ok]
        for d in failing:
            if d.check.unknown_records:
                problems.append(
                    f"diagram {d.name}: binds unknown records " + ", ".join(d.check.unknown_records)
                )
            if d.check.vanished:
                problems.append(
                    f"diagram {d.name}: identifiers not found at "
                    f"{self.commit[:12]}: " + ", ".join(d.check.vanished)
                )
        checks = {
            "register": {
                "ok": not bad and bool(items),
                "detail": "; ".join(
                    f"{kind}s: " + ", ".join(f"{n} {s}" for s, n in c.items())
                    for kind, c in counts.items()
                    if c
                )
                or "nothing registered",
                "counts": counts,
            },
            "records": {
                "ok": bool(self._records),
                "detail": f"{len(self._records)} records, {bare} citing no evidence; every "
                f"reference resolves and every cited quote is in the register; "
                f"{len(uncited)} register quotes not cited",
                "counts": dict(Counter(r.kind for r in self._records.values())),
            },
            "absences": {
                "ok": not broken,
                "detail": f"{len(self._absences) - len(broken)} hold, {len(broken)} broken",
            },
            "diagrams": {
                "ok": not failing,
                "detail": f"{len(self._diagrams)} diagrams, "
                f"{sum(len(d.check.identifiers) for d in self._diagrams.values())} identifiers "
                f"checked; {len(failing)} with problems",
            },
        }
        if self._marks:
            stale = self._marks_drifted()
            problems += [
                f"mark {self._marks[key].rubric}/{self._marks[key].mechanism}: evidence "
                "drifted: " + ", ".join(v)
                for key, v in stale.items()
            ]
            checks["marks"] = {
                "ok": not stale,
                "detail": f"{len(self._marks)} marks against {len(self._rubrics)} rubrics; every "
                f"present mark cites evidence; {len(stale)} need re-review",
            }
        ok = all(c["ok"] for c in checks.values())
        return {
            "ok": ok,
            "commit": self.commit,
            "pin": self.pin,
            "at_pin": self.at_pin,
            "checks": checks,
            "problems": problems,
        }

    def _document_items(self) -> list[CheckItem]:
        """The register's document sources kept in the workspace, hashed again."""
        ids = [sid for sid, s in self.register.sources.items() if isinstance(s, DocumentSource)]
        if not ids:
            return []
        report = CheckReport(self.register.name, None, [])
        check_documents(self.ws, reg.data_of(self.register), report, ids)
        return report.items

    def records_json(self) -> dict[str, Any]:
        """Everything the report declares and checked, for records.json."""
        drifted = self._drifted()
        records = []
        for kind in KINDS:
            for record in self._records.values():
                if type(record) is kind:
                    data = record.model_dump(mode="json", exclude_none=True)
                    data["kind"] = record.kind
                    data["needs_review"] = drifted.get(record.id, [])
                    records.append(data)
        quotes = {}
        for qid, info in sorted(self._quotes.items()):
            q = info.quote
            d = info.drift
            quotes[qid] = {
                "source": q.source,
                "path": q.path,
                "lines": list(q.lines),
                "sha256": q.sha256,
                "state": info.drift.state if info.drift else "verified",
                "format_only": bool(info.drift and info.drift.format_only),
                "new_path": d.new_path if d else None,
                "new_lines": list(d.new_lines) if d and d.new_lines else None,
            }
        absences = {
            rid: {
                "holds": res.holds,
                "files": len(res.files),
                "skipped": list(res.skipped),
                "matches": [{"path": m.path, "line": m.line, "text": m.text} for m in res.matches],
            }
            for rid, res in self._absences.items()
        }
        return {
            "format": "tracework.records/1",
            "tracework": __version__,
            "register": self.register.name,
            "register_sha256": self.register_sha256,
            "subject": self.subject.name,
            "url": self.subject.url,
            "pin": self.pin,
            "pin_date": self.pin_info.date,
            "commit": self.commit,
            "commit_date": self.commit_info.date,
            "analysis_date": self.analysis_date,
            "mode": self.mode,
            "records": records,
            "quotes": quotes,
            "absences": absences,
            "diagrams": {
                name: {
                    "caption": d.caption,
                    "kind": d.kind,
                    "source_sha256": sha256_hex(d.source.encode("utf-8")),
                    "bindings": d.check.bindings,
                    "unknown_records": list(d.check.unknown_records),
                    "identifiers": d.check.identifiers,
                    "vanished": list(d.check.vanished),
                    "ok": d.check.ok,
                }
                for name, d in self._diagrams.items()
            },
            "screen": self._screen.as_json() if self._screen else None,
            "marks": marks_json(self._marks.values(), self._rubrics, self._marks_drifted()),
            "checks": self.summary(),
        }

    def done(self) -> None:
        """Write records.json, run every check and display the summary.

        In render mode at the register's pin, a failing check raises
        :class:`~tracework.errors.ChecksFailed` so that the render fails.
        """
        data = self.records_json()
        if self.mode == "render":
            # tracework render takes records.json from this output of the executed notebook
            display(
                {RECORDS_MIME: data, "text/plain": f"records.json: {len(self._records)} records"},
                raw=True,
            )
        else:
            write_atomic(
                self.output_dir / "records.json",
                json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
            )
        if not self._records_shown:
            self.records()
        if self._marks:
            self._show_marks()
        summary = data["checks"]
        display(
            Html(summary_html(summary), "checks hold" if summary["ok"] else "checks fail"),
            metadata={"tracework": "summary"},
        )
        if self.mode == "render" and self.at_pin and not summary["ok"]:
            raise ChecksFailed(
                "checks fail at the register's pin: " + "; ".join(summary["problems"][:10]),
                hint="fix the notebook or the register; the previous report is kept",
            )


def open(
    register: str,
    commit: str | None = None,
    mode: str | None = None,
    *,
    analysis_date: str | None = None,
    output_dir: str | None = None,
) -> Workbench:
    """Open a report's register at ``commit`` (None: the register's pin).

    ``mode`` is ``"author"`` (the default by hand: new quotes are added to the register)
    or ``"render"`` (the register is never written).
    """
    if mode is None:
        mode = "author"
    if mode not in ("author", "render"):
        raise TraceworkError(f"mode {mode!r} is not 'author' or 'render'")
    if analysis_date is not None:
        check_iso_date(analysis_date, "analysis_date")
    ws = Workspace.find()
    return Workbench(
        ws,
        ws.register_file(register),
        commit=commit,
        mode=mode,  # type: ignore[arg-type]
        analysis_date=analysis_date,
        output_dir=Path(output_dir) if output_dir else None,
    )


__all__ = ["CheckItem", "Html", "QuoteView", "SourceHandle", "Workbench", "open"]
