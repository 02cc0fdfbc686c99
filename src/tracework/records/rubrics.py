"""Rubrics: named sets of mechanisms that reports mark as present or absent.

A rubric lives in ``registers/rubrics/NAME.yaml``: a title, a description and a
list of mechanisms, each with an id, a name, a one-paragraph definition and what
evidence counts.  A notebook marks a mechanism with ``wb.mark(...)``; the published
site draws one matrix per rubric, systems by mechanisms.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tracework.errors import TraceworkError, validation_problem
from tracework.hashing import sha256_hex
from tracework.workspace import Workspace, check_name


class RubricError(TraceworkError):
    """A rubric file that is missing or malformed, or a mark that names no mechanism."""


class Mechanism(BaseModel):
    """One mechanism of a rubric: what it is and what evidence shows it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = Field(description="short id, unique in the rubric (letters, digits, -)")
    name: str = Field(min_length=1, description="a short human name")
    definition: str = Field(min_length=1, description="one paragraph (Markdown)")
    evidence: str = Field(min_length=1, description="what evidence counts (Markdown)")

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", value):
            raise ValueError("a mechanism id is lower-case letters, digits and -")
        return value


class Rubric(BaseModel):
    """A rubric file: title, description and its mechanisms in display order."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    title: str = Field(min_length=1)
    description: str = ""
    mechanisms: tuple[Mechanism, ...] = Field(min_length=1)

    @field_validator("mechanisms")
    @classmethod
    def _unique(cls, value: tuple[Mechanism, ...]) -> tuple[Mechanism, ...]:
        seen: set[str] = set()
        for m in value:
            if m.id in seen:
                raise ValueError(f"mechanism id {m.id!r} appears twice")
            seen.add(m.id)
        return value

    def mechanism(self, mid: str) -> Mechanism | None:
        return next((m for m in self.mechanisms if m.id == mid), None)


def rubrics_dir(ws: Workspace) -> Path:
    return ws.registers / "rubrics"


def rubric_path(ws: Workspace, name: str) -> Path:
    check_name(name, "rubric")
    return rubrics_dir(ws) / f"{name}.yaml"


def rubric_names(ws: Workspace) -> list[str]:
    """Every rubric of the workspace, by name, sorted."""
    folder = rubrics_dir(ws)
    return sorted(p.stem for p in folder.glob("*.yaml") if not p.name.startswith("."))


def load_rubric(ws: Workspace, name: str) -> tuple[Rubric, str]:
    """A rubric and the digest of its content, or one clear error naming the file."""
    where = f"registers/rubrics/{name}.yaml"
    try:
        path = rubric_path(ws, name)
    except TraceworkError:
        raise RubricError(
            f"{where}: {name!r} is not a valid rubric name",
            hint="use letters, digits, '.', '_' and '-', starting with a letter or digit",
        ) from None
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RubricError(
            f"no rubric {name!r} ({where} does not exist)",
            hint="write the rubric file first; the manual shows its shape (docs/manual/rubrics.md)",
        ) from None
    except OSError as exc:
        raise RubricError(f"{where}: cannot be read ({exc.strerror})") from None
    return _parsed(raw, where)


@functools.lru_cache(maxsize=64)
def _parsed(raw: bytes, where: str) -> tuple[Rubric, str]:
    """A rubric file's bytes, parsed and validated once per process: a batch asks for
    every rubric's digest once per report (a render input), a mark once per use."""
    from tracework.register.store import parse

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise RubricError(f"{where}: not UTF-8 text") from None
    try:
        data: Any = parse(text, Path(where))
    except TraceworkError as exc:
        raise RubricError(exc.message, hint=exc.hint) from None
    if not isinstance(data, dict):
        raise RubricError(f"{where}: not a rubric (expected a mapping at the top level)")
    try:
        rubric = Rubric.model_validate(data)
    except ValidationError as exc:
        raise RubricError(f"{where}: malformed rubric at {validation_problem(exc)}") from None
    return rubric, rubric_digest(rubric)


def rubric_digest(rubric: Rubric) -> str:
    """SHA-256 of the rubric's content (canonical JSON): comments and layout do not count,
    so reformatting a rubric never makes the marks made against it look stale."""
    canonical = json.dumps(rubric.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    return sha256_hex(canonical.encode("utf-8"))


def rubrics_key(ws: Workspace) -> str:
    """One digest of every rubric of the workspace, for a render's inputs: a rubric's
    content digest, or its raw bytes' when it does not load (the render will say why)."""
    parts = []
    for name in rubric_names(ws):
        try:
            digest = load_rubric(ws, name)[1]
        except TraceworkError:
            try:
                digest = sha256_hex(rubric_path(ws, name).read_bytes())
            except (OSError, TraceworkError):
                digest = "unreadable"
        parts.append(f"{name}:{digest}")
    return sha256_hex("\n".join(parts).encode())
