"""The write side of source registers: comment-preserving, locked, atomic edits.

Writes happen only inside :func:`edit`: under a file lock, the file is loaded
round-trip (so the analyst's comments and ordering survive), changed, validated as a
whole, dumped, re-read and re-validated, and only then replaced atomically.  A
failed edit leaves the file as it was.  The one order not kept is that of the top-level
keys: in another order than the usual one they are put in it, comments and all, once
(:mod:`tracework.register.layout`), so that later writes can be spliced.  The node
builders below give new entries the register's house style (flow maps for files,
literal blocks for quote text).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString
from ruamel.yaml.tokens import CommentToken

from tracework.errors import RegisterError
from tracework.fsio import locked, write_atomic
from tracework.hashing import sha256_hex
from tracework.readers import DataError, load_yaml
from tracework.register import layout, store
from tracework.register.models import (
    Assertion,
    CaptureSource,
    CheckEntry,
    DocumentSource,
    FileEntry,
    GitSource,
    Quote,
    Register,
)
from tracework.register.store import parse, validate, write_compiled

__all__ = ["CommentedMap", "CommentedSeq", "create", "edit", "section"]

_HEADER = (
    "# tracework source register: the reviewed baseline for one report.\n"
    "# It changes only through `tracework register …`, `tracework quote …` or a notebook\n"
    "# in author mode; every hash can be re-computed with plain git (see README).\n"
)


def _rt_yaml() -> YAML:
    yaml = YAML()
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


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
    buffer = io.StringIO()
    _rt_yaml().dump(doc, buffer)
    text = header + buffer.getvalue()
    register = validate(parse(text, path), path)
    write_atomic(path, text)
    digest = sha256_hex(text.encode("utf-8"))
    write_compiled(path, digest, register)
    from tracework.register.append import remember  # it builds entries with this module

    remember(path, digest, text, register)
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
    return block_texts([text])[0]


def block_texts(texts: list[str]) -> list[str]:
    """:func:`_block_text` of many texts, tried in one dump and one read (a cell's
    quotes are written together); each alone when the batch does not read back."""
    tried = {
        f"t{n}": LiteralScalarString(text)
        for n, text in enumerate(texts)
        if ("\n" in text.rstrip("\n") or text.endswith("\n"))
        and not any(ch in text for ch in "\r\x85\u2028\u2029\ufeff")
    }
    if not tried:
        return list(texts)
    buffer = io.StringIO()
    _rt_yaml().dump(tried, buffer)
    try:
        back = load_yaml(buffer.getvalue())
    except DataError:
        back = None
    if not isinstance(back, dict):
        if len(tried) == 1:
            return list(texts)
        return [block_texts([text])[0] for text in texts]
    return [tried[f"t{n}"] if back.get(f"t{n}") == text else text for n, text in enumerate(texts)]


def file_node(entry: FileEntry) -> CommentedMap:
    node = CommentedMap(
        (k, v)
        for k, v in entry.model_dump(exclude_none=True, exclude_defaults=False).items()
        if not (k == "binary" and v is False)
    )
    node.fa.set_flow_style()
    return node


def assertion_node(assertion: Assertion) -> CommentedMap:
    node = CommentedMap(assertion.model_dump(exclude_none=True, exclude_defaults=True))
    node["sha256"] = assertion.sha256  # kept whatever the defaults
    return node


def quote_node(quote: Quote, text: str | None = None) -> CommentedMap:
    """A quote's entry; ``text`` is its text as :func:`block_texts` gave it, if known."""
    node = CommentedMap()
    node["source"] = quote.source
    node["path"] = quote.path
    node["lines"] = _flow(list(quote.lines))
    if quote.anchor is not None:
        anchor = CommentedMap(quote.anchor.model_dump(exclude_none=True, exclude_defaults=True))
        anchor.fa.set_flow_style()
        node["anchor"] = anchor
    node["sha256"] = quote.sha256
    node["text"] = _block_text(quote.text) if text is None else text
    if quote.raw_b64:
        node["raw_b64"] = quote.raw_b64
    return node


def source_node(source: GitSource | DocumentSource | CaptureSource) -> CommentedMap:
    if isinstance(source, DocumentSource):
        return CommentedMap(kind="document", location=source.location, sha256=source.sha256)
    if isinstance(source, CaptureSource):
        return CommentedMap(
            kind="capture",
            capture=source.capture,
            subject=source.subject,
            commit=source.commit,
            files=CommentedMap(sorted(source.files.items())),
        )
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
