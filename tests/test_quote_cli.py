"""`tracework quote` and `tracework register add-file` as an analyst runs them.

What is printed (path, lines, full hash, numbered lines), what is refused (binaries,
symlinks, submodules, huge files), how globs expand, what --expect-sha256 does, and
that hostile text never reaches the terminal raw.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from pathlib import Path
from typing import Any

import nbformat
import pytest
from ruamel.yaml import YAML

from conftest import refused
from tracework.text import terminal_lines, visible

REGISTER = Path("registers/demo.yaml")


def raw_doc() -> dict[str, Any]:
    data = YAML(typ="safe").load(REGISTER.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def ok(result) -> None:
    assert result.exit_code == 0, result.output


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- what quote prints ---------------------------------------------------------------------

STORE = (
    "import json\n\n\nclass Store:\n"
    "    def put(self, key, value):\n        self.data[key] = value\n"
)


def test_quote_prints_path_lines_full_hash_and_numbered_lines(pinned, tw):
    pinned({"pkg/store.py": STORE})
    result = tw("quote", "demo", "SRC-1", "pkg/store.py", "--symbol", "Store.put")
    ok(result)
    span = b"    def put(self, key, value):\n        self.data[key] = value\n"
    head, *body = result.stdout.rstrip("\n").split("\n")
    assert head == f"Q-store-Store.put  pkg/store.py:5-6  sha256 {sha(span)}"
    assert body == [
        "5 │     def put(self, key, value):",
        "6 │         self.data[key] = value",
    ]
    assert result.stderr == ""


def test_quote_line_numbers_are_right_aligned_and_keep_leading_blank_lines(pinned, tw):
    pinned({"gap.txt": "".join(f"line {n}\n" if n != 9 else "\n" for n in range(1, 13))})
    result = tw("quote", "demo", "SRC-1", "gap.txt", "--lines", "9-11")
    ok(result)
    assert result.stdout.split("\n")[1:4] == [" 9 │ ", "10 │ line 10", "11 │ line 11"]


def test_quote_adds_the_quote_and_registers_its_file(pinned, tw):
    pinned({"pkg/store.py": STORE})
    ok(tw("quote", "demo", "SRC-1", "pkg/store.py", "--lines", "4-4", "--id", "Q-class"))
    doc = raw_doc()
    assert doc["quotes"]["Q-class"] == {
        "source": "SRC-1",
        "path": "pkg/store.py",
        "lines": [4, 4],
        "sha256": sha(b"class Store:\n"),
        "text": "class Store:\n",
    }
    assert doc["sources"]["SRC-1"]["files"]["pkg/store.py"] == {
        "sha256": sha(STORE.encode()),
        "kind": "file",
        "size": len(STORE.encode()),
    }


def test_the_same_quote_twice_is_a_no_op_and_a_reused_id_is_refused(pinned, tw):
    pinned({"pkg/store.py": STORE})
    ok(tw("quote", "demo", "SRC-1", "pkg/store.py", "--lines", "1-1", "--id", "Q-one"))
    before = REGISTER.read_bytes()
    ok(tw("quote", "demo", "SRC-1", "pkg/store.py", "--lines", "1-1", "--id", "Q-one"))
    assert REGISTER.read_bytes() == before
    clash = tw("quote", "demo", "SRC-1", "pkg/store.py", "--lines", "4-4", "--id", "Q-one")
    refused(clash, "quote id Q-one is already used for pkg/store.py:1-1", "--id")
    assert REGISTER.read_bytes() == before


def test_default_ids_do_not_overwrite_each_other(pinned, tw):
    pinned({"pkg/store.py": STORE, "other/store.py": "x = 1\n"})
    ok(tw("quote", "demo", "SRC-1", "pkg/store.py", "--lines", "1-1"))
    ok(tw("quote", "demo", "SRC-1", "other/store.py", "--lines", "1-1"))
    quotes = raw_doc()["quotes"]
    assert quotes["Q-store-1-1"]["path"] == "pkg/store.py"
    assert quotes["Q-store-1-1-2"]["path"] == "other/store.py"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("nope.py", "--lines", "1-1"), ["nope.py is not in the tree"]),
        (("pkg/store.py", "--lines", "1-99"), ["out of range", "6 lines"]),
        (("pkg/store.py", "--lines", "x-y"), ["A-B"]),
        (("pkg/store.py", "--lines", "1-1", "--id", "9bad id"), ["not a valid quote id"]),
        (("pkg/store.py", "--symbol", "Store.get"), ["no function, class or assignment"]),
        (("pkg/store.py", "--lines", "1-1", "--symbol", "Store"), ["exactly one of"]),
        (("pkg/store.py",), ["exactly one of"]),
        (("pkg/store.py", "--lines", "1-2", "--context", "2"), ["--context goes with --match"]),
        (("pkg/store.py", "--symbol", "Store", "--context", "1"), ["--context goes with --match"]),
    ],
)
def test_bad_quote_requests_exit_2_and_change_nothing(pinned, tw, args, words):
    pinned({"pkg/store.py": STORE})
    before = REGISTER.read_bytes()
    result = tw("quote", "demo", "SRC-1", *args)
    assert result.exit_code == 2, result.output
    for word in words:
        assert word in result.stderr, (word, result.stderr)
    assert "Traceback" not in result.output
    assert REGISTER.read_bytes() == before


def test_an_unknown_source_names_the_known_ones(pinned, tw):
    pinned({"a.py": "x = 1\n"})
    refused(tw("quote", "demo", "SRC-7", "a.py", "--lines", "1-1"), "no git source SRC-7", "SRC-1")


# -- what quote refuses ----------------------------------------------------------------------


def test_a_binary_file_is_refused_but_can_be_registered(pinned, tw):
    data = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    pinned({"logo.png": data})
    before = REGISTER.read_bytes()
    refused(tw("quote", "demo", "SRC-1", "logo.png", "--lines", "1-1"), "logo.png is binary")
    assert REGISTER.read_bytes() == before
    result = tw("register", "add-file", "demo", "SRC-1", "logo.png")
    ok(result)
    assert "(binary)" in result.stdout
    entry = raw_doc()["sources"]["SRC-1"]["files"]["logo.png"]
    assert entry == {"sha256": sha(data), "kind": "file", "size": len(data), "binary": True}


def test_utf16_is_binary_as_git_says(pinned, tw):
    data = "name = 'UTF-16 text'\n".encode("utf-16")
    repo = pinned({"wide.py": data})
    numstat = repo.git("diff", "--numstat", "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "HEAD")
    assert numstat.startswith("-\t-\twide.py")  # git's own verdict: binary
    refused(tw("quote", "demo", "SRC-1", "wide.py", "--match", "name"), "wide.py is binary")
    ok(tw("register", "add-file", "demo", "SRC-1", "wide.py"))
    entry = raw_doc()["sources"]["SRC-1"]["files"]["wide.py"]
    assert entry["binary"] is True and entry["sha256"] == sha(data)


@pytest.mark.parametrize("target", ["/etc/passwd", "../outside/secret.txt", "real.py"])
def test_a_symlink_is_reported_with_its_target_and_never_followed(make_repo, pinned, tw, target):
    repo = make_repo("toy")
    repo.write("real.py", "root:x:0:0:not really\n")
    repo.symlink("link", target)
    repo.commit("links")
    commit = pinned(repo=repo).commits[-1]
    before = REGISTER.read_bytes()
    result = tw("quote", "demo", "SRC-1", "link", "--lines", "1-1")
    refused(result, f"link is a symlink to {target!r}", "never followed")
    assert "root:" not in result.output
    assert REGISTER.read_bytes() == before
    ok(tw("register", "add-file", "demo", "SRC-1", "link"))
    entry = raw_doc()["sources"]["SRC-1"]["files"]["link"]
    # a link's blob is its target text: `git show C:link | sha256sum`
    assert repo.git("show", f"{commit}:link") == target
    assert entry == {
        "sha256": sha(target.encode()),
        "kind": "symlink",
        "size": len(target),
        "target": target,
    }
    ok(tw("check", "demo"))


def test_a_submodule_is_refused_and_registered_as_its_commit(make_repo, pinned, tw):
    repo = make_repo("toy")
    repo.write("README", "parent\n")
    (repo.path / "vendor" / "lib").mkdir(parents=True)
    gitlink = "0123456789abcdef0123456789abcdef01234567"
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{gitlink},vendor/lib")
    repo.commit("with a submodule")
    assert f"160000 commit {gitlink}\tvendor/lib" in repo.git("ls-tree", "-r", "HEAD")
    pinned(repo=repo)
    before = REGISTER.read_bytes()
    refused(
        tw("quote", "demo", "SRC-1", "vendor/lib", "--lines", "1-1"),
        "vendor/lib is a submodule (commit 0123456789ab)",
    )
    assert REGISTER.read_bytes() == before
    result = tw("register", "add-file", "demo", "SRC-1", "vendor")
    ok(result)
    assert "(submodule)" in result.stdout
    entry = raw_doc()["sources"]["SRC-1"]["files"]["vendor/lib"]
    assert entry["kind"] == "submodule" and entry["target"] == gitlink
    assert entry["sha256"] == sha(gitlink.encode())
    ok(tw("check", "demo"))


def set_size_cap(cap: int) -> None:
    """Configure the workspace's quoting limit as a user would, in tracework.toml."""
    marker = Path("tracework.toml")
    marker.write_text(
        marker.read_text().replace("quote_size_cap = 4194304", f"quote_size_cap = {cap}")
    )


def test_a_file_over_the_size_cap_is_refused_but_registered_by_hash(pinned, tw, monkeypatch):
    big = b"".join(b"row %05d of a large generated table\n" % n for n in range(700))
    assert len(big) > 20_000
    pinned({"big.csv": big, "small.txt": "fits\n"})
    set_size_cap(10_000)
    before = REGISTER.read_bytes()
    refused(
        tw("quote", "demo", "SRC-1", "big.csv", "--lines", "1-1"),
        f"big.csv is {len(big):,} bytes, over the 10,000-byte quoting limit",
        "register add-file",
    )
    assert REGISTER.read_bytes() == before
    ok(tw("quote", "demo", "SRC-1", "small.txt", "--lines", "1-1"))
    ok(tw("register", "add-file", "demo", "SRC-1", "big.csv", "small.txt"))
    files = raw_doc()["sources"]["SRC-1"]["files"]
    assert files["big.csv"] == {"sha256": sha(big), "kind": "file", "size": len(big)}
    assert files["small.txt"]["sha256"] == sha(b"fits\n")
    ok(tw("check", "demo"))


def test_a_size_cap_smaller_than_the_binary_probe_still_works(pinned, tw, monkeypatch):
    pinned({"a.txt": "x" * 500 + "\n", "b.txt": "y" * 600 + "\n"})
    set_size_cap(100)
    result = tw("quote", "demo", "SRC-1", "a.txt", "--lines", "1-1")
    refused(result, "over the 100-byte quoting limit")
    ok(tw("register", "add-file", "demo", "SRC-1", "a.txt", "b.txt"))
    files = raw_doc()["sources"]["SRC-1"]["files"]
    assert files["a.txt"]["sha256"] == sha(b"x" * 500 + b"\n")
    assert files["b.txt"]["sha256"] == sha(b"y" * 600 + b"\n")


# -- register add-file -------------------------------------------------------------------------

TREE = {
    "README.md": "# toy\n",
    "setup.cfg": "[metadata]\n",
    "src/app/__init__.py": "",
    "src/app/core.py": "x = 1\n",
    "src/app/util/strings.py": "y = 2\n",
    "src/app/util/data.json": "{}\n",
    "docs/guide.md": "guide\n",
    "docs/img/flow.txt": "flow\n",
    "tests/test_core.py": "z = 3\n",
}


def registered() -> set[str]:
    return set(raw_doc()["sources"]["SRC-1"]["files"])


def test_add_file_takes_paths_folders_and_globs_in_one_call(pinned, tw):
    pinned(TREE)
    result = tw(
        "register", "add-file", "demo", "SRC-1", "src/**/*.py", "*", "docs", "tests/test_core.py"
    )
    ok(result)
    assert registered() == {
        "src/app/__init__.py",
        "src/app/core.py",
        "src/app/util/strings.py",
        "README.md",  # * stays at the top level
        "setup.cfg",
        "docs/guide.md",  # a folder takes everything under it
        "docs/img/flow.txt",
        "tests/test_core.py",
    }
    assert result.stdout.rstrip().endswith(
        "8 files: 8 newly registered, 0 updated, 0 already registered as given"
    )
    for path, content in TREE.items():
        if path in registered():
            assert raw_doc()["sources"]["SRC-1"]["files"][path]["sha256"] == sha(content.encode())


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("**", set(TREE)),
        ("**/*.md", {"README.md", "docs/guide.md"}),
        ("src/*/*.py", {"src/app/__init__.py", "src/app/core.py"}),
        ("src/app/util/*", {"src/app/util/strings.py", "src/app/util/data.json"}),
        ("docs/", {"docs/guide.md", "docs/img/flow.txt"}),
        ("src/app/?ore.py", {"src/app/core.py"}),
        ("[RS]*", {"README.md"}),
        ("[!R]*", {"setup.cfg"}),
        ("[^R]*", {"setup.cfg"}),  # "^" negates as "!" does, as in git and bash
    ],
)
def test_glob_forms(pinned, tw, pattern, expected):
    pinned(TREE)
    ok(tw("register", "add-file", "demo", "SRC-1", pattern))
    assert registered() == expected


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("[[]x].txt", {"[x].txt"}),  # "[" inside a set is a literal, not a nested set
        ("[&|~-]*.txt", {"&and.txt", "-dash.txt"}),  # nor "&&", "||", "~~", "--" set operations
        ("[!-&[]*.txt", {"x].txt", "]x.txt"}),
        ("[]]*", {"]x.txt"}),  # a "]" first in a set is a literal
    ],
)
def test_set_characters_in_globs_are_literal(pinned, tw, pattern, expected):
    names = ["[x].txt", "x].txt", "&and.txt", "-dash.txt", "]x.txt"]
    pinned({name: f"{name}\n" for name in names})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # re's FutureWarning on nested sets must not surface
        ok(tw("register", "add-file", "demo", "SRC-1", pattern))
    assert registered() == expected


def test_adding_again_reports_nothing_new(pinned, tw):
    pinned(TREE)
    ok(tw("register", "add-file", "demo", "SRC-1", "docs"))
    before = REGISTER.read_bytes()
    result = tw("register", "add-file", "demo", "SRC-1", "docs", "docs/guide.md")
    ok(result)
    assert result.stdout.rstrip().endswith(
        "2 files: 0 newly registered, 0 updated, 2 already registered as given"
    )
    assert REGISTER.read_bytes() == before


def test_a_new_expectation_replaces_the_old_one_and_says_so(pinned, tw):
    pinned({"dossier.txt": "the file an outside dossier hashed\n"})
    first, second = "1" * 64, "2" * 64
    ok(tw("register", "add-file", "demo", "SRC-1", "dossier.txt", "--expect-sha256", first))
    result = tw("register", "add-file", "demo", "SRC-1", "dossier.txt", "--expect-sha256", second)
    ok(result)
    assert "expected SHA-256 of dossier.txt: was 111111111111, now 222222222222" in result.stdout
    assert result.stdout.rstrip().endswith(
        "1 file: 0 newly registered, 1 updated, 0 already registered as given"
    )
    assert raw_doc()["sources"]["SRC-1"]["files"]["dossier.txt"]["expect_sha256"] == second
    kept = tw("register", "add-file", "demo", "SRC-1", "dossier.txt")  # without: kept
    assert "was" not in kept.stdout and "1 already registered as given" in kept.stdout
    assert raw_doc()["sources"]["SRC-1"]["files"]["dossier.txt"]["expect_sha256"] == second


@pytest.mark.parametrize("pattern", ["nothing/*.py", "missing.txt", "**/*.rs", "doc"])
def test_a_pattern_matching_nothing_fails_the_whole_call(pinned, tw, pattern):
    pinned(TREE)
    before = REGISTER.read_bytes()
    result = tw("register", "add-file", "demo", "SRC-1", "README.md", pattern)
    refused(result, f"{pattern} matches nothing in the tree")
    assert REGISTER.read_bytes() == before


def test_an_expect_sha256_mismatch_warns_at_once_and_is_a_finding(pinned, tw):
    content = b"the file an outside dossier hashed\n"
    pinned({"dossier.txt": content, "other.txt": "x\n"})
    wrong = "0" * 64
    added = tw("register", "add-file", "demo", "SRC-1", "dossier.txt", "--expect-sha256", wrong)
    assert added.exit_code == 0
    assert f"has sha256 {sha(content)} at the pin, not the expected {wrong}" in added.stderr
    ok(tw("register", "add-file", "demo", "SRC-1", "other.txt"))
    assert raw_doc()["sources"]["SRC-1"]["files"]["dossier.txt"]["expect_sha256"] == wrong
    result = tw("check", "demo", "--json")
    assert result.exit_code == 0, result.output  # a finding, not a failure of the file
    report = json.loads(result.stdout)
    items = {i["id"]: i for i in report["items"]}
    assert items["dossier.txt"]["state"] == items["other.txt"]["state"] == "verified"
    [asserted] = report["assertions"]
    assert asserted["state"] == "differs" and asserted["by"] is None
    assert (asserted["sha256"], asserted["sha256_at_commit"]) == (wrong, sha(content))
    human = tw("check", "demo")
    assert "assertion expected by the register" in human.stdout and "differs" in human.stdout


def test_expect_sha256_that_matches_verifies_and_is_stored_lowercase(pinned, tw):
    content = b"the file an outside dossier hashed\n"
    pinned({"dossier.txt": content})
    upper = sha(content).upper()
    ok(tw("register", "add-file", "demo", "SRC-1", "dossier.txt", "--expect-sha256", upper))
    assert raw_doc()["sources"]["SRC-1"]["files"]["dossier.txt"]["expect_sha256"] == sha(content)
    ok(tw("check", "demo"))


def test_an_expectation_survives_registering_the_folder_again(pinned, tw):
    pinned({"docs/a.txt": "a\n", "docs/b.txt": "b\n"})
    wrong = "1" * 64
    ok(tw("register", "add-file", "demo", "SRC-1", "docs/a.txt", "--expect-sha256", wrong))
    ok(tw("register", "add-file", "demo", "SRC-1", "docs"))
    assert raw_doc()["sources"]["SRC-1"]["files"]["docs/a.txt"]["expect_sha256"] == wrong
    assert json.loads(tw("check", "demo", "--json").stdout)["assertions"][0]["sha256"] == wrong


@pytest.mark.parametrize(
    ("paths", "value", "words"),
    [
        (["a.txt", "b.txt"], "0" * 64, ["exactly one path"]),
        (["*.txt"], "0" * 64, ["exactly one path"]),
        (["a.txt"], "abc", ["not a 64-hex SHA-256"]),
        (["a.txt"], "g" * 64, ["not a 64-hex SHA-256"]),
    ],
)
def test_bad_expect_sha256_use_is_refused(pinned, tw, paths, value, words):
    pinned({"a.txt": "a\n", "b.txt": "b\n"})
    before = REGISTER.read_bytes()
    result = tw("register", "add-file", "demo", "SRC-1", *paths, "--expect-sha256", value)
    refused(result, *words)
    assert REGISTER.read_bytes() == before


# -- hostile text on the terminal ---------------------------------------------------------------

HOSTILE = (
    "title = '\x1b]0;pwned\x07'\n"  # set the terminal title
    "wipe = '\x1b[2J\x1b[H'\n"  # clear the screen
    "red = '\x1b[31mnot red\x1b[0m'\n"
    "hide = 'shown\rHIDDEN'\n"  # a lone CR rewrites the line
    "flip = 'abc\u202edef'\n"  # RIGHT-TO-LEFT OVERRIDE
    "c1 = '\x9b31m'\n"  # the 8-bit CSI
    "tail = '\u2028\ufeff\u200b'\n"
)


def test_control_characters_in_quoted_text_never_reach_the_terminal(pinned, tw):
    pinned({"evil.py": HOSTILE})
    result = tw("quote", "demo", "SRC-1", "evil.py", "--lines", "1-7")
    ok(result)
    out = result.stdout
    for raw in ("\x1b", "\x07", "\r", "\u202e", "\x9b", "\u2028", "\ufeff", "\u200b"):
        assert raw not in out, repr(raw)
    for shown in ("<U+001B>]0;pwned<U+0007>", "<U+001B>[2J", "shown<U+000D>HIDDEN", "<U+202E>"):
        assert shown in out
    assert len(out.rstrip("\n").split("\n")) == 1 + 7  # still one row per line
    # the register keeps the exact text
    assert raw_doc()["quotes"]["Q-evil-1-7"]["text"] == HOSTILE


def test_a_hostile_file_name_is_neutralised_too(pinned, tw):
    name = "odd\x1b[31mname.py"
    pinned({name: "x = 1\n"})
    quote = tw("quote", "demo", "SRC-1", name, "--lines", "1-1")
    ok(quote)
    assert "\x1b" not in quote.stdout and "odd<U+001B>[31mname.py:1-1" in quote.stdout
    add = tw("register", "add-file", "demo", "SRC-1", "odd*")
    ok(add)
    assert "\x1b" not in add.stdout
    missing = tw("quote", "demo", "SRC-1", "no\x1b[2Jpe.py", "--lines", "1-1")
    assert missing.exit_code == 2
    assert "\x1b" not in missing.stderr


def test_highlighted_output_adds_colour_but_no_subject_escapes():
    text = "\n\nvalue = '\x1b[31m'  # \x07 \u202e\n"
    out = terminal_lines(text, 4, "mod.py", color=True)
    assert "\x1b[" in out  # pygments' own colours
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert "\x1b" not in plain and "\x07" not in plain and "\u202e" not in plain
    assert "<U+001B>[31m" in plain
    rows = plain.split("\n")
    assert [r.split(" │")[0].strip() for r in rows] == ["4", "5", "6"]
    assert rows[2].endswith("value = '<U+001B>[31m'  # <U+0007> <U+202E>")


def test_visible_keeps_tabs_and_newlines_only():
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible("\x00\x1f\x7f\x85\u2029") == "<U+0000><U+001F><U+007F><U+0085><U+2029>"
    assert visible("ünïcödé ☃") == "ünïcödé ☃"


# -- replace and remove ---------------------------------------------------------------------


def _notebook(workspace, *cells: str) -> None:

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('register = "demo"')]
    nb.cells += [nbformat.v4.new_code_cell(c) for c in cells]
    for n, cell in enumerate(nb.cells):
        cell.id = f"cell-{n}"
    nbformat.write(nb, workspace.notebooks / "demo.ipynb")


def test_replace_and_remove_say_what_changed(pinned, tw, workspace):
    pinned({"a.py": "x = 1\ny = 2\nz = 3\n"})
    assert tw("quote", "demo", "SRC-1", "a.py", "--lines", "1-1", "--id", "Q-x").exit_code == 0
    refused = tw("quote", "demo", "SRC-1", "a.py", "--lines", "2-2", "--id", "Q-x")
    assert refused.exit_code == 2 and "--replace" in refused.stderr
    replaced = tw("quote", "demo", "SRC-1", "a.py", "--lines", "2-2", "--id", "Q-x", "--replace")
    assert replaced.exit_code == 0, replaced.output
    assert "replaced Q-x: was a.py:1-1" in replaced.output and "a.py:2-2" in replaced.output
    removed = tw("quote", "demo", "--remove", "Q-x")
    assert removed.exit_code == 0 and "removed Q-x  a.py:2-2" in removed.output
    assert "Q-x" not in (workspace.registers / "demo.yaml").read_text()
    unknown = tw("quote", "demo", "--remove", "Q-x")
    assert unknown.exit_code == 2 and "there is no quote Q-x" in unknown.stderr


def test_a_quote_a_notebook_still_cites_is_not_removed(pinned, tw, workspace):
    pinned({"pkg/store.py": "class Store:\n    def put(self, k):\n        return k\n"})
    for args in (("--symbol", "Store.put"), ("--lines", "1-1", "--id", "Q-head")):
        assert tw("quote", "demo", "SRC-1", "pkg/store.py", *args).exit_code == 0
    _notebook(
        workspace,
        'src = wb.source("SRC-1")\nq = src.quote("pkg/store.py", lines=(2, 3))',
        '%time x = 1\nwb.claim("RT-CLM-a", label="A", statement="s", evidence=["Q-head"])',
    )
    before = (workspace.registers / "demo.yaml").read_bytes()
    by_span = tw("quote", "demo", "--remove", "Q-store-Store.put")
    assert by_span.exit_code == 2
    assert "cited by notebooks/demo.ipynb cell 2 of 3 (id cell-1)" in by_span.stderr
    by_id = tw("quote", "demo", "--remove", "Q-head")
    assert by_id.exit_code == 2 and "notebooks/demo.ipynb cell 3 of 3 (id cell-2)" in by_id.stderr
    assert (workspace.registers / "demo.yaml").read_bytes() == before
    _notebook(workspace, 'src = wb.source("SRC-1")')  # the citations are gone
    assert tw("quote", "demo", "--remove", "Q-store-Store.put").exit_code == 0
    assert tw("quote", "demo", "--remove", "Q-head").exit_code == 0


# -- found in review: each once made tracework hang, crash or lie --------------


def test_the_shown_text_of_a_non_utf8_quote_must_match_its_bytes(pinned, tw, workspace):
    pinned({"old.txt": "caf\xe9 au lait\n".encode("latin-1")})
    assert tw("quote", "demo", "SRC-1", "old.txt", "--lines", "1-1", "--id", "Q-old").exit_code == 0
    path = workspace.registers / "demo.yaml"
    text = path.read_text()
    assert "raw_b64" in text
    path.write_text(text.replace("au lait", "au poison"))
    result = tw("check", "demo")
    assert result.exit_code == 2 and "does not show its raw_b64 bytes" in result.output
