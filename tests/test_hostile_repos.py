"""Hostile repositories, each built with plain git: what the commands do with them.

Git LFS pointers, filter drivers and ``export-subst``, file names no one should have
to read (newlines, leading dashes, bidi controls, NFC/NFD twins, bytes that are not
UTF-8), text in every encoding git stores, a committed bare repository whose config
would run a command, and pygments fed text built to make it guess.  Each case is
checked through ``fetch``, ``register add-file``, ``quote``, ``check`` and ``screen``,
against what plain git and coreutils say; the HTML views are tested directly and one
render covers the page.
"""

from __future__ import annotations

import hashlib
import html as html_module
import json
import re
import subprocess
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from ruamel.yaml import YAML

from conftest import Repo, git, refused
from tracework.drift.check import CheckItem
from tracework.hashing import LFS_POINTER_HEADER, is_lfs_pointer
from tracework.register import store as reg
from tracework.text import terminal_lines, visible_name
from tracework.views.cards import QuoteInfo, code_block, quote_html

REGISTER = Path("registers/demo.yaml")

# -- helpers -------------------------------------------------------------------------------


def ok(result: Any) -> None:
    assert result.exit_code == 0, result.output


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def files() -> dict[str, Any]:
    data = YAML(typ="safe").load(REGISTER.read_text(encoding="utf-8"))
    return data["sources"]["SRC-1"]["files"]


def quotes() -> dict[str, Any]:
    return YAML(typ="safe").load(REGISTER.read_text(encoding="utf-8"))["quotes"]


def plain_git_env() -> dict[str, str]:
    return {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin"}


def shell_sha256(repo: Repo, script: str, *args: str) -> str:
    """SHA-256 printed by a shell pipeline of plain git and coreutils (``$1``… = args)."""
    out = subprocess.run(
        ["sh", "-c", f"{script} | sha256sum", "sh", *args],
        cwd=repo.path,
        env=plain_git_env(),
        capture_output=True,
        check=True,
    ).stdout.decode()
    return out.split()[0]


def blob_bytes(repo: Repo, commit: str, path: str) -> bytes:
    """What ``git cat-file blob C:P`` writes: the bytes git stores, no filter applied."""
    return subprocess.run(
        ["git", "cat-file", "blob", f"{commit}:{path}"],
        cwd=repo.path,
        env=plain_git_env(),
        capture_output=True,
        check=True,
    ).stdout


def info_for(qid: str, *, drift: CheckItem | None = None) -> QuoteInfo:
    """The quote as the notebook and the report show it, read back from the register."""
    register = reg.load(REGISTER.resolve())
    quote = register.quotes[qid]
    pin = register.git_source(quote.source).commit
    return QuoteInfo(qid, quote, pin, pin, "https://github.com/acme/toy", drift)


def page_text(fragment: str) -> str:
    """What a reader sees of an HTML fragment: tags dropped, entities decoded."""
    return html_module.unescape(re.sub(r"<[^>]+>", "", fragment))


# -- 1. Git LFS pointers -----------------------------------------------------------------------

POINTER = (
    LFS_POINTER_HEADER
    + b"oid sha256:"
    + sha(b"the real weights, stored elsewhere").encode()
    + b"\nsize 734003200\n"
)


@pytest.fixture
def lfs_repo(make_repo: Callable[[str], Repo]) -> Repo:
    repo = make_repo("toy")
    repo.write(".gitattributes", "*.bin filter=lfs diff=lfs merge=lfs -text\n")
    repo.write("weights.bin", POINTER)
    # the header opens it, but git-lfs never reads a blob of 1024 bytes or more as a pointer
    repo.write("spec-notes.txt", LFS_POINTER_HEADER + b"# about pointers\n" * 80)
    # close, but not the spec's exact header line
    repo.write("near.txt", POINTER.replace(b"spec/v1", b"spec/v2"))
    repo.write("model.py", "WEIGHTS = 'weights.bin'\n")
    repo.commit("weights tracked with LFS")
    return repo


def test_lfs_pointer_detection_follows_the_spec_header_and_size():
    assert is_lfs_pointer(POINTER)
    assert is_lfs_pointer(LFS_POINTER_HEADER + b"x" * (1023 - len(LFS_POINTER_HEADER)))
    assert not is_lfs_pointer(LFS_POINTER_HEADER + b"x" * (1024 - len(LFS_POINTER_HEADER)))
    assert not is_lfs_pointer(POINTER.replace(b"\n", b"\r\n"))
    assert not is_lfs_pointer(b" " + POINTER)
    assert not is_lfs_pointer(LFS_POINTER_HEADER.rstrip(b"\n"))
    assert not is_lfs_pointer(b"")


@pytest.mark.slow
def test_an_lfs_pointer_is_hashed_as_the_pointer_and_marked(lfs_repo, pinned, tw):
    commit = pinned(repo=lfs_repo).commits[-1]
    result = tw("register", "add-file", "demo", "SRC-1", "*")
    ok(result)
    rows = {line.split()[1]: line for line in result.stdout.splitlines()[:-1]}
    assert "Git LFS pointer" in rows["weights.bin"]
    assert "LFS" not in rows["spec-notes.txt"] and "LFS" not in rows["near.txt"]
    registered = files()
    assert registered["weights.bin"] == {
        "sha256": shell_sha256(lfs_repo, 'git show "$1"', f"{commit}:weights.bin"),
        "kind": "lfs-pointer",
        "size": len(POINTER),
    }
    assert registered["weights.bin"]["sha256"] == sha(POINTER)  # the pointer, nothing fetched
    assert registered["spec-notes.txt"]["kind"] == "file"
    assert registered["near.txt"]["kind"] == "file"
    assert registered["model.py"]["kind"] == "file"

    quoted = tw("quote", "demo", "SRC-1", "weights.bin", "--lines", "1-3", "--id", "Q-weights")
    ok(quoted)
    head, note, *body = quoted.stdout.rstrip("\n").split("\n")
    assert head == f"Q-weights  weights.bin:1-3  sha256 {sha(POINTER)}"
    assert "Git LFS pointer" in note
    assert body[0] == "1 │ version https://git-lfs.github.com/spec/v1"
    plain = tw("quote", "demo", "SRC-1", "model.py", "--lines", "1-1")
    ok(plain)
    assert "LFS" not in plain.stdout
    ok(tw("check", "demo"))


def test_the_quote_view_says_a_quote_is_an_lfs_pointer(lfs_repo, pinned, tw):
    pinned(repo=lfs_repo)
    ok(tw("quote", "demo", "SRC-1", "weights.bin", "--lines", "1-3", "--id", "Q-weights"))
    ok(tw("quote", "demo", "SRC-1", "near.txt", "--lines", "1-3", "--id", "Q-near"))
    pointer = quote_html(info_for("Q-weights"))
    assert "Git LFS pointer" in pointer
    assert "Git LFS pointer" not in quote_html(info_for("Q-near"))


def test_a_pointer_replaced_by_real_content_is_a_changed_file(lfs_repo, pinned, tw):
    pinned(repo=lfs_repo)
    ok(tw("register", "add-file", "demo", "SRC-1", "weights.bin"))
    lfs_repo.write("weights.bin", b"\x00\x01real weights committed by mistake\n")
    head = lfs_repo.commit("weights committed directly")
    ok(tw("fetch", "toy"))
    result = tw("check", "demo", "--at", head, "--json")
    assert result.exit_code == 1, result.output
    (item,) = json.loads(result.stdout)["items"]
    assert item["state"] == "changed"
    assert item["detail"] == "now a file (registered as a lfs-pointer)"


# -- 2. filter drivers, ident and export-subst are never applied -----------------------------

ATTRIBUTES = "* filter=evil diff=evil ident export-subst\n"
VERSION_PY = 'ID = "$Id$"\nCOMMIT = "$Format:%H$"\n'
VERSION_2 = VERSION_PY.replace("COMMIT", "REVISION")


def arm(config_file: Path, marker: Path) -> None:
    """Write a git config whose drivers would create ``marker`` if git ever ran them."""
    run = f"touch {marker}; cat"
    for key, value in (
        ("filter.evil.clean", run),
        ("filter.evil.smudge", run),
        ("diff.evil.textconv", run),
        ("diff.evil.command", f"touch {marker}"),
        ("core.fsmonitor", f"touch {marker}; false"),
    ):
        git(config_file.parent, "config", "-f", str(config_file), key, value)


@pytest.fixture
def filtered(make_repo, tmp_path):
    """A subject whose attributes name a filter, a diff driver, ident and export-subst.

    The drivers are configured only after the commits (so building the fixture runs
    nothing); from then on, any git command that applied them would leave the marker.
    """
    repo = make_repo("toy")
    repo.write(".gitattributes", ATTRIBUTES)
    repo.write("version.py", VERSION_PY)
    repo.write("other.py", "x = 1\n")
    repo.commit("first")
    repo.write("version.py", VERSION_2)
    repo.commit("second")
    marker = tmp_path / "filter-ran"
    arm(repo.path / ".git" / "config", marker)
    return repo, marker


def test_the_filter_trap_is_real(filtered):
    """Control: git itself runs the driver and substitutes when asked to filter."""
    repo, marker = filtered
    first = repo.commits[0]
    smudged = git(repo.path, "cat-file", "--filters", f"{first}:version.py")
    assert marker.exists()
    assert "$Id: " in smudged  # ident applied
    archived = subprocess.run(
        ["git", "archive", first, "version.py"],
        cwd=repo.path,
        env=plain_git_env(),
        capture_output=True,
        check=True,
    ).stdout
    assert b"$Format:%H$" not in archived and first.encode() in archived  # export-subst


@pytest.mark.slow
def test_filters_ident_and_export_subst_are_never_applied(filtered, pinned, tw, workspace):
    repo, marker = filtered
    first = repo.commits[0]
    # the clone source is armed; so, from here on, is the mirror itself
    commit = pinned(repo=repo).commits[-1]
    source = YAML(typ="safe").load(REGISTER.read_text(encoding="utf-8"))["sources"]["SRC-1"]
    assert source["commit"] == commit  # the newest commit is the pin, the first one is not
    assert not marker.exists()  # cloning from an armed repository ran nothing
    mirror = workspace.mirror_dir("toy")
    (mirror / "info").mkdir(exist_ok=True)
    (mirror / "info" / "attributes").write_text(ATTRIBUTES)
    arm(mirror / "config", marker)
    # control: in the armed mirror, a filtering read does run the driver
    subprocess.run(
        ["git", f"--git-dir={mirror}", "cat-file", "--filters", f"{commit}:version.py"],
        env=plain_git_env(),
        capture_output=True,
        check=False,
    )
    assert marker.exists()
    marker.unlink()

    ok(tw("fetch", "toy"))
    ok(tw("register", "add-file", "demo", "SRC-1", "version.py", ".gitattributes"))
    stored = blob_bytes(repo, commit, "version.py")
    assert b"$Id$" in stored and b"$Format:%H$" in stored
    assert files()["version.py"]["sha256"] == sha(stored)
    quoted = tw("quote", "demo", "SRC-1", "version.py", "--lines", "1-2", "--id", "Q-v")
    ok(quoted)
    assert quotes()["Q-v"]["text"] == VERSION_2  # no $Id: …$, no commit id
    assert 'ID = "$Id$"' in quoted.stdout and "$Format:%H$" in quoted.stdout
    ok(tw("check", "demo"))
    # the diff paths (relocation, hunks, renames) run with the drivers armed too
    ok(tw("register", "new", "back"))
    ok(tw("register", "add-source", "back", "SRC-1", "--subject", "toy", "--commit", first))
    ok(tw("quote", "back", "SRC-1", "version.py", "--lines", "2-2", "--id", "Q-c"))
    result = tw("check", "back", "--at", commit, "--json")
    assert result.exit_code == 1, result.output
    item = next(i for i in json.loads(result.stdout)["items"] if i["id"] == "Q-c")
    assert (item["state"], item["new_lines"]) == ("changed", [2, 2])  # mapped by git's diff
    assert '+REVISION = "$Format:%H$"' in item["diff"]
    assert tw("screen", "toy", "--commit", commit).exit_code == 0
    assert not marker.exists()


# -- 3. file names ---------------------------------------------------------------------------

NFC = unicodedata.normalize("NFC", "café.py")
NFD = unicodedata.normalize("NFD", "café.py")
NAMES = {
    "dir with space/file name.py": "spaces = 1\nvalue = 1\n",
    "ünïcödé/naïve.py": "unicode = 1\nvalue = 1\n",
    "line\nbreak.py": "newline = 1\nvalue = 1\n",
    "tab\tname.py": "tab = 1\nvalue = 1\n",
    "-rf.py": "dash = 1\nvalue = 1\n",
    "--help.py": "dashes = 1\nvalue = 1\n",
    "bidi\u202egnp.py": "bidi = 1\nvalue = 1\n",
    NFC: "composed = 1\nvalue = 1\n",
    NFD: "decomposed = 1\nvalue = 1\n",
}
SHOWN = {
    "dir with space/file name.py": "dir with space/file name.py",
    "ünïcödé/naïve.py": "ünïcödé/naïve.py",
    "line\nbreak.py": "line<U+000A>break.py",
    "tab\tname.py": "tab<U+0009>name.py",
    "-rf.py": "-rf.py",
    "--help.py": "--help.py",
    "bidi\u202egnp.py": "bidi<U+202E>gnp.py",
    NFC: "café.py",
    NFD: "cafe<U+0301>.py",
}


def test_nfc_and_nfd_are_two_names():
    assert NFC != NFD and len({NFC, NFD}) == 2
    assert visible_name(NFC) != visible_name(NFD)


def test_odd_names_are_registered_and_shown_one_line_each(pinned, tw):
    repo = pinned(NAMES)
    commit = repo.commits[0]
    tree = repo.git("ls-tree", "-r", "-z", "--name-only", "HEAD").split("\0")
    assert NFC in tree and NFD in tree  # git keeps both spellings
    result = tw("register", "add-file", "demo", "SRC-1", "**")
    ok(result)
    lines = result.stdout.rstrip("\n").split("\n")
    assert len(lines) == len(NAMES) + 1  # no name can add a row or break one
    shown = sorted(line.split("  ", 2)[2] for line in lines[:-1])
    assert shown == sorted(SHOWN.values())
    assert "\u202e" not in result.stdout and "\t" not in result.stdout
    registered = files()
    assert set(registered) == set(NAMES)
    for name in NAMES:
        expected = shell_sha256(repo, 'git show "$1"', f"{commit}:{name}")
        assert registered[name]["sha256"] == expected == sha(NAMES[name].encode())
    assert registered[NFC]["sha256"] != registered[NFD]["sha256"]
    ok(tw("check", "demo"))


def _as_read(html: str) -> str:
    """A page's text as a reader sees it run: without the break opportunities after a
    path's slashes and the span that keeps a line range whole."""
    html = re.sub(r"<wbr/?>", "", html)
    return re.sub(r'<span class="tw-lines">([^<]*)</span>', r"\1", html)


@pytest.mark.parametrize("name", sorted(NAMES))
def test_each_odd_name_can_be_quoted_and_is_shown_visibly(pinned, tw, name):
    pinned(NAMES)
    result = tw("quote", "demo", "SRC-1", "--lines", "1-1", "--id", "Q-odd", "--", name)
    ok(result)
    head = result.stdout.split("\n")[0]
    assert head.startswith(f"Q-odd  {SHOWN[name]}:1-1  sha256 ")
    assert quotes()["Q-odd"]["path"] == name
    assert quotes()["Q-odd"]["text"] == NAMES[name].split("\n")[0] + "\n"
    view = quote_html(info_for("Q-odd"))
    caption = _as_read(view.split("</figcaption>")[0])
    assert html_module.escape(SHOWN[name], quote=True) in caption
    assert "\u202e" not in view


@pytest.mark.parametrize("name", ["--help.py", "-rf.py"])
def test_an_option_shaped_name_needs_double_dash_and_is_never_an_option(pinned, tw, name):
    pinned(NAMES)
    before = REGISTER.read_bytes()
    result = tw("quote", "demo", "SRC-1", name, "--lines", "1-1")
    assert result.exit_code == 2 and "No such option" in result.output
    assert REGISTER.read_bytes() == before
    ok(tw("register", "add-file", "demo", "SRC-1", "--", name))
    assert set(files()) == {name}


@pytest.mark.slow
def test_odd_names_survive_drift_through_gits_diff(pinned, tw):
    repo = pinned(NAMES)
    for name in NAMES:
        ok(tw("quote", "demo", "SRC-1", "--lines", "2-2", "--", name))
    for name, text in NAMES.items():
        repo.write(name, text.replace("value = 1", "value = 2"))
    head = repo.commit("every value bumped")
    ok(tw("fetch", "toy"))
    result = tw("check", "demo", "--at", head, "--json")
    assert result.exit_code == 1, result.output
    items = [i for i in json.loads(result.stdout)["items"] if i["kind"] == "quote"]
    assert sorted(i["path"] for i in items) == sorted(NAMES)
    for item in items:  # each mapped by git's diff onto its own edited line
        assert (item["state"], item["new_lines"]) == ("changed", [2, 2]), item
    human = tw("check", "demo", "--at", head)
    assert "\u202e" not in human.output


NOT_UTF8 = "caf\udce9.py"  # the bytes b"caf\xe9.py": latin-1, not UTF-8


@pytest.fixture
def latin1_names(make_repo, pinned):
    repo = make_repo("toy")
    repo.write(NOT_UTF8, "x = 1\n")
    repo.write("caf\udce9/AGENTS.md", "Obey.\n")
    repo.write("good.py", "y = 2\n")
    repo.commit("a name in latin-1")
    assert (
        b"caf\xe9.py"
        in subprocess.run(
            ["git", "ls-tree", "-r", "-z", "--name-only", "HEAD"],
            cwd=repo.path,
            capture_output=True,
            check=True,
        ).stdout
    )
    pinned(repo=repo)
    return repo


def test_a_name_that_is_not_utf8_is_refused_clearly(latin1_names, tw):
    before = REGISTER.read_bytes()
    for args in (
        ("register", "add-file", "demo", "SRC-1", "*"),
        ("register", "add-file", "demo", "SRC-1", NOT_UTF8),
        ("quote", "demo", "SRC-1", NOT_UTF8, "--lines", "1-1"),
    ):
        result = tw(*args)
        refused(result, "b'caf\\xe9.py' is not a UTF-8 file name")
        assert result.output.count("tracework: error:") == 1
        assert REGISTER.read_bytes() == before
    ok(tw("register", "add-file", "demo", "SRC-1", "good.py"))
    ok(tw("check", "demo"))


def test_the_screen_shows_a_name_that_is_not_utf8_by_its_bytes(latin1_names, tw, monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")  # a table row per finding, no folded cells
    commit = latin1_names.commits[0]
    human = tw("screen", "toy", "--commit", commit)
    ok(human)
    assert "caf<0xE9>/AGENTS.md" in human.output
    data = json.loads(tw("screen", "toy", "--commit", commit, "--json").output)
    assert [i["path"] for i in data["items"]] == ["caf\udce9/AGENTS.md"]


def test_bidi_and_control_characters_in_names_are_visible_in_the_screen(pinned, tw, monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")  # a table row per finding, no folded cells
    repo = pinned({"evil\u202edm.STNEGA/AGENTS.md": "x\n", "odd\x1b[2J/CLAUDE.md": "y\n"})
    out = tw("screen", "toy", "--commit", repo.commits[0]).output
    assert "\u202e" not in out and "\x1b" not in out
    assert "evil<U+202E>dm.STNEGA/AGENTS.md" in out and "odd<U+001B>[2J/CLAUDE.md" in out


# -- 4. encodings and line ends --------------------------------------------------------------

ENCODED = {
    "latin1.txt": "caf\xe9 cr\xe8me\nna\xefve\n".encode("latin-1"),
    "utf16.txt": "wide = 'text'\n".encode("utf-16"),
    "crlf.py": b"a = 1\r\nb = 2\r\nc = 3\r\n",
    "nofinal.py": b"x = 1\ny = 2",
    # form feed, lone CR, U+2028 and U+0085 split no line: git counts \n only
    "odd-ends.txt": "one\x0ctwo\rthree\u2028four\x85five\nsix\n".encode(),
}


def test_every_encoding_hashes_as_git_stores_it(pinned, tw):
    repo = pinned(ENCODED)
    commit = repo.commits[0]
    ok(tw("register", "add-file", "demo", "SRC-1", "*"))
    registered = files()
    for name, data in ENCODED.items():
        assert registered[name]["sha256"] == sha(data)
        assert registered[name]["sha256"] == shell_sha256(repo, 'git show "$1"', f"{commit}:{name}")
        assert registered[name]["size"] == len(data)
    assert registered["utf16.txt"]["binary"] is True
    assert not any(registered[n].get("binary") for n in ENCODED if n != "utf16.txt")
    ok(tw("check", "demo"))


@pytest.mark.parametrize(
    ("name", "lines", "span"),
    [
        ("crlf.py", "2-2", b"b = 2\r\n"),
        ("nofinal.py", "2-2", b"y = 2"),
        ("nofinal.py", "1-2", b"x = 1\ny = 2"),
        ("odd-ends.txt", "1-1", "one\x0ctwo\rthree\u2028four\x85five\n".encode()),
        ("odd-ends.txt", "2-2", b"six\n"),
        ("latin1.txt", "1-1", "caf\xe9 cr\xe8me\n".encode("latin-1")),
    ],
)
def test_spans_follow_gits_line_count(pinned, tw, name, lines, span):
    repo = pinned(ENCODED)
    commit = repo.commits[0]
    result = tw("quote", "demo", "SRC-1", name, "--lines", lines, "--id", "Q-span")
    ok(result)
    assert f"sha256 {sha(span)}" in result.stdout
    if span.endswith(b"\n"):  # the README's recipe for a span ending in a newline
        first, last = lines.split("-")
        recipe = shell_sha256(
            repo, 'git show "$1" | sed -n "$2,$3p"', f"{commit}:{name}", first, last
        )
        assert recipe == sha(span)
    assert reg.load(REGISTER.resolve()).quotes["Q-span"].span_bytes() == span
    ok(tw("check", "demo"))


@pytest.mark.parametrize(("name", "count"), [("odd-ends.txt", 2), ("nofinal.py", 2)])
def test_line_counts_are_gits(pinned, tw, name, count):
    pinned(ENCODED)
    result = tw("quote", "demo", "SRC-1", name, "--lines", f"{count + 1}-{count + 1}")
    refused(result, "out of range", f"{count} lines")


@pytest.mark.slow
def test_text_that_is_not_utf8_is_shown_with_replacement_characters(pinned, tw):
    pinned(ENCODED)
    result = tw("quote", "demo", "SRC-1", "latin1.txt", "--lines", "1-2", "--id", "Q-latin")
    ok(result)
    assert result.stdout.split("\n")[1:3] == ["1 │ caf\ufffd cr\ufffdme", "2 │ na\ufffdve"]
    stored = quotes()["Q-latin"]
    assert stored["text"] == "caf\ufffd cr\ufffdme\nna\ufffdve\n" and stored["raw_b64"]
    assert "caf\ufffd cr\ufffdme" in page_text(quote_html(info_for("Q-latin")))
    crlf = tw("quote", "demo", "SRC-1", "crlf.py", "--lines", "1-3")
    ok(crlf)
    assert "<U+000D>" not in crlf.stdout and "\r" not in crlf.stdout
    odd = tw("quote", "demo", "SRC-1", "odd-ends.txt", "--lines", "1-1")
    ok(odd)
    assert "one<U+000C>two<U+000D>three<U+2028>four<U+0085>five" in odd.stdout
    refused(tw("quote", "demo", "SRC-1", "utf16.txt", "--lines", "1-1"), "utf16.txt is binary")


# -- 5. a committed bare repository with a hostile core.fsmonitor -------------------------------


@pytest.fixture
def embedded(make_repo, tmp_path):
    """A subject committing ``vendor/inner.git``: a bare repository whose config runs a
    command (``core.fsmonitor``) for any git command run inside it in a checkout."""
    marker = tmp_path / "fsmonitor-ran"
    repo = make_repo("toy")
    inner = repo.path / "vendor" / "inner.git"
    inner.parent.mkdir(parents=True)
    git(repo.path, "init", "-q", "--bare", "--template=", str(inner))
    for key, value in (
        ("core.bare", "false"),
        ("core.worktree", ".."),
        ("core.fsmonitor", f"touch {marker}; false"),
    ):
        git(repo.path, "config", "-f", str(inner / "config"), key, value)
    for keep in ("objects/.keep", "refs/.keep"):
        (inner / keep).write_text("")
    repo.write("app.py", "print('hello')\n")
    repo.commit("vendor a repository")
    listed = repo.git("ls-tree", "-r", "--name-only", "HEAD").split()
    assert "vendor/inner.git/config" in listed and "vendor/inner.git/HEAD" in listed
    return repo, marker


def test_the_embedded_repository_trap_is_real(embedded, tmp_path):
    """Control: in a checkout, plain git run inside the folder runs the command."""
    repo, marker = embedded
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(repo.path), str(checkout))
    subprocess.run(
        ["git", "-c", "safe.bareRepository=all", "status"],
        cwd=checkout / "vendor" / "inner.git",
        env=plain_git_env(),
        capture_output=True,
        check=False,
    )
    assert marker.exists()


def test_an_embedded_bare_repository_is_never_entered(embedded, pinned, tw, workspace):
    repo, marker = embedded
    commit = pinned(repo=repo).commits[-1]
    ok(tw("fetch", "toy"))
    added = tw("register", "add-file", "demo", "SRC-1", "vendor")
    ok(added)
    registered = files()
    assert set(registered) == {
        "vendor/inner.git/HEAD",
        "vendor/inner.git/config",
        "vendor/inner.git/objects/.keep",
        "vendor/inner.git/refs/.keep",
    }
    config = blob_bytes(repo, commit, "vendor/inner.git/config")
    assert registered["vendor/inner.git/config"]["sha256"] == sha(config)
    quoted = tw("quote", "demo", "SRC-1", "vendor/inner.git/config", "--match", "fsmonitor")
    ok(quoted)
    assert f"touch {marker}" in quoted.stdout  # shown as data
    ok(tw("check", "demo"))
    screened = tw("screen", "toy", "--commit", commit, "--json")
    ok(screened)
    items = json.loads(screened.output)["items"]
    hit = [i for i in items if i["path"] == "vendor/inner.git/config"]
    assert [(i["category"], i["text"].split(" =")[0]) for i in hit] == [
        ("auto-run", "worktree"),
        ("auto-run", "fsmonitor"),
    ]
    assert [i["line"] for i in hit] == config_lines(config, b"worktree", b"fsmonitor")
    assert all(i["kind"].startswith("embedded git repository") for i in hit)
    assert not marker.exists()
    assert not (workspace.root / "vendor").exists()  # nothing was checked out anywhere


def config_lines(config: bytes, *keys: bytes) -> list[int]:
    rows = config.split(b"\n")
    return [next(n for n, ln in enumerate(rows, 1) if ln.strip().startswith(k)) for k in keys]


def test_the_screen_wants_all_of_a_repositorys_parts(pinned, tw):
    """Only what git itself would enter: HEAD, config, objects/ and refs/ together."""
    repo = pinned(
        {
            "docs/HEAD": "ref: refs/heads/main\n",
            "docs/config": "[core]\n\tpager = less\n",
            "docs/refs/.keep": "",
            "full/HEAD": "ref: refs/heads/main\n",
            "full/config": "[core]\n\tbare = true\n",
            "full/objects/.keep": "",
            "full/refs/.keep": "",
        }
    )
    data = json.loads(tw("screen", "toy", "--commit", repo.commits[0], "--json").output)
    embedded = [(i["path"], i["line"]) for i in data["items"] if "embedded" in i["kind"]]
    assert embedded == [("full/config", 1)]


# -- 6. hostile quoted text in HTML and on the terminal ---------------------------------------

BREAKERS = (
    "x = '</pre><script>alert(1)</script>'\n"
    "y = ']]>'  # <![CDATA[\n"
    "z = '-->'  # <!-- \n"
    '%%{init: {"securityLevel": "loose"}}%%\n'
    '<div class="mermaid">graph LR; A-->B; click A call alert()</div>\n'
    "red = '\x1b[31mred\x1b[0m' + '\x1b]8;;https://evil.example\x07link\x1b]8;;\x07'\n"
    "flip = 'abc\u202edef'  # the rest of the line would read right to left\n"
)


def test_breakers_in_a_quote_are_text_in_html_and_inert_on_a_terminal(pinned, tw):
    name = "x</span><script>alert(2)</script>.py"
    pinned({name: BREAKERS})
    result = tw("quote", "demo", "SRC-1", "--lines", "1-7", "--id", "Q-b", "--", name)
    ok(result)
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in result.stdout, raw
    assert (
        "<U+001B>[31mred" in result.stdout and "<U+001B>]8;;https://evil.example" in result.stdout
    )
    view = quote_html(info_for("Q-b"), anchor=True)
    for raw in ("<script", "]]>", "-->", "<!--", "<![CDATA[", 'class="mermaid"', "\x1b", "\u202e"):
        assert raw not in view, raw
    assert view.count("<div") == 1  # pygments' own wrapper, nothing from the text
    text = page_text(view)
    marked = {"\x1b": "<U+001B>", "\x07": "<U+0007>", "\u202e": "<U+202E>"}
    for line in BREAKERS.translate(str.maketrans(marked)).splitlines():
        assert line in text, line
    assert "x</span><script>alert(2)</script>.py:1–7" in text


# -- 7. pygments: lexers by name only, no subject text in unescaped options --------------------

# a long run of tokens that several lexers' analyse_text regexes scan repeatedly
GUESS_BAIT = ("<?php #include <a> <!DOCTYPE x> %%% \\begin{x} " * 500) + "\n"


@pytest.fixture
def no_guessing(monkeypatch):
    """Make every way pygments could guess a lexer from content raise."""
    import pygments.lexers
    import pygments.lexers.textfmts

    def boom(*args: object, **kwargs: object) -> object:
        raise AssertionError("pygments was asked to guess from content")

    for name in ("x.h", "x.m", "x.pl", "x.inc", "x.txt", "Makefile"):
        pygments.lexers.find_lexer_class_for_filename(name)  # load candidate lexers
    for cls in list(pygments.lexers._lexer_cache.values()):
        monkeypatch.setattr(cls, "analyse_text", staticmethod(boom))
    # control: with the analysers armed, guessing really does fail
    with pytest.raises(AssertionError):
        pygments.lexers.find_lexer_class_for_filename("x.h", "int x;")
    monkeypatch.setattr(pygments.lexers, "guess_lexer", boom)
    monkeypatch.setattr(pygments.lexers, "guess_lexer_for_filename", boom)
    monkeypatch.setattr(pygments.lexers.textfmts, "guess_lexer", boom)


@pytest.mark.parametrize(
    "path", ["x.h", "x.m", "x.pl", "x.inc", "x.txt", "Makefile", "README", "noext", "a.unknown"]
)
@pytest.mark.slow
def test_the_lexer_comes_from_the_name_never_the_content(no_guessing, path):
    html = code_block(GUESS_BAIT, path, 1)
    assert page_text(html).startswith("1<?php #include <a>")
    shown = terminal_lines(GUESS_BAIT, 1, path, color=True)
    assert "php" in shown


UNESCAPED_OPTIONS = ("title", "cssfile", "classprefix", "filename", "lineanchors", "linespans")


@pytest.mark.slow
def test_subject_text_never_reaches_unescaped_formatter_options(pinned, tw, monkeypatch):
    import tracework.text
    import tracework.views.cards

    seen: list[dict[str, Any]] = []

    def spy(base: type) -> type:
        class Spy(base):  # type: ignore[misc, valid-type]
            def __init__(self, **options: Any) -> None:
                seen.append(options)
                super().__init__(**options)

        return Spy

    monkeypatch.setattr(
        tracework.views.cards, "HtmlFormatter", spy(tracework.views.cards.HtmlFormatter)
    )
    monkeypatch.setattr(tracework.text, "TerminalFormatter", spy(tracework.text.TerminalFormatter))
    name = "<script>alert(1)</script>.py"
    repo = pinned({name: "a = 1\nb = 2\n"})
    ok(tw("quote", "demo", "SRC-1", "--lines", "2-2", "--id", "Q-s", "--", name))
    repo.write(name, "a = 1\nb = 3\n")
    head = repo.commit("edit")
    ok(tw("fetch", "toy"))
    item = next(
        i
        for i in json.loads(tw("check", "demo", "--at", head, "--json").stdout)["items"]
        if i["kind"] == "quote"
    )
    drift = CheckItem(
        **{k: item[k] for k in ("kind", "id", "source", "path", "state")}, diff=item["diff"]
    )
    view = quote_html(info_for("Q-s", drift=drift))
    terminal_lines("b = 2\n", 2, name, color=True)
    # the terminal's only: a quote's code and its diff are written by tracework.views.code,
    # which takes no formatter options at all (the file name only chooses the lexer)
    assert len(seen) == 1
    for options in seen:
        assert not set(options) & set(UNESCAPED_OPTIONS), options
        assert not any("script" in str(v) for v in options.values()), options
    assert "<script" not in view
    assert "&lt;script&gt;alert(1)&lt;/script&gt;.py" in view


# -- one render over the hostile cases --------------------------------------------------------


RENDER_BODY = """src = wb.source("SRC-1")
qs = [src.quote(p, lines=(1, n), id=i) for p, n, i in QUOTES]
wb.component("RT-CMP-hostile", label="Hostile", identity="Odd files.", evidence=qs);
"""


@pytest.mark.slow
def test_one_render_shows_every_hostile_case_safely(pinned, tw, workspace):
    subject = {
        "weights.bin": POINTER,
        "latin1.txt": ENCODED["latin1.txt"],
        NFC: NAMES[NFC],
        NFD: NAMES[NFD],
        "bidi\u202egnp.py": NAMES["bidi\u202egnp.py"],
        "breakers.py": BREAKERS,
    }
    repo = pinned(subject)
    spec = [
        ("weights.bin", 3, "Q-lfs"),
        ("latin1.txt", 2, "Q-latin"),
        (NFC, 1, "Q-nfc"),
        (NFD, 1, "Q-nfd"),
        ("bidi\u202egnp.py", 1, "Q-bidi"),
        ("breakers.py", 7, "Q-breakers"),
    ]
    for path, n, qid in spec:
        ok(tw("quote", "demo", "SRC-1", "--lines", f"1-{n}", "--id", qid, "--", path))
    from tracework.notebook.scaffold import notebook_for

    nb = notebook_for("demo")
    nb.cells.insert(3, nbformat.v4.new_code_cell(f"QUOTES = {spec!r}\n" + RENDER_BODY))
    nbformat.write(nb, workspace.notebooks / "demo.ipynb")
    result = tw("render", "demo", "--json")
    assert result.exit_code == 0, result.output
    page = (workspace.reports / "demo" / repo.commits[0][:12] / "report.html").read_text()
    head, _, body = page.partition("</head>")
    # no script but the page's own theme script, inline in its head
    assert "<script" not in body.lower() and head.lower().count("<script") == 1
    assert '"tracework-theme"' in head
    assert "\x1b" not in page and "\u202e" not in page
    assert "Git LFS pointer" in page
    assert "caf\ufffd cr\ufffdme" in html_module.unescape(page)
    shown = _as_read(page)
    assert "cafe&lt;U+0301&gt;.py:1" in shown and "café.py:1" in shown
    assert "bidi&lt;U+202E&gt;gnp.py" in shown
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page


# -- found in review: each once made tracework hang, crash or lie --------------


@pytest.mark.slow
def test_file_names_are_never_pathspec_magic(pinned, tw):
    name = ":(bogus)x.py"
    repo = pinned({name: "def f():\n    return 1\n", "other.py": "x = 1\n"})
    assert tw("quote", "demo", "SRC-1", name, "--lines", "2-2").exit_code == 0
    repo.write(name, "def f():\n    return 2\n")
    head = repo.commit("edit")
    assert tw("fetch", "toy").exit_code == 0
    result = tw("check", "demo", "--at", head, "--json")
    assert result.exit_code == 1, result.output
    item = next(i for i in json.loads(result.output)["items"] if i["kind"] == "quote")
    assert item["state"] == "changed" and item["new_lines"] == [2, 2]
