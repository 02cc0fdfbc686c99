"""Typed records: what a report says the code does, one frozen model per kind.

The kinds and their fields follow the runtime reports this workbench produces:
components, operative objects, routes, claims, evidenced absences,
behavioural-authority paths, guarantees and annotations.  Long fields accept
Markdown.  Statuses come from the controlled vocabularies below; the documentation lists
them.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tracework.register.models import CalendarDate

Implementation = Literal["wired", "partial", "absent", "unknown"]
Operation = Literal["observed", "reported", "uninspected"]
Strength = Literal["enforced", "checked", "conventional", "none"]

VOCABULARIES: dict[str, tuple[str, ...]] = {
    "implementation": ("wired", "partial", "absent", "unknown"),
    "operation": ("observed", "reported", "uninspected"),
    "strength": ("enforced", "checked", "conventional", "none"),
}

Markdown = Annotated[str, Field(description="Markdown text")]

#: Quote states that put the records and marks citing them up for re-review, in the order
#: reports list them ("changed (format only)" is not one of them).
DRIFT_STATES = ("changed", "ambiguous", "missing")


class ReviewStamp(BaseModel):
    """The commit an analyst last confirmed a record against, and when."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    date: CalendarDate


class Record(BaseModel):
    """Fields every record has: id, label, evidence and a review stamp."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: ClassVar[str] = "record"
    prefix: ClassVar[str] = "RT-"
    title: ClassVar[str] = "Records"

    id: str
    label: str = Field(description="a short human name")
    evidence: tuple[str, ...] = Field(
        default=(), description="quote ids and source ids (SRC-n) that back the record"
    )
    reviewed_at: ReviewStamp | None = None
    notes: Markdown | None = None

    @field_validator("id")
    @classmethod
    def _prefixed(cls, value: str) -> str:
        if not value.startswith(cls.prefix) or not re.fullmatch(
            r"[A-Z]+-[A-Z]+-[A-Za-z0-9][A-Za-z0-9._-]*", value
        ):
            raise ValueError(
                f"a {cls.kind} id looks like {cls.prefix}<name> (letters, digits, . _ -)"
            )
        return value

    def references(self) -> dict[str, str]:
        """Other records this one names, field → record id (checked to exist)."""
        return {}

    def fields(self) -> list[tuple[str, Any]]:
        """(field title, value) pairs in display order, skipping empty ones."""
        skip = {"id", "label", "evidence", "reviewed_at", "notes"}
        out = []
        for name, info in type(self).model_fields.items():
            value = getattr(self, name)
            if name in skip or value in (None, "", ()):
                continue
            out.append((info.title or name.replace("_", " ").capitalize(), value))
        return out


class Component(Record):
    """A part of the system with an identity in the source (a class, a service, a model)."""

    kind: ClassVar[str] = "component"
    prefix: ClassVar[str] = "RT-CMP-"
    title: ClassVar[str] = "Components"
    identity: Markdown = Field(title="Source-native identity")
    details: Markdown | None = Field(None, title="Details")


class OperativeObject(Record):
    """A piece of retained material that code acts on (a store, a prompt, a queue)."""

    kind: ClassVar[str] = "operative object"
    prefix: ClassVar[str] = "RT-OBJ-"
    title: ClassVar[str] = "Operative objects"
    description: Markdown = Field(title="What it is")
    held_by: str | None = Field(None, title="Held by")
    persistence: Markdown | None = Field(None, title="Persistence")

    def references(self) -> dict[str, str]:
        return {"held_by": self.held_by} if self.held_by else {}


class Route(Record):
    """A path through the code from a trigger to an effect, with who proposes and decides."""

    kind: ClassVar[str] = "route"
    prefix: ClassVar[str] = "RT-RTE-"
    title: ClassVar[str] = "Routes"
    progression: Markdown = Field(title="Endpoints/progression")
    passes_through: tuple[str, ...] = Field((), title="Passes through")
    trigger: Markdown | None = Field(None, title="Trigger")
    proposer: Markdown | None = Field(None, title="Who proposes")
    decider: Markdown | None = Field(None, title="Who decides")
    immediate_return: Markdown | None = Field(None, title="Immediate return")
    later_read_back: Markdown | None = Field(None, title="Later read-back")
    delegated_visibility: Markdown | None = Field(None, title="Delegated visibility")
    selection_predicate: Markdown | None = Field(None, title="Selection predicate")
    invalidation: Markdown | None = Field(None, title="Invalidation or expiry")
    activation: Markdown | None = Field(None, title="Activation or effect")
    evidence_limits: Markdown | None = Field(None, title="Evidence limits")
    implementation: Implementation = Field(title="Implementation conclusion status")
    operation: Operation = Field(title="Operation conclusion status")

    def references(self) -> dict[str, str]:
        return {f"passes_through[{i}]": r for i, r in enumerate(self.passes_through)}


class Claim(Record):
    """A statement the subject makes about itself, and what the source shows of it."""

    kind: ClassVar[str] = "claim"
    prefix: ClassVar[str] = "RT-CLM-"
    title: ClassVar[str] = "Claims"
    claim: Markdown = Field(title="Claimed operation")
    assessment: Markdown = Field(title="Assessment")
    implementation: Implementation = Field("unknown", title="Implementation conclusion status")
    operation: Operation = Field(title="Operation conclusion status")


class Absence(Record):
    """Something the code does not do, backed by a search that finds nothing."""

    kind: ClassVar[str] = "evidenced absence"
    prefix: ClassVar[str] = "RT-ABS-"
    title: ClassVar[str] = "Evidenced absences"
    statement: Markdown = Field(title="Statement")
    scope: tuple[str, ...] = Field(title="Scope", min_length=1)
    patterns: tuple[str, ...] = Field(title="Patterns", min_length=1)

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """Each pattern must be one the search can run: RE2, linear time (see absences)."""
        from tracework.records.absences import compile_pattern

        for pattern in value:
            compile_pattern(pattern)  # ValueError: pydantic names the field
        return value


class AuthorityPath(Record):
    """How retained material reaches a consumer that acts on it, and with what force."""

    kind: ClassVar[str] = "behavioural-authority path"
    prefix: ClassVar[str] = "RT-BAP-"
    title: ClassVar[str] = "Behavioural-authority paths"
    consumer: Markdown = Field(title="Consumer")
    channel: Markdown = Field(title="Channel")
    force: Markdown = Field(title="Force")
    horizon: Markdown = Field(title="Horizon")
    source_material: str | None = Field(None, title="Retained material")
    route: str | None = Field(None, title="Route")

    def references(self) -> dict[str, str]:
        refs = {"route": self.route} if self.route else {}
        if self.source_material:
            refs["source_material"] = self.source_material
        return refs


class Guarantee(Record):
    """A property some part of the system promises, where it is enforced and how strongly."""

    kind: ClassVar[str] = "guarantee"
    prefix: ClassVar[str] = "RT-GRT-"
    title: ClassVar[str] = "Guarantees"
    owner: Markdown = Field(title="Owner")
    enforcement_point: Markdown = Field(title="Enforcement point")
    strength: Strength = Field(title="Strength")
    qualifier: Markdown | None = Field(
        None,
        title="Strength, in words",
        description="what the controlled strength means here, e.g. 'invariant for this "
        "dispatch's recognised branches' or 'best effort across backends'",
    )
    covered_path: Markdown = Field(title="Covered path")
    alternate_paths: Markdown | None = Field(None, title="Alternate paths")
    required_external_contract: Markdown | None = Field(None, title="Required external contract")
    implementation: Implementation = Field("unknown", title="Implementation conclusion status")
    operation: Operation = Field("uninspected", title="Operation conclusion status")


class Annotation(Record):
    """A remark attached to another record."""

    kind: ClassVar[str] = "annotation"
    prefix: ClassVar[str] = "RT-ANN-"
    title: ClassVar[str] = "Annotations"
    on: str = Field(title="On")
    text: Markdown = Field(title="Text")
    label: str = Field("", description="optional for annotations")

    def references(self) -> dict[str, str]:
        return {"on": self.on}


#: Record kinds in the order a report shows them.
KINDS: tuple[type[Record], ...] = (
    Component,
    OperativeObject,
    Route,
    Claim,
    Absence,
    AuthorityPath,
    Guarantee,
    Annotation,
)


def kind_of(record_id: str) -> type[Record] | None:
    """The record class whose prefix starts ``record_id``."""
    return next((k for k in KINDS if record_id.startswith(k.prefix)), None)
