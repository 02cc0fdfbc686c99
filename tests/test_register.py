"""The source register: exact quote text, comments kept, clear errors, atomic locked writes.

Everything goes through the CLI as an analyst would use it, then the YAML file is read
back independently (ruamel's safe loader and hashlib) to see what really landed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tracework import fsio
from tracework.errors import RegisterError
from tracework.git.subjects import open_mirror
from tracework.records.schemas import register_schema_text, schema_texts
from tracework.register import edits
from tracework.register import store as reg
from tracework.register.append import Change
from tracework.register.models import (
    Anchor,
    CheckEntry,
    DocumentSource,
    FileEntry,
    GitSource,
    Quote,
    Register,
)
from tracework.register.quotes import QuoteRequest, add_quote, locate_quote, write_quotes
from tracework.workspace import Workspace

REGISTER = Path("registers/demo.yaml")
PROJECT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = PROJECT / "schemas" / "register.schema.json"


def raw_doc() -> dict[str, Any]:
    """The register as plain data, read independently of tracework."""
    data = YAML(typ="safe").load(REGISTER.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def ok(result) -> None:
    assert result.exit_code == 0, result.output


def no_temp_files() -> list[str]:
    return sorted(p.name for p in REGISTER.parent.iterdir() if p.name.endswith(".tmp"))


# -- comments ---------------------------------------------------------------------------------

SUBJECT = {
    "core/ledger.py": "def post(entry):\n    return entry\n\n\ndef void(entry):\n    return None\n",
    "core/rates.py": "RATE = 0.2\n",
    "docs/notes.txt": "first note\n",
}


def annotate(text: str) -> str:
    """Add the comments an analyst might write by hand, in every kind of place."""
    edits = [
        ("version: 1\n", "# reviewed by the analyst on 2026-01-05\nversion: 1  # format\n"),
        ("sources:\n", "sources:  # one pin per subject\n"),
        ("  SRC-1:\n", "  # the toy subject at its first tagged release\n  SRC-1:\n"),
        ("    files:\n", "    files:  # hashed at the pin\n"),
        ("quotes:\n", "    # more files will follow\n# quotes back the report's claims\nquotes:\n"),
        ("  Q-post:\n", "  # Q-post backs claim RT-CLM-1\n  Q-post:\n"),
        ("    anchor: {symbol: post}\n", "    anchor: {symbol: post}  # stable name\n"),
        ("checks: []\n", "# no checks recorded yet\nchecks: []\n# end of the register\n"),
    ]
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


COMMENTS = [
    "# reviewed by the analyst on 2026-01-05",
    "version: 1  # format",
    "sources:  # one pin per subject",
    "  # the toy subject at its first tagged release",
    "    files:  # hashed at the pin",
    "    # more files will follow",
    "# quotes back the report's claims",
    "  # Q-post backs claim RT-CLM-1",
    "    anchor: {symbol: post}  # stable name",
    "# no checks recorded yet",
    "# end of the register",
]


def test_hand_written_comments_survive_quote_and_add_file(pinned, tw):
    pinned(SUBJECT)
    ok(tw("quote", "demo", "SRC-1", "core/ledger.py", "--symbol", "post", "--id", "Q-post"))
    REGISTER.write_text(annotate(REGISTER.read_text(encoding="utf-8")), encoding="utf-8")

    ok(tw("quote", "demo", "SRC-1", "core/ledger.py", "--symbol", "void", "--id", "Q-void"))
    ok(tw("register", "add-file", "demo", "SRC-1", "core/rates.py", "docs"))
    ok(tw("quote", "demo", "SRC-1", "core/rates.py", "--match", "RATE", "--id", "Q-rate"))

    text = REGISTER.read_text(encoding="utf-8")
    rows = text.split("\n")
    for comment in COMMENTS:
        assert rows.count(comment) == 1, comment
    # and in the same order as written
    positions = [rows.index(c) for c in COMMENTS]
    assert positions == sorted(positions)
    # each comment still sits above the key it introduces, after the new entries
    assert rows[rows.index("# no checks recorded yet") + 1] == "checks: []"
    assert rows[rows.index("# quotes back the report's claims") + 1] == "quotes:"
    assert rows[rows.index("  # Q-post backs claim RT-CLM-1") + 1] == "  Q-post:"
    assert rows[rows.index("  # the toy subject at its first tagged release") + 1] == "  SRC-1:"
    assert rows[-2:] == ["# end of the register", ""]
    for new_key in ("  Q-void:", "  Q-rate:", "      core/rates.py: {", "      docs/notes.txt: {"):
        assert any(r.startswith(new_key) for r in rows), new_key
    files_end = max(i for i, r in enumerate(rows) if r.startswith("      docs/notes.txt: {"))
    assert files_end < rows.index("    # more files will follow")
    assert rows.index("  Q-rate:") < rows.index("# no checks recorded yet")
    # the result is still a valid register that checks clean
    doc = raw_doc()
    assert set(doc["quotes"]) == {"Q-post", "Q-void", "Q-rate"}
    ok(tw("check", "demo"))


def test_an_edit_that_adds_nothing_leaves_the_text_byte_identical(pinned, tw):
    pinned(SUBJECT)
    ok(tw("quote", "demo", "SRC-1", "core/ledger.py", "--symbol", "post", "--id", "Q-post"))
    REGISTER.write_text(annotate(REGISTER.read_text(encoding="utf-8")), encoding="utf-8")
    before = REGISTER.read_bytes()
    # the same quote again, and a file already registered: nothing to change
    ok(tw("quote", "demo", "SRC-1", "core/ledger.py", "--symbol", "post", "--id", "Q-post"))
    ok(tw("register", "add-file", "demo", "SRC-1", "core/ledger.py"))
    assert REGISTER.read_bytes() == before


LAYOUTS = {
    # comment lines after a literal block, indented as for the next quote
    "after_block": (
        ("checks: []\n", "  # more quotes to come\nchecks: []\n"),
        "  # more quotes to come",
        "checks: []",
        "  Q-b:",
    ),
    # an end-of-line comment followed by full-line comments and a blank line
    "eol_then_lines": (
        ("size: 22}\n", "size: 22}  # pinned by hand\n# quotes\n\n# start here\n"),
        "# start here",
        "quotes:",
        "      b.txt: {",
    ),
    # a check history written as a block sequence, with a note after it
    "block_history": (
        (
            "checks: []\n",
            "checks:\n  - date: '2026-01-02'\n    source: SRC-1\n"
            "    commit: COMMIT\n    counts:\n      verified: 2\n# end of history\n",
        ),
        "# end of history",
        None,
        "  Q-b:",
    ),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_comment_layouts_round_trip_and_stay_above_their_key(pinned, tw, layout):
    (old, new), comment, key_after, added = LAYOUTS[layout]
    text = _good(pinned, tw)
    commit = raw_doc()["sources"]["SRC-1"]["commit"]
    assert text.count(old) == 1
    REGISTER.write_text(text.replace(old, new.replace("COMMIT", commit)), encoding="utf-8")
    before = REGISTER.read_bytes()
    with edits.edit(REGISTER.resolve()):
        pass  # load, re-attach comments, dump: the same bytes
    assert REGISTER.read_bytes() == before
    ok(tw("quote", "demo", "SRC-1", "b.txt", "--lines", "1-1", "--id", "Q-b"))
    ok(tw("register", "add-file", "demo", "SRC-1", "a.py", "b.txt"))
    rows = REGISTER.read_text(encoding="utf-8").split("\n")
    at = rows.index(comment)
    if key_after is not None:
        assert rows[at + 1] == key_after
    assert next(i for i, r in enumerate(rows) if r.startswith(added)) < at
    for row in before.decode().split("\n"):
        if row.lstrip().startswith("#"):
            assert row in rows, row


# -- exact quote text ----------------------------------------------------------------------

AWKWARD_TEXT: dict[str, str] = {
    "trailing_spaces.py": "value = 1   \nother = 2\t \n",
    "tabs.mk": "build:\n\tcc -o out main.c\n\t@echo done\n",
    "crlf.py": "a = 1\r\nb = 2\r\n",
    "no_final_newline.py": "x = 1\ny = 2",
    "leading_blank.py": "\n\n\ndef late():\n    return 0\n",
    "indented.py": "    if ready:\n        go()\n",
    "unicode.py": "greeting = 'Grüße, 世界 🌍'\nmath = '∀x ∈ ℝ'\n",
    "separators.py": "s = 'one\u2028two'\nt = '\u2029'\nu = 'nel\x85'\n",
    "bom.py": "\ufeffimport sys\nprint(sys.argv)\n",
    "controls.py": "bell = '\x07'\nesc = '\x1b[2J\x1b]0;owned\x07'\ndel_ = '\x7f'\n"
    "vt = '\x0b\x0c'\n",
    "page.html": "<pre>\n</pre><script>alert('x')</script>\n",
    "only_newline.txt": "\n",
    "blank_tail.py": "z = 0\n\n\n",
    "lone_cr.txt": "before\rafter\n",
    "yamlish.txt": "key: value\n- item\n--- \n...\n# not a comment\n&anchor *alias !tag |\n",
    "long_line.txt": ("lorem ipsum " * 600).rstrip() + "\n",
    "spaces_only.txt": "   \n\t\n",
}


@pytest.mark.slow
def test_quote_text_is_stored_exactly(pinned, tw):
    pinned(AWKWARD_TEXT)
    for name, text in AWKWARD_TEXT.items():
        count = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
        ok(tw("quote", "demo", "SRC-1", name, "--lines", f"1-{count}", "--id", f"Q-{name}"))

    def verify() -> None:
        doc = raw_doc()
        for name, text in AWKWARD_TEXT.items():
            stored = doc["quotes"][f"Q-{name}"]
            assert stored["text"] == text, name
            assert "raw_b64" not in stored, name
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            assert stored["sha256"] == digest, name
            assert doc["sources"]["SRC-1"]["files"][name]["sha256"] == digest, name
        register = reg.load(REGISTER)
        assert all(q.text_intact() for q in register.quotes.values())

    verify()
    # another edit re-reads and re-writes every existing entry: still exact
    ok(tw("register", "add-file", "demo", "SRC-1", "*.py"))
    verify()
    result = tw("check", "demo", "--json")
    assert result.exit_code == 0, result.output
    states = {i["id"]: i["state"] for i in json.loads(result.stdout)["items"]}
    assert set(states.values()) == {"verified"}
    assert len(states) == 2 * len(AWKWARD_TEXT)


def test_a_span_that_is_not_utf8_keeps_its_bytes_in_base64(pinned, tw):
    latin1 = b"# r\xe9sum\xe9 of the na\xefve parser\nNAME = 'caf\xe9'\nok = 1\n"
    pinned({"legacy.py": latin1, "modern.py": "name = 'café'\n"})
    ok(tw("quote", "demo", "SRC-1", "legacy.py", "--lines", "1-2", "--id", "Q-legacy"))
    ok(tw("quote", "demo", "SRC-1", "legacy.py", "--lines", "3-3", "--id", "Q-ascii"))
    ok(tw("quote", "demo", "SRC-1", "modern.py", "--lines", "1-1", "--id", "Q-modern"))
    doc = raw_doc()
    span = b"# r\xe9sum\xe9 of the na\xefve parser\nNAME = 'caf\xe9'\n"
    legacy = doc["quotes"]["Q-legacy"]
    assert base64.b64decode(legacy["raw_b64"]) == span
    assert legacy["sha256"] == hashlib.sha256(span).hexdigest()
    assert legacy["text"] == "# r\ufffdsum\ufffd of the na\ufffdve parser\nNAME = 'caf\ufffd'\n"
    # valid UTF-8 spans, even of a latin-1 file, need no base64
    assert "raw_b64" not in doc["quotes"]["Q-ascii"]
    assert "raw_b64" not in doc["quotes"]["Q-modern"]
    quote = Quote.model_validate(legacy)
    assert quote.span_bytes() == span and quote.text_intact()
    ok(tw("check", "demo"))


# -- malformed registers ----------------------------------------------------------------------


def _good(pinned, tw) -> str:
    pinned({"a.py": "def f():\n    return 1\n", "b.txt": "plain\n"})
    ok(tw("quote", "demo", "SRC-1", "a.py", "--symbol", "f", "--id", "Q-f"))
    return REGISTER.read_text(encoding="utf-8")


def _swap(old: str, new: str, count: int = 1):
    def change(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, count)

    return change


MALFORMED = {
    "bad_yaml": (lambda t: "sources: [unclosed\n", "not valid YAML"),
    "tab_indent": (lambda t: "name: demo\nsources:\n\tSRC-1: {}\n", "not valid YAML"),
    "top_level_list": (lambda t: "- one\n- two\n", "not a register"),
    "empty_file": (lambda t: "", "not a register"),
    "lines_not_a_pair": (_swap("lines: [1, 2]", "lines: three"), "quotes.Q-f.lines"),
    "lines_reversed": (_swap("lines: [1, 2]", "lines: [2, 1]"), "not a 1-based range"),
    "name_not_text": (_swap("name: demo", "name: [demo]"), "at name"),
    "sources_a_list": (
        lambda t: re.sub(r"sources:\n(  .*\n)+", "sources: [SRC-1]\n", t),
        "at sources",
    ),
    "unknown_key": (_swap("version: 1\n", "version: 1\ncolour: blue\n"), "colour"),
    "short_sha": (
        lambda t: re.sub(r"(\n    sha256: )[0-9a-f]{64}", r"\1ABC123", t),
        "quotes.Q-f.sha256",
    ),
    "unregistered_file": (_swap("path: a.py", "path: b.txt"), "not registered under SRC-1"),
    "unknown_source": (_swap("source: SRC-1", "source: SRC-9"), "SRC-9"),
    "hand_edited_text": (_swap("return 1", "return 2"), "does not hash to its sha256"),
    "duplicate_quote_key": (_swap("quotes:\n", "quotes:\n  Q-f: {source: SRC-1}\n"), "duplicate"),
    "duplicate_top_key": (lambda t: t + "name: other\n", 'duplicate key "name"'),
    "bad_source_id": (_swap("  SRC-1:\n", "  source-one:\n"), "source-one"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_register_is_one_clear_error_and_stays_untouched(pinned, tw, case):
    change, expected = MALFORMED[case]
    REGISTER.write_text(change(_good(pinned, tw)), encoding="utf-8")
    before = REGISTER.read_bytes()
    for args in (
        ("check", "demo"),
        ("quote", "demo", "SRC-1", "b.txt", "--lines", "1-1"),
        ("register", "add-file", "demo", "SRC-1", "b.txt"),
        ("check", "demo", "--record", "--date", "2026-02-01"),
    ):
        result = tw(*args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stdout == "", args
        assert result.stderr.count("tracework: error:") == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert "demo.yaml" in result.stderr
        assert expected in result.stderr, (expected, result.stderr)
        assert REGISTER.read_bytes() == before, args
    assert no_temp_files() == []


def test_a_register_that_is_not_utf8_is_refused(pinned, tw):
    _good(pinned, tw)
    REGISTER.write_bytes(b"name: caf\xe9\n")
    result = tw("quote", "demo", "SRC-1", "b.txt", "--lines", "1-1")
    assert result.exit_code == 2
    assert "demo.yaml: not UTF-8 text" in result.stderr
    assert REGISTER.read_bytes() == b"name: caf\xe9\n"


def test_duplicate_key_message_names_the_line(pinned, tw):
    text = _good(pinned, tw)
    REGISTER.write_text(text.replace("quotes:\n", "quotes:\n  Q-f: {source: SRC-1}\n"))
    line = REGISTER.read_text().split("\n").index("  Q-f:") + 1
    result = tw("check", "demo")
    assert 'duplicate key "Q-f"' in result.stderr and f"line {line}," in result.stderr
    assert "suppress" not in result.stderr  # ruamel's note for programmers is left out


def test_a_missing_register_says_how_to_create_one(workspace, tw):
    result = tw("check", "nothing")
    assert result.exit_code == 2
    assert "no register at" in result.stderr and "tracework register new" in result.stderr


def test_register_new_refuses_to_replace_an_existing_register(pinned, tw):
    text = _good(pinned, tw)
    result = tw("register", "new", "demo")
    assert result.exit_code == 2
    assert "already exists" in result.stderr
    assert REGISTER.read_text() == text


@pytest.mark.parametrize(
    "given",
    [
        "../escape",
        "../escape.yaml",
        "registers/../escape.yaml",
        "notebooks/x.yaml",
        "registers/sub/x.yaml",
        "registers/x.yml",
        "/tmp/elsewhere.yaml",
        "registers/-x.yaml",
    ],
)
def test_a_register_path_outside_registers_is_refused(workspace, tw, given):
    before = sorted(p.relative_to(workspace.root.parent) for p in workspace.root.parent.rglob("*"))
    for args in (("register", "new", given), ("check", given)):
        result = tw(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "is not a register of this workspace" in result.stderr
        assert "registers/NAME.yaml" in result.stderr
    after = sorted(p.relative_to(workspace.root.parent) for p in workspace.root.parent.rglob("*"))
    assert after == before


@pytest.mark.parametrize(
    "given", ["demo", "demo.yaml", "registers/demo.yaml", "./registers/demo.yaml"]
)
def test_a_register_by_name_or_by_its_path(workspace, tw, given):
    assert tw("register", "new", given).exit_code == 0
    assert REGISTER.is_file()
    assert tw("register", "new", "demo").exit_code == 2  # the same register, however named


def test_an_error_names_its_register_and_source_once(pinned, tw):
    pinned({"a.txt": "alpha\n"})
    result = tw("register", "add-file", "demo", "SRC-9", "a.txt")
    assert result.exit_code == 2
    assert "register demo has no git source SRC-9" in result.stderr
    assert "registers/demo.yaml" not in result.stderr  # already named: no second name
    result = tw("register", "add-file", "demo", "SRC-1", "nothing.txt")
    assert result.exit_code == 2
    assert "registers/demo.yaml SRC-1: nothing.txt matches nothing" in result.stderr


@pytest.mark.slow
def test_a_reader_closing_the_pipe_early_is_not_an_error(pinned, tw, workspace):
    """``tracework check --json | head -c 1`` and the like: no message, click's exit 1."""
    pinned({"a.txt": "alpha\n"})
    assert tw("register", "add-file", "demo", "SRC-1", "a.txt").exit_code == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracework", "check", "demo", "--json"],
        cwd=workspace.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # long before the command writes anything
    error = proc.stderr.read().decode()
    assert proc.wait() == 1
    assert "error" not in error and "Traceback" not in error, error


def test_a_file_where_a_folder_goes_is_one_message_not_a_traceback(workspace, tw, tmp_path):
    plain = tmp_path / "plain-file"
    plain.write_text("not a folder\n")
    result = tw("init", str(plain / "ws"))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "Not a directory" in result.stderr and "plain-file" in result.stderr
    (workspace.root / "registers").rmdir()
    (workspace.root / "registers").write_text("a file, not the registers folder\n")
    result = tw("register", "new", "demo")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "registers" in result.stderr and "hint:" in result.stderr


# -- the edit transaction ------------------------------------------------------------------


def test_an_edit_that_fails_inside_changes_nothing(pinned, tw):
    text = _good(pinned, tw)
    with pytest.raises(RegisterError), edits.edit(REGISTER.resolve()) as doc:
        doc["quotes"]["Q-extra"] = doc["quotes"]["Q-f"]
        raise RegisterError("changed my mind")
    assert REGISTER.read_text() == text


def test_an_edit_that_would_make_the_register_invalid_changes_nothing(pinned, tw):
    text = _good(pinned, tw)
    with pytest.raises(RegisterError, match="does not hash"), edits.edit(REGISTER.resolve()) as doc:
        doc["quotes"]["Q-f"]["text"] = "def f():\n    return 2\n"
    assert REGISTER.read_text() == text
    with (
        pytest.raises(RegisterError, match="not registered"),
        edits.edit(REGISTER.resolve()) as doc,
    ):
        del doc["sources"]["SRC-1"]["files"]["a.py"]
    assert REGISTER.read_text() == text


class _HalfWriter:
    """A file handle that writes half of what it is given, then fails like a full disk."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def __enter__(self) -> _HalfWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()

    def write(self, data: bytes) -> int:
        self.handle.write(data[: len(data) // 2])
        self.handle.flush()
        raise OSError(28, "No space left on device")


def test_a_write_that_dies_half_way_leaves_the_old_register(pinned, tw, monkeypatch):
    text = _good(pinned, tw)
    real_fdopen = os.fdopen
    with monkeypatch.context() as patch:
        patch.setattr(fsio.os, "fdopen", lambda fd, mode: _HalfWriter(real_fdopen(fd, mode)))
        result = tw("quote", "demo", "SRC-1", "b.txt", "--lines", "1-1", "--id", "Q-b")
    assert result.exit_code == 2 and "No space left on device" in result.stderr
    assert REGISTER.read_text() == text
    assert no_temp_files() == []
    # the lock was released and the next write goes through
    ok(tw("quote", "demo", "SRC-1", "b.txt", "--lines", "1-1", "--id", "Q-b"))
    assert set(raw_doc()["quotes"]) == {"Q-f", "Q-b"}


@pytest.mark.parametrize("fails", ["fsync", "replace"])
def test_a_crash_before_the_rename_leaves_the_old_register(pinned, tw, monkeypatch, fails):
    text = _good(pinned, tw)
    written: list[bytes] = []

    def crash(*args: Any) -> None:
        if fails == "replace":
            written.append(Path(args[0]).read_bytes())  # the new text was complete
        raise OSError(5, f"simulated crash in {fails}")

    with monkeypatch.context() as patch:
        patch.setattr(fsio.os, fails, crash)
        result = tw("register", "add-file", "demo", "SRC-1", "b.txt")
    assert result.exit_code == 2 and f"simulated crash in {fails}" in result.stderr
    assert "Traceback" not in result.output
    assert REGISTER.read_text() == text
    assert no_temp_files() == []
    if fails == "replace":
        assert b"b.txt" in written[0]


def test_an_edit_keeps_the_registers_permission_bits(pinned, tw):
    _good(pinned, tw)
    REGISTER.chmod(0o644)
    ok(tw("register", "add-file", "demo", "SRC-1", "b.txt"))
    assert stat.S_IMODE(REGISTER.stat().st_mode) == 0o644


# -- concurrent writers --------------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tracework.register.quotes import QuoteRequest, add_quote
    from tracework.workspace import Workspace

    name, count, go = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    offset = int(sys.argv[4])  # each worker its own spans: one span is one quote
    ws = Workspace.find()
    while not go.exists():
        time.sleep(0.005)
    for n in range(1, count + 1):
        add_quote(ws, ws.register_file("demo"), "SRC-1", "lines.txt",
                  QuoteRequest(lines=(offset + n, offset + n)), f"{name}-{n}")
    """
)


BATCH_WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tracework.git.subjects import open_mirror
    from tracework.register.append import Change
    from tracework.register.quotes import QuoteRequest, locate_quote, write_quotes
    from tracework.register.store import load
    from tracework.workspace import Workspace

    name, count, go = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    offset = int(sys.argv[4])
    ws = Workspace.find()
    path = ws.register_file("demo")
    pin = load(path).git_source("SRC-1").commit
    mirror = open_mirror(ws, "toy")
    spliced = 0
    while not go.exists():
        time.sleep(0.005)
    for first in range(1, count + 1, 5):  # cells of five quotes, each written at once
        cell = []
        for n in range(first, min(first + 5, count + 1)):
            request = QuoteRequest(lines=(offset + n, offset + n))
            quote, _ = locate_quote(mirror, pin, "SRC-1", "lines.txt", request)
            cell.append(Change(f"{name}-{n}", quote))
        spliced += write_quotes(path, cell) is not None
    print(spliced)
    """
)


def _lines_subject(pinned, count: int) -> None:
    pinned({"lines.txt": "".join(f"row {n}\n" for n in range(1, count + 1))})


def _assert_all_quotes(
    workers: list[str], count: int, seeded: frozenset[str] = frozenset()
) -> None:
    doc = raw_doc()
    expected = {f"{w}-{n}" for w in workers for n in range(1, count + 1)}
    assert set(doc["quotes"]) == expected | seeded
    for qid, quote in doc["quotes"].items():
        if qid in seeded:
            continue
        worker, n = qid.rsplit("-", 1)
        line = workers.index(worker) * count + int(n)
        assert quote["lines"] == [line, line]
        assert quote["text"] == f"row {line}\n"
    reg.load(REGISTER)  # valid as a whole
    assert no_temp_files() == []


def _race(script: str, workers: list[str], count: int, go: Path) -> list[bytes]:
    """Run ``script`` once per worker, each on its own lines, all let go at once; returns
    what each printed, after checking each succeeded."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, w, str(count), str(go), str(i * count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i, w in enumerate(workers)
    ]
    time.sleep(0.3)  # let every worker import and wait at the start line
    go.touch()
    printed = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        printed.append(out)
    return printed


@pytest.mark.slow
def test_concurrent_writer_processes_lose_nothing(pinned, tw, tmp_path):
    count, workers = 10, ["A", "B", "C"]
    _lines_subject(pinned, count * len(workers))
    _race(WORKER, workers, count, tmp_path / "go")
    _assert_all_quotes(workers, count)
    ok(tw("check", "demo"))


@pytest.mark.slow
def test_concurrent_cells_writing_their_quotes_at_once_lose_nothing(pinned, tw, tmp_path):
    """Notebooks writing a cell's quotes together (spliced), at the same time."""
    count, workers = 15, ["K", "L", "M"]
    _lines_subject(pinned, count * len(workers) + 2)
    last = QuoteRequest(lines=(46, 46))  # a first quote, by the full edit: the rest splice
    add_quote(Workspace.find(), REGISTER, "SRC-1", "lines.txt", last, "seed")
    spliced = sum(int(out) for out in _race(BATCH_WORKER, workers, count, tmp_path / "go"))
    _assert_all_quotes(workers, count, frozenset({"seed"}))
    assert spliced == 9  # every cell's write spliced, none fell back to the full edit
    ok(tw("check", "demo"))


@pytest.mark.slow
def test_concurrent_cells_in_a_register_of_another_layout_lose_nothing(pinned, tw, tmp_path):
    """Cells writing at once to a register whose quotes come last, under the checks: the
    first write to take the lock puts the keys in the usual order (a full edit), a later
    one is spliced, and nothing is lost.  A writer that found the layout unusual before
    the first full edit landed takes a full edit too (the check and the edit are two
    holds of the lock): at most one such write per other writer, and every write after
    them is spliced."""
    count, workers = 15, ["K", "L", "M"]
    _lines_subject(pinned, count * len(workers) + 2)
    last = QuoteRequest(lines=(46, 46))
    add_quote(Workspace.find(), REGISTER, "SRC-1", "lines.txt", last, "seed")
    REGISTER.write_text(_quotes_last(REGISTER.read_text()))
    spliced = sum(int(out) for out in _race(BATCH_WORKER, workers, count, tmp_path / "go"))
    _assert_all_quotes(workers, count, frozenset({"seed"}))
    writes = len(workers) * -(-count // 5)
    assert writes - len(workers) <= spliced <= writes - 1  # one normalised the layout
    text = REGISTER.read_text()
    assert text.index("\nquotes:\n") < text.index("\n# the history\nchecks: []\n")
    ok(tw("check", "demo"))
    # once the layout is the usual one, every write is spliced
    ws = Workspace.find()
    pin = reg.load(REGISTER).git_source("SRC-1").commit
    one = QuoteRequest(lines=(47, 47))
    quote, _ = locate_quote(open_mirror(ws, "toy"), pin, "SRC-1", "lines.txt", one)
    assert write_quotes(REGISTER, [Change("after", quote)]) is not None


def _quotes_last(text: str) -> str:
    """The register with its checks (under a comment) above its quotes."""
    body, checks = text.split("checks: []\n")
    at = body.index("quotes:\n")
    return body[:at] + "# the history\nchecks: []\n" + body[at:] + checks


@pytest.mark.slow
def test_concurrent_tracework_quote_commands_lose_nothing(pinned, tw, tmp_path):
    """Two shells each run `tracework quote` repeatedly, at the same time."""
    count, workers = 4, ["P", "Q"]
    _lines_subject(pinned, count * len(workers))
    exe = Path(sys.executable).with_name("tracework")
    assert exe.exists()
    go = tmp_path / "go"
    script = (
        'while [ ! -e "$3" ]; do sleep 0.01; done; '
        'for n in $(seq 1 "$2"); do line=$(($5 + n)); '
        '"$4" quote demo SRC-1 lines.txt --lines "$line-$line" --id "$1-$n" >/dev/null || exit 1; '
        "done"
    )
    procs = [
        subprocess.Popen(
            ["bash", "-c", script, "worker", w, str(count), str(go), str(exe), str(i * count)],
            stderr=subprocess.PIPE,
        )
        for i, w in enumerate(workers)
    ]
    go.touch()
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    _assert_all_quotes(workers, count)


# -- the JSON Schema -------------------------------------------------------------------------


def test_the_committed_schema_is_current(tw):
    assert SCHEMA_FILE.is_file(), "run `make schema` and commit schemas/register.schema.json"
    committed = SCHEMA_FILE.read_text(encoding="utf-8")
    result = tw("schema")
    assert result.exit_code == 0
    assert committed == result.stdout == register_schema_text()
    # and those of what a render writes, beside it
    texts = schema_texts()
    assert set(texts) == {
        "register",
        "records",
        "history-entry",
        "manifest",
        "batch-outcome",
        "check-summary",
        "capture-manifest",
        "check",
    }
    for name, text in texts.items():
        path = SCHEMA_FILE.parent / f"{name}.schema.json"
        assert path.is_file(), f"run `make schema` and commit schemas/{name}.schema.json"
        assert path.read_text(encoding="utf-8") == text, f"run `make schema`: {name} changed"
        if name == "register":
            continue
        described = json.loads(text)  # every field of a render's files says what it is
        for model in [*described.get("$defs", {}).values(), described]:
            for field_name, field in model.get("properties", {}).items():
                assert field.get("description"), f"{name}: {model['title']}.{field_name}"
    # structurally: every model and every field of the register format is described
    schema = json.loads(committed)
    assert set(schema["properties"]) == set(Register.model_fields)
    for model in (Quote, FileEntry, GitSource, DocumentSource, Anchor, CheckEntry):
        assert set(schema["$defs"][model.__name__]["properties"]) == set(model.model_fields)
        assert schema["$defs"][model.__name__]["additionalProperties"] is False


def _validate(
    instance: Any, schema: dict[str, Any], root: dict[str, Any], where: str = "$"
) -> list[str]:
    """A small JSON Schema (2020-12) checker for the keywords the register schema uses.

    jsonschema is not a dependency, so this covers exactly what pydantic emits here:
    $ref, type, properties, required, additionalProperties, pattern, const, enum,
    anyOf, oneOf, prefixItems, items, minItems, maxItems, minimum, maximum.
    """
    errors: list[str] = []
    known = {
        "$ref", "type", "properties", "required", "additionalProperties", "pattern", "const",
        "enum", "anyOf", "oneOf", "prefixItems", "items", "minItems", "maxItems", "minimum",
        "maximum", "title", "description", "default", "discriminator", "$defs", "$schema",
    }  # fmt: skip
    unknown = set(schema) - known
    assert not unknown, f"the test's checker does not know {unknown}; extend it"
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        return _validate(instance, root["$defs"][name], root, where)
    types = {
        "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
    }  # fmt: skip
    kind = schema.get("type")
    if kind == "integer":
        if not isinstance(instance, int) or isinstance(instance, bool):
            return [f"{where}: not an integer"]
    elif kind is not None and not isinstance(instance, types[kind]):
        return [f"{where}: not {kind}"]
    if "const" in schema and instance != schema["const"]:
        errors.append(f"{where}: not {schema['const']!r}")
    if "enum" in schema and instance not in schema["enum"]:
        errors.append(f"{where}: not one of {schema['enum']}")
    if "pattern" in schema and not re.search(schema["pattern"], instance):
        errors.append(f"{where}: does not match {schema['pattern']}")
    if "minimum" in schema and instance < schema["minimum"]:
        errors.append(f"{where}: below {schema['minimum']}")
    if "maximum" in schema and instance > schema["maximum"]:
        errors.append(f"{where}: above {schema['maximum']}")
    if "anyOf" in schema and all(_validate(instance, s, root, where) for s in schema["anyOf"]):
        errors.append(f"{where}: matches none of anyOf")
    if "oneOf" in schema:
        matching = [s for s in schema["oneOf"] if not _validate(instance, s, root, where)]
        if len(matching) != 1:
            errors.append(f"{where}: matches {len(matching)} of oneOf")
    if isinstance(instance, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in instance:
                errors.append(f"{where}: missing {key}")
        for key, value in instance.items():
            if key in props:
                errors += _validate(value, props[key], root, f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: unexpected {key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                errors += _validate(value, schema["additionalProperties"], root, f"{where}.{key}")
    if isinstance(instance, list):
        if len(instance) < schema.get("minItems", 0):
            errors.append(f"{where}: too few items")
        if len(instance) > schema.get("maxItems", len(instance)):
            errors.append(f"{where}: too many items")
        prefix = schema.get("prefixItems", [])
        for i, value in enumerate(instance):
            sub = prefix[i] if i < len(prefix) else schema.get("items")
            if sub is not None:
                errors += _validate(value, sub, root, f"{where}[{i}]")
    return errors


@pytest.mark.slow
def test_the_schema_validates_a_real_register(make_repo, pinned, tw):
    repo = make_repo("toy")
    repo.write("pkg/mod.py", "class Box:\n    def open(self):\n        return 1\n")
    repo.write("bin/blob.dat", b"\x00\x01\x02").write("legacy.txt", b"caf\xe9\n")
    repo.symlink("link", "pkg/mod.py")
    repo.commit("first")
    pinned(repo=repo)
    ok(tw("register", "add-file", "demo", "SRC-1", "**"))
    ok(tw("register", "add-file", "demo", "SRC-1", "pkg/mod.py", "--expect-sha256", "ab" * 32))
    ok(tw("quote", "demo", "SRC-1", "pkg/mod.py", "--symbol", "Box.open"))
    ok(tw("quote", "demo", "SRC-1", "pkg/mod.py", "--match", "return", "--context", "1"))
    ok(tw("quote", "demo", "SRC-1", "legacy.txt", "--lines", "1-1"))
    # a dossier asserts a (made-up) hash of pkg/mod.py, required: the check fails, recorded
    Path("dossier.md").write_text("pkg/mod.py: cdcd…\n")
    ok(tw("register", "add-document", "demo", "SRC-2", "dossier.md"))
    args = ("register", "assert", "demo", "SRC-1", "pkg/mod.py", "cd" * 32, "--by", "SRC-2")
    ok(tw(*args, "--required"))
    assert tw("check", "demo", "--record", "--date", "2026-02-01").exit_code == 1
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    instance = json.loads(json.dumps(raw_doc()))
    assert {"sources", "quotes", "checks", "assertions"} <= set(instance)
    assert instance["checks"], "the check history is part of what the schema covers"
    assert any("raw_b64" in q for q in instance["quotes"].values())
    kinds = {f["kind"] for f in instance["sources"]["SRC-1"]["files"].values()}
    assert kinds == {"file", "symlink"}
    assert _validate(instance, schema, schema) == []

    # the schema and the model agree that a source names its kind
    untagged = json.loads(json.dumps(instance))
    del untagged["sources"]["SRC-1"]["kind"]
    assert _validate(untagged, schema, schema) == ["$.sources.SRC-1: matches 0 of oneOf"]
    with pytest.raises(ValueError, match="discriminator 'kind'"):
        Register.model_validate(untagged)

    # the checker is not vacuous: each of these breaks the schema
    broken = json.loads(json.dumps(instance))
    quote = next(iter(broken["quotes"].values()))
    quote["lines"] = [1]
    quote["sha256"] = "ABC"
    broken["sources"]["SRC-1"]["files"]["pkg/mod.py"]["kind"] = "directory"
    broken["surprise"] = True
    del broken["name"]
    problems = "\n".join(_validate(broken, schema, schema))
    for fragment in ("too few items", "does not match", "0 of oneOf", "unexpected surprise",
                     "missing name"):  # fmt: skip
        assert fragment in problems, fragment


@pytest.mark.slow
def test_check_json_is_what_its_schema_says(make_repo, pinned, tw):
    """``check --json`` at the pin and at a commit where evidence moved, changed and went
    missing, held to ``schemas/check.schema.json``: every source kind, item field and
    assertion state the schema names appears, and the schema refuses an item it lacks."""
    repo = make_repo("toy")
    repo.write("pkg/mod.py", "def keep():\n    return 1\n\n\ndef drop():\n    return 2\n")
    repo.write("pkg/other.py", "X = 1\n")
    repo.commit("first")
    pinned(repo=repo)
    ok(tw("register", "add-file", "demo", "SRC-1", "pkg/other.py"))
    ok(tw("quote", "demo", "SRC-1", "pkg/mod.py", "--symbol", "keep", "--id", "Q-keep"))
    ok(tw("quote", "demo", "SRC-1", "pkg/mod.py", "--symbol", "drop", "--id", "Q-drop"))
    Path("dossier.md").write_text("pkg/other.py: abab…\n")
    ok(tw("register", "add-document", "demo", "SRC-2", "dossier.md"))
    ok(tw("register", "assert", "demo", "SRC-1", "pkg/other.py", "ab" * 32, "--by", "SRC-2"))
    repo.write("pkg/mod.py", "\n\ndef keep():\n    return 1\n").remove("pkg/other.py")
    later = repo.commit("second")
    ok(tw("fetch", "toy"))
    schema = json.loads((SCHEMA_FILE.parent / "check.schema.json").read_text(encoding="utf-8"))
    seen = []
    for args, code in (((), 0), (("--at", later), 1)):  # a differing assertion: a finding
        result = tw("check", "demo", "--json", *args)
        assert result.exit_code == code, result.output
        output = json.loads(result.stdout)
        assert _validate(output, schema, schema) == []
        seen.append(output)
    at_pin, moved = seen
    assert {s["kind"] for s in at_pin["sources"]} == {"git", "document"}
    assert {i["state"] for i in moved["items"]} >= {"moved", "missing"}
    assert {a["state"] for a in moved["assertions"]} == {"missing"}
    # the checker is not vacuous against this schema either
    item = dict(moved["items"][0])
    del item["hint"]
    item["format_only"] = "no"
    broken = {**moved, "items": [item]}
    problems = "\n".join(_validate(broken, schema, schema))
    assert "missing hint" in problems and "format_only: not boolean" in problems


# -- the compiled copy -----------------------------------------------------------------------


def test_loads_use_a_compiled_copy_that_any_yaml_change_makes_stale(pinned, tw):
    _good(pinned, tw)
    compiled = REGISTER.with_name(f".{REGISTER.name}.compiled.json")
    first = reg.load(REGISTER.resolve())
    assert compiled.is_file()
    assert reg.load(REGISTER.resolve()) == first
    # a hand edit (here: a comment) changes the YAML bytes, so the copy is rebuilt
    REGISTER.write_text(REGISTER.read_text() + "# reviewed again\n")
    stale = compiled.read_bytes()
    assert reg.load(REGISTER.resolve()) == first
    assert compiled.read_bytes() != stale
    # a damaged copy is ignored, never trusted
    compiled.write_text("{not json")
    assert reg.load(REGISTER.resolve()) == first
    # a copy claiming other YAML bytes is ignored too, however well it is sealed
    header, content = compiled_parts()
    write_copy({**header, "yaml_sha256": "0" * 64}, forge_name(content))
    assert reg.load(REGISTER.resolve()).name == first.name
    assert reg.load_data(REGISTER.resolve()).name == first.name


COMPILED = REGISTER.with_name(f".{REGISTER.name}.compiled.json")


def compiled_parts() -> tuple[dict[str, Any], bytes]:
    """The compiled copy's header (its first line) and the JSON after it."""
    first, _, content = COMPILED.read_bytes().partition(b"\n")
    return json.loads(first), content


def write_copy(header: dict[str, Any], content: bytes, *, seal: bool = True) -> None:
    """Write a compiled copy; ``seal`` seals it as tracework would, with this user's key."""
    if seal:
        header = {**header, "seal": reg._seal(header["yaml_sha256"], content)}
    COMPILED.write_bytes(json.dumps(header).encode() + b"\n" + content)


def forge_name(content: bytes) -> bytes:
    """The same rows with the register's name (its second field) changed."""
    row = json.loads(content)
    assert row[1] == "demo"
    row[1] = "forged"
    return json.dumps(row).encode() + b"\n"


def test_the_check_reads_the_copy_it_trusts_without_pydantic(pinned, tw):
    _good(pinned, tw)
    data = reg.load_data(REGISTER.resolve())
    assert data == reg.data_of(reg.load(REGISTER.resolve()))
    assert data.quotes["Q-f"].lines == (1, 2) and data.quotes["Q-f"].anchor is not None
    assert data.sources["SRC-1"].files["a.py"].kind == "file"
    probe = (
        "import sys\nfrom pathlib import Path\nfrom tracework.register import store as reg\n"
        "data = reg.load_data(Path(sys.argv[1]))\n"
        "print(data.name, sorted(data.quotes), 'pydantic' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(REGISTER.resolve())],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == "demo ['Q-f'] False\n"


def test_an_edited_copy_is_never_trusted(pinned, tw):
    _good(pinned, tw)
    header, content = compiled_parts()
    # the quote's text changed in the copy only: it no longer matches its seal
    edited = content.replace(b"return 1", b"return 2")
    assert edited != content
    write_copy(header, edited, seal=False)
    assert reg.load_data(REGISTER.resolve()).quotes["Q-f"].text == "def f():\n    return 1\n"
    assert compiled_parts()[1] == content  # validated afresh and written again
    write_copy(header, edited, seal=False)
    result = tw("check", "demo", "--json")
    assert result.exit_code == 0, result.output
    states = {i["id"]: i["state"] for i in json.loads(result.output)["items"]}
    assert states == {"a.py": "verified", "Q-f": "verified"}


@pytest.mark.parametrize(
    "stale",
    [
        {"tracework": "0.0.1"},
        {"format": 1},
        {"models": "0" * 64},
        {"yaml_sha256": "1" * 64},
        {"surprise": True},
    ],
    ids=["version", "format", "models", "yaml", "extra-key"],
)
@pytest.mark.slow
def test_a_copy_made_by_other_code_or_from_other_yaml_is_ignored(pinned, tw, stale):
    _good(pinned, tw)
    header, content = compiled_parts()
    write_copy({**header, **stale}, forge_name(content))
    assert reg.load_data(REGISTER.resolve()).name == "demo"
    assert compiled_parts() == (header, content)  # rebuilt from the YAML
    write_copy({**header, **stale}, forge_name(content))
    assert reg.load(REGISTER.resolve()).name == "demo"


def test_a_sealed_copy_of_the_wrong_shape_is_validated_afresh(pinned, tw):
    _good(pinned, tw)
    header, content = compiled_parts()
    row = json.loads(content)
    row[3]["Q-f"].append("surprise")  # a quote with a field too many
    write_copy(header, json.dumps(row).encode() + b"\n")
    assert reg.load_data(REGISTER.resolve()) == reg.data_of(reg.load(REGISTER.resolve()))
    assert compiled_parts() == (header, content)
    # the control: the same copy, sealed and without the extra field, is read as it is
    write_copy(header, forge_name(content))
    assert reg.load_data(REGISTER.resolve()).name == "forged"


def test_a_copy_sealed_by_anyone_else_is_never_trusted(pinned, tw):
    """A copy committed from another machine, or forged with a recomputed plain hash,
    is not sealed with this user's key: the check validates the YAML instead."""
    _good(pinned, tw)
    header, content = compiled_parts()
    forged = forge_name(content)
    other_key = bytes(range(32))
    made_from = f"{header['format']}\n{header['tracework']}\n{header['models']}\n"
    made_from += f"{header['yaml_sha256']}\n"
    foreign = hmac.new(other_key, made_from.encode() + forged, hashlib.sha256).hexdigest()
    write_copy({**header, "seal": foreign}, forged, seal=False)
    assert reg.load_data(REGISTER.resolve()).name == "demo"
    assert compiled_parts() == (header, content)  # rebuilt, sealed with this user's key
    write_copy({**header, "seal": hashlib.sha256(forged).hexdigest()}, forged, seal=False)
    assert reg.load_data(REGISTER.resolve()).name == "demo"
    key = Path(os.environ["XDG_CACHE_HOME"]) / "tracework" / "seal.key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32


def test_load_validates_even_a_sealed_copy_and_load_data_trusts_it(pinned, tw):
    _good(pinned, tw)
    header, content = compiled_parts()
    row = json.loads(content)
    row[3]["Q-f"][5] = "def f():\n    return 2\n"  # the text no longer hashes to its sha256
    write_copy(header, json.dumps(row).encode() + b"\n")
    # what the check trusts: a copy sealed for these YAML bytes, as tracework writes it
    assert reg.load_data(REGISTER.resolve()).quotes["Q-f"].text.endswith("return 2\n")
    # every other reader validates it, refuses it and reads the YAML
    assert reg.load(REGISTER.resolve()).quotes["Q-f"].text.endswith("return 1\n")
    assert compiled_parts() == (header, content)


def test_the_committed_register_data_module_is_current():
    from tracework.register import data as register_data
    from tracework.register.datagen import COMMAND, data_source

    committed = Path(register_data.__file__).read_text(encoding="utf-8")
    assert committed == data_source(), f"the models changed: run `{COMMAND}`"
    fields = {m.__name__: set(m.model_fields) for m in (FileEntry, GitSource, Quote, Register)}
    for name, expected in fields.items():
        data_class = getattr(register_data, f"{name}Data")
        assert set(data_class._fields) == expected
