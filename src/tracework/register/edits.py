"""The write side of source registers: comment-preserving, locked, atomic edits.

Writes happen only inside :func:`edit`: under a file lock, the file is loaded
round-trip (so the analyst's comments and ordering survive), changed, validated as a
whole, dumped, re-read and re-validated, and only then replaced atomically.  A
failed edit leaves the file as it was.  The one order not kept is that of the top-level
keys: in another order than the usual one they are put in it, comments and all, once
(:mod:`tracework.register.layout`), so that later writes can be spliced.  New entries are built by
:mod:`tracework.register.nodes`, in the register's house style.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString
from ruamel.yaml.tokens import CommentToken

from tracework.errors import RegisterError
from tracework.fsio import locked, write_atomic
from tracework.hashing import sha256_hex
from tracework.register import layout, store
from tracework.register.append import remember
from tracework.register.models import (
    Register,
)
from tracework.register.nodes import CommentedMap, CommentedSeq, dump
from tracework.register.store import parse, validate, write_compiled

__all__ = ["CommentedMap", "CommentedSeq", "create", "edit", "section"]

_HEADER = (
    "# tracework source register: the reviewed baseline for one report.\n"
    "# It changes only through `tracework register …`, `tracework quote …` or a notebook\n"
    "# in author mode; every hash can be re-computed with plain git (see README).\n"
)


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
        text = path.read_text(encoding="utf-8")
        doc = _in_usual_order(text, path)
        if doc is None:
            doc = parse(text, path, round_trip=True)
            validate(doc, path)
        _lift_trailing_comments(doc, None)
        yield doc
        _write(path, doc)


def _in_usual_order(text: str, path: Path) -> CommentedMap | None:
    """The register with its top-level keys moved into the usual order (see
    :mod:`tracework.register.layout`), its comments with them: what this write writes,
    once, so that the next can be spliced.  None when they are in that order, or when
    the moved text does not read back as the same register, field for field and in the
    same order (the register is then edited as it is).

    The register as it was is read by :func:`~tracework.register.store.load`: from its
    compiled copy when a read has left one for these bytes (``tracework quote`` has,
    before its full edit), so moving costs one parse, not two.
    """
    moved = layout.usual_text(text)
    if moved is None:
        return None
    try:
        again = parse(moved, path, round_trip=True)
        register = validate(again, path)
        before = store.load(path)
    except RegisterError:
        return None
    if not isinstance(again, CommentedMap) or _rows(register) != _rows(before):
        return None
    return again


def _rows(register: Register) -> str:
    """The register's data as text, in its order (dicts compare without it)."""
    return json.dumps(store._row(register), ensure_ascii=False)


def _lift_trailing_comments(node: Any, following: tuple[CommentedMap, Any] | None) -> None:
    """Re-attach comment lines that introduce the next key to that key.

    ruamel hangs the comment lines written above a key (``# no checks yet`` above
    ``checks:``) on the last value before it, often a nested one; an entry appended
    there would then land between the comment and the key it introduces.  Moving
    them to the key they precede keeps them in place; the dump is unchanged.
    """
    if isinstance(node, CommentedMap):
        keys = list(node)
        for i, key in enumerate(keys):
            if _is_block(node[key]):
                _lift_trailing_comments(
                    node[key], (node, keys[i + 1]) if i + 1 < len(keys) else following
                )
        if keys and following is not None:
            _lift_one(node, keys[-1], 2, following)
    elif isinstance(node, CommentedSeq) and len(node):
        for i, child in enumerate(node):
            if _is_block(child):
                _lift_trailing_comments(child, following if i == len(node) - 1 else None)
        if following is not None:
            _lift_one(node, len(node) - 1, 0, following)


def _is_block(value: Any) -> bool:
    return (
        isinstance(value, CommentedMap | CommentedSeq)
        and len(value) > 0
        and not value.fa.flow_style()
    )


def _lift_one(owner: Any, slot: Any, index: int, following: tuple[CommentedMap, Any]) -> None:
    entry = owner.ca.items.get(slot)
    token = entry[index] if entry else None
    if not isinstance(token, CommentToken):
        return
    text, value = token.value, owner[slot]
    # a comment on the value's own line stays there; the lines after it move
    eol = (
        text.startswith("#")
        and token.column > 0
        and not isinstance(value, LiteralScalarString | FoldedScalarString)
    )
    cut = text.find("\n") + 1 if eol else 0
    rest = text[cut:]
    if not eol and rest.startswith("\n"):
        rest = rest[1:]  # the line break that ends the value itself
    if (eol and cut == 0) or not rest.strip():
        return
    if eol:
        token.value = text[:cut]
        lifted = CommentToken(rest, CommentMark(0))
    else:
        entry[index] = None
        shared = getattr(value, "ca", None)
        if shared is not None and shared.comment and shared.comment[0] is token:
            shared.comment[0] = None  # a flow collection holds the same token
        lifted = token if rest == text else CommentToken(rest, CommentMark(token.column))
    mapping, key = following
    before = mapping.ca.items.setdefault(key, [None, None, None, None])
    before[1] = [lifted, *(before[1] or [])]


def _write(path: Path, doc: CommentedMap, header: str = "") -> Register:
    text = header + dump(doc)
    register = validate(parse(text, path), path)
    write_atomic(path, text)
    digest = sha256_hex(text.encode("utf-8"))
    write_compiled(path, digest, register)
    remember(path, digest, text, register)
    return register


def section(doc: CommentedMap, key: str, factory: type = CommentedMap) -> Any:
    """A top-level section, created when a hand-trimmed register lacks it: where the
    usual order puts it (see :mod:`tracework.register.layout`)."""
    if doc.get(key) is None:
        if key in layout.ORDER and key not in doc:
            rank = layout.ORDER.index
            before = [n for n, k in enumerate(doc) if k in layout.ORDER and rank(k) < rank(key)]
            doc.insert(before[-1] + 1 if before else 0, key, factory())
        else:
            doc[key] = factory()
    return doc[key]
