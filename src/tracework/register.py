"""Reading and writing source registers (``registers/NAME.yaml``).

Reads use ruamel's C-accelerated safe loader.  Writes happen only inside
:func:`edit`: under a file lock, the file is loaded round-trip (so the analyst's
comments and ordering survive), changed, validated as a whole, dumped, re-read and
re-validated, and only then replaced atomically.  A failed edit leaves the file as
it was.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import LiteralScalarString

from .errors import RegisterError
from .fsio import locked, write_atomic
from .models import CheckEntry, FileEntry, GitSource, Quote, Register

__all__ = ["CommentedMap", "CommentedSeq", "create", "edit", "load"]

_HEADER = (
    "# tracework source register: the reviewed baseline for one report.\n"
    "# It changes only through `tracework register …`, `tracework quote …` or a notebook\n"
    "# in author mode; every hash can be re-computed with plain git (see README).\n"
)


def _safe_yaml() -> YAML:
    return YAML(typ="safe", pure=False)


def _rt_yaml() -> YAML:
    yaml = YAML()
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _validate(data: Any, path: Path) -> Register:
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


def _parse(text: str, path: Path, yaml: YAML) -> Any:
    try:
        return yaml.load(text)
    except YAMLError as exc:
        raise RegisterError(
            f"{path}: not valid YAML ({' '.join(str(exc).split())[:300]})",
            hint="fix the syntax or restore the file from version control",
        ) from None


def load(path: Path) -> Register:
    """Load and validate a register (read-only, fast)."""
    if not path.is_file():
        raise RegisterError(
            f"no register at {path}", hint="create it with `tracework register new NAME`"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RegisterError(f"{path}: not UTF-8 text") from None
    return _validate(_parse(text, path, _safe_yaml()), path)


def create(path: Path, name: str) -> Register:
    """Write a new, empty register; refuses to replace an existing one."""
    with locked(path):
        if path.exists():
            raise RegisterError(f"{path} already exists", hint="choose another name")
        doc = CommentedMap(
            version=1,
            name=name,
            sources=CommentedMap(),
            quotes=CommentedMap(),
            checks=CommentedSeq(),
        )
        return _write(path, doc, header=_HEADER)


@contextmanager
def edit(path: Path) -> Iterator[CommentedMap]:
    """Change a register under its lock; the change lands only if the result is valid."""
    with locked(path):
        if not path.is_file():
            raise RegisterError(
                f"no register at {path}", hint="create it with `tracework register new NAME`"
            )
        doc = _parse(path.read_text(encoding="utf-8"), path, _rt_yaml())
        _validate(doc, path)
        yield doc
        _write(path, doc)


def _write(path: Path, doc: CommentedMap, header: str = "") -> Register:
    buffer = io.StringIO()
    _rt_yaml().dump(doc, buffer)
    text = header + buffer.getvalue()
    register = _validate(_parse(text, path, _safe_yaml()), path)
    write_atomic(path, text)
    return register


# -- building YAML nodes for new entries ----------------------------------------------


def _flow(values: list[Any]) -> CommentedSeq:
    seq = CommentedSeq(values)
    seq.fa.set_flow_style()
    return seq


def _block_text(text: str) -> str:
    """A literal block when it round-trips exactly; otherwise let the emitter quote it.

    Literal blocks keep quoted code readable in the register; YAML folds some
    characters (CR, NEL, LS, PS, BOM, trailing blanks) inside them, so each text is
    tried once and kept as a block only if it reads back byte for byte.
    """
    if "\n" not in text.rstrip("\n") and not text.endswith("\n"):
        return text
    if any(ch in text for ch in "\r\x85\u2028\u2029\ufeff"):
        return text
    block = LiteralScalarString(text)
    buffer = io.StringIO()
    _rt_yaml().dump({"t": block}, buffer)
    try:
        back = _safe_yaml().load(buffer.getvalue())
    except YAMLError:
        return text
    return block if isinstance(back, dict) and back.get("t") == text else text


def file_node(entry: FileEntry) -> CommentedMap:
    node = CommentedMap(
        (k, v)
        for k, v in entry.model_dump(exclude_none=True, exclude_defaults=False).items()
        if not (k == "binary" and v is False)
    )
    node.fa.set_flow_style()
    return node


def quote_node(quote: Quote) -> CommentedMap:
    node = CommentedMap()
    node["source"] = quote.source
    node["path"] = quote.path
    node["lines"] = _flow(list(quote.lines))
    if quote.anchor is not None:
        anchor = CommentedMap(quote.anchor.model_dump(exclude_none=True, exclude_defaults=True))
        anchor.fa.set_flow_style()
        node["anchor"] = anchor
    node["sha256"] = quote.sha256
    node["text"] = _block_text(quote.text)
    if quote.raw_b64:
        node["raw_b64"] = quote.raw_b64
    return node


def source_node(source: GitSource) -> CommentedMap:
    return CommentedMap(
        kind="git",
        subject=source.subject,
        commit=source.commit,
        date=source.date,
        files=CommentedMap(),
    )


def check_node(entry: CheckEntry) -> CommentedMap:
    counts = CommentedMap(sorted(entry.counts.items()))
    counts.fa.set_flow_style()
    return CommentedMap(date=entry.date, source=entry.source, commit=entry.commit, counts=counts)


def section(doc: CommentedMap, key: str, factory: type = CommentedMap) -> Any:
    """A top-level section, created when a hand-trimmed register lacks it."""
    if doc.get(key) is None:
        doc[key] = factory()
    return doc[key]
