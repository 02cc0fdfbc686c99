"""Reading and writing source registers (``registers/NAME.yaml``).

This module is the read side.  Parsing YAML in pure Python is slow for large
registers (seconds for 10,000 quotes), so every successful load or write also leaves
a compiled copy, ``registers/.NAME.yaml.compiled.json`` (ignored by git), keyed by
the SHA-256 of the YAML bytes: the next load validates that JSON instead of parsing
YAML, and any change to the YAML makes the copy stale.  The write side, with its
comment-preserving edits, is :mod:`tracework.register_yaml`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from . import __version__
from .errors import RegisterError
from .fsio import write_atomic
from .hashing import sha256_hex
from .models import Register

if TYPE_CHECKING:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

__all__ = ["create", "edit", "load"]

#: Bump when the models change in a way an old compiled copy must not satisfy.
COMPILED_FORMAT = 1


def safe_yaml() -> YAML:
    """ruamel's safe loader (its C extension when installed, else pure Python)."""
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=False)


def validate(data: Any, path: Path) -> Register:
    if not isinstance(data, dict):
        raise RegisterError(
            f"{path}: not a register (expected a mapping at the top level)",
            hint="create one with `tracework register new NAME`",
        )
    try:
        return Register.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise RegisterError(
            f"{path}: malformed register at {where}: {first['msg']}{more}",
            hint="fix the entry by hand or restore the file from version control",
        ) from None


def parse(text: str, path: Path, yaml: YAML) -> Any:
    """YAML text to data, or one clear message naming the file, line and column."""
    from ruamel.yaml.error import YAMLError

    try:
        return yaml.load(text)
    except YAMLError as exc:
        raise RegisterError(
            f"{path}: not valid YAML ({_yaml_problem(exc)})",
            hint="fix the syntax or restore the file from version control",
        ) from None


def _yaml_problem(exc: YAMLError) -> str:
    """The parser's problem and its line, without its notes for programmers.

    A duplicate key's note tells how to switch the check off, which is the wrong
    advice for a register, and the full text names ``<unicode string>``, not the file.
    """
    from ruamel.yaml.error import MarkedYAMLError

    if isinstance(exc, MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return f"{' '.join(exc.problem.split())[:300]}{where}"
    return " ".join(str(exc).split())[:300]


def load(path: Path) -> Register:
    """Load and validate a register (read-only, fast)."""
    if not path.is_file():
        raise RegisterError(
            f"no register at {path}", hint="create it with `tracework register new NAME`"
        )
    raw = path.read_bytes()
    digest = sha256_hex(raw)
    cached = _read_compiled(path, digest)
    if cached is not None:
        return cached
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise RegisterError(f"{path}: not UTF-8 text") from None
    register = validate(parse(text, path, safe_yaml()), path)
    write_compiled(path, digest, register)
    return register


class _Compiled(BaseModel):
    """The compiled copy: which YAML bytes it was made from, by which tracework."""

    yaml_sha256: str
    format: int
    tracework: str
    content: Register


def _compiled_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.compiled.json")


def _read_compiled(path: Path, digest: str) -> Register | None:
    try:
        compiled = _Compiled.model_validate_json(_compiled_path(path).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None
    fresh = (compiled.yaml_sha256, compiled.format, compiled.tracework)
    return compiled.content if fresh == (digest, COMPILED_FORMAT, __version__) else None


def write_compiled(path: Path, digest: str, register: Register) -> None:
    """Leave the compiled copy of a register just read or written (best effort)."""
    compiled = _Compiled(
        yaml_sha256=digest, format=COMPILED_FORMAT, tracework=__version__, content=register
    )
    with suppress(OSError):  # a read-only workspace still works, only slower
        write_atomic(_compiled_path(path), compiled.model_dump_json() + "\n")


def create(path: Path, name: str) -> Register:
    """Write a new, empty register; refuses to replace an existing one."""
    from .register_yaml import create as create_yaml

    return create_yaml(path, name)


def edit(path: Path) -> AbstractContextManager[Any]:
    """Change a register under its lock (see :func:`tracework.register_yaml.edit`)."""
    from .register_yaml import edit as edit_yaml

    return edit_yaml(path)
