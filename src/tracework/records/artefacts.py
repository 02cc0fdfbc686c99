"""What a render writes and others read, each as one frozen model.

``records.json`` (:class:`ReportRecords`), a ``history.json`` entry
(:class:`HistoryEntry`), ``manifest.json`` (:class:`RenderManifest`) and a batch's
outcome per report (:class:`BatchOutcome`) are written by one function each and read by
the same model in the render, the batch and the site; their JSON Schemas are generated
from these models (``tracework schema --write``).  They live with the render because
the render writes them; the batch and the site, later stages, read them from here.

records.json is made in two steps, and the models say so: the notebook's kernel
writes :class:`KernelRecords` (``wb.done()`` displays it), then the render adds the
drift since the pin and the page's title (:class:`ReportRecords`).

Byte for byte: a model read from JSON is written back with only the keys it was read
with (``exclude_unset``), sorted, indented as before, so reading and writing never
changes a file.  The register's check never imports this module: it stays free of
pydantic.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tracework.capture.store import CaptureManifest
from tracework.drift.first_change import STATES
from tracework.fsio import write_atomic
from tracework.readers import Table, load_json

FULL_ID = r"^[0-9a-f]{40}$"
RECORDS_FORMAT = "tracework.notebook.records/1"
#: The MIME type the kernel displays its records under, for the render to collect.
RECORDS_MIME = "application/vnd.tracework.notebook.records+json"


class _Ours(BaseModel):
    """A part of a file tracework writes: frozen, and nothing it does not know.

    A JSON key a model's attribute cannot be called (``register``: pydantic models have
    a ``register`` method) is the field's alias, read and written as the key.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


def _commit(description: str) -> Any:
    return Field(pattern=FULL_ID, description=description)


# -- records.json: the kernel's part ----------------------------------------------------


class RecordEntry(BaseModel):
    """One declared record: its kind's own fields (see the record kinds), plus these.

    Open to further keys, unlike the other parts of records.json: each record kind has
    fields of its own (a route's progression, a claim's status), checked by that kind's
    model when the notebook declared the record, so they are kept as the notebook gave
    them rather than described a second time here.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    id: str = Field(description="The record id; its prefix names its kind (`RT-CMP-…`).")
    kind: str = Field(description="The record kind (`component`, `route`, `claim`, …).")
    label: str = Field("", description="The record's short label, when its kind has one.")
    evidence: list[str] = Field(
        default_factory=list, description="Quote, source and capture ids it cites."
    )
    needs_review: list[str] = Field(
        default_factory=list,
        description="The cited evidence that no longer holds at this commit.",
    )


class QuoteEntry(_Ours):
    """A cited quote and what became of it at the rendered commit."""

    source: str = Field(description="The source id (`SRC-1`).")
    path: str = Field(description="The file at the register's pin.")
    lines: tuple[int, int] = Field(description="First and last line at the pin (1-based).")
    sha256: str = Field(description="SHA-256 of the span at the pin.")
    state: str = Field(description="`verified`, `moved`, `changed`, `ambiguous` or `missing`.")
    format_only: bool = Field(False, description="A change of formatting only.")
    new_path: str | None = Field(None, description="Where the file went, when it moved.")
    new_lines: tuple[int, int] | None = Field(None, description="Where the span is now.")


class FileEntry(_Ours):
    """A registered file the report shows, and its state at the rendered commit."""

    source: str = Field(description="The source id.")
    path: str = Field(description="The file's path at the pin.")
    sha256: str = Field(description="The registered SHA-256.")
    state: str = Field(description="`verified`, `moved`, `changed` or `missing`.")
    new_path: str | None = Field(None, description="Where the file went, when renamed.")


class CaptureEntry(_Ours):
    """A capture source the report cites, and the capture it showed."""

    capture: str = Field(description="The capture's name (`captures/NAME.toml`).")
    registered_commit: str = Field(description="The commit the register's capture was made at.")
    captured_at: str = Field(description="The commit of the capture shown.")
    stale: bool = Field(description="Whether the capture shown is not at the rendered commit.")
    counts: dict[str, int] = Field(description="Cases by status (`PASS`, `FAIL`, `UNKNOWN`).")
    harness_sha256: str = Field(description="SHA-256 of the harness that ran.")
    environment_sha256: str = Field(description="SHA-256 of the environment it ran in.")
    isolation: str = Field(description="The isolation backend that ran it.")


class ComparedWith(_Ours):
    """What an excerpt was compared with, as read for this render."""

    kind: Literal["quote", "case", "previous"] = Field(
        description="A quote of the register, another case's value (`case`, `path`), or "
        "the same case and path in the capture at the commit before (`previous`)."
    )
    quote: str | None = Field(None, description="The quote id (for a quote).")
    case: str | None = Field(None, description="The case whose value it is.")
    path: str | None = Field(None, description="The value's place in that case's transcript.")
    commit: str | None = Field(
        None,
        description="Where the text was read: the commit of the quote's text, or of the "
        "capture the value is from (None when there is none).",
    )
    form: Literal["lines", "string literal", "string", "canonical JSON"] | None = Field(
        None,
        description="How its text was taken: a quote's lines (the last one's terminator "
        "off), the value of the Python string literal a quote is, a recorded string, or "
        "canonical JSON.",
    )
    sha256: str | None = Field(
        description="SHA-256 of the text compared with (UTF-8); None when missing here."
    )


class LineChange(_Ours):
    """A block of lines that differs between an excerpt and its reference."""

    op: Literal["inserted", "removed", "replaced"] = Field(description="What the block is.")
    lines: tuple[int, int] | None = Field(
        description="The excerpt's lines (1-based, inclusive); None for removed lines."
    )
    reference_lines: tuple[int, int] | None = Field(
        description="The reference's lines, numbered as it is shown (a quote's from its "
        "first line); None for inserted lines."
    )


class FieldFill(_Ours):
    """A ``str.format`` field of a template reference and what fills it in the excerpt."""

    field: str = Field(description="The field as the template writes it: {user_info}.")
    lines: tuple[int, int] = Field(description="The excerpt's lines the filling spans.")
    text: str = Field(description="The text that fills it.")


class ComparisonEntry(_Ours):
    """An excerpt compared by lines with a named reference (difflib, no autojunk)."""

    reference: ComparedWith = Field(description="What it was compared with.")
    form: Literal["string", "canonical JSON"] = Field(
        description="How the excerpt's text was taken."
    )
    verdict: Literal["equal", "filled", "inserted", "removed", "changed", "missing"] = Field(
        description="Equal, a template's fields filled only, lines inserted only, lines "
        "removed only, changed, or no reference here."
    )
    sentence: str = Field(description="The verdict as the page says it, of the excerpt.")
    changes: list[LineChange] = Field(description="Every block that differs, in order.")
    fills: list[FieldFill] = Field(
        default_factory=list,
        description="With verdict filled: each field of the template reference, in order, "
        "and the text that fills it.",
    )


class CaptureEvidenceEntry(_Ours):
    """A case or an excerpt of a capture, cited as evidence."""

    kind: Literal["case", "excerpt"] = Field(description="A whole case, or one excerpt.")
    source: str = Field(description="The capture source id.")
    case: str = Field(description="The case id.")
    path: str | None = Field(description="The excerpt's place in the transcript.")
    status: str | None = Field(description="The case's status (for a case).")
    sha256: str | None = Field(description="SHA-256 of the excerpt (for an excerpt).")
    state: str = Field(description="Whether the cited capture evidence holds.")
    compared_with: list[ComparisonEntry] = Field(
        default_factory=list,
        description="What an excerpt was compared with, and how it differs (computed at "
        "this render).",
    )


class AssertionEntry(_Ours):
    """A hash someone asserted about a file, checked."""

    source: str = Field(description="The git source of the file.")
    path: str = Field(description="The file.")
    by: str | None = Field(description="The document source asserting it (None: the analyst).")
    commit: str = Field(
        description="The commit the file was compared at: the one the assertion is about, "
        "the one rendered, or the pin (for a commit this mirror lacks)."
    )
    state: Literal["holds", "differs", "missing"] = Field(description="What the check found.")
    sha256: str = Field(description="The asserted SHA-256.")
    sha256_at_commit: str | None = Field(description="The file's SHA-256 there, if present.")
    required: bool = Field(description="Whether a differing hash fails the check.")
    about: str | None = Field(
        None, description="The commit the assertion is about, as asserted (None: any)."
    )
    absent: bool = Field(
        False, description="Whether this mirror lacks `about`, so it was compared at the pin."
    )


class AbsenceMatch(_Ours):
    """A line an evidenced absence's patterns match."""

    path: str = Field(description="The file.")
    line: int = Field(description="The line number (1-based).")
    text: str = Field(description="The line's text.")


class AbsenceEntry(_Ours):
    """An evidenced absence, searched again at the rendered commit."""

    holds: bool = Field(description="Whether the patterns still match nothing.")
    files: int = Field(description="How many files of the scope were searched.")
    skipped: list[str] = Field(description="Files of the scope that could not be searched.")
    matches: list[AbsenceMatch] = Field(description="The lines that match (none: it holds).")

    @property
    def matched_files(self) -> int:
        """How many distinct files hold a match (not how many were searched)."""
        return len({m.path for m in self.matches})


class DiagramEntry(_Ours):
    """A diagram of the report, checked against the records and the code."""

    caption: str = Field(description="The diagram's caption.")
    kind: str = Field(description="`generated` from records, or `written` by the analyst.")
    source_sha256: str = Field(description="SHA-256 of its Mermaid source.")
    bindings: dict[str, str] = Field(description="Node id → the record id it is bound to.")
    unknown_records: list[str] = Field(description="Bound record ids that were never declared.")
    identifiers: dict[str, bool] = Field(
        description="Each `code` identifier in a label → found in the registered files."
    )
    vanished: list[str] = Field(description="Identifiers not found at this commit.")
    ok: bool = Field(description="Whether every binding and identifier holds.")


class ReviewedAt(_Ours):
    """The commit an analyst last confirmed a mark against, and when."""

    commit: str = _commit("The commit reviewed.")
    date: str = Field(description="The date of the review (YYYY-MM-DD).")


class MarkEntry(_Ours):
    """One mechanism of a rubric, marked."""

    present: bool = Field(description="Whether the system carries the mechanism.")
    evidence: list[str] = Field(description="The records and quotes it cites.")
    note: str | None = Field(description="The analyst's note.")
    needs_review: list[str] = Field(description="Cited evidence that no longer holds.")
    reviewed_at: ReviewedAt | None = Field(
        None, description="When the mark was last reviewed (marks written with `reviewed=`)."
    )
    reviewer: str | None = Field(None, description="Who reviewed it, in their own words.")


class RubricMechanism(_Ours):
    """A mechanism of the rubric, as the report's header lists it."""

    id: str = Field(description="The mechanism's id.")
    name: str = Field(description="The mechanism's name.")


class RubricMarks(_Ours):
    """The report's marks against one rubric."""

    title: str = Field(description="The rubric's title.")
    sha256: str = Field(description="The digest of the rubric the notebook read.")
    mechanisms: int = Field(description="How many mechanisms the rubric has.")
    carries: int = Field(description="How many of them are marked present.")
    marks: dict[str, MarkEntry] = Field(description="Mechanism id → its mark.")
    rubric_mechanisms: list[RubricMechanism] = Field(
        default_factory=list,
        description="Every mechanism of the rubric, in its order, marked or not.",
    )


class Check(_Ours):
    """One family of checks: whether it holds, in a line."""

    ok: bool = Field(description="Whether this family of checks holds.")
    detail: str = Field(description="What was checked and found, in a line.")
    findings: int | None = Field(
        None,
        description="How many of what was checked are findings: they do not hold, but fail "
        "nothing (an asserted hash that differs, not --required). Only asserted hashes "
        "have them.",
    )

    @property
    def verdict(self) -> Literal["holds", "findings", "fails"]:
        """``fails``; ``findings`` when it holds with findings (never "holds" beside "3
        differ"); else ``holds``."""
        if not self.ok:
            return "fails"
        return "findings" if self.findings else "holds"

    @property
    def verdict_words(self) -> str:
        """The verdict as its badge says it: ``holds``, ``fails``, ``3 findings``."""
        if self.verdict == "findings":
            return f"{self.findings} finding{'' if self.findings == 1 else 's'}"
        return self.verdict


class RegisterCheck(Check):
    """The register's files and quotes at the commit."""

    counts: dict[str, dict[str, int]] = Field(description="`file`/`quote` → state → how many.")


class RecordsCheck(Check):
    """The declared records."""

    counts: dict[str, int] = Field(description="Record kind → how many.")


class Checks(_Ours):
    """Every family of checks; assertions and marks only when the report has them."""

    registered: RegisterCheck = Field(alias="register", description="Files and quotes.")
    records: RecordsCheck = Field(description="Records: ids, references, cited quotes.")
    absences: Check = Field(description="The evidenced absences, searched again.")
    diagrams: Check = Field(description="Diagram bindings and identifiers.")
    assertions: Check | None = Field(None, description="Asserted hashes, if any.")
    marks: Check | None = Field(None, description="Rubric marks, if any.")

    def families(self, *, by_name: bool = False) -> list[tuple[str, Check]]:
        """Each family the report has, by its key in records.json: in the order they are
        checked (this model's), or ``by_name`` (the order of records.json's sorted keys,
        which the command line and the report page list them in)."""
        fields = type(self).model_fields.items()
        present = ((field.alias or name, getattr(self, name)) for name, field in fields)
        found = [(key, check) for key, check in present if check is not None]
        return sorted(found, key=lambda family: family[0]) if by_name else found


class CheckSummary(_Ours):
    """Every check on a report at its commit (records.json ``checks``)."""

    ok: bool = Field(description="Whether every check holds.")
    commit: str = _commit("The commit checked.")
    pin: str = _commit("The register's pin.")
    at_pin: bool = Field(description="Whether the commit is the pin (strict checks).")
    checks: Checks = Field(description="Each family of checks.")
    problems: list[str] = Field(description="Each problem found, in a line.")


class KernelRecords(_Ours):
    """records.json as the notebook's kernel writes it (``wb.done()``)."""

    format: Literal["tracework.notebook.records/1"] = Field(description="This format's id.")
    tracework: str = Field(description="The tracework version that wrote it.")
    register_name: str = Field(alias="register", description="The register's name.")
    kind: str = Field(description="What the report is (`runtime report`, `atlas report`, …).")
    title: str | None = Field(description="The title given to `tw.open`, if any.")
    register_sha256: str = Field(description="SHA-256 of the register the notebook read.")
    subject: str = Field(description="The subject's name.")
    url: str = Field(description="The subject's URL.")
    pin: str = _commit("The register's pin.")
    pin_date: str = Field(description="The pin's committer date (ISO 8601).")
    commit: str = _commit("The commit the report was rendered at.")
    commit_date: str = Field(description="Its committer date (ISO 8601, with its offset).")
    analysis_date: str | None = Field(description="The analysis date given, if any.")
    mode: Literal["author", "render"] = Field(description="The mode the notebook ran in.")
    records: list[RecordEntry] = Field(description="Every declared record, by kind.")
    quotes: dict[str, QuoteEntry] = Field(description="Quote id → the cited quote.")
    files: dict[str, FileEntry] = Field(
        default_factory=dict, description="`SRC-n:path` → a file shown."
    )
    captures: dict[str, CaptureEntry] = Field(
        default_factory=dict, description="Capture source id → the capture shown."
    )
    capture_evidence: dict[str, CaptureEvidenceEntry] = Field(
        default_factory=dict, description="`SRC-n/case[/path]` → cited capture evidence."
    )
    assertions: list[AssertionEntry] = Field(
        default_factory=list, description="Asserted hashes, checked."
    )
    absences: dict[str, AbsenceEntry] = Field(description="Record id → its absence search.")
    diagrams: dict[str, DiagramEntry] = Field(
        default_factory=dict, description="Diagram name → its checks."
    )
    # kept as the screen of whichever version wrote it: readers check each key
    screen: Table | None = Field(
        None,
        description="The screen of the checkout, as `tracework screen --json` gives it "
        "(that command's own JSON contract, kept as it is).",
    )
    marks: dict[str, RubricMarks] = Field(
        default_factory=dict, description="Rubric name → the report's marks against it."
    )
    checks: CheckSummary = Field(description="Every check at this commit.")

    @field_validator("commit_date")
    @classmethod
    def _zoned(cls, value: str) -> str:
        """An ISO 8601 time with its offset (the site orders renders by it, in UTC)."""
        try:
            moment = dt.datetime.fromisoformat(value)
        except ValueError:
            raise ValueError("not an ISO 8601 date and time") from None
        if moment.tzinfo is None:
            raise ValueError("an ISO 8601 date and time without its UTC offset")
        return value


# -- records.json: what the render adds ------------------------------------------------


class Culprit(_Ours):
    """A commit that changed a quote."""

    date: str = Field(description="Its committer date.")
    subject: str = Field(description="The first line of its message.")


class Drift(_Ours):
    """What changed between the pin and the rendered commit, and since which commit."""

    commits_since_pin: int = Field(description="Commits the rendered commit has, the pin not.")
    counts: dict[str, int] = Field(description="Quote state → how many.")
    format_only: list[str] = Field(description="Quotes changed in formatting only.")
    first_changed: dict[str, str] = Field(description="Quote id → first commit changing its bytes.")
    first_content_change: dict[str, str] = Field(
        description="Quote id → first commit changing its content."
    )
    culprits: dict[str, Culprit] = Field(description="Each commit named above.")
    broken_absences: list[str] = Field(description="Absences whose patterns now match.")
    first_broken: dict[str, str] = Field(
        default_factory=dict,
        description="Broken absence id → the first commit after the pin at which its "
        "patterns match (found by bisection, into merged branches).",
    )
    vanished_identifiers: dict[str, list[str]] = Field(
        description="Diagram → identifiers no longer found."
    )
    needs_review: list[str] = Field(description="Records citing evidence that no longer holds.")


class ReportRecords(KernelRecords):
    """records.json as a render leaves it: the kernel's part, the drift and the title."""

    drift: Drift = Field(description="What changed since the pin (zero at the pin).")
    title: str = Field(description="The report's title, as the page and the site show it.")


def report_records(kernel: KernelRecords, drift: Drift, title: str) -> ReportRecords:
    """The kernel's records with what the render adds.

    Only the fields the kernel's records were made or read with are carried over, so the
    file written holds exactly the kernel's keys and these two (see :func:`to_json`);
    its parts are the kernel's own frozen models, not copies.
    """
    kept = {name: getattr(kernel, name) for name in kernel.model_fields_set}
    return ReportRecords.model_validate({**kept, "drift": drift, "title": title})


# -- manifest.json, history.json, a batch's outcome ------------------------------------


class RenderManifest(_Ours):
    """manifest.json: what a render ran, each input by its hash."""

    subject: str = Field(description="The subject's name.")
    url: str = Field(description="The subject's URL.")
    commit: str = _commit("The rendered commit.")
    notebook: str = Field(description="The notebook, relative to the workspace.")
    notebook_sha256: str = Field(description="SHA-256 of the notebook that ran.")
    register_path: str = Field(
        alias="register", description="The register, relative to the workspace."
    )
    register_sha256: str = Field(description="SHA-256 of the register read.")
    tracework: str = Field(description="The tracework version.")
    lock_sha256: str | None = Field(description="SHA-256 of the lock file of the environment.")
    distribution_sha256: str | None = Field(
        default=None,
        description="With no lock file (an installed tracework): SHA-256 of the installed "
        "distribution's RECORD, which lists every file it installed with its hash.",
    )
    parameters: dict[str, str] = Field(description="The notebook's parameters.")
    inputs_sha256: str = Field(description="What a re-render compares to skip this one.")


class ChangedIn(_Ours):
    """The first commit that changed a quote's bytes."""

    path: str = Field(description="The quoted file.")
    commit: str = Field(description="The commit.")
    date: str = Field("", description="Its committer date.")
    format_only: bool = Field(False, description="Whether the change was formatting only.")


class BrokenIn(_Ours):
    """An evidenced absence that broke: the commit that broke it, and its matches."""

    commit: str | None = Field(description="The first commit matching its patterns.")
    date: str = Field("", description="That commit's committer date.")
    matches: int = Field(description="How many lines match at the rendered commit.")
    files: int = Field(description="How many distinct files hold them.")


class AbsenceOutcome(_Ours):
    """An evidenced absence in a re-render's outcome (``rerender --json``)."""

    state: Literal["holds", "broken"] = Field(description="Whether its patterns match nothing.")
    first_broken: str | None = Field(
        description="The first commit after the pin at which its patterns match (broken)."
    )
    matches: int = Field(description="How many lines match at the target.")
    files: int = Field(description="How many distinct files hold a match.")


class HistoryEntry(_Ours):
    """One render of a report (history.json holds one per commit rendered)."""

    commit: str = _commit("The rendered commit.")
    date: str = Field("", description="Its committer date.")
    commits_since_pin: int = Field(0, description="Commits since the pin.")
    counts: dict[str, int] = Field(default_factory=dict, description="Quote state → how many.")
    format_only: int = Field(0, description="How many quotes changed in formatting only.")
    changed_in: dict[str, ChangedIn] = Field(
        default_factory=dict, description="Quote id → the commit that first changed it."
    )
    ok: bool = Field(False, description="Whether every check held.")
    checked: str | None = Field(
        None, pattern=r"^\d{4}-\d{2}-\d{2}$", description="The analysis date, if given."
    )
    broken: dict[str, BrokenIn] = Field(
        default_factory=dict, description="Broken absence id → where it broke, and how."
    )
    pin: str | None = Field(
        None,
        description="The register's pin the render checked against: a render of the same "
        "commit at another pin (after a re-pin) is another entry, and both are kept.",
    )
    pin_date: str | None = Field(None, description="The pin's committer date.")
    marks: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Rubric → mechanism → its mark at this render (`present`, `absent`, "
        "with `(needs re-review)`), so the mark history outlives the render's folder.",
    )


class BatchOutcome(_Ours):
    """One report's result in a re-render (``rerender --json``)."""

    name: str = Field(description="The report.")
    commit: str = Field(description="The target commit.")
    status: Literal["rendered", "skipped", "failed"] = Field(
        description="Rendered now, skipped (its last render is current), or failed."
    )
    counts: dict[str, int] = Field(default_factory=dict, description="Quote state → how many.")
    first_changed: dict[str, str] = Field(
        default_factory=dict, description="Quote id → first commit changing its bytes."
    )
    first_content_change: dict[str, str] = Field(
        default_factory=dict, description="Quote id → first commit changing its content."
    )
    format_only: list[str] = Field(
        default_factory=list, description="Quotes changed in formatting only."
    )
    uncited: dict[str, int] = Field(
        default_factory=dict,
        description="Quote state → how many quotes of the register that no record cites.",
    )
    absences: dict[str, AbsenceOutcome] = Field(
        default_factory=dict, description="Absence id → whether it holds, and since when not."
    )
    needs_review: list[str] = Field(
        default_factory=list, description="Records citing evidence that no longer holds."
    )
    changed: dict[str, str] = Field(
        default_factory=dict,
        description="Cited quote id → its state, for those whose content changed (not "
        "formatting only), that are ambiguous, or missing.",
    )
    error: str | None = Field(None, description="Why it failed.")


# -- the counts every output shows, defined once ----------------------------------------


def quote_counts(records: KernelRecords) -> tuple[dict[str, int], dict[str, int]]:
    """Quote state → how many, for the quotes the report's records cite and, apart,
    for the register's quotes that no record cites: the one count the header, the drift
    section, the site and ``rerender --json`` show (every state listed, zeros too)."""
    cited = dict.fromkeys(STATES, 0)
    for quote in records.quotes.values():
        cited[quote.state] = cited.get(quote.state, 0) + 1
    registered = records.checks.checks.registered.counts.get("quote", {})
    uncited = {s: max(0, registered.get(s, 0) - cited.get(s, 0)) for s in STATES}
    return cited, uncited


def changed_quotes(records: KernelRecords) -> dict[str, str]:
    """The cited quotes whose content no longer holds, with their state: changed (not
    formatting only), ambiguous or missing."""
    return {
        qid: q.state
        for qid, q in sorted(records.quotes.items())
        if q.state in ("ambiguous", "missing") or (q.state == "changed" and not q.format_only)
    }


def absence_outcomes(records: ReportRecords) -> dict[str, AbsenceOutcome]:
    """Each evidenced absence: holds or broken, since which commit, and its matches in
    how many distinct files."""
    return {
        aid: AbsenceOutcome(
            state="holds" if entry.holds else "broken",
            first_broken=records.drift.first_broken.get(aid),
            matches=len(entry.matches),
            files=entry.matched_files,
        )
        for aid, entry in sorted(records.absences.items())
    }


# -- one writer and one reader each ----------------------------------------------------


def to_json(model: BaseModel) -> dict[str, Any]:  # what model_dump gives: the model is its type
    """The JSON data of a model: the keys it was made or read with, nothing added."""
    return model.model_dump(mode="json", exclude_unset=True)


def dumps(data: Any) -> str:
    """The text of every file here: sorted keys, two-space indent, UTF-8 as is."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def as_stored(model: BaseModel) -> Any:
    """The JSON data of a model with its keys sorted at every level, as its file holds
    them: what a command prints when it shows part of a file as the file has it."""
    return json.loads(dumps(to_json(model)))


def write_records(path: Path, records: KernelRecords) -> None:
    """records.json, as the kernel writes it in author mode or as a render leaves it."""
    write_atomic(path, dumps(to_json(records)))


def read_records(path: Path) -> ReportRecords:
    """records.json; a ``ValidationError`` or :class:`~tracework.readers.DataError` says
    what is wrong (the caller names the file)."""
    return ReportRecords.model_validate(load_json(path.read_bytes()))


def read_kernel_records(path: Path) -> KernelRecords:
    """records.json as author mode leaves it (the kernel's part only); errors as
    :func:`read_records`."""
    return KernelRecords.model_validate(load_json(path.read_bytes()))


def write_manifest(path: Path, manifest: RenderManifest) -> None:
    write_atomic(path, dumps(to_json(manifest)))


def read_manifest(path: Path) -> RenderManifest:
    return RenderManifest.model_validate(load_json(path.read_bytes()))


def write_history(path: Path, entries: list[HistoryEntry]) -> None:
    write_atomic(path, dumps([to_json(e) for e in entries]))


#: Every schema ``tracework schema --write`` publishes beside the register's.
SCHEMAS: dict[str, tuple[type[BaseModel], str]] = {
    "records": (ReportRecords, "tracework records.json"),
    "history-entry": (HistoryEntry, "tracework history.json entry"),
    "manifest": (RenderManifest, "tracework manifest.json"),
    "batch-outcome": (BatchOutcome, "tracework rerender --json outcome"),
    "check-summary": (CheckSummary, "tracework check summary (records.json checks)"),
    # a capture's manifest.json, its environment's provenance among it (capture.store)
    "capture-manifest": (CaptureManifest, "tracework capture manifest.json"),
}
