"""Declaring records in a notebook: one method per record kind, checked as declared.

A mix-in of :class:`~tracework.notebook.workbench.Workbench`.  Each method validates the id's
prefix, the statuses against their vocabularies, the evidence against the register
and every reference against the records declared above it, and raises one
:class:`~tracework.errors.RecordError` naming the record and the field otherwise.
Re-running the same JupyterLab cell may re-declare a record; another cell may not.

Each method's keywords are its kind's fields (:mod:`tracework.records.kinds`), written
out with their types so that mypy and JupyterLab's completion show what each takes;
``tests/test_declare_fields.py`` holds every signature and its docstring to the model,
so a field added to a kind and not here (or here and not there) fails the suite.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from pydantic import ValidationError

from tracework.errors import RecordError, TraceworkError, validation_problem
from tracework.notebook.cells import cited_in
from tracework.notebook.jupyter import (
    CaseView,
    ExcerptView,
    FileView,
    Html,
    QuoteView,
    arguments_checked,
    cell_id,
)
from tracework.records.absences import search
from tracework.records.diagrams import unwrapped
from tracework.records.kinds import (
    VOCABULARIES,
    Absence,
    Annotation,
    AuthorityPath,
    Claim,
    Component,
    Guarantee,
    Implementation,
    Markdown,
    Operation,
    OperativeObject,
    Record,
    ReviewStamp,
    Route,
    Strength,
    kind_of,
)
from tracework.records.rubrics import RubricError, load_rubric
from tracework.register.models import GitSource
from tracework.views.cards import Declared, declared_html, record_html
from tracework.views.marks import Mark, mark_html

if TYPE_CHECKING:
    from tracework.notebook.review import Reviews
    from tracework.notebook.session import RegisterSession
    from tracework.notebook.state import ReportState

R = TypeVar("R", bound=Record)

#: What a record's ``evidence=`` takes: quotes (``src.quote(...)``) or their ids, whole
#: files (``src.file(path)`` or ``"SRC-n:path"``), records declared above (or their ids),
#: capture cases and transcript excerpts (``cap.case(...)``, ``cap.transcript(...)``) and
#: source ids (``"SRC-n"``).
Evidence = QuoteView | FileView | CaseView | ExcerptView | Record | str

#: What a rubric mark's ``evidence=`` takes: quotes or their ids, record ids and source ids.
MarkEvidence = QuoteView | str

#: What ``reviewed=`` takes: a date ``"YYYY-MM-DD"`` (confirmed against the pin on that
#: date), ``(commit, date)`` (against that commit, a unique prefix of it will do), or a
#: stamp made already.
Reviewed = str | tuple[str, str] | ReviewStamp


def _record_named(args: Sequence[object], kwargs: Mapping[str, object]) -> str:
    """The id a declaring call names (``self`` first), for its messages."""
    given = kwargs.get("id", args[1] if len(args) > 1 else None)
    return given if isinstance(given, str) else ""


def _mark_named(args: Sequence[object], kwargs: Mapping[str, object]) -> str:
    """``mark RUBRIC/MECHANISM``, as far as a ``wb.mark`` call names them."""
    parts = [
        kwargs.get(k, args[n] if len(args) > n else None)
        for n, k in ((1, "rubric"), (2, "mechanism"))
    ]
    return "mark " + "/".join(str(p) for p in parts if isinstance(p, str)) if parts[0] else ""


#: A misspelled keyword, a field missing or one given by place: one RecordError naming the
#: record, the field and the closest one the kind has, with every field it takes, as every
#: other mistake in declaring is (not Python's TypeError).
_fields_named = arguments_checked(_record_named, error=RecordError, word="field")


class RecordDeclarations:
    """The record-declaring half of the Workbench."""

    # provided by the Workbench: the register opened, what the report holds so far, and
    # which records and marks need re-review
    _session: RegisterSession
    _state: ReportState
    _reviews: Reviews

    def _evidence(self, refs: Iterable[Evidence], record_id: str) -> tuple[str, ...]:
        """The ids of what a record cites: quotes, whole files (``src.file(path)``, or
        ``"SRC-n:path"``), records declared above it (never itself, never in a cycle),
        and sources (``"SRC-n"``)."""
        single = (str, QuoteView, FileView, CaseView, ExcerptView, Record)
        if isinstance(refs, single) or not isinstance(refs, Iterable):
            raise RecordError(
                f"{record_id}: evidence= takes a list, not one {type(refs).__name__}",
                hint='e.g. evidence=[q_keep] or evidence=[q_keep, "RT-CMP-store"]',
            )
        session, state = self._session, self._state
        register = session.register
        cell = cell_id()
        out: list[str] = []
        for ref in refs:
            if isinstance(ref, QuoteView | FileView):
                cited_in(state, ref.id, cell)
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
                if ref not in register.sources:
                    raise RecordError(
                        f"{record_id}: evidence {ref} is not a source of the register"
                    )
            elif ref in register.quotes:
                state.quotes.setdefault(ref, session.quote_info(ref))
                cited_in(state, ref, cell)
            elif ref in state.records:
                self._refuse_cycle(record_id, ref)
            elif ref in state.capture_evidence:
                pass  # cited through cap.case(...) or cap.transcript(...) above
            elif re.match(r"SRC-[0-9]+:", ref):
                sid, path = ref.split(":", 1)
                source = register.sources.get(sid)
                if not isinstance(source, GitSource) or path not in source.files:
                    raise RecordError(
                        f"{record_id}: evidence {ref!r} is not a file registered in {sid}",
                        hint=f'cite it as wb.source("{sid}").file("{path}") (author mode '
                        "registers it)",
                    )
                state.files.setdefault(ref, session.file_info(sid, path))
                cited_in(state, ref, cell)
            else:
                raise RecordError(
                    f"{record_id}: evidence {ref!r} is not a quote in register "
                    f"{register.name}, nor a record declared above",
                    hint="quote it first with wb.source(...).quote(...), or declare the "
                    "record it names before this one",
                )
            out.append(ref)
        return tuple(out)

    def _refuse_cycle(self, record_id: str, cited: str) -> None:
        """A record may cite a record, never itself, directly or through others: the
        re-review of one would wait on the other for ever."""
        records = self._state.records
        seen, todo = set(), [cited]
        while todo:
            current = todo.pop()
            if current == record_id:
                raise RecordError(
                    f"{record_id}: citing {cited} makes a cycle ({cited} cites {record_id}"
                    + (" through other records)" if current != cited else ")"),
                    hint="cite the quotes or files behind it instead",
                )
            if current not in seen and current in records:
                seen.add(current)
                todo.extend(e for e in records[current].evidence if e in records)

    def _declare(
        self,
        cls: type[R],
        record_id: str,
        evidence: Sequence[Evidence],
        reviewed: Reviewed | None,
        fields: Mapping[str, object],
    ) -> R:
        state = self._state
        expected = kind_of(record_id)
        if expected is not cls:
            raise RecordError(
                f"{record_id!r} is not a {cls.kind} id",
                hint=f"{cls.kind} ids start with {cls.prefix}",
            )
        cell = cell_id()
        if record_id in state.records and (cell is None or state.cells.get(record_id) != cell):
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
            e in state.capture_evidence for e in cited
        ):
            raise RecordError(
                f'{record_id}: operation="observed" needs evidence of it running: a case or '
                "a transcript excerpt of a runtime capture",
                hint='cite cap.case("ID") or cap.transcript("ID", "path") of cap = '
                'wb.capture("NAME"); or say "uninspected" or "reported"',
            )
        try:
            record = cls.model_validate(
                {
                    "id": record_id,
                    "evidence": cited,
                    "reviewed_at": self._stamp(reviewed, record_id),
                    **fields,
                }
            )
        except ValidationError as exc:
            raise RecordError(f"{record_id}: {validation_problem(exc)}") from None
        for field_name, ref in record.references().items():
            if ref not in state.records or ref == record_id:
                raise RecordError(
                    f"{record_id}: {field_name} names {ref!r}, which is not declared above",
                    hint="declare the record it refers to first",
                )
        state.records[record_id] = record
        state.cells[record_id] = cell
        state.declared.append(record_id)
        return record

    def _stamp(self, reviewed: Reviewed | None, record_id: str) -> ReviewStamp | None:
        if reviewed is None or isinstance(reviewed, ReviewStamp):
            return reviewed
        session = self._session
        try:
            if isinstance(reviewed, str):
                return ReviewStamp(commit=session.pin, date=reviewed)
            if isinstance(reviewed, dict):  # a stamp as records.json writes it
                return ReviewStamp(**reviewed)
            commit, date = reviewed
            full = session.mirror(session.subject.name).resolve_commit(commit)
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

    def _view(self, record: Record, drifted: Mapping[str, Sequence[str]] | None = None) -> Html:
        state = self._state
        titles = {r.id: r.label for r in state.records.values()}
        drifted = self._reviews.records() if drifted is None else drifted
        markup = record_html(
            record,
            state.quotes,
            titles,
            absence=state.absences.get(record.id),
            drifted=drifted.get(record.id, ()),
        )
        return Html(markup, f"<{record.kind} {record.id}: {record.label}>", record.id)

    def _cell_summary(self, shown: object) -> Html | None:
        """What the cell that just ran declared, one line each opening to its card (the
        one the cell showed as its result named, not repeated); None when the cell
        declared nothing, or only what it showed.  Empties the list for the next cell."""
        state = self._state
        keys = list(dict.fromkeys(state.declared))
        state.declared.clear()
        shown_key = shown.declared if isinstance(shown, Html) else None
        if not keys or keys == [shown_key]:
            return None
        drifted, marks_drifted = self._reviews.records(), self._reviews.marks()
        entries = []
        for key in keys:
            card = None
            record = state.records.get(key)
            if record is not None:
                absence = state.absences.get(key)
                states = ["holds" if absence.holds else "broken"] if absence else []
                if drifted.get(key):
                    states.append("needs re-review")
                if key != shown_key:
                    card = self._view(record, drifted).markup
                entries.append(Declared(key, record.kind, record.label, tuple(states), card))
            elif key in state.marks:
                made = state.marks[key]
                mechanism = state.rubrics[made.rubric][0].mechanism(made.mechanism)
                states = ["present" if made.present else "absent"]
                if marks_drifted.get(key):
                    states.append("needs re-review")
                if key != shown_key:
                    card = self._mark_view(made, marks_drifted).markup
                name = f"{made.rubric}/{made.mechanism}"
                label = mechanism.name if mechanism is not None else ""
                entries.append(Declared(name, "rubric mark", label, tuple(states), card))
        if not entries:
            return None
        text = "declared in this cell: " + ", ".join(f"{e.name} ({e.kind})" for e in entries)
        return Html(declared_html(entries), text)

    @_fields_named
    def component(
        self,
        id: str,
        *,
        label: str,
        identity: Markdown,
        details: Markdown | None = None,
        evidence: Sequence[Evidence] = (),
        reviewed: Reviewed | None = None,
        notes: Markdown | None = None,
    ) -> Html:
        """Declare a component (`RT-CMP-…`): a part of the system with an identity in the source.

        Args:
            id: `RT-CMP-` and a name.
            label: A short name.
            identity: How the source names it (Markdown): the class, module or service.
            details: More about it (Markdown).
            evidence: What backs it (see the class description).
            reviewed: The review stamp.
            notes: Markdown shown under the record.

        Returns:
            The record as it will show in the report.

        Examples:
            ```python
            wb.component("RT-CMP-note-store", label="NoteStore",
                         identity="The `NoteStore` dataclass in `larkspur/notes.py`.",
                         evidence=[keep], reviewed="2026-03-20")
            ```
        """
        fields = {"label": label, "identity": identity, "details": details, "notes": notes}
        return self._view(self._declare(Component, id, evidence, reviewed, fields))

    @_fields_named
    def operative_object(
        self,
        id: str,
        *,
        label: str,
        description: Markdown,
        held_by: str | None = None,
        persistence: Markdown | None = None,
        evidence: Sequence[Evidence] = (),
        reviewed: Reviewed | None = None,
        notes: Markdown | None = None,
    ) -> Html:
        """Declare an operative object (`RT-OBJ-…`): retained material that code acts on.

        Args:
            id: `RT-OBJ-` and a name.
            label: A short name.
            description: What it is (Markdown).
            held_by: The id of the declared record that holds it.
            persistence: How long it lasts, and where (Markdown).
            evidence: What backs it.
            reviewed: The review stamp.
            notes: Markdown shown under the record.

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
        fields = {
            "label": label,
            "description": description,
            "held_by": held_by,
            "persistence": persistence,
            "notes": notes,
        }
        return self._view(self._declare(OperativeObject, id, evidence, reviewed, fields))

    @_fields_named
    def route(
        self,
        id: str,
        *,
        label: str,
        progression: Markdown,
        implementation: Implementation,
        operation: Operation,
        passes_through: Sequence[str] = (),
        trigger: Markdown | None = None,
        proposer: Markdown | None = None,
        decider: Markdown | None = None,
        immediate_return: Markdown | None = None,
        later_read_back: Markdown | None = None,
        delegated_visibility: Markdown | None = None,
        selection_predicate: Markdown | None = None,
        invalidation: Markdown | None = None,
        activation: Markdown | None = None,
        evidence_limits: Markdown | None = None,
        evidence: Sequence[Evidence] = (),
        reviewed: Reviewed | None = None,
        notes: Markdown | None = None,
    ) -> Html:
        """Declare a route (`RT-RTE-…`): a path through the code from a trigger to an effect.

        Args:
            id: `RT-RTE-` and a name.
            label: A short name.
            progression: The endpoints and steps in order (Markdown).
            implementation: `wired`, `partial`, `absent` or `unknown`.
            operation: `observed`, `reported` or `uninspected`; `observed` needs capture
                evidence.
            passes_through: Ids of declared records it passes through, in order.
            trigger: What starts it (Markdown).
            proposer: Who proposes what it does (Markdown).
            decider: Who decides (Markdown).
            immediate_return: What comes back at once (Markdown).
            later_read_back: What is read back later, and when (Markdown).
            delegated_visibility: What a delegate gets to see (Markdown).
            selection_predicate: What selects the material it carries (Markdown).
            invalidation: What invalidates or expires it (Markdown).
            activation: Its activation or effect (Markdown).
            evidence_limits: What the evidence does not show (Markdown).
            evidence: What backs it.
            reviewed: The review stamp.
            notes: Markdown shown under the record.

        Returns:
            The record as it will show in the report.

        Examples:
            ```python
            wb.route("RT-RTE-keep", label="Keeping a note",
                     progression="message → `keep` → notes", passes_through=["RT-CMP-note-store"],
                     implementation="wired", operation="uninspected", evidence=[keep])
            ```
        """
        fields = {
            "label": label,
            "progression": progression,
            "implementation": implementation,
            "operation": operation,
            "passes_through": passes_through,
            "trigger": trigger,
            "proposer": proposer,
            "decider": decider,
            "immediate_return": immediate_return,
            "later_read_back": later_read_back,
            "delegated_visibility": delegated_visibility,
            "selection_predicate": selection_predicate,
            "invalidation": invalidation,
            "activation": activation,
            "evidence_limits": evidence_limits,
            "notes": notes,
        }
        return self._view(self._declare(Route, id, evidence, reviewed, fields))

    @_fields_named
    def claim(
        self,
        id: str,
        *,
        label: str,
        claim: Markdown,
        assessment: Markdown,
        operation: Operation,
        implementation: Implementation = "unknown",
        evidence: Sequence[Evidence] = (),
        reviewed: Reviewed | None = None,
        notes: Markdown | None = None,
    ) -> Html:
        """Declare a claim (`RT-CLM-…`): what the subject says of itself, and what the source shows.

        Args:
            id: `RT-CLM-` and a name.
            label: A short name.
            claim: The claimed behaviour, as the subject states it (Markdown).
            assessment: What the source shows of it (Markdown).
            operation: `observed`, `reported` or `uninspected`.
            implementation: `wired`, `partial`, `absent` or `unknown`.
            evidence: What backs it.
            reviewed: The review stamp.
            notes: Markdown shown under the record.

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
        fields = {
            "label": label,
            "claim": claim,
            "assessment": assessment,
            "operation": operation,
            "implementation": implementation,
            "notes": notes,
        }
        return self._view(self._declare(Claim, id, evidence, reviewed, fields))

    @_fields_named
    def absence(
        self,
        id: str,
        *,
        statement: Markdown,
        scope: Sequence[str],
        patterns: Sequence[str],
        label: str = "",
        evidence: Sequence[Evidence] = (),
        reviewed: Reviewed | None = None,
        notes: Markdown | None = None,
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
            notes: Markdown shown under the record.

        Returns:
            The record with the search's result, as it will show in the report.

        Examples:
            ```python
            wb.absence("RT-ABS-disk", statement="Notes never reach disk.",
                       scope=["larkspur/**"], patterns=[r"\bopen\(", r"sqlite3|pickle"])
            ```
        """
        fields = {
            "label": label or statement.split(".")[0][:80],
            "statement": statement,
            "scope": tuple(scope),
            "patterns": tuple(patterns),
            "notes": notes,
        }
        record = self._declare(Absence, id, evidence, reviewed, fields)
        session = self._session
        mirror = session.mirror(session.subject.name)
        try:
            self._state.absences[id] = search(mirror, session.commit, record.scope, record.patterns)
        except TraceworkError:
            del self._state.records[id]
            raise
        return self._view(record)

    @_fields_named
    def authority_path(
        self,
        id: str,
        *,
        consumer: Markdown,
        channel: Markdown,
        force: Markdown,
        horizon: Markdown,
        label: str = "",
        source_material: str | None = None,
        route: str | None = None,
        evidence: Sequence[Evidence] = (),
        reviewed: Reviewed | None = None,
        notes: Markdown | None = None,
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
            source_material: The id of a declared record, the retained material.
            route: The id of a declared route it travels.
            evidence: What backs it.
            reviewed: The review stamp.
            notes: Markdown shown under the record.

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
        fields = {
            "label": label or unwrapped(consumer).split(". ")[0][:80],
            "consumer": consumer,
            "channel": channel,
            "force": force,
            "horizon": horizon,
            "source_material": source_material,
            "route": route,
            "notes": notes,
        }
        return self._view(self._declare(AuthorityPath, id, evidence, reviewed, fields))

    @_fields_named
    def guarantee(
        self,
        id: str,
        *,
        owner: Markdown,
        enforcement_point: Markdown,
        strength: Strength,
        covered_path: Markdown,
        label: str = "",
        qualifier: Markdown | None = None,
        alternate_paths: Markdown | None = None,
        required_external_contract: Markdown | None = None,
        implementation: Implementation = "unknown",
        operation: Operation = "uninspected",
        evidence: Sequence[Evidence] = (),
        reviewed: Reviewed | None = None,
        notes: Markdown | None = None,
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
            qualifier: What the strength means here, in words (Markdown).
            alternate_paths: Paths around the enforcement point (Markdown).
            required_external_contract: What it relies on outside the code (Markdown).
            implementation: `wired`, `partial`, `absent` or `unknown`.
            operation: `observed`, `reported` or `uninspected`.
            evidence: What backs it.
            reviewed: The review stamp.
            notes: Markdown shown under the record.

        Returns:
            The record as it will show in the report.

        Examples:
            ```python
            wb.guarantee("RT-GRT-note-length", owner="`NoteStore`",
                         enforcement_point="`keep` refuses longer text", strength="enforced",
                         covered_path="Notes added through `keep`.", evidence=[q_guard])
            ```
        """
        fields = {
            "label": label or covered_path.split(".")[0][:80],
            "owner": owner,
            "enforcement_point": enforcement_point,
            "strength": strength,
            "covered_path": covered_path,
            "qualifier": qualifier,
            "alternate_paths": alternate_paths,
            "required_external_contract": required_external_contract,
            "implementation": implementation,
            "operation": operation,
            "notes": notes,
        }
        return self._view(self._declare(Guarantee, id, evidence, reviewed, fields))

    @_fields_named
    def annotate(
        self,
        id: str,
        *,
        on: str,
        text: Markdown,
        label: str = "",
        evidence: Sequence[Evidence] = (),
        reviewed: Reviewed | None = None,
        notes: Markdown | None = None,
    ) -> Html:
        """Attach an annotation (`RT-ANN-…`) to a declared record.

        Args:
            id: `RT-ANN-` and a name.
            on: The id of the record it remarks on, declared above.
            text: The remark (Markdown).
            label: A short name.
            evidence: What backs it.
            reviewed: The review stamp.
            notes: Markdown shown under the record.

        Returns:
            The annotation as it will show in the report.

        Examples:
            ```python
            wb.annotate("RT-ANN-threads", on="RT-CMP-note-store",
                        text="Not safe across threads: `keep` appends without a lock.")
            ```
        """
        fields = {"on": on, "text": text, "label": label, "notes": notes}
        return self._view(self._declare(Annotation, id, evidence, reviewed, fields))

    # -- rubric marks --------------------------------------------------------------------

    @arguments_checked(_mark_named, error=RecordError)
    def mark(
        self,
        rubric: str,
        mechanism: str,
        *,
        present: bool,
        evidence: Sequence[MarkEvidence] = (),
        note: Markdown | None = None,
        reviewed: Reviewed | None = None,
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
        state = self._state
        if not isinstance(present, bool):
            raise RecordError(f"mark {rubric}/{mechanism}: present= takes True or False")
        if note is not None and not isinstance(note, str):
            raise RecordError(f"mark {rubric}/{mechanism}: note= takes text (Markdown)")
        if rubric not in state.rubrics:
            state.rubrics[rubric] = load_rubric(self._session.ws, rubric)
        definition, _ = state.rubrics[rubric]
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
                if ref not in state.records:
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
        if key in state.marks and (cell is None or state.cells.get(key) != cell):
            raise RecordError(f"{where} is marked twice", hint="mark each mechanism once")
        state.marks[key], state.cells[key] = made, cell
        state.declared.append(key)
        return self._mark_view(made)

    def _mark_view(self, made: Mark, drifted: Mapping[str, Sequence[str]] | None = None) -> Html:
        definition, _ = self._state.rubrics[made.rubric]
        drifted = self._reviews.marks() if drifted is None else drifted
        markup = mark_html(made, definition, drifted.get(made.anchor, ()))
        shown = "present" if made.present else "absent"
        return Html(markup, f"<mark {made.rubric}/{made.mechanism}: {shown}>", made.anchor)
