"""``src.repo``: a read-only GitPython ``Repo`` over a subject's mirror.

A mirror's config is read by git whatever the environment says, so a mirror left by an
older version or copied in can name programs that run on the very reads an analyst makes
while exploring history (``git log -p``, ``git blame``, ``git diff``, ``git show``).  Each
key below runs a script of its own, which leaves a marker named after it.  The controls
run plain GitPython (and plain git) over the same armed mirror and see every marker
appear; through ``src.repo`` the same calls leave none, with the armed config in place.
No test touches the network: the lazy fetch goes to a script named as upload-pack.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git as gitpython
import pytest

import tracework
from conftest import Repo, git
from tracework.errors import ReadOnlyRepository
from tracework.git.env import hardened_env
from tracework.git.history import READ_COMMANDS, HistoryRepo, check_read
from tracework.notebook.workbench import Workbench

MISSING = "0123456789012345678901234567890123456789"


def sign(repo: Repo) -> str:
    """Give ``main`` a copy of its newest commit with a (bogus) signature, which showing
    it verifies with ``gpg.program``; returns the signed commit."""
    text = git(repo.path, "cat-file", "commit", "HEAD")
    head, _, message = text.partition("\n\n")
    signature = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----"
    signed = git(
        repo.path,
        "hash-object",
        "-t",
        "commit",
        "-w",
        "--stdin",
        input=f"{head}\n{signature}\n\n{message}".encode(),
    ).strip()
    git(repo.path, "update-ref", "refs/heads/main", signed)
    return signed


def plain_env() -> dict[str, str]:
    """A user's plain git: this test's environment, no system or global config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"})
    return env


@dataclass
class Armed:
    """A subject pinned at a signed commit, its mirror armed; one script per key."""

    wb: Workbench
    subject: Repo
    mirror: Path
    first: str
    signed: str
    markers: Path
    bin: Path

    def fired(self) -> list[str]:
        return sorted(p.name for p in self.markers.iterdir())

    def clear(self) -> None:
        for p in self.markers.iterdir():
            p.unlink()

    def plain(self) -> gitpython.Repo:
        """Plain GitPython over the mirror, as a user would open it."""
        return gitpython.Repo(self.mirror)


#: Each program key: the script it names (leaving a marker of that name when run).
PROGRAMS = {
    "diff.evil.textconv": "textconv",
    "diff.evil.command": "diff-driver",
    "gpg.program": "gpg",
    "filter.evil.smudge": "smudge",
    "filter.evil.clean": "clean",
    "remote.origin.uploadpack": "upload-pack",
    "core.fsmonitor": "fsmonitor",
}


@pytest.fixture
def armed(make_repo, pinned, workspace, tmp_path, monkeypatch) -> Armed:
    subject = make_repo("toy")
    first = subject.write("lamp.txt", "wick\n").write("pkg/a.py", "x = 1\n").commit("first")
    subject.write("lamp.txt", "wick\noil\n").write("pkg/a.py", "x = 2\n").commit("second")
    signed = sign(subject)
    pinned(repo=subject, commit=signed, track="main")
    mirror = workspace.mirror_dir("toy")
    markers, bin_dir = tmp_path / "markers", tmp_path / "bin"
    markers.mkdir()
    bin_dir.mkdir()

    def script(name: str) -> str:
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\ntouch '{markers / name}'\nexit 1\n")
        path.chmod(0o755)
        return str(path)

    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "reference-transaction").write_text(f"#!/bin/sh\ntouch '{markers / 'hook'}'\n")
    (hooks / "reference-transaction").chmod(0o755)
    mailmap = tmp_path / "mailmap"
    mailmap.write_text("Mallory <mallory@example.invalid> Fixture <fixture@example.invalid>\n")
    included = tmp_path / "included.gitconfig"
    git(tmp_path, "config", "--file", str(included), "diff.external", script("external"))
    keys = [(key, script(name)) for key, name in PROGRAMS.items()]
    keys += [
        ("log.showSignature", "true"),
        ("core.hooksPath", str(hooks)),
        ("mailmap.file", str(mailmap)),
        ("color.ui", "always"),
        ("include.path", str(included)),
        ("core.repositoryformatversion", "1"),
        ("extensions.partialClone", "origin"),
        ("remote.origin.promisor", "true"),
    ]
    for key, value in keys:
        git(mirror, "config", "--file", str(mirror / "config"), "--add", key, value)
    (mirror / "info").mkdir(exist_ok=True)
    (mirror / "info" / "attributes").write_text("lamp.txt diff=evil filter=evil\n")
    (mirror / "hooks").mkdir(exist_ok=True)
    shutil.copy(hooks / "reference-transaction", mirror / "hooks" / "reference-transaction")
    for name in ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL"):  # the user's plain git
        monkeypatch.setenv(name, plain_env()[name])
    return Armed(tracework.open("demo"), subject, mirror, first, signed, markers, bin_dir)


def test_the_armed_keys_fire_through_plain_gitpython(armed):
    """Control: each key runs its program, or changes what is read, under plain GitPython
    (or plain git) over the same mirror."""
    plain, first, signed = armed.plain(), armed.first, armed.signed

    def fires(call: Callable[[], Any]) -> list[str]:
        armed.clear()
        with contextlib.suppress(gitpython.GitCommandError):
            call()  # the scripts exit 1: git fails after running them
        return armed.fired()

    assert "textconv" in fires(lambda: plain.git.log("-p", "-1", signed))
    assert "textconv" in fires(lambda: plain.blame(signed, "lamp.txt"))
    assert "diff-driver" in fires(lambda: plain.git.diff(first, signed, "--", "lamp.txt"))
    assert "external" in fires(lambda: plain.git.diff(first, signed, "--", "pkg/a.py"))
    assert "gpg" in fires(lambda: plain.git.log("-1", signed))
    assert "gpg" in fires(lambda: plain.git.show(signed))
    assert "smudge" in fires(lambda: plain.git.cat_file("--filters", f"{signed}:lamp.txt"))
    assert "upload-pack" in fires(lambda: plain.git.cat_file("-e", MISSING))
    assert "hook" in fires(lambda: plain.git.update_ref("refs/heads/x", first))
    armed.clear()
    assert plain.git.log("-1", "--format=%aN", first) == "Mallory"  # mailmap.file
    assert "\x1b[" in plain.git.log("-1", "--oneline", "--decorate", signed)  # color.ui
    plain.close()


def test_the_same_reads_through_src_repo_run_nothing_the_mirror_names(armed):
    repo, first, signed = armed.wb.source("SRC-1").repo, armed.first, armed.signed
    assert isinstance(repo, HistoryRepo) and repo.bare and repo.working_tree_dir is None
    assert repo.head.commit.hexsha == signed  # the commit the notebook reads
    assert [c.summary for c in repo.iter_commits()] == ["second", "first"]
    assert [c.hexsha for c in repo.iter_commits("main", paths="pkg/a.py")] == [signed, first]
    tree = repo.head.commit.tree
    assert sorted(item.path for item in tree.traverse()) == ["lamp.txt", "pkg", "pkg/a.py"]
    assert (tree / "lamp.txt").data_stream.read() == b"wick\noil\n"  # no filter applied
    assert "+oil" in repo.git.log("-p")  # git's own diff, no textconv
    commit = repo.commit(signed)
    patches = {d.b_path: d.diff for d in commit.parents[0].diff(commit, create_patch=True)}
    assert b"+oil" in patches["lamp.txt"] and b"+x = 2" in patches["pkg/a.py"]
    blamed = repo.blame(signed, "lamp.txt")
    assert [(c.hexsha, lines) for c, lines in blamed] == [(first, ["wick"]), (signed, ["oil"])]
    assert "+x = 2" in repo.git.diff(first, signed)  # no diff.external, no driver
    assert "+oil" in repo.git.show(signed)  # no signature verified
    assert repo.git.log("-1", "--format=%aN", first) == "Fixture"  # no mailmap
    assert "\x1b" not in repo.git.log("--oneline", "--decorate")  # no colour
    assert repo.git.cat_file("--filters", f"{signed}:lamp.txt") == "wick\noil"
    with pytest.raises(gitpython.GitCommandError):
        repo.git.cat_file("-e", MISSING)  # absent, and nothing fetched it
    assert repo.commit(first).author.name == "Fixture"
    assert armed.fired() == []


def test_inherited_git_variables_do_not_reach_it(armed, monkeypatch, make_repo, tmp_path):
    decoy = make_repo("decoy")
    decoy.write("decoy.txt", "not the subject\n").commit("decoy")
    fire = armed.bin / "inherited"
    fire.write_text(f"#!/bin/sh\ntouch '{armed.markers / 'inherited'}'\nexit 1\n")
    fire.chmod(0o755)
    inherited = {
        "GIT_DIR": str(decoy.path / ".git"),
        "GIT_COMMON_DIR": str(decoy.path / ".git"),
        "GIT_OBJECT_DIRECTORY": str(decoy.path / ".git" / "objects"),
        "GIT_WORK_TREE": str(decoy.path),
        "GIT_CONFIG_PARAMETERS": f"'diff.external={fire}' 'log.showsignature=true'",
        "GIT_EXTERNAL_DIFF": str(fire),
    }
    for name, value in inherited.items():
        monkeypatch.setenv(name, value)
    # control: plain git in the kernel's environment reads the decoy and runs the program
    plain = subprocess.run(
        ["git", "log", "--format=%s"], env=dict(os.environ), capture_output=True, text=True
    )
    assert plain.stdout == "decoy\n"
    redirecting = ("GIT_DIR", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_WORK_TREE")
    subprocess.run(
        ["git", f"--git-dir={armed.mirror}", "diff", armed.first, armed.signed, "--", "pkg"],
        env={k: v for k, v in os.environ.items() if k not in redirecting},
        capture_output=True,
    )
    assert armed.fired() == ["inherited"]
    armed.clear()

    # what every git it starts sees: a git on PATH that writes its environment down
    real = shutil.which("git")
    assert real
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    spy = tmp_path / "spy"
    spy.mkdir()
    (spy / "git").write_text(f'#!/bin/sh\nenv -0 > "{dumps}/$$"\nexec "{real}" "$@"\n')
    (spy / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{spy}{os.pathsep}{os.environ['PATH']}")

    repo = armed.wb.source("SRC-1").repo
    assert repo.git_dir != inherited["GIT_DIR"] and Path(repo.git_dir).is_dir()
    assert repo.git.log("--format=%s") == "second\nfirst"
    assert "+x = 2" in repo.git.diff(armed.first, armed.signed)
    assert (repo.head.commit.tree / "lamp.txt").data_stream.read() == b"wick\noil\n"
    assert armed.fired() == []
    expected = hardened_env()
    expected["GIT_DIR"] = repo.git_dir
    wanted = {k: v for k, v in expected.items() if k.startswith("GIT_")}
    through_repo = 0
    for dump in sorted(dumps.iterdir()):
        env = dict(e.split("=", 1) for e in dump.read_text().split("\0") if e)
        got = {k: v for k, v in env.items() if k.startswith("GIT_")}
        if "GIT_DIR" not in got:
            continue  # tracework's own read of the mirror's refs (run_git, --git-dir)
        assert got == wanted, dump
        through_repo += 1
    assert through_repo >= 3  # the log, the diff, the cat-file processes


def test_writes_are_refused_and_the_mirror_is_never_written(armed):
    def digest(folder: Path) -> dict[str, str]:
        return {
            str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))
            if p.is_file()
        }

    before = digest(armed.mirror)
    repo = armed.wb.source("SRC-1").repo
    first = armed.first
    refused: list[Callable[[], Any]] = [
        lambda: repo.git.update_ref("refs/heads/x", first),
        lambda: repo.git.tag("x", first),
        lambda: repo.git.branch("x", first),
        lambda: repo.git.gc(),
        lambda: repo.git.fetch("origin"),
        lambda: repo.git.config("core.pager", "x"),
        lambda: repo.git.hash_object("-w", "--stdin"),
        lambda: repo.git.log(output="x.txt"),
        lambda: repo.git.log("--outp=x.txt"),
        lambda: repo.git.diff("--no-index", "a.txt", "b.txt"),
        lambda: repo.git.grep("-nO", "wick", first),
        lambda: repo.git.grep("--open-files-in-pager=sh", "wick", first),
        lambda: repo.git(c="core.pager=x").log(),
        lambda: repo.git.execute("git log", shell=True),
        lambda: repo.git.execute(["sh", "-c", "true"]),
        lambda: repo.git.log(env={"GIT_DIR": str(armed.mirror)}),
        lambda: repo.git.update_environment(GIT_DIR=str(armed.mirror)),
        lambda: repo.create_head("x", first),
        lambda: repo.create_tag("x", first),
        lambda: repo.delete_head("main"),
        lambda: repo.create_remote("evil", "https://example.invalid/x.git"),
        lambda: repo.config_writer(),
        lambda: repo.archive(io.BytesIO()),
    ]
    for call in refused:
        with pytest.raises(ReadOnlyRepository, match=r"src\.repo is read-only"):
            call()
    assert "--outp" not in repo.git.log("--format=%s", "--", "--outp=x")  # a path, after --
    # a write by GitPython's own objects lands in the view, never in the mirror
    gitpython.Head.create(repo, "scratch", first)
    assert "scratch" in [h.name for h in repo.heads]
    assert digest(armed.mirror) == before
    assert armed.fired() == []
    view = Path(repo.git_dir)
    repo.close()
    assert not view.exists()
    again = armed.wb.source("SRC-1").repo  # a new view, without the scratch branch
    assert again is not repo and "scratch" not in [h.name for h in again.heads]


def test_check_read_takes_only_reads():
    check_read(["log", "-p", "--output-indicator-new=+", "--", "--output=x"])
    check_read(["grep", "-n", "-e", "x", "main"])
    check_read(["-c", "diff.mnemonicPrefix=false", "diff-tree", "-p", "a", "b"])
    for args in (
        [],
        ["-c", "core.pager=x", "log"],
        ["-c", "diff.mnemonicPrefix=false", "-c", "core.pager=x", "log"],
        ["--git-dir=/x", "log"],
        ["push"],
        ["log", "--ou=x"],
        ["diff", "--no-ind", "a", "b"],
        ["grep", "-iO", "x"],
    ):
        with pytest.raises(ReadOnlyRepository):
            check_read(args)


def test_the_view_follows_a_fetch_and_is_reused_until_one(pinned, tw):
    subject = pinned({"lamp.txt": "wick\n"}, track="main")
    src = tracework.open("demo").source("SRC-1")
    repo = src.repo
    assert src.repo is repo  # the same refs: the same view
    newer = subject.write("lamp.txt", "wick\noil\n").commit("second")
    assert tw("fetch", "toy").exit_code == 0
    fresh = src.repo
    assert fresh is not repo and not Path(repo.git_dir).exists()
    assert fresh.heads.main.commit.hexsha == newer
    assert fresh.head.commit.hexsha == subject.commits[0]  # still the commit the notebook reads


def test_it_sets_every_path_gitpython_would(armed):
    """HistoryRepo sets the attributes Repo.__init__ sets (without reading the
    environment for them): an upgrade of GitPython that adds one shows here."""
    ours = armed.wb.source("SRC-1").repo
    plain = gitpython.Repo(ours.git_dir)
    assert set(vars(plain)) == set(vars(ours)) - {"mirror", "_removal"}
    for name in ("git_dir", "working_dir", "_working_tree_dir", "_bare", "common_dir"):
        assert getattr(plain, name) == getattr(ours, name), name
    plain.close()


def test_every_command_it_allows_reads_the_view(make_repo, pinned):
    subject = make_repo("toy")
    first = subject.write("lamp.txt", "wick\n").commit("first")
    second = subject.write("lamp.txt", "wick\noil\n").commit("second")
    pinned(repo=subject, track="main")
    repo = tracework.open("demo").source("SRC-1").repo
    calls = {
        "annotate": ("lamp.txt",),
        "blame": (first, "--", "lamp.txt"),
        "cat-file": ("-p", f"{first}:lamp.txt"),
        "cherry": (first, first),
        "count-objects": ("-v",),
        "describe": ("--always", first),
        "diff": (f"{first}^{{tree}}", f"{first}^{{tree}}"),
        "diff-tree": ("-r", first),
        "for-each-ref": (),
        "grep": ("-n", "wick", first),
        "log": ("--format=%s",),
        "ls-tree": ("-r", first),
        "merge-base": (first, first),
        "name-rev": (first,),
        "range-diff": (f"{first}..{second}", f"{first}..{second}"),
        "rev-list": ("--all",),
        "rev-parse": ("HEAD",),
        "shortlog": ("-s", first),
        "show": ("-s", "--format=%H", first),
        "show-ref": (),
        "version": (),
        "whatchanged": ("-1", first),
    }
    assert set(calls) == READ_COMMANDS
    for command, args in calls.items():
        repo.git.execute(["git", command, *args])  # raises GitCommandError on failure
    assert repo.git.grep("-n", "oil", "HEAD") == "HEAD:lamp.txt:2:oil"  # at the pin
    assert repo.git.rev_list("--all").split() == [second, first]
