"""The source register's data model (frozen pydantic models).

These classes are the register format: ``tracework schema`` writes their JSON
Schema to ``schemas/register.schema.json`` so other tools can read registers.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic.config import JsonDict

from tracework.errors import is_calendar_date
from tracework.hashing import display_text, document_location_problem, sha256_hex

SOURCE_ID = re.compile(r"SRC-[0-9]+")
QUOTE_ID = re.compile(r"[A-Za-z][A-Za-z0-9._:-]{0,127}")


def _iso(value: Any) -> Any:
    """Dates written unquoted by hand arrive from YAML as date objects; keep them text."""
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return value


def _calendar(value: str) -> str:
    if not is_calendar_date(value):
        raise ValueError(f"{value!r} is not a date: write a real calendar date as YYYY-MM-DD")
    return value


IsoDate = Annotated[str, BeforeValidator(_iso)]
#: A real calendar date, YYYY-MM-DD: the one date rule (see errors.check_iso_date).
CalendarDate = Annotated[
    str,
    BeforeValidator(_iso),
    AfterValidator(_calendar),
    Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="a calendar date, YYYY-MM-DD"),
]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="full lowercase hex SHA-256")]
CommitId = Annotated[str, Field(pattern=r"^[0-9a-f]{40}$", description="full 40-hex commit id")]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


FileKind = Literal["file", "symlink", "submodule", "lfs-pointer"]


class FileEntry(Frozen):
    """A registered file: its blob hash at the source's commit and what kind of entry it is."""

    sha256: Sha256 = Field(description="SHA-256 of the blob bytes (`git show C:P | sha256sum`)")
    kind: FileKind = Field(
        "file",
        description="symlinks are hashed as their target text, never followed; "
        "a submodule is hashed as its commit id in hex; a Git LFS pointer is hashed as "
        "the pointer's bytes (the content it names is not in the repository)",
    )
    size: int = Field(ge=0, description="blob size in bytes")
    binary: bool = Field(False, description="a NUL byte in the first 8000 bytes, as git judges")
    target: str | None = Field(None, description="a symlink's target text")
    expect_sha256: Sha256 | None = Field(
        None,
        description="the SHA-256 the analyst expects (`add-file --expect-sha256`); the check "
        "reports it as an assertion that holds or differs, never as a change of the file",
    )


def _tag_required(schema: JsonDict) -> None:
    """Mark ``kind`` required in the JSON Schema, as the model is when it reads a file.

    It is the union's discriminator: a source without it is refused, so the schema
    must not present it as optional with a default.
    """
    properties, required = schema["properties"], schema.get("required", [])
    assert isinstance(properties, dict) and isinstance(required, list)  # pydantic's layout
    kind = properties["kind"]
    assert isinstance(kind, dict)
    kind.pop("default", None)
    schema["required"] = ["kind", *(k for k in required if k != "kind")]


class GitSource(Frozen):
    """A subject pinned at one full commit."""

    model_config = ConfigDict(json_schema_extra=_tag_required)

    kind: Literal["git"] = "git"
    subject: str = Field(description="subject name (sources/NAME.toml)")
    commit: CommitId
    date: IsoDate = Field(description="the pinned commit's committer date, ISO 8601")
    files: dict[str, FileEntry] = Field(default_factory=dict)


class DocumentSource(Frozen):
    """A plain document cited as evidence (a path or URL) with its SHA-256."""

    model_config = ConfigDict(json_schema_extra=_tag_required)

    kind: Literal["document"] = "document"
    location: str = Field(
        description="an https URL (never fetched) or a path relative to the workspace root"
    )
    sha256: Sha256

    @model_validator(mode="after")
    def _located(self) -> DocumentSource:
        problem = document_location_problem(self.location)
        if problem:
            raise ValueError(problem)
        return self


class CaptureSource(Frozen):
    """A runtime capture cited as evidence (``wb.capture(NAME)``): the files of
    ``captures/NAME/<commit12>/`` with their SHA-256, checked like any evidence, so a
    hand-edited transcript is caught."""

    model_config = ConfigDict(json_schema_extra=_tag_required)

    kind: Literal["capture"] = "capture"
    capture: str = Field(description="the capture's name (captures/NAME.toml)")
    subject: str = Field(description="the subject it ran")
    commit: CommitId = Field(description="the commit it ran at")
    files: dict[str, Sha256] = Field(
        description="each file the capture's manifest lists (what it observed) and its SHA-256"
    )


Source = Annotated[GitSource | DocumentSource | CaptureSource, Field(discriminator="kind")]


class Anchor(Frozen):
    """What helps find a quote again after the code moves: a symbol or a unique substring."""

    symbol: str | None = Field(None, description="Python qualified name, e.g. Store.write")
    match: str | None = Field(None, description="a substring occurring on exactly one line")
    context: int = Field(0, ge=0, le=200, description="lines quoted either side of a match")

    @model_validator(mode="after")
    def _one_kind(self) -> Anchor:
        if (self.symbol is None) == (self.match is None):
            raise ValueError("an anchor has exactly one of `symbol` or `match`")
        return self


class Quote(Frozen):
    """A span of one file at its source's pin, with the exact text and its hash."""

    source: str = Field(description="source id, e.g. SRC-1")
    path: str
    lines: tuple[int, int] = Field(description="first and last line, 1-based, inclusive")
    anchor: Anchor | None = None
    sha256: Sha256 = Field(description="SHA-256 of the span bytes including the last terminator")
    text: str = Field(description="the span as text (invalid UTF-8 shown as U+FFFD)")
    raw_b64: str | None = Field(
        None, description="the exact span bytes in base64, present only when not valid UTF-8"
    )

    @model_validator(mode="after")
    def _lines_in_order(self) -> Quote:
        if not 1 <= self.lines[0] <= self.lines[1]:
            raise ValueError(f"lines {self.lines[0]}-{self.lines[1]} are not a 1-based range")
        return self

    def span_bytes(self) -> bytes:
        """The exact bytes the hash covers."""
        return base64.b64decode(self.raw_b64) if self.raw_b64 else self.text.encode("utf-8")

    def text_intact(self) -> bool:
        return sha256_hex(self.span_bytes()) == self.sha256


class CheckEntry(Frozen):
    """One dated check of a source, kept as the register's history."""

    date: CalendarDate
    source: str
    commit: CommitId
    counts: dict[str, int]


class Assertion(Frozen):
    """What someone else says a file's hash is — a dossier's "graph.py has SHA-256
    844d…" — recorded with who said it.  The check reports whether it holds; one that
    differs is a finding, and fails the checks only when ``required``."""

    source: str = Field(description="the git source the file belongs to (SRC-n)")
    path: str = Field(description="the file's path in that source")
    sha256: Sha256 = Field(description="the hash asserted")
    by: str = Field(description="who asserts it: a document source of this register (SRC-n)")
    at_commit: CommitId | None = Field(
        None,
        description="the commit the assertion is about, in full, as asserted; without it, "
        "the commit checked (the pin, or --at).  A commit the subject's mirror lacks is "
        "kept as asserted, and the assertion is compared at the pin instead",
    )
    required: bool = Field(
        False, description="a differing required assertion fails the checks (else a finding)"
    )


class Register(Frozen):
    """A report's source register: its sources, their files, the quotes and check history."""

    version: Literal[1] = 1
    name: str = Field(description="the register's name")
    sources: dict[str, Source] = Field(default_factory=dict)
    quotes: dict[str, Quote] = Field(default_factory=dict)
    checks: list[CheckEntry] = Field(default_factory=list)
    assertions: list[Assertion] = Field(
        default_factory=list, description="hashes asserted by others, checked like evidence"
    )

    @model_validator(mode="after")
    def _asserted_by_documents(self) -> Register:
        for n, a in enumerate(self.assertions, 1):
            if not isinstance(self.sources.get(a.source), GitSource):
                raise ValueError(f"assertion {n}: {a.source} is not a git source")
            if not isinstance(self.sources.get(a.by), DocumentSource):
                raise ValueError(f"assertion {n}: by {a.by}, which is not a document source")
        return self

    @model_validator(mode="after")
    def _references(self) -> Register:
        problems = []
        for sid in self.sources:
            if not SOURCE_ID.fullmatch(sid):
                problems.append(f"source id '{sid}' is not SRC-<number>")
        for qid, quote in self.quotes.items():
            if not QUOTE_ID.fullmatch(qid):
                problems.append(f"quote id '{qid}' has characters outside A-Z a-z 0-9 . _ : -")
            src = self.sources.get(quote.source)
            if not isinstance(src, GitSource):
                problems.append(f"quote {qid} cites {quote.source}, which is not a git source here")
            elif quote.path not in src.files:
                problems.append(
                    f"quote {qid} cites {quote.path}, not registered under {quote.source}"
                )
            if quote.raw_b64 and quote.text != display_text(quote.span_bytes()):
                problems.append(f"quote {qid}: its text does not show its raw_b64 bytes")
            if not quote.text_intact():
                problems.append(
                    f"quote {qid}: its text does not hash to its sha256 (edited by hand?)"
                )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def git_source(self, sid: str) -> GitSource:
        src = self.sources.get(sid)
        if not isinstance(src, GitSource):
            from tracework.errors import RegisterError

            known = ", ".join(k for k, v in self.sources.items() if isinstance(v, GitSource))
            raise RegisterError(
                f"register {self.name} has no git source {sid}",
                hint=f"git sources: {known or 'none'}; "
                "add one with `tracework register add-source`",
            )
        return src
