"""Hostile and broken input found in review: each once made tracework hang, crash or lie."""

from __future__ import annotations

import json
import subprocess

import nbformat
import pytest

from tracework.errors import GitError
from tracework.git.mirror import Mirror
from tracework.notebook.views import markdown
from tracework.text import visible


def test_a_missing_object_among_many_is_reported_not_waited_on(make_repo):
    repo = make_repo("many")
    for n in range(300):
        repo.write(f"f{n}.txt", f"file {n}\n" * 50)
    commit = repo.commit("many files")
    mirror = Mirror(repo.path / ".git")
    oids = [e.oid for e in mirror.tree(commit).values()]
    missing = "0" * 39 + "1"
    # the missing id sorts first, so git still has thousands of bytes queued behind it
    with pytest.raises(GitError, match="missing or unreadable"):
        mirror.read_blobs([missing, *oids] * 20)


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


def test_a_large_rewrite_maps_quickly_and_sensibly(pinned, tw):
    old = "".join(f"value_{n} = {n}\n" for n in range(3000))
    repo = pinned({"big.py": old})
    assert tw("quote", "demo", "SRC-1", "big.py", "--lines", "1500-1500").exit_code == 0
    repo.write("big.py", "".join(f"other_{n} = {n * 7}\n" for n in range(2001)))
    head = repo.commit("rewrite")
    assert tw("fetch", "toy").exit_code == 0
    result = tw("check", "demo", "--at", head, "--json")
    item = next(i for i in json.loads(result.output)["items"] if i["kind"] == "quote")
    assert item["state"] == "changed"  # mapped onto the replacement as a whole


def test_a_pinned_commit_survives_a_force_push_and_gc(pinned, tw, workspace):
    repo = pinned({"a.py": "x = 1\n"})
    assert tw("quote", "demo", "SRC-1", "a.py", "--lines", "1-1").exit_code == 0
    first = repo.commits[0]
    repo.git("checkout", "-q", "--orphan", "rewritten")
    repo.write("a.py", "y = 2\n")
    repo.commit("history rewritten")
    repo.git("branch", "-f", "main", "rewritten")
    repo.git("checkout", "-q", "main")
    repo.git("branch", "-D", "rewritten")
    assert tw("fetch", "toy").exit_code == 0
    mirror = workspace.mirror_dir("toy")
    subprocess.run(
        ["git", f"--git-dir={mirror}", "reflog", "expire", "--expire=now", "--all"], check=True
    )
    subprocess.run(["git", f"--git-dir={mirror}", "gc", "-q", "--prune=now"], check=True)
    assert tw("check", "demo").exit_code == 0
    assert (
        first
        in subprocess.run(
            ["git", f"--git-dir={mirror}", "for-each-ref", "refs/tracework/pins/"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )


def test_expect_sha256_needs_exactly_one_file(pinned, tw):
    pinned({"dir/a.txt": "a\n", "dir/b.txt": "b\n"})
    result = tw("register", "add-file", "demo", "SRC-1", "dir", "--expect-sha256", "a" * 64)
    assert result.exit_code == 2 and "exactly one file" in result.output


def test_a_bad_bracket_glob_is_a_clear_error(pinned, tw):
    pinned({"x.txt": "x\n"})
    result = tw("register", "add-file", "demo", "SRC-1", "x[z-a]")
    assert result.exit_code == 2 and "not a valid glob" in result.output


def test_markdown_images_are_not_rendered():
    assert "<img" not in markdown("![x](https://tracker.example/x.png)")


def test_crlf_line_ends_are_not_shown_as_hidden_characters():
    assert visible("a = 1\r\nb = 2\r\n") == "a = 1\nb = 2\n"
    assert visible("lone\rcr") == "lone<U+000D>cr"


@pytest.fixture
def notebook(pinned, tw, workspace):
    repo = pinned({"a.py": "x = 1\n"})
    path = workspace.notebooks / "demo.ipynb"
    from tracework.notebook.scaffold import notebook_for

    nb = notebook_for("demo")
    nbformat.write(nb, path)
    return repo, path


def test_analysis_date_is_checked_before_a_kernel_starts(notebook, tw, workspace):
    result = tw("render", "demo", "--analysis-date", "yesterday")
    assert result.exit_code == 2 and "YYYY-MM-DD" in result.output
    assert not (workspace.reports / "demo").exists()


def test_a_dead_kernel_is_a_clear_message(notebook, tw, workspace):
    _, path = notebook
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell("import os\nos._exit(1)"))
    nbformat.write(nb, path)
    result = tw("render", "demo")
    assert result.exit_code == 2, result.output
    assert "could not be executed" in result.output or "failed in cell" in result.output
    assert "Traceback" not in result.output


def test_the_shown_text_of_a_non_utf8_quote_must_match_its_bytes(pinned, tw, workspace):
    pinned({"old.txt": "caf\xe9 au lait\n".encode("latin-1")})
    assert tw("quote", "demo", "SRC-1", "old.txt", "--lines", "1-1", "--id", "Q-old").exit_code == 0
    path = workspace.registers / "demo.yaml"
    text = path.read_text()
    assert "raw_b64" in text
    path.write_text(text.replace("au lait", "au poison"))
    result = tw("check", "demo")
    assert result.exit_code == 2 and "does not show its raw_b64 bytes" in result.output
