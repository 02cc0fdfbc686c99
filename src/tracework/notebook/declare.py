"""Declaring records in a notebook: one method per record kind, checked as declared.

A mix-in of :class:`~tracework.notebook.workbench.Workbench`.  Each method validates the id's
prefix, the statuses against their vocabularies, the evidence against the register
and every reference against the records declared above it, and raises one
:class:`~tracework.errors.RecordError` naming the record and the field otherwise.
Re-running the same JupyterLab cell may re-declare a record; another cell may not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from tracework.capture.evidence import CaseInfo, ExcerptInfo
from tracework.errors import RecordError, TraceworkError, validation_problem
from tracework.git.subjects import open_mirror
from tracework.notebook.jupyter import CaseView, ExcerptView, FileView, Html, QuoteView, cell_id
from tracework.records.absences import AbsenceResult, search
from tracework.records.diagrams import unwrapped
from tracework.records.kinds import (
    VOCABULARIES,
    Absence,
    Annotation,
    AuthorityPath,
    Claim,
    Component,
    Guarantee,
    OperativeObject,
    Record,
    ReviewStamp,
    Route,
    kind_of,
)
from tracework.records.rubrics import Rubric, RubricError, load_rubric
from tracework.register.models import GitSource
from tracework.views.cards import FileInfo, QuoteInfo, record_html
from tracework.views.marks import Mark, mark_html

if TYPE_CHECKING:
    from tracework.git.subjects import Subject
    from tracework.register.models import Register
    from tracework.workspace import Workspace

R = TypeVar("R", bound=Record)


class RecordDeclarations:
    """The record-declaring half of the Workbench."""

    ws: Workspace
    register: Register
    subject: Subject
    pin: str
    commit: str
    _records: dict[str, Record]
    _cells: dict[str, str | None]
    _quotes: dict[str, QuoteInfo]
    _files: dict[str, FileInfo]
    _capture_evidence: dict[str, CaseInfo | ExcerptInfo]
    _absences: dict[str, AbsenceResult]
    _marks: dict[str, Mark]
    _rubrics: dict[str, tuple[Rubric, str]]
    # provided by the Workbench: a quote's state at the commit, and the drifted evidence
    _info: Callable[[str], QuoteInfo]
    _file_info: Callable[[str, str], FileInfo]
    _drifted: Callable[[], dict[str, list[str]]]
    _review_drift: Callable[[], tuple[dict[str, list[str]], dict[str, set[str]]]]
    _flagged: Callable[..., tuple[list[str], set[str]]]

    def _evidence(self, refs: Iterable[Any], record_id: str) -> tuple[str, ...]:
        """The ids of what a record cites: quotes, whole files (``src.file(path)``, or
        ``"SRC-n:path"``), records declared above it (never itself, never in a cycle),
        and sources (``"SRC-n"``)."""
        out: list[str] = []
        for ref in refs:
            if isinstance(ref, QuoteView | FileView | CaseView | ExcerptView):
                out.append(ref.id)
                continue
            if isinstance(ref, Record):
                ref = ref.id
            if not isinstance(ref, str):
                raise RecordError(
                    f"{record_id}: evidence must be quotes, files, records, their ids or SRC ids"
                )
            if re.fullmatch(r"SRC-[0-9]+", ref):
                if ref not in self.register.sources:
                    raise RecordError(
                        f"{record_id}: evidence {ref} is not a source of the register"
                    )
            elif ref in self.register.quotes:
                self._quotes.setdefault(ref, self._info(ref))
            elif ref in self._records:
                self._refuse_cycle(record_id, ref)
            elif ref in self._capture_evidence:
                pass  # cited through cap.case(...) or cap.transcript(...) above
            elif re.match(r"SRC-[0-9]+:", ref):
                sid, path = ref.split(":", 1)
                source = self.register.sources.get(sid)
                if not isinstance(source, GitSource) or path not in source.files:
                    raise RecordError(
                        f"{record_id}: evidence {ref!r} is not a file registered in {sid}",
                        hint=f'cite it as wb.source("{sid}").file("{path}") (author mode '
                        "registers it)",
                    )
                self._files.setdefault(ref, self._file_info(sid, path))
            else:
                raise RecordError(
                    f"{record_id}: evidence {ref!r} is not a quote in register "
                    f"{self.register.name}, nor a record declared above",
                    hint="quote it first with wb.source(...).quote(...), or declare the "
                    "record it names before this one",
                )
            out.append(ref)
        return tuple(out)

    def _refuse_cycle(self, record_id: str, cited: str) -> None:
        """A record may cite a record, never itself, directly or through others: the
        re-review of one would wait on the other for ever."""
        seen, todo = set(), [cited]
        while todo:
            current = todo.pop()
            if current == record_id:
                raise RecordError(
                    f"{record_id}: citing {cited} makes a cycle ({cited} cites {record_id}"
                    + (" through other records)" if current != cited else ")"),
                    hint="cite the quotes or files behind it instead",
                )
            if current not in seen and current in self._records:
                seen.add(current)
                todo.extend(e for e in self._records[current].evidence if e in self._records)

    def _declare(
        self,
        cls: type[R],
        record_id: str,
        evidence: Sequence[Any],
        reviewed: Any,
        fields: dict[str, Any],
    ) -> R:
        expected = kind_of(record_id)
        if expected is not cls:
            raise RecordError(
                f"{record_id!r} is not a {cls.kind} id",
                hint=f"{cls.kind} ids start with {cls.prefix}",
            )
        cell = cell_id()
        if record_id in self._records and (cell is None or self._cells.get(record_id) != cell):
            raise RecordError(
                f"{record_id} is declared twice", hint="every record id must be unique in a report"
            )
        for key in ("implementation", "operation", "strength"):
            value = fields.get(key)
            if value is not None and value not in VOCABULARIES[key]:
                raise RecordError(
                    f"{record_id}: {key} status {value!r} is not one of "
                    + ", ".join(VOCABULARIES[key])
                )
        cited = self._evidence(evidence, record_id)
        if fields.get("operation") == "observed" and not any(
            e in self._capture_evidence for e in cited
        ):
            raise RecordError(
                f'{record_id}: operation="observed" needs evidence of it running: a case or '
                "a transcript excerpt of a runtime capture",
                hint='cite cap.case("ID") or cap.transcript("ID", "path") of cap = '
                'wb.capture("NAME"); or say "uninspected" or "reported"',
            )
        try:
            record = cls(
                id=record_id,
                evidence=cited,
                reviewed_at=self._stamp(reviewed, record_id),
                **fields,
            )
        except ValidationError as exc:
            raise RecordError(f"{record_id}: {validation_problem(exc)}") from None
        for field_name, ref in record.references().items():
            if ref not in self._records or ref == record_id:
                raise RecordError(
                    f"{record_id}: {field_name} names {ref!r}, which is not declared above",
                    hint="declare the record it refers to first",
                )
        self._records[record_id] = record
        self._cells[record_id] = cell
        return record

    def _stamp(self, reviewed: Any, record_id: str) -> ReviewStamp | None:
        if reviewed is None:
            return None
        try:
            if isinstance(reviewed, str):
                return ReviewStamp(commit=self.pin, date=reviewed)
            if isinstance(reviewed, dict):
                return ReviewStamp(**reviewed)
            commit, date = reviewed
            full = open_mirror(self.ws, self.subject.name).resolve_commit(commit)
            return ReviewStamp(commit=full, date=date)
        except ValidationError as exc:
            raise RecordError(
                f"{record_id}: reviewed=: {validation_problem(exc)}",
                hint="reviewed= takes a date 'YYYY-MM-DD' (against the pin) or (commit, date)",
            ) from None
        except (TypeError, ValueError):
            raise RecordError(
                f"{record_id}: reviewed= takes a date 'YYYY-MM-DD' (against the pin) or "
                "(commit, date)"
            ) from None

    def _view(self, record: Record) -> Html:
        titles = {r.id: r.label for r in self._records.values()}
        absence = self._absences.get(record.id)
        markup = record_html(
            record,
            self._quotes,
            titles,
            absence=absence,
            drifted=self._drifted().get(record.id, ()),
        )
        return Html(markup, f"<{record.kind} {record.id}: {record.label}>")

    def component(
        self,
        id: str,
        *,
        label: str,
        identity: str,
        evidence: Sequence[Any] = (),
        reviewed: Any = None,
        **fields: Any,
    ) -> Html:
        """Declare a component (`RT-CMP-…`): a part of the system with an identity in the source.

        Args:
            id: `RT-CMP-` and a name.
            label: A short name.
            identity: How the source names it (Markdown): the class, module or service.
            evidence: What backs it (see the class description).
            reviewed: The review stamp.
            **fields: `details`, `notes`.

        Returns:
            The record as it will show in the report.

        Examples:
            ```python
            wb.component("RT-CMP-note-store", label="NoteStore",
                         identity="The `NoteStore` dataclass in `larkspur/notes.py`.",
                         evidence=[keep], reviewed="2026-03-20")
            ```
        """
        return self._view(
            self._declare(
                Component, id, evidence, reviewed, dict(label=label, identity=identity, **fields)
            )
        )

    def operative_object(
        self,
        id: str,
        *,
        label: str,
        description: str,
        evidence: Sequence[Any] = (),
        reviewed: Any = None,
        **fields: Any,
    ) -> Html:
        """Declare an operative object (`RT-OBJ-…`): retained material that code acts on.

        Args:
            id: `RT-OBJ-` and a name.
            label: A short name.
            description: What it is (Markdown).
            evidence: What backs it.
            reviewed: The review stamp.
            **fields: `held_by` (a declared record's id), `persistence`, `notes`.

        Returns:
            The record as it will show in the report.

        Examples:
            ```python
            wb.operative_object("RT-OBJ-notes", label="The notes list",
                                description="Every kept note, in order.",
                                held_by="RT-CMP-note-store", persistence="process memory only",
                                evidence=[keep])
            ```
        """
        return self._view(
            self._declare(
                OperativeObject,
                id,
                evidence,
                reviewed,
                dict(label=label, description=description, **fields),
            )
        )

    def route(
        self,
        id: str,
        *,
        label: str,
        progression: str,
        implementation: str,
        operation: str,
        evidence: Sequence[Any] = (),
        reviewed: Any = None,
        **fields: Any,
    ) -> Html:
        """Declare a route (`RT-RTE-…`): a path through the code from a trigger to an effect.

        Args:
            id: `RT-RTE-` and a name.
            label: A short name.
            progression: The endpoints and steps in order (Markdown).
            implementation: `wired`, `partial`, `absent` or `unknown`.
            operation: `observed`, `reported` or `uninspected`; `observed` needs capture
                evidence.
            evidence: What backs it.
            reviewed: The review stamp.
            **fields: `passes_through` (ids of declared records, in order), `trigger`,
                `proposer`, `decider`, `immediate_return`, `later_read_back`,
                `delegated_visibility`, `selection_predicate`, `invalidation`, `activation`,
                `evidence_limits`, `notes`.

        Returns:
            The record as it will show in the report.

        Examples:
            ```python
            wb.route("RT-RTE-keep", label="Keeping a note",
                     progression="message → `keep` → notes", passes_through=["RT-CMP-note-store"],
                     implementation="wired", operation="uninspected", evidence=[keep])
            ```
        """
        return self._view(
            self._declare(
                Route,
                id,
                evidence,
                reviewed,
                dict(
                    label=label,
                    progression=progression,
                    implementation=implementation,
                    operation=operation,
                    **fields,
                ),
            )
        )

    def claim(
        self,
        id: str,
        *,
        label: str,
        claim: str,
        assessment: str,
        operation: str,
        evidence: Sequence[Any] = (),
        reviewed: Any = None,
        **fields: Any,
    ) -> Html:
        """Declare a claim (`RT-CLM-…`): what the subject says of itself, and what the source shows.

        Args:
            id: `RT-CLM-` and a name.
            label: A short name.
            claim: The claimed behaviour, as the subject states it (Markdown).
            assessment: What the source shows of it (Markdown).
            operation: `observed`, `reported` or `uninspected`.
            evidence: What backs it.
            reviewed: The review stamp.
            **fields: `implementation` (default `unknown`), `notes`.

        Returns:
            The record as it will show in the report.

        Examples:
            ```python
            wb.claim("RT-CLM-private", label="Notes stay private",
                     claim="The README says notes never leave the process.",
                     assessment="No write to disk or network in the package.",
                     operation="reported", implementation="wired", evidence=["RT-ABS-disk"])
            ```
        """
        return self._view(
            self._declare(
                Claim,
                id,
                evidence,
                reviewed,
                dict(
                    label=label, claim=claim, assessment=assessment, operation=operation, **fields
                ),
            )
        )

    def absence(
        self,
        id: str,
        *,
        statement: str,
        scope: Sequence[str],
        patterns: Sequence[str],
        label: str = "",
        evidence: Sequence[Any] = (),
        reviewed: Any = None,
        **fields: Any,
    ) -> Html:
        r"""Declare an evidenced absence (`RT-ABS-…`) and search its scope for its patterns.

        The search runs now, at the commit opened, over every text file the scope names, line
        by line; the absence holds when no line matches.  A scope that names no file is an
        error.  Patterns are RE2 expressions (linear time); one that RE2 cannot run (a
        backreference, a lookaround) is refused here, with the reason.

        Args:
            id: `RT-ABS-` and a name.
            statement: What the code does not do (Markdown).
            scope: Paths or globs (`*`, `?`, `[..]`, `**`) in the subject.
            patterns: RE2 expressions that would show the statement wrong.
            label: A short name (default: the statement's first sentence).
            evidence: What else backs it.
            reviewed: The review stamp.
            **fields: `notes`.

        Returns:
            The record with the search's result, as it will show in the report.

        Examples:
            ```python
            wb.absence("RT-ABS-disk", statement="Notes never reach disk.",
                       scope=["larkspur/**"], patterns=[r"\bopen\(", r"sqlite3|pickle"])
            ```
        """
        record = self._declare(
            Absence,
            id,
            evidence,
            reviewed,
            dict(
                label=label or statement.split(".")[0][:80],
                statement=statement,
                scope=tuple(scope),
                patterns=tuple(patterns),
                **fields,
            ),
        )
        mirror = open_mirror(self.ws, self.subject.name)
        try:
            self._absences[id] = search(mirror, self.commit, record.scope, record.patterns)
        except TraceworkError:
            del self._records[id]
            raise
        return self._view(record)

    def authority_path(
        self,
        id: str,
        *,
        consumer: str,
        channel: str,
        force: str,
        horizon: str,
        label: str = "",
        evidence: Sequence[Any] = (),
        reviewed: Any = None,
        **fields: Any,
    ) -> Html:
        """Declare a behavioural-authority path (`RT-BAP-…`): retained material to its consumer.

        How material kept from earlier reaches something that acts on it, and with what force.

        Args:
            id: `RT-BAP-` and a name.
            consumer: What acts on the material: a model call, a tool, a decision (Markdown).
            channel: How it gets there (Markdown).
            force: What weight it carries there: an instruction, context, a default (Markdown).
            horizon: How long it keeps that weight (Markdown).
            label: A short name (default: the consumer's first sentence, code spans
                shown without their backticks).
            evidence: What backs it.
            reviewed: The review stamp.
            **fields: `source_material` (a declared record, the retained material), `route`
                (a declared route), `notes`.

        Returns:
            The record as it will show in the report.

        Examples:
            ```python
            wb.authority_path("RT-BAP-recalled-notes", consumer="The model's next prompt",
                              channel="`build_prompt` pastes recalled notes", force="context",
                              horizon="every later turn", source_material="RT-OBJ-notes",
                              route="RT-RTE-recall", evidence=[q_prompt])
            ```
        """
        return self._view(
            self._declare(
                AuthorityPath,
                id,
                evidence,
                reviewed,
                dict(
                    label=label or unwrapped(consumer).split(". ")[0][:80],
                    consumer=consumer,
                    channel=channel,
                    force=force,
                    horizon=horizon,
                    **fields,
                ),
            )
        )

    def guarantee(
        self,
        id: str,
        *,
        owner: str,
        enforcement_point: str,
        strength: str,
        covered_path: str,
        label: str = "",
        evidence: Sequence[Any] = (),
        reviewed: Any = None,
        **fields: Any,
    ) -> Html:
        """Declare a guarantee (`RT-GRT-…`): a promise, where it is enforced and how strongly.

        Args:
            id: `RT-GRT-` and a name.
            owner: Who promises it (Markdown).
            enforcement_point: Where the code enforces it (Markdown).
            strength: `enforced` (code prevents violation), `checked` (detected, not
                prevented), `conventional` (by agreement only) or `none`.
            covered_path: What the guarantee covers (Markdown).
            label: A short name (default: the covered path's first sentence).
            evidence: What backs it.
            reviewed: The review stamp.
            **fields: `qualifier` (the strength in words), `alternate_paths`,
                `required_external_contract`, `implementation` (default `unknown`),
                `operation` (default `uninspected`), `notes`.

        Returns:
            The record as it will show in the report.

        Examples:
            ```python
            wb.guarantee("RT-GRT-note-length", owner="`NoteStore`",
                         enforcement_point="`keep` refuses longer text", strength="enforced",
                         covered_path="Notes added through `keep`.", evidence=[q_guard])
            ```
        """
        return self._view(
            self._declare(
                Guarantee,
                id,
                evidence,
                reviewed,
                dict(
                    label=label or covered_path.split(".")[0][:80],
                    owner=owner,
                    enforcement_point=enforcement_point,
                    strength=strength,
                    covered_path=covered_path,
                    **fields,
                ),
            )
        )

    def annotate(
        self,
        id: str,
        *,
        on: str,
        text: str,
        evidence: Sequence[Any] = (),
        reviewed: Any = None,
        **fields: Any,
    ) -> Html:
        """Attach an annotation (`RT-ANN-…`) to a declared record.

        Args:
            id: `RT-ANN-` and a name.
            on: The id of the record it remarks on, declared above.
            text: The remark (Markdown).
            evidence: What backs it.
            reviewed: The review stamp.
            **fields: `label`, `notes`.

        Returns:
            The annotation as it will show in the report.

        Examples:
            ```python
            wb.annotate("RT-ANN-threads", on="RT-CMP-note-store",
                        text="Not safe across threads: `keep` appends without a lock.")
            ```
        """
        return self._view(
            self._declare(Annotation, id, evidence, reviewed, dict(on=on, text=text, **fields))
        )

    # -- rubric marks --------------------------------------------------------------------

    def mark(
        self,
        rubric: str,
        mechanism: str,
        *,
        present: bool,
        evidence: Sequence[Any] = (),
        note: str | None = None,
        reviewed: Any = None,
        reviewer: str | None = None,
    ) -> Html:
        """Mark a mechanism of a rubric (`registers/rubrics/RUBRIC.yaml`) present or absent.

        A mark of present needs evidence: quotes, quote ids or records declared above; a mark
        of absent may cite an evidenced absence.  At a newer commit, a mark whose evidence
        drifted needs re-review and fails the marks check.  Re-running the same cell may mark a
        mechanism again; another cell may not.

        Args:
            rubric: The rubric's name.
            mechanism: A mechanism's id in the rubric.
            present: Whether the subject carries it.
            evidence: What shows it (or, for absent, the absence that shows it is not there).
            note: Markdown shown with the mark.
            reviewed: When it was reviewed, as a record's stamp: a date (against the pin) or
                `(commit, date)`.
            reviewer: Who reviewed it.

        Returns:
            The mark as it will show in the report's "Rubric marks" section.

        Examples:
            ```python
            wb.mark("retention", "bounded-retention", present=True, evidence=["RT-GRT-note-length"])
            wb.mark("retention", "persistence", present=False, evidence=["RT-ABS-disk"],
                    reviewed="2026-03-20", reviewer="A. Analyst")
            ```
        """
        if not isinstance(present, bool):
            raise RecordError(f"mark {rubric}/{mechanism}: present= takes True or False")
        if note is not None and not isinstance(note, str):
            raise RecordError(f"mark {rubric}/{mechanism}: note= takes text (Markdown)")
        if rubric not in self._rubrics:
            self._rubrics[rubric] = load_rubric(self.ws, rubric)
        definition, _ = self._rubrics[rubric]
        if definition.mechanism(mechanism) is None:
            raise RubricError(
                f"rubric {rubric} has no mechanism {mechanism!r}",
                hint="its mechanisms: " + ", ".join(m.id for m in definition.mechanisms),
            )
        where = f"mark {rubric}/{mechanism}"
        refs: list[str] = []
        for ref in evidence:
            if not isinstance(ref, str | QuoteView):
                raise RecordError(
                    f"{where}: evidence must be quotes, quote ids, record ids or SRC ids",
                    hint='cite a record by its id, e.g. evidence=["RT-CMP-store"]',
                )
            if isinstance(ref, str) and ref.startswith("RT-"):
                if ref not in self._records:
                    raise RecordError(
                        f"{where}: evidence {ref} is not a record declared above",
                        hint="declare the record before marking with it",
                    )
                refs.append(ref)
            else:
                refs += self._evidence([ref], where)
        if present and not refs:
            raise RecordError(
                f"{where}: a mechanism marked present needs evidence",
                hint="cite the quotes or records that show it",
            )
        if reviewer is not None and (
            not isinstance(reviewer, str) or not reviewer.strip() or "\n" in reviewer
        ):
            raise RecordError(
                f"{where}: reviewer= takes a name on one line", hint='e.g. reviewer="A. Analyst"'
            )
        stamp = self._stamp(reviewed, where)
        made = Mark(rubric, mechanism, present, tuple(refs), note, stamp, reviewer)
        cell = cell_id()
        key = made.anchor
        if key in self._marks and (cell is None or self._cells.get(key) != cell):
            raise RecordError(f"{where} is marked twice", hint="mark each mechanism once")
        self._marks[key], self._cells[key] = made, cell
        markup = mark_html(made, definition, self._marks_drifted().get(key, ()))
        return Html(markup, f"<mark {rubric}/{mechanism}: {'present' if present else 'absent'}>")

    def _marks_drifted(self) -> dict[str, list[str]]:
        """Per mark (by anchor), the cited evidence that no longer holds at the commit, as
        for a record, less what the mark's review covers: evidence unchanged since the
        commit it was reviewed against (see :mod:`tracework.notebook.review`)."""
        records, behind = self._review_drift()
        out: dict[str, list[str]] = {}
        for key, mark in self._marks.items():
            bad, _ = self._flagged(mark.evidence, mark.reviewed_at, records, behind)
            if bad:
                out[key] = bad
        return out
