"""The id a quote gets when none is given: never the lines of an anchored quote, which
the anchor outlives when the code moves, but what encloses it; the same from the
command line and from a notebook; ids the register holds are never renamed."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

import tracework
from tracework.hashing import Lines
from tracework.register.models import QUOTE_ID
from tracework.register.quotes import QuoteRequest, default_quote_id, make_quote

REGISTER = Path("registers/demo.yaml")

RETRIEVERS = '''"""Retrievers."""
import chromadb

DEFAULT_K = 4


class ChromaRetriever:
    name = "chroma"

    def __init__(self, path):
        client = chromadb.PersistentClient(path=path)
        self.collection = client.get_or_create_collection("docs")
        self.k = DEFAULT_K

    @staticmethod
    def describe():
        def inner():
            return "nested"

        return inner()


def build(path):
    return ChromaRetriever(
        path,
    )
'''

README = """# Project

Intro text here.

## Install

Run `pip install x`.

```bash
# not a heading
pip install x
```

Usage
-----

Call it.
"""


def quotes() -> dict[str, Any]:
    data = YAML(typ="safe").load(REGISTER.read_text(encoding="utf-8"))
    return data["quotes"]


def quoted(tw, path: str, *args: str) -> str:
    """The id `tracework quote` printed (the first word of its first line)."""
    result = tw("quote", "demo", "SRC-1", path, *args)
    assert result.exit_code == 0, result.output
    return result.stdout.split()[0]


def test_a_match_is_named_after_the_python_symbol_enclosing_it(pinned, tw):
    pinned({"pkg/retrievers.py": RETRIEVERS})
    got = [
        quoted(tw, "pkg/retrievers.py", "--match", "self.collection =", "--context", "1"),
        quoted(tw, "pkg/retrievers.py", "--match", "self.k ="),  # the same method again
        quoted(tw, "pkg/retrievers.py", "--match", "client = chromadb"),  # a local: no symbol
        quoted(tw, "pkg/retrievers.py", "--match", 'return "nested"'),
        quoted(tw, "pkg/retrievers.py", "--match", "@staticmethod"),  # a decorator is its def's
        quoted(tw, "pkg/retrievers.py", "--match", 'name = "chroma"'),  # a class attribute
        quoted(tw, "pkg/retrievers.py", "--match", "DEFAULT_K = 4"),
        quoted(tw, "pkg/retrievers.py", "--match", "import chromadb"),  # module level
        quoted(tw, "pkg/retrievers.py", "--match", '"""Retrievers."""'),
        quoted(tw, "pkg/retrievers.py", "--match", "        path,"),
        # the context reaches out of the method: the class holds the span
        quoted(tw, "pkg/retrievers.py", "--match", "def describe", "--context", "2"),
    ]
    assert got == [
        "Q-retrievers-ChromaRetriever.__init__",
        "Q-retrievers-ChromaRetriever.__init__-2",
        "Q-retrievers-ChromaRetriever.__init__-3",
        "Q-retrievers-ChromaRetriever.describe.inner",
        "Q-retrievers-ChromaRetriever.describe",
        "Q-retrievers-ChromaRetriever.name",
        "Q-retrievers-DEFAULT_K",
        "Q-retrievers",
        "Q-retrievers-2",
        "Q-retrievers-build",
        "Q-retrievers-ChromaRetriever",
    ]
    held = quotes()
    assert list(held) == got
    assert held["Q-retrievers-ChromaRetriever.__init__"]["lines"] == [11, 13]
    assert held["Q-retrievers-ChromaRetriever.__init__"]["anchor"] == {
        "match": "self.collection =",
        "context": 1,
    }


@pytest.mark.parametrize(
    ("path", "text", "request_"),
    [
        ("pkg/retrievers.py", RETRIEVERS, QuoteRequest(match="self.k =", context=1)),
        ("README.md", README, QuoteRequest(match="pip install x`")),
        ("deploy/compose.yaml", "db:\n  image: postgres\n", QuoteRequest(match="image")),
    ],
)
def test_a_match_id_stays_when_the_code_moves(path, text, request_):
    """The same span, moved down by lines put above it, gets the same id, and no line
    number is in it."""
    names = []
    for data in (Lines(text.encode()), Lines(("# moved\n\n\n" + text).encode())):
        span, anchor = request_.locate(data, path)
        quote = make_quote("SRC-1", path, data, span, anchor)
        names.append(default_quote_id(quote, data))
    assert names[0] == names[1]
    assert not any(ch.isdigit() for ch in names[0]), names[0]


def test_markdown_is_named_after_the_heading_of_its_section(pinned, tw):
    pinned({"README.md": README, "docs/NOTES.md": "just text\n\n# Later\n"})
    assert quoted(tw, "README.md", "--match", "Intro text") == "Q-README-project"
    assert quoted(tw, "README.md", "--match", "Run `pip") == "Q-README-install"
    # a `#` line in fenced code is no heading
    assert quoted(tw, "README.md", "--match", "# not a heading") == "Q-README-install-2"
    assert quoted(tw, "README.md", "--match", "Call it.") == "Q-README-usage"  # setext
    assert quoted(tw, "README.md", "--match", "# Project") == "Q-README-project-2"
    assert quoted(tw, "docs/NOTES.md", "--match", "just text") == "Q-NOTES"  # before any


def test_other_files_are_named_after_the_words_of_the_match(pinned, tw):
    pinned(
        {
            "deploy/compose.yaml": "services:\n  db:\n    image: postgres:16\n",
            "data.txt": "{}\n[]\n",
            "pkg/broken.py": "def f(:\n    pass\n",  # not Python: its words, as elsewhere
            "notes.txt": "one two three four five six seven eight nine ten\n",
        }
    )
    assert quoted(tw, "deploy/compose.yaml", "--match", "image: postgres:16") == (
        "Q-compose-image-postgres-16"
    )
    digest = hashlib.sha256(b"[]\n").hexdigest()
    assert quoted(tw, "data.txt", "--match", "[]") == f"Q-data-{digest[:8]}"
    assert quoted(tw, "pkg/broken.py", "--match", "pass") == "Q-broken-pass"
    # a long match: its first words, cut at a word's end
    assert (
        quoted(tw, "notes.txt", "--match", "one two three four five six seven eight nine")
        == "Q-notes-one-two-three-four-five-six-seven-eight"
    )


def test_default_ids_are_valid_ids_whatever_the_names(pinned, tw):
    """A symbol the id pattern cannot spell (not ASCII) or too long for it once gave an
    id the register refused."""
    long_name = "handle_" + "x" * 150
    pinned(
        {
            "pkg/m.py": f"def café():\n    return 1\n\n\ndef {long_name}():\n    a = 1\n"
            "    b = 2\n",
        }
    )
    ids = [
        quoted(tw, "pkg/m.py", "--symbol", "café"),
        quoted(tw, "pkg/m.py", "--match", "return 1"),
        quoted(tw, "pkg/m.py", "--match", "a = 1"),
        quoted(tw, "pkg/m.py", "--match", "b = 2"),
    ]
    assert ids[:2] == ["Q-m-caf", "Q-m-caf-2"]
    assert ids[2].startswith("Q-m-handle_xxx") and ids[3] == ids[2] + "-2"
    assert all(QUOTE_ID.fullmatch(qid) for qid in ids)
    assert list(quotes()) == ids


def test_ids_the_register_holds_are_never_renamed(pinned, tw):
    """A match quote made before (its id from its lines) keeps its id: quoting the same
    span again gives it, however the id would be made today."""
    pinned({"pkg/retrievers.py": RETRIEVERS})
    args = ("--match", "self.collection =", "--context", "1")
    assert quoted(tw, "pkg/retrievers.py", *args, "--id", "Q-retrievers-11-13") == (
        "Q-retrievers-11-13"
    )
    before = REGISTER.read_bytes()
    assert quoted(tw, "pkg/retrievers.py", *args) == "Q-retrievers-11-13"
    assert REGISTER.read_bytes() == before
    assert quoted(tw, "pkg/retrievers.py", "--match", "self.k =") == (
        "Q-retrievers-ChromaRetriever.__init__"
    )
    assert list(quotes()) == ["Q-retrievers-11-13", "Q-retrievers-ChromaRetriever.__init__"]


def test_a_notebook_names_a_match_as_the_command_line_does(pinned, tw):
    """``src.quote(..., match=...)`` in author mode shares the command line's rule, and
    the suffix counts what either made."""
    pinned({"pkg/retrievers.py": RETRIEVERS})
    assert quoted(tw, "pkg/retrievers.py", "--match", "self.k =") == (
        "Q-retrievers-ChromaRetriever.__init__"
    )
    src = tracework.open("demo").source("SRC-1")
    q = src.quote("pkg/retrievers.py", match="self.collection =", context=1)
    assert q.id == "Q-retrievers-ChromaRetriever.__init__-2"
    assert src.quote("pkg/retrievers.py", match="DEFAULT_K = 4").id == "Q-retrievers-DEFAULT_K"
    assert src.quote("pkg/retrievers.py", match="import chromadb").id == "Q-retrievers"
    assert src.quote("pkg/retrievers.py", match="self.k =").id == (
        "Q-retrievers-ChromaRetriever.__init__"
    )  # the span the command line quoted: its id
    assert list(quotes()) == [
        "Q-retrievers-ChromaRetriever.__init__",
        "Q-retrievers-ChromaRetriever.__init__-2",
        "Q-retrievers-DEFAULT_K",
        "Q-retrievers",
    ]
