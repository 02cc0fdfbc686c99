"""What ``tracework check --json`` prints: its JSON contract, as typed dictionaries.

A check makes one item per registered file and quote, so its results are named tuples
and its JSON plain dictionaries, built without pydantic (the check imports this module
for type checking only).  These ``TypedDict`` classes type those dictionaries for mypy
and are the source of ``schemas/check.schema.json`` (``tracework schema --write``),
which the tests hold a real check's output to.  The docstring under each field is its
description in the schema.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic reads only this one's fields on 3.11

_DESCRIBED = ConfigDict(use_attribute_docstrings=True)


@with_config(_DESCRIBED)
class CheckItemJson(TypedDict):
    """One registered file or quote, checked."""

    kind: Literal["file", "quote"]
    """A registered file or a quote."""
    id: str
    """The quote's id; for a file, its path."""
    source: str
    """The source it belongs to (`SRC-n`)."""
    path: str
    """The file, as registered."""
    state: str
    """What holds: `verified`, `moved`, `changed`, `missing`, … (the drift states)."""
    lines: list[int] | None
    """A quote's registered first and last lines."""
    new_lines: list[int] | None
    """Where the quote is at the commit checked, when it moved."""
    new_path: str | None
    """The file it moved to, when that is another file."""
    candidates: list[list[int]] | None
    """Each place it might be, first and last lines, when more than one fits."""
    candidate_paths: list[str] | None
    """The file of each candidate, in the same order."""
    diff: str | None
    """A unified diff from the registered text, when it changed."""
    format_only: bool
    """Whether the change is formatting only (the one rule for format only)."""
    detail: str
    """What was found, in a line."""
    sha256: str | None
    """What the register holds, in full."""
    sha256_at_commit: str | None
    """What the commit checked holds; null when nothing is there."""
    hint: str | None
    """The command that fixes it, when one command is the fix."""


@with_config(_DESCRIBED)
class AssertionJson(TypedDict):
    """A hash asserted by a document (or by the analyst's `--expect-sha256`), checked."""

    source: str
    """The git source whose file it is about."""
    path: str
    """The file."""
    by: str | None
    """The document source asserting it; null for `--expect-sha256`."""
    commit: str
    """The commit it was compared at."""
    state: Literal["holds", "differs", "missing"]
    """Whether the file there has the asserted hash."""
    sha256: str
    """The asserted hash."""
    sha256_at_commit: str | None
    """The file's hash there; null when the file is not there."""
    required: bool
    """Whether a differing hash fails the check (else it is a finding)."""
    about: str | None
    """The commit asserted about, as asserted; null when any commit."""
    absent: bool
    """Whether that commit is missing from the mirror (then compared at the pin)."""


@with_config(_DESCRIBED)
class GitSourceJson(TypedDict):
    """A git source: a subject at its pin."""

    id: str
    """`SRC-n`."""
    kind: Literal["git"]
    """The source's kind."""
    subject: str
    """The subject's name."""
    pin: str
    """The register's pin for it."""
    commit: str
    """The commit checked."""


@with_config(_DESCRIBED)
class DocumentSourceJson(TypedDict):
    """A document source, kept as a file in the workspace or named by URL."""

    id: str
    """`SRC-n`."""
    kind: Literal["document"]
    """The source's kind."""
    location: str
    """Its path in the workspace, or its URL."""
    sha256: str
    """The hash the register holds for it."""


@with_config(_DESCRIBED)
class CaptureSourceJson(TypedDict):
    """A capture source: a runtime capture's files, by hash."""

    id: str
    """`SRC-n`."""
    kind: Literal["capture"]
    """The source's kind."""
    capture: str
    """The capture's name."""
    commit: str
    """The commit it was captured at."""


@with_config(_DESCRIBED)
class CheckJson(TypedDict):
    """`tracework check --json`: one object."""

    ok: bool
    """Whether everything holds (exit 0; else exit 1)."""
    register: str
    """The register's name."""
    commit: str
    """The commit checked (the first git source's)."""
    sources: list[GitSourceJson | DocumentSourceJson | CaptureSourceJson]
    """Every source of the register."""
    items: list[CheckItemJson]
    """Every registered file and quote, checked."""
    assertions: list[AssertionJson]
    """Every asserted hash, checked."""
    unchecked: list[str]
    """Document sources named by URL: never fetched, so not checked."""
