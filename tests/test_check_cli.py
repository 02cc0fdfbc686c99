"""``tracework check`` on the odd entries of a tree, and its human output.

Symlinks (to /etc/passwd, to ``../..``, to a folder), a submodule gitlink, a binary
file and a file over the size cap are registered and verified at the pin; nothing
is followed.  Hashes are compared with what plain git and coreutils compute.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BASE_EPOCH, git
from tracework.drift.check import check_register
from tracework.hashing import LFS_POINTER_HEADER
from tracework.register import store as reg

# -- helpers -------------------------------------------------------------------------


def shell_sha256(repo_path: Path, *git_args: str) -> str:
    """``git <args> | sha256sum`` with real git and coreutils."""
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin"}
    producer = subprocess.Popen(["git", *git_args], cwd=repo_path, stdout=subprocess.PIPE, env=env)
    digest = subprocess.run(
        ["sha256sum"], stdin=producer.stdout, capture_output=True, check=True
    ).stdout.decode()
    assert producer.stdout is not None
    producer.stdout.close()
    assert producer.wait() == 0
    return digest.split()[0]


def column(output: str, index: int) -> str:
    """The text of one table column, its folded rows joined (body rows only)."""
    cells = [
        line.split("│")[index].strip()
        for line in output.splitlines()
        if line.startswith("│") and line.count("│") == 6
    ]
    return "".join(cells)


def add_submodule(repo, rel: str) -> str:
    """A nested repository at ``rel`` with one commit; the next commit records a gitlink."""
    path = repo.path / rel
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "cog.txt").write_text("teeth: 12\n")
    git(path, "add", "cog.txt")
    when = f"@{BASE_EPOCH} +0000"
    git(
        path, "commit", "-q", "-m", "cog", env={"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    )
    return git(path, "rev-parse", "HEAD").strip()


BIG = 4 * 1024 * 1024 + 4096  # just over the default quoting cap


@pytest.fixture
def odd(make_repo, pinned):
    """A subject with links, a submodule, a binary and a big file, pinned as SRC-1."""
    repo = make_repo("odd")
    repo.write("pkg/tool.py", "def spin():\n    return 'round'\n")
    repo.write("img/mark.bin", b"\x89MARK\x00\x01\x02\xff\xfe tail\n")
    repo.write("data/huge.txt", b"0123456789abcdef\n" * (BIG // 17 + 1))
    repo.symlink("links/passwd", "/etc/passwd")
    repo.symlink("links/up", "../..")
    repo.symlink("links/tools", "../pkg")
    repo.symlink("links/tool.py", "../pkg/tool.py")
    gear = add_submodule(repo, "vendor/gear")
    first = repo.commit("odd entries")
    assert repo.git("ls-tree", first, "vendor/gear").startswith("160000 commit " + gear)
    pinned(name="odd", repo=repo)
    repo.gear = gear
    return repo


def files_of(workspace) -> dict:
    return reg.load(workspace.register_file("demo")).git_source("SRC-1").files


# -- symlinks, submodules, binaries: registered and verified, never followed ---------------


@pytest.mark.slow
def test_register_and_check_links_submodule_binary_and_big_file(odd, tw, workspace):
    result = tw(
        "register", "add-file", "demo", "SRC-1", "links", "vendor/gear", "img/*", "data/huge.txt"
    )
    assert result.exit_code == 0, result.output
    assert "(symlink)" in result.output and "(submodule)" in result.output
    assert "(binary)" in result.output
    assert "7 files: 7 newly registered" in result.output

    first = odd.commits[0]
    files = files_of(workspace)
    for link, target in (
        ("links/passwd", "/etc/passwd"),
        ("links/up", "../.."),
        ("links/tools", "../pkg"),
        ("links/tool.py", "../pkg/tool.py"),
    ):
        entry = files[link]
        assert entry.kind == "symlink"
        assert entry.target == target
        assert entry.size == len(target)
        assert entry.sha256 == hashlib.sha256(target.encode()).hexdigest()
        assert entry.sha256 == shell_sha256(odd.path, "show", f"{first}:{link}")
        assert not entry.binary

    gear = files["vendor/gear"]
    assert gear.kind == "submodule"
    assert gear.target == odd.gear
    assert gear.sha256 == hashlib.sha256(odd.gear.encode()).hexdigest()

    mark = files["img/mark.bin"]
    assert mark.kind == "file" and mark.binary is True and mark.target is None
    assert mark.sha256 == shell_sha256(odd.path, "show", f"{first}:img/mark.bin")

    huge = files["data/huge.txt"]
    assert huge.size > BIG and huge.binary is False
    assert huge.sha256 == shell_sha256(odd.path, "show", f"{first}:data/huge.txt")

    check = tw("check", "demo", "--json")
    assert check.exit_code == 0, check.output
    data = json.loads(check.output)
    assert data["ok"] is True
    assert {i["id"]: i["state"] for i in data["items"]} == {path: "verified" for path in files}
    human = tw("check", "demo")
    assert human.exit_code == 0
    assert "files: 7 verified; quotes: none" in human.output


@pytest.mark.slow
def test_the_register_yaml_records_link_targets_and_kinds(odd, tw, workspace):
    assert tw("register", "add-file", "demo", "SRC-1", "links/passwd", "vendor/gear").exit_code == 0
    text = workspace.register_file("demo").read_text()
    assert "kind: symlink" in text and "target: /etc/passwd" in text
    assert "kind: submodule" in text and f"target: {odd.gear}" in text
    # the content of /etc/passwd never reaches the register
    passwd = Path("/etc/passwd")
    if passwd.is_file():
        first_line = passwd.read_text(errors="replace").splitlines()[0]
        assert first_line not in text


@pytest.mark.slow
def test_links_submodules_and_binaries_cannot_be_quoted(odd, tw, workspace):
    before = workspace.register_file("demo").read_text()
    for path, words in (
        ("links/passwd", "symlink"),
        ("links/tools", "symlink"),
        ("vendor/gear", "submodule"),
        ("img/mark.bin", "binary"),
        ("data/huge.txt", "quoting limit"),
    ):
        result = tw("quote", "demo", "SRC-1", path, "--lines", "1-1")
        assert result.exit_code == 2, (path, result.output)
        assert words in result.output
        assert "Traceback" not in result.output
    assert workspace.register_file("demo").read_text() == before


@pytest.mark.slow
def test_a_link_changed_to_a_file_with_the_same_bytes_is_changed(odd, tw):
    assert tw("register", "add-file", "demo", "SRC-1", "links").exit_code == 0
    (odd.path / "links" / "passwd").unlink()
    odd.write("links/passwd", "/etc/passwd")  # a regular file holding the link's text
    (odd.path / "links" / "up").unlink()
    odd.symlink("links/up", "../../..")
    head = odd.commit("links replaced")
    assert tw("fetch", "odd").exit_code == 0
    result = tw("check", "demo", "--at", head, "--json")
    assert result.exit_code == 1
    items = {i["id"]: i for i in json.loads(result.output)["items"]}
    assert items["links/passwd"]["state"] == "changed"
    assert "now a file (registered as a symlink)" in items["links/passwd"]["detail"]
    assert items["links/up"]["state"] == "changed"
    assert items["links/tools"]["state"] == "verified"


@pytest.mark.slow
def test_a_submodule_bump_is_a_changed_file(odd, tw):
    assert tw("register", "add-file", "demo", "SRC-1", "vendor/gear").exit_code == 0
    inner = odd.path / "vendor" / "gear"
    (inner / "cog.txt").write_text("teeth: 14\n")
    when = f"@{BASE_EPOCH + 60} +0000"
    git(
        inner,
        "commit",
        "-q",
        "-am",
        "more teeth",
        env={"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when},
    )
    head = odd.commit("bump gear")
    assert tw("fetch", "odd").exit_code == 0
    result = tw("check", "demo", "--at", head, "--json")
    assert result.exit_code == 1
    (entry,) = json.loads(result.output)["items"]
    assert (entry["id"], entry["state"]) == ("vendor/gear", "changed")


# -- nothing to check ------------------------------------------------------------------


@pytest.mark.slow
def test_a_register_with_a_source_but_nothing_registered_fails(pinned, tw):
    pinned({"a.txt": "alpha\n"})
    human = tw("check", "demo")
    assert human.exit_code == 1
    assert "nothing to check" in human.output
    assert "NOT OK" in human.output
    as_json = tw("check", "demo", "--json")
    assert as_json.exit_code == 1
    data = json.loads(as_json.output)
    assert data["ok"] is False and data["items"] == []


def test_a_register_without_any_source_is_an_input_error(tw):
    assert tw("register", "new", "empty").exit_code == 0
    result = tw("check", "empty")
    assert result.exit_code == 2
    assert "has no source to check" in result.output
    assert "tracework register add-source" in result.output


# -- the human output -------------------------------------------------------------------


CAFE = (
    "class Cafe:\n"
    "    def brew(self, beans):\n"
    "        grounds = beans.grind()\n"
    "        return grounds.soak()\n"
    "\n"
    "    def serve(self):\n"
    "        return 'cup'\n"
)


def test_human_output_at_the_pin(pinned, tw):
    pinned({"cafe.py": CAFE})
    assert tw("quote", "demo", "SRC-1", "cafe.py", "--symbol", "Cafe.brew").exit_code == 0
    result = tw("check", "demo")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "demo · SRC-1 toy at its pin" in out
    assert "Q-cafe-Cafe.brew" in out and "verified" in out
    assert "files: 1 verified; quotes: 1 verified" in out
    assert out.rstrip().endswith("ok")
    assert "Traceback" not in out and "\x1b" not in out


@pytest.mark.slow
def test_human_output_with_drift_is_a_readable_table_and_diff(pinned, tw):
    repo = pinned({"cafe.py": CAFE, "menu.txt": "espresso\nlatte\n"})
    for args in (
        ("cafe.py", "--symbol", "Cafe.brew", "--id", "Q-brew"),
        ("cafe.py", "--lines", "6-7", "--id", "Q-serve"),
        ("menu.txt", "--lines", "2-2", "--id", "Q-latte"),
    ):
        assert tw("quote", "demo", "SRC-1", *args).exit_code == 0
    edited = CAFE.replace("beans.grind()", "beans.grind(fine=True)")
    repo.write("cafe.py", "import time\n" + edited).write("menu.txt", "espresso\n")
    head = repo.commit("finer grind")
    assert tw("fetch", "toy").exit_code == 0

    result = tw("check", "demo", "--at", head)
    assert result.exit_code == 1
    out = result.output
    assert "Traceback" not in out
    assert f"demo · SRC-1 toy at {head[:12]} (pin {repo.commits[0][:12]})" in out
    for header in ("kind", "id", "state", "where now", "detail"):
        assert header in out
    assert "Q-brew changed:" in out
    assert "-        grounds = beans.grind()" in out
    assert "+        grounds = beans.grind(fine=True)" in out
    assert "Q-serve" in out and "moved" in out and "cafe.py:7-8" in out
    assert "Q-latte" in out and "missing" in out
    assert "files: 2 changed; quotes: 1 changed, 1 missing, 1 moved" in out
    assert out.rstrip().endswith("NOT OK")


@pytest.mark.slow
def test_human_output_neutralises_control_characters_in_paths(pinned, tw, monkeypatch):
    name = "odd\x1b[31mred\x07.txt"
    repo = pinned({name: "one\n", "plain.txt": "two\n"})
    result = tw("register", "add-file", "demo", "SRC-1", "*.txt")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "<U+001B>" in result.output
    repo.write(name, "one and a half\n")
    head = repo.commit("edit")
    assert tw("fetch", "toy").exit_code == 0
    human = tw("check", "demo", "--at", head)
    assert human.exit_code == 1
    assert "\x1b" not in human.output and "\x07" not in human.output
    shown = "odd<U+001B>[31mred<U+0007>.txt"
    # at the default width the long id is folded over several rows, never cut short
    assert column(human.output, 2) == shown
    monkeypatch.setenv("COLUMNS", "200")
    wide = tw("check", "demo", "--at", head)
    assert shown in wide.output
    as_json = tw("check", "demo", "--at", head, "--json")
    assert "\x1b" not in as_json.output  # escaped as \u001b by the JSON encoder
    ids = {i["id"] for i in json.loads(as_json.output)["items"]}
    assert name in ids


@pytest.mark.slow
def test_record_appends_a_dated_history_entry(pinned, tw, workspace):
    repo = pinned({"a.txt": "alpha\n"})
    assert tw("register", "add-file", "demo", "SRC-1", "a.txt").exit_code == 0
    assert tw("check", "demo", "--record", "--date", "2026-02-03").exit_code == 0
    repo.write("a.txt", "beta\n")
    head = repo.commit("beta")
    assert tw("fetch", "toy").exit_code == 0
    assert tw("check", "demo", "--at", head, "--record", "--date", "2026-02-04").exit_code == 1
    checks = reg.load(workspace.register_file("demo")).checks
    assert [(c.date, c.source, c.commit, c.counts) for c in checks] == [
        ("2026-02-03", "SRC-1", repo.commits[0], {"verified": 1}),
        ("2026-02-04", "SRC-1", head, {"changed": 1}),
    ]
    before = workspace.register_file("demo").read_bytes()
    alone = tw("check", "demo", "--date", "2026-02-05")  # a date with nothing to date
    assert alone.exit_code == 2 and "--date goes with --record" in alone.stderr
    for date in ("2026-W10-1", "2026-02-30", "20260205"):  # the one date rule
        bad = tw("check", "demo", "--record", "--date", date)
        assert bad.exit_code == 2 and "is not a date" in bad.stderr, bad.output
    assert workspace.register_file("demo").read_bytes() == before


@pytest.mark.slow
def test_an_unreadable_object_in_the_mirror_is_named_not_a_traceback(pinned, tw, workspace):
    repo = pinned({"a.txt": "alpha\n", "b.txt": "beta\n"})
    assert tw("register", "add-file", "demo", "SRC-1", "a.txt", "b.txt").exit_code == 0
    blob = repo.git("rev-parse", f"{repo.commits[0]}:b.txt").strip()
    mirror = workspace.mirrors / "toy.git"
    # explode the pack into loose objects, then lose one blob
    packs = sorted((mirror / "objects" / "pack").glob("*.pack"))
    assert packs
    for pack in packs:
        moved = pack.parent.parent.parent / pack.name
        pack.rename(moved)
        git(mirror, "--git-dir=.", "unpack-objects", "-q", input=moved.read_bytes())
        moved.unlink()
        pack.with_suffix(".idx").unlink()
    (mirror / "objects" / blob[:2] / blob[2:]).unlink()

    result = tw("check", "demo")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"object {blob[:12]} is missing or unreadable" in result.output
    assert "tracework fetch" in result.output


# -- the fast path: no pydantic, and the same judgement as registering ----------------------

# Runs the CLI in a fresh interpreter and reports on stderr whether pydantic was imported.
NO_PYDANTIC_PROBE = """
import sys
from tracework.cli import main
try:
    main(sys.argv[1:])
finally:
    sys.stderr.write("pydantic: " + str("pydantic" in sys.modules) + "\\n")
"""


@pytest.mark.slow
def test_check_never_imports_pydantic_at_the_pin_or_with_drift(pinned, tw, workspace):
    repo = pinned({"cafe.py": CAFE})
    for args in (("--symbol", "Cafe.brew", "--id", "Q-brew"), ("--lines", "6-7", "--id", "Q-s")):
        assert tw("quote", "demo", "SRC-1", "cafe.py", *args).exit_code == 0
    repo.write("cafe.py", "import time\n" + CAFE.replace("grind()", "grind(fine=True)"))
    head = repo.commit("finer grind")
    assert tw("fetch", "toy").exit_code == 0
    for args, code, states in (
        ((), 0, {"verified"}),
        (("--at", head), 1, {"changed", "moved"}),
    ):
        proc = subprocess.run(
            [sys.executable, "-c", NO_PYDANTIC_PROBE, "check", "demo", "--json", *args],
            cwd=workspace.root,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == code, proc.stderr
        assert proc.stderr.endswith("pydantic: False\n"), proc.stderr
        items = json.loads(proc.stdout)["items"]
        assert {i["state"] for i in items if i["kind"] == "quote"} == states


@pytest.mark.slow
def test_the_check_judges_entries_as_registering_does(make_repo, pinned, tw, workspace):
    pointer = LFS_POINTER_HEADER + b"oid sha256:" + b"ab" * 32 + b"\nsize 12345\n"
    repo = make_repo("kinds")
    repo.write("plain.py", "x = 1\n").write("blob.bin", b"\x00\x01binary")
    repo.write("model.bin", pointer).write("almost.bin", pointer + b"#" * 1024)
    repo.symlink("link", "plain.py")
    add_submodule(repo, "vendor/gear")
    repo.commit("every kind")
    pinned(name="kinds", repo=repo)
    assert tw("register", "add-file", "demo", "SRC-1", "*", "vendor/gear").exit_code == 0
    files = reg.load(workspace.register_file("demo")).git_source("SRC-1").files
    assert {path: f.kind for path, f in files.items()} == {
        "plain.py": "file",
        "blob.bin": "file",
        "model.bin": "lfs-pointer",
        "almost.bin": "file",
        "link": "symlink",
        "vendor/gear": "submodule",
    }
    result = tw("check", "demo", "--json")  # each entry judged again, as registering did
    assert result.exit_code == 0, result.output
    assert {i["id"]: i["state"] for i in json.loads(result.output)["items"]} == dict.fromkeys(
        files, "verified"
    )


@pytest.mark.slow
def test_a_validated_register_and_its_data_check_alike(pinned, tw, workspace):
    repo = pinned({"cafe.py": CAFE, "menu.txt": "espresso\nlatte\n"})
    assert tw("quote", "demo", "SRC-1", "cafe.py", "--symbol", "Cafe.brew").exit_code == 0
    assert tw("quote", "demo", "SRC-1", "menu.txt", "--lines", "2-2").exit_code == 0
    repo.write("menu.txt", "espresso\n").write("cafe.py", "\n" + CAFE)
    head = repo.commit("less milk")
    assert tw("fetch", "toy").exit_code == 0
    path = workspace.register_file("demo")
    for at in (None, head):
        by_model = check_register(workspace, reg.load(path), at=at)
        by_data = check_register(workspace, reg.load_data(path), at=at)
        assert by_model.as_json() == by_data.as_json()
    assert {i.state for i in by_data.items} == {"changed", "moved", "missing"}


def test_the_printed_json_is_the_reports_json_object(pinned, tw, workspace):
    """``check --json`` writes its items as it makes them; the bytes are those of the
    report's whole JSON object, at the pin and with drift (a diff, a candidate, a
    non-ASCII path among them)."""
    from tracework.jsonout import dumps

    repo = pinned({"cafe.py": CAFE, "caf\u00e9/menu.txt": "espresso\nlatte\n"})
    assert tw("quote", "demo", "SRC-1", "cafe.py", "--symbol", "Cafe.brew").exit_code == 0
    assert tw("quote", "demo", "SRC-1", "caf\u00e9/menu.txt", "--lines", "2-2").exit_code == 0
    repo.write("caf\u00e9/menu.txt", "latte\nespresso\nlatte\n").write("cafe.py", "\n" + CAFE)
    head = repo.commit("more milk")
    assert tw("fetch", "toy").exit_code == 0
    data = reg.load_data(workspace.register_file("demo"))
    for at in ([], ["--at", head]):
        printed = tw("check", "demo", "--json", *at).stdout_bytes
        report = check_register(workspace, data, at=at[1] if at else None)
        assert printed == (dumps(report.as_json()) + "\n").encode()
    assert {i.state for i in report.items} >= {"moved", "ambiguous"}


def test_documents_are_registered_by_hash_and_checked_again(pinned, tw, workspace, tmp_path):
    pinned({"a.txt": "alpha\n"})
    assert tw("register", "add-file", "demo", "SRC-1", "a.txt").exit_code == 0
    docs = workspace.root / "sources" / "documents"
    docs.mkdir()
    (docs / "spec.pdf").write_bytes(b"%PDF-1.7 a dossier\n")
    expected = hashlib.sha256(b"%PDF-1.7 a dossier\n").hexdigest()
    added = tw("register", "add-document", "demo", "SRC-2", "sources/documents/spec.pdf")
    assert added.exit_code == 0 and expected in added.output
    url = "https://example.org/paper.pdf"
    assert tw("register", "add-document", "demo", "SRC-3", url, "--sha256", "b" * 64).exit_code == 0
    register = reg.load(workspace.register_file("demo"))
    assert register.sources["SRC-2"].model_dump() == {
        "kind": "document",
        "location": "sources/documents/spec.pdf",
        "sha256": expected,
    }
    held = tw("check", "demo")
    assert held.exit_code == 0 and "documents: 1 verified" in held.output
    assert "SRC-3: a URL, not checked" in held.output
    (docs / "spec.pdf").write_bytes(b"%PDF-1.7 another dossier\n")
    changed = tw("check", "demo", "--json")
    assert changed.exit_code == 1
    items = {i["source"]: i for i in json.loads(changed.output)["items"]}
    assert items["SRC-2"]["kind"] == "file" and items["SRC-2"]["state"] == "changed"
    (docs / "spec.pdf").unlink()
    missing = tw("check", "demo")
    assert missing.exit_code == 1 and "sources/documents/spec.pdf: missing" in missing.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["doc.txt", "--sha256", "0" * 64], "hashes to"),
        (["../outside.txt"], "is not inside the workspace"),
        (["https://example.org/x.pdf"], "needs --sha256"),
        (["http://example.org/x.pdf", "--sha256", "0" * 64], "is not an https URL"),
        (["https://user:token@example.org/x", "--sha256", "0" * 64], "credentials"),
        (["doc.txt", "--sha256", "XYZ"], "64 lower-case hex"),
        (["no-such-file.txt"], "cannot be read"),
    ],
)
def test_a_bad_document_is_refused_clearly(pinned, tw, workspace, args, message):
    pinned({"a.txt": "alpha\n"})
    (workspace.root / "doc.txt").write_text("a document\n")
    (workspace.root.parent / "outside.txt").write_text("elsewhere\n")
    before = workspace.register_file("demo").read_bytes()
    result = tw("register", "add-document", "demo", "SRC-2", *args)
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output
    assert workspace.register_file("demo").read_bytes() == before
    assert tw("register", "add-document", "demo", "SRC-1", "doc.txt").exit_code == 2  # taken


@pytest.mark.parametrize(
    "location",
    ["/etc/hostname", "../../../etc/passwd", "file:///etc/shadow", "http://example.org/x", ""],
)
def test_a_hand_edited_document_location_is_a_malformed_register(pinned, tw, workspace, location):
    """The model refuses what add-document refuses, so check never reads outside."""
    pinned({"a.txt": "alpha\n"})
    path = workspace.register_file("demo")
    text = path.read_text().replace(
        "sources:\n",
        f"sources:\n  SRC-9:\n    kind: document\n    location: {json.dumps(location)}\n"
        f"    sha256: {'0' * 64}\n",
        1,
    )
    path.write_text(text)
    result = tw("check", "demo")
    assert result.exit_code == 2 and "SRC-9" in result.output
    assert "Traceback" not in result.output


def test_a_document_check_reads_only_regular_files_inside(pinned, tw, workspace, tmp_path):
    pinned({"a.txt": "alpha\n"})
    docs = workspace.root / "sources" / "documents"
    docs.mkdir()
    (docs / "d.txt").write_text("a document\n")
    assert tw("register", "add-document", "demo", "SRC-2", "sources/documents/d.txt").exit_code == 0
    (docs / "d.txt").unlink()
    outside = tmp_path / "outside.txt"
    outside.write_text("a document\n")  # the same bytes, but outside the workspace
    (docs / "d.txt").symlink_to(outside)
    escaped = json.loads(tw("check", "demo", "--json").output)
    item = next(i for i in escaped["items"] if i["source"] == "SRC-2")
    assert item["state"] == "missing" and "outside the workspace" in item["detail"]
    (docs / "d.txt").unlink()
    os.mkfifo(docs / "d.txt")  # would block a plain open()
    fifo = json.loads(tw("check", "demo", "--json").output)
    item = next(i for i in fifo["items"] if i["source"] == "SRC-2")
    assert item["state"] == "missing" and "not a regular file" in item["detail"]
    assert tw("register", "add-document", "demo", "SRC-3", "sources/documents/d.txt").exit_code == 2


def test_a_register_of_documents_only_is_checked_and_reported(tw, workspace):
    assert tw("register", "new", "docs").exit_code == 0
    (workspace.root / "paper.txt").write_text("findings\n")
    assert tw("register", "add-document", "docs", "SRC-1", "paper.txt").exit_code == 0
    url = "https://example.org/paper.pdf"
    assert tw("register", "add-document", "docs", "SRC-2", url, "--sha256", "c" * 64).exit_code == 0
    out = json.loads(tw("check", "docs", "--json").output)
    assert out["ok"] is True and out["unchecked"] == ["SRC-2"]
    assert [s["kind"] for s in out["sources"]] == ["document", "document"]
    assert [(i["source"], i["state"]) for i in out["items"]] == [("SRC-1", "verified")]
    only = json.loads(tw("check", "docs", "--source", "SRC-1", "--json").output)
    assert [i["source"] for i in only["items"]] == ["SRC-1"]
    (workspace.root / "paper.txt").write_text("other findings\n")
    assert tw("check", "docs").exit_code == 1


# -- hashes asserted by others ---------------------------------------------------------------


@pytest.mark.slow
def test_a_document_asserts_a_hash_and_check_says_whether_it_holds(pinned, tw, workspace):
    import hashlib

    repo = pinned({"graph.py": "NODES = 3\n", "tools.py": "TOOLS = []\n"})
    pin = repo.commits[0]
    (workspace.root / "sources" / "documents").mkdir(parents=True)
    (workspace.root / "sources" / "documents" / "dossier.md").write_text("graph.py: 844d…\n")
    assert tw("register", "add-document", "demo", "SRC-2", "sources/documents/dossier.md"
              ).exit_code == 0  # fmt: skip
    right = hashlib.sha256(b"NODES = 3\n").hexdigest()
    held = tw("register", "assert", "demo", "SRC-1", "graph.py", right, "--by", "SRC-2")
    assert held.exit_code == 0 and "holds" in held.output
    wrong = "ab" * 32
    differs = tw("register", "assert", "demo", "SRC-1", "tools.py", wrong, "--by", "SRC-2")
    assert differs.exit_code == 0 and "differs" in differs.stderr  # said at once
    assert hashlib.sha256(b"TOOLS = []\n").hexdigest() in differs.stderr  # in full
    data = json.loads(tw("check", "demo", "--json").stdout)
    assert data["ok"] is True  # a differing assertion is a finding
    states = {a["path"]: (a["state"], a["by"], a["commit"]) for a in data["assertions"]}
    assert states == {"graph.py": ("holds", "SRC-2", pin), "tools.py": ("differs", "SRC-2", pin)}
    # one document, one claim per file and commit: asserting again replaces it, --required
    # makes a difference fail the check
    again = ("register", "assert", "demo", "SRC-1", "tools.py", wrong, "--by", "SRC-2")
    assert tw(*again, "--required").exit_code == 0
    assert tw("check", "demo").exit_code == 1
    assert len(json.loads(tw("check", "demo", "--json").stdout)["assertions"]) == 2
    # at a newer commit: an assertion about "the file" is checked there; one pinned to a
    # commit is checked at that commit whatever --at says
    repo.write("graph.py", "NODES = 4\n")
    head = repo.commit("more nodes")
    assert tw("fetch", "toy").exit_code == 0
    pinned_to = ("register", "assert", "demo", "SRC-1", "graph.py", right, "--by", "SRC-2")
    assert tw(*pinned_to, "--at-commit", pin).exit_code == 0
    at_head = json.loads(tw("check", "demo", "--at", head, "--json").stdout)["assertions"]
    graph = {(a["commit"], a["state"]) for a in at_head if a["path"] == "graph.py"}
    assert graph == {(head, "differs"), (pin, "holds")}
    bad = tw("register", "assert", "demo", "SRC-1", "graph.py", right, "--by", "SRC-1")
    assert bad.exit_code == 2 and "is not a document source" in bad.stderr


#: a commit a dossier names that this mirror never had (the public history lost it)
LOST = "ab56de9" + "4" * 33


@pytest.mark.slow
def test_an_assertion_about_a_commit_the_mirror_lacks_is_kept_and_compared_at_the_pin(
    pinned, tw, workspace
):
    """A dossier's hashes are about a commit the public mirror no longer has: the
    assertion keeps that commit, says it is absent here, and is compared at the pin — on
    the command line, in --json and on the page."""
    import tracework
    from conftest import refused
    from tracework.records.artefacts import RenderManifest
    from tracework.register import store as reg
    from tracework.render.export import appendix_html

    repo = pinned({"graph.py": "NODES = 3\n", "tools.py": "TOOLS = []\n"})
    pin = repo.commits[0]
    (workspace.root / "dossier.md").write_text(f"at {LOST}: graph.py 844d…\n")
    assert tw("register", "add-document", "demo", "SRC-2", "dossier.md").exit_code == 0
    right = hashlib.sha256(b"NODES = 3\n").hexdigest()
    graph = ("register", "assert", "demo", "SRC-1", "graph.py", right, "--by", "SRC-2")
    # a short id of a commit nobody here has names nothing: the full id is asked for
    refused(tw(*graph, "--at-commit", LOST[:7]), f"no commit {LOST[:7]}", "full id")
    held = tw(*graph, "--at-commit", LOST)
    assert held.exit_code == 0, held.output
    where = f"asserted about {LOST[:12]} (not in this mirror); compared at the pin {pin[:12]}"
    assert f"{where}: holds" in held.stdout
    wrong = "ab" * 32
    tools = ("register", "assert", "demo", "SRC-1", "tools.py", wrong, "--by", "SRC-2")
    differs = tw(*tools, "--at-commit", LOST)
    assert differs.exit_code == 0 and f"{where}: differs" in differs.stderr
    assert f"at_commit: {LOST}" in workspace.register_file("demo").read_text()  # as asserted

    text = tw("check", "demo")
    assert text.exit_code == 0, text.output  # a differing assertion is a finding
    assert f"assertion by SRC-2: graph.py {where}: holds" in text.stdout
    assert f"assertion by SRC-2: tools.py {where}: differs" in text.stdout
    data = json.loads(tw("check", "demo", "--json").stdout)
    found = {
        a["path"]: (a["about"], a["absent"], a["commit"], a["state"]) for a in data["assertions"]
    }
    assert found == {
        "graph.py": (LOST, True, pin, "holds"),
        "tools.py": (LOST, True, pin, "differs"),
    }

    # at a newer commit it is still compared at the pin, not at the commit checked
    repo.write("graph.py", "NODES = 4\n")
    head = repo.commit("more nodes")
    assert tw("fetch", "toy").exit_code == 0
    at_head = json.loads(tw("check", "demo", "--at", head, "--json").stdout)["assertions"]
    assert {(a["path"], a["commit"], a["state"]) for a in at_head} == {
        ("graph.py", pin, "holds"),
        ("tools.py", pin, "differs"),
    }

    # the page says the same, and a required one that differs fails, saying where
    assert tw(*tools, "--at-commit", LOST, "--required").exit_code == 0
    wb = tracework.open("demo")
    q = wb.source("SRC-1").quote("graph.py", lines=(1, 1))
    wb.component("RT-CMP-g", label="G", identity="The graph.", evidence=[q])
    summary = wb.summary()
    assert not summary["ok"]
    assert f"assertion by SRC-2: tools.py {where}: differs (required)" in summary["problems"]
    register = reg.load(workspace.register_file("demo"))
    page = appendix_html(register, wb._kernel_records(), RenderManifest.model_construct(), "", [])
    shown = (
        f'asserted about <code title="{LOST}">{LOST[:12]}</code> (not in this mirror); '
        f'compared at the pin <code title="{pin}">{pin[:12]}</code>'
    )
    assert page.count(shown) == 2, page


# -- found in review: each once made tracework hang, crash or lie --------------


def test_expect_sha256_needs_exactly_one_file(pinned, tw):
    pinned({"dir/a.txt": "a\n", "dir/b.txt": "b\n"})
    result = tw("register", "add-file", "demo", "SRC-1", "dir", "--expect-sha256", "a" * 64)
    assert result.exit_code == 2 and "exactly one file" in result.output


def test_a_bad_bracket_glob_is_a_clear_error(pinned, tw):
    pinned({"x.txt": "x\n"})
    result = tw("register", "add-file", "demo", "SRC-1", "x[z-a]")
    assert result.exit_code == 2 and "not a valid glob" in result.output


# -- after a re-pin: what each quote was recorded at --------------------------------------

SPIN = "def spin(a):\n    b = a + 1\n    return b\n\n\ndef gone():\n    return 2\n"
#: the newer commit: spin's body edited, gone renamed (its anchor is gone, and its content)
SPUN = "def spin(a):\n    b = a + 2\n    return b\n\n\ndef went():\n    return 3\n"


def re_pin(tw, workspace, repo, old: str, new: str) -> None:
    """Steps 1 and 3 of docs/how-to/pin.md: the source's commit and date edited in the
    register, its files registered again; the quotes are not quoted again."""
    path = workspace.register_file("demo")
    date = repo.git("log", "-1", "--format=%cI", new).strip()
    text = path.read_text().replace(f"commit: {old}", f"commit: {new}", 1)  # not the checks'
    path.write_text(re.sub(r"date: '[^']+'", f"date: '{date}'", text, count=1))
    assert tw("register", "add-file", "demo", "SRC-1", "x.py").exit_code == 0


@pytest.fixture
def re_pinned(make_repo, pinned, tw, workspace):
    """x.py written at A; pinned and quoted at M (another file edited); B edits x.py; C
    follows (another file again). The test moves the pin from M to B."""
    repo = make_repo("toy")
    repo.write("x.py", SPIN).write("other.txt", "one\n").commit("first")
    repo.write("other.txt", "two\n").commit("unrelated")
    pinned(repo=repo)
    for symbol in ("spin", "gone"):
        assert tw("quote", "demo", "SRC-1", "x.py", "--symbol", symbol, "--id", f"Q-{symbol}"
                  ).exit_code == 0  # fmt: skip
    repo.write("x.py", SPUN).commit("edit spin, rename gone")
    repo.write("other.txt", "three\n").commit("after")
    assert tw("fetch", "toy").exit_code == 0
    return repo


@pytest.mark.parametrize("recorded", [False, True])
def test_after_a_re_pin_a_diff_names_the_commit_the_quote_was_recorded_at(
    re_pinned, tw, workspace, recorded
):
    """The pin edited in the register (docs/how-to/pin.md): a quote not yet quoted again
    is compared from a commit that holds its text — the newest recorded check's where
    the register has one, else the commit that wrote the version of its file holding it —
    never from the pin itself, which once labelled both sides of its diff with the same commit."""
    a, m, b, c = re_pinned.commits
    if recorded:  # the how-to's last step, at the old pin
        assert tw("check", "demo", "--record", "--date", "2026-01-02").exit_code == 0
    re_pin(tw, workspace, re_pinned, m, b)
    origin = m if recorded else a  # the pin checked, else the commit that wrote the text
    for args, now in (((), b), (("--at", c), c)):
        data = json.loads(tw("check", "demo", "--json", *args).output)
        spin = next(i for i in data["items"] if i["id"] == "Q-spin")
        assert (spin["state"], spin["format_only"]) == ("changed", False), spin
        assert spin["diff"].startswith(
            f"--- x.py:1-3 @ {origin[:12]}\n+++ x.py:1-3 @ {now[:12]}\n"
        ), spin["diff"]
        assert f"recorded at {origin[:12]}, not at the pin" in spin["detail"]
        human = tw("check", "demo", *args).output
        assert f"--- x.py:1-3 @ {origin[:12]}" in human
        assert f"+++ x.py:1-3 @ {now[:12]}" in human


@pytest.mark.parametrize("at_newer", [False, True])
def test_a_quote_whose_anchor_and_content_are_gone_is_missing_not_format_only(
    re_pinned, tw, workspace, at_newer
):
    """Format only means the quote's content still occurs; after a re-pin it was read
    from the pin's own file at the quote's lines, and so always "occurred": a quote whose
    symbol was renamed away was "changed, content, format only"."""
    _a, m, b, c = re_pinned.commits
    re_pin(tw, workspace, re_pinned, m, b)
    args = ("--at", c) if at_newer else ()
    data = json.loads(tw("check", "demo", "--json", *args).output)
    gone = next(i for i in data["items"] if i["id"] == "Q-gone")
    assert (gone["state"], gone["format_only"], gone["diff"]) == ("missing", False, None)
    assert gone["detail"].startswith("anchor gone")
    assert not any(i["format_only"] for i in data["items"])
    human = tw("check", "demo", *args)
    assert human.exit_code == 1
    row = next(line for line in human.output.splitlines() if "Q-gone" in line)
    assert "missing" in row and "anchor gone" in row
    assert "format only" not in human.output


def test_a_quote_the_pin_holds_is_still_checked_from_the_pin(re_pinned, tw, workspace):
    """Quoted again after the re-pin, as the how-to's step 4 says: checked at the pin,
    and from it, as before."""
    _a, m, b, _c = re_pinned.commits
    re_pin(tw, workspace, re_pinned, m, b)
    replaced = ("quote", "demo", "SRC-1", "x.py", "--symbol", "spin", "--id", "Q-spin")
    assert tw(*replaced, "--replace").exit_code == 0
    assert tw("quote", "demo", "--remove", "Q-gone").exit_code == 0
    data = json.loads(tw("check", "demo", "--json").output)
    assert data["ok"] is True
    re_pinned.write("x.py", SPUN.replace("a + 2", "a + 3")).commit("again")
    assert tw("fetch", "toy").exit_code == 0
    d = re_pinned.commits[-1]
    spin = next(
        i
        for i in json.loads(tw("check", "demo", "--json", "--at", d).output)["items"]
        if i["id"] == "Q-spin"
    )
    assert spin["diff"].startswith(f"--- x.py:1-3 @ {b[:12]}\n+++ x.py:1-3 @ {d[:12]}\n")
    assert "recorded at" not in spin["detail"]
