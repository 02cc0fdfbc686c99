"""YAML nodes for new register entries, in the register's house style (flow maps for
files, literal blocks for quote text), and the round-trip dumper that writes them.

Both the full edit (:mod:`tracework.register.edits`) and the in-place splice
(:mod:`tracework.register.append`) build entries here, so a spliced entry is byte for
byte what a full edit would have written.
"""

from __future__ import annotations

import io
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import LiteralScalarString

from tracework.readers import DataError, load_yaml
from tracework.register.models import (
    Assertion,
    CaptureSource,
    CheckEntry,
    DocumentSource,
    FileEntry,
    GitSource,
    Quote,
)

__all__ = [
    "CommentedMap",
    "CommentedSeq",
    "assertion_node",
    "block_texts",
    "check_node",
    "dump",
    "file_fields",
    "file_node",
    "quote_node",
    "source_node",
]


def round_trip_yaml() -> YAML:
    """The dumper every register write uses (wide lines, the house indentation)."""
    yaml = YAML()
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def dump(doc: Any) -> str:
    """``doc`` as the round-trip dumper writes it."""
    buffer = io.StringIO()
    round_trip_yaml().dump(doc, buffer)
    return buffer.getvalue()


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
    round_trip_yaml().dump(tried, buffer)
    try:
        back = load_yaml(buffer.getvalue())
    except DataError:
        back = None
    if not isinstance(back, dict):
        if len(tried) == 1:
            return list(texts)
        return [block_texts([text])[0] for text in texts]
    return [tried[f"t{n}"] if back.get(f"t{n}") == text else text for n, text in enumerate(texts)]


def file_fields(entry: FileEntry) -> dict[str, str | int | bool]:
    """A file entry's fields as its node holds them, in order (``binary`` only when
    true)."""
    return {
        k: v
        for k, v in entry.model_dump(exclude_none=True, exclude_defaults=False).items()
        if not (k == "binary" and v is False)
    }


def file_node(entry: FileEntry) -> CommentedMap:
    node = CommentedMap(file_fields(entry))
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
