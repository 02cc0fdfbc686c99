"""Subjects and mirrors: which URLs ``subject add`` accepts, and what ``fetch`` does.

No test touches the network: remote URLs are only validated (``subject add``);
every fetch reads a local repository built in a temp folder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

from conftest import git, refused, sigint_default
from tracework.cli import main
from tracework.errors import UnsafeInput
from tracework.git.env import SAFE_CONFIG, hardened_env, run_git
from tracework.git.mirror import Mirror
from tracework.git.subjects import check_ref, classify_url
from tracework.workspace import Workspace

# -- helpers -------------------------------------------------------------------------


def subject_files(ws) -> list[str]:
    return sorted(p.name for p in ws.sources.glob("*.toml"))


def mirror_dirs(ws) -> list[str]:
    """Everything in sources/.mirrors except the lock files fetch leaves behind."""
    if not ws.mirrors.exists():
        return []
    return sorted(p.name for p in ws.mirrors.iterdir() if not p.name.endswith(".lock"))


def tip(mirror: Mirror, branch: str) -> str | None:
    """The commit a branch of the mirror names (by its full name)."""
    target = mirror.read_ref(f"refs/heads/{branch}")
    return None if target is None else target.commit


def raw_tree(*entries: tuple[str, bytes, str]) -> bytes:
    """Tree object bytes for (mode, name, 40-hex oid) entries, in the given order."""
    return b"".join(
        mode.encode() + b" " + name + b"\0" + bytes.fromhex(oid) for mode, name, oid in entries
    )


def plant_tree(repo, tree_bytes: bytes) -> str:
    """Point ``main`` at a commit of a hand-made (possibly malformed) tree."""
    tree = git(
        repo.path, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", input=tree_bytes
    ).strip()
    commit = git(
        repo.path,
        "commit-tree",
        "-m",
        "hand-made tree",
        tree,
        env={"GIT_AUTHOR_DATE": "@1767300000 +0000", "GIT_COMMITTER_DATE": "@1767300000 +0000"},
    ).strip()
    git(repo.path, "update-ref", "refs/heads/main", commit)
    return commit


# -- classify_url / check_ref (the rules, unit level) ----------------------------------


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("https://git.example.org/team/lantern.git", "https"),
        ("https://git.example.org:8443/team/lantern", "https"),
        ("ssh://git.example.org/srv/lantern.git", "ssh"),
        ("ssh://deploy@git.example.org:2222/srv/lantern.git", "ssh"),
        ("deploy@git.example.org:team/lantern.git", "ssh"),
        ("git.example.org:team/lantern.git", "ssh"),
        ("/srv/repos/lantern.git", "local"),
        ("../lantern", "local"),
        ("./lantern", "local"),
        ("lantern", "local"),
        ("~/code/lantern", "local"),
    ],
)
def test_classify_url_accepts(url, kind):
    assert classify_url(url) == kind


@pytest.mark.parametrize(
    "url",
    [
        "",
        "ext::sh -c touch% /tmp/owned",
        "EXT::sh -c id",
        "ext:sh",
        "fd::7",
        "fd::7,8",
        "-uhello",
        "--upload-pack=touch /tmp/owned",
        "-oProxyCommand=x",
        "http://git.example.org/lantern.git",
        "git://git.example.org/lantern.git",
        "file:///srv/repos/lantern.git",
        "ftp://git.example.org/lantern.git",
        "https://git.example.org",  # no path
        "https://-x.example.org/lantern",
        "https://git.example.org/lan tern",
        "ssh://-oProxyCommand=x/y",
        "ssh://-oProxyCommand=touch%20owned@host/y",
        "ssh://-l@git.example.org/srv/lantern",
        "git.example.org:-oProxyCommand=x",
        "deploy@git.example.org:--upload-pack=x",
        "lantern\x00.git",
        "lantern\n.git",
        "https://git.example.org/lantern\r",
        "https://git.example.org/lantern\x1b[31m",
        "https://git.example.org/lantern\x7f",
        "/srv/repos/lan\x85tern",
        "transport::/srv/repos/lantern",
    ],
)
def test_classify_url_refuses(url):
    with pytest.raises(UnsafeInput, match="not an accepted subject URL"):
        classify_url(url)


@pytest.mark.parametrize("ref", ["HEAD", "main", "release/2.1", "v1.2.0", "feature_x"])
def test_check_ref_accepts(ref):
    assert check_ref(ref) == ref


@pytest.mark.parametrize(
    "ref",
    ["-x", "--upload-pack=x", "--all", "HEAD~2", "main^", "a..b", "@{-1}", ":/msg", "main/", ""],
)
def test_check_ref_refuses(ref):
    with pytest.raises(UnsafeInput):
        check_ref(ref)


# -- subject add through the CLI ---------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://git.example.org/team/lantern.git",
        "ssh://deploy@git.example.org:2222/srv/lantern.git",
        "deploy@git.example.org:team/lantern.git",
    ],
)
def test_subject_add_remote_urls_are_written_verbatim(tw, workspace, url):
    result = tw("subject", "add", "lantern", url)
    assert result.exit_code == 0, result.output
    text = (workspace.sources / "lantern.toml").read_text()
    assert f'url = "{url}"' in text
    assert 'track = "HEAD"' in text


def test_subject_add_local_non_bare_and_bare(tw, workspace, make_repo):
    repo = make_repo("lantern")
    repo.write("lamp.txt", "wick\n").commit()
    bare = repo.path.parent / "lantern-bare.git"
    git(repo.path.parent, "clone", "-q", "--bare", str(repo.path), str(bare))

    for name, url in (("plain", str(repo.path)), ("bare", str(bare))):
        result = tw("subject", "add", name, url)
        assert result.exit_code == 0, result.output
        assert "(local)" in result.output
    assert subject_files(workspace) == ["bare.toml", "plain.toml"]


def test_subject_add_relative_path_resolves_from_the_workspace_root(tw, workspace, make_repo):
    repo = make_repo("lantern")
    repo.write("lamp.txt", "wick\n").commit()
    rel = os.path.relpath(repo.path, workspace.root)
    assert tw("subject", "add", "lantern", rel, "--track", "main").exit_code == 0
    text = (workspace.sources / "lantern.toml").read_text()
    assert f'url = "{rel}"' in text and 'track = "main"' in text


@pytest.mark.parametrize(
    "url",
    [
        "ext::sh -c touch% owned",
        "fd::3",
        "http://git.example.org/lantern.git",
        "git://git.example.org/lantern.git",
        "file:///srv/repos/lantern.git",
        "ssh://-oProxyCommand=x/y",
        "ssh://-oUser@git.example.org/y",
        "git.example.org:-oProxyCommand=x",
        "https://git.example.org/bell\x07",
        "/srv/repos/lan\ttern",
    ],
)
def test_subject_add_refuses_bad_urls(tw, workspace, url):
    result = tw("subject", "add", "lantern", url)
    refused(result, "not an accepted subject URL", "hint:")
    assert subject_files(workspace) == []


@pytest.mark.parametrize("url", ["-uhello", "--upload-pack=x", "-oProxyCommand=x"])
def test_subject_add_refuses_option_shaped_urls_even_after_double_dash(tw, workspace, url):
    # Without `--`, click itself rejects the unknown option (usage error, exit 2).
    plain = tw("subject", "add", "lantern", url)
    assert plain.exit_code == 2
    assert subject_files(workspace) == []
    # With `--`, the value reaches tracework, which refuses it.
    result = tw("subject", "add", "lantern", "--", url)
    refused(result, "not an accepted subject URL")
    assert subject_files(workspace) == []


def test_subject_add_refuses_a_control_character_and_shows_it_escaped(tw, workspace):
    result = tw("subject", "add", "lantern", "https://git.example.org/x\x1b[2Jy")
    refused(result, "not an accepted subject URL")
    assert "\x1b" not in result.output  # the escape never reaches the terminal raw
    assert subject_files(workspace) == []


def test_subject_add_refuses_a_folder_that_is_not_a_repository(tw, workspace, tmp_path):
    plain = tmp_path / "just-a-folder"
    plain.mkdir()
    (plain / "notes.txt").write_text("no repository here\n")
    result = tw("subject", "add", "lantern", str(plain))
    refused(result, "is not a git repository", str(plain))
    assert subject_files(workspace) == []


def test_subject_add_refuses_a_missing_path_and_a_plain_file(tw, workspace, tmp_path):
    (tmp_path / "notes.txt").write_text("a file\n")
    for url in (str(tmp_path / "nowhere"), str(tmp_path / "notes.txt")):
        refused(tw("subject", "add", "lantern", url), "is not a git repository")
    assert subject_files(workspace) == []


@pytest.mark.parametrize("ref", ["-x", "--upload-pack=x", "HEAD~1", "a..b", "@{-1}"])
def test_subject_add_track_refuses_option_shaped_and_revision_refs(tw, workspace, ref):
    result = tw("subject", "add", "lantern", "https://git.example.org/x.git", f"--track={ref}")
    refused(result, "is not a ref name")
    assert subject_files(workspace) == []


@pytest.mark.parametrize("name", ["../escape", "-x", ".hidden", "a/b", "x.toml"])
def test_subject_add_refuses_bad_names(tw, workspace, name):
    result = tw("subject", "add", "--", name, "https://git.example.org/x.git")
    refused(result, "is not a valid subject name")
    assert subject_files(workspace) == []


def test_a_hand_edited_subject_file_with_a_bad_url_is_refused_at_fetch(tw, workspace):
    (workspace.sources / "lantern.toml").write_text('url = "ext::sh -c id"\ntrack = "HEAD"\n')
    result = tw("fetch", "lantern")
    refused(result, "not an accepted subject URL")
    assert mirror_dirs(workspace) == []


# -- fetch ----------------------------------------------------------------------------


def test_fetch_creates_a_bare_mirror_and_updates_it(tw, workspace, make_repo):
    repo = make_repo("lantern")
    first = repo.write("lamp.txt", "wick\n").commit()
    git(repo.path, "branch", "side")
    assert tw("subject", "add", "lantern", str(repo.path)).exit_code == 0

    created = tw("fetch", "lantern")
    assert created.exit_code == 0, created.output
    assert "mirror created: sources/.mirrors/lantern.git" in created.output
    assert first[:12] in created.output
    mirror = workspace.mirrors / "lantern.git"
    assert mirror_dirs(workspace) == ["lantern.git"]
    assert not (mirror / ".git").exists()
    assert git(mirror, "--git-dir=.", "rev-parse", "--is-bare-repository").strip() == "true"
    # branches and tags only, so that pruning never touches refs/tracework/pins/
    specs = git(mirror, "--git-dir=.", "config", "--get-all", "remote.origin.fetch").split()
    assert specs == ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"]
    assert Mirror(mirror).resolve_commit(first) == first

    second = repo.write("lamp.txt", "wick\noil\n").commit()
    git(repo.path, "branch", "-D", "side")
    assert tip(Mirror(mirror), "main") == first
    updated = tw("fetch", "lantern")
    assert updated.exit_code == 0, updated.output
    assert "mirror updated" in updated.output and second[:12] in updated.output
    assert Mirror(mirror).resolve_commit(second) == second
    assert tip(Mirror(mirror), "main") == second
    refs = git(mirror, "--git-dir=.", "for-each-ref", "--format=%(refname)").split()
    assert refs == ["refs/heads/main"]  # --prune: the deleted branch is gone


def test_fetch_of_a_bare_subject(tw, workspace, make_repo):
    repo = make_repo("lantern")
    first = repo.write("lamp.txt", "wick\n").commit()
    bare = repo.path.parent / "lantern.git"
    git(repo.path.parent, "clone", "-q", "--bare", str(repo.path), str(bare))
    assert tw("subject", "add", "lantern", str(bare)).exit_code == 0
    assert tw("fetch", "lantern").exit_code == 0
    assert Mirror(workspace.mirrors / "lantern.git").resolve_commit(first) == first


def test_fetch_of_an_unknown_subject(tw, workspace):
    assert tw("subject", "add", "known", "https://git.example.org/k.git").exit_code == 0
    result = tw("fetch", "stranger")
    refused(result, "unknown subject 'stranger'", "known")
    assert mirror_dirs(workspace) == []


def test_fetch_when_the_subject_repository_disappeared(tw, workspace, make_repo):
    repo = make_repo("lantern")
    repo.write("lamp.txt", "wick\n").commit()
    assert tw("subject", "add", "lantern", str(repo.path)).exit_code == 0
    import shutil

    shutil.rmtree(repo.path)
    refused(tw("fetch", "lantern"), "is not a git repository")
    assert mirror_dirs(workspace) == []


def test_fetch_of_a_local_path_goes_through_the_transport_not_hard_links(tw, workspace, make_repo):
    repo = make_repo("lantern")
    for n in range(3):
        repo.write(f"part{n}.txt", f"piece {n}\n").commit()
    source_objects = {
        (st.st_dev, st.st_ino)
        for p in (repo.path / ".git" / "objects").rglob("*")
        if p.is_file() and (st := p.stat())
    }
    assert source_objects  # the fixture writes loose objects a --local clone would link
    assert tw("subject", "add", "lantern", str(repo.path)).exit_code == 0
    assert tw("fetch", "lantern").exit_code == 0

    mirror_objects = [p for p in (workspace.mirrors / "lantern.git" / "objects").rglob("*")]
    files = [p for p in mirror_objects if p.is_file()]
    assert files
    assert all(p.stat().st_nlink == 1 for p in files)
    assert not {(p.stat().st_dev, p.stat().st_ino) for p in files} & source_objects
    # objects arrived as a pack (through upload-pack and index-pack with fsck)
    assert any(p.suffix == ".pack" for p in files)
    assert not (workspace.mirrors / "lantern.git" / "objects" / "info" / "alternates").exists()


def _hostile_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A caller environment that would hijack an unhardened git in several ways."""
    marker = tmp_path / "hook-ran"
    trace = tmp_path / "trace.log"
    home = tmp_path / "hostile-home"
    (home / ".config" / "git").mkdir(parents=True)
    # A global config: runs a command on the serving side of every local fetch, and
    # rewrites every absolute path to a place that does not exist.
    hostile = (
        f'[uploadpack]\n\tpackObjectsHook = "touch {marker} && exec"\n'
        f'[url "/nonexistent-elsewhere/"]\n\tinsteadOf = /\n'
    )
    (home / ".gitconfig").write_text(hostile)
    (home / ".config" / "git" / "config").write_text(hostile)
    system = tmp_path / "hostile-system.gitconfig"
    system.write_text(hostile)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(system))
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM", raising=False)
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'url./nonexistent-params/.insteadof'='/'")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "no-such-git-dir"))
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(tmp_path / "no-such-objects"))
    monkeypatch.setenv("GIT_TRACE", str(trace))
    monkeypatch.setenv("GIT_SSH_COMMAND", f"touch {marker}")
    return {"marker": marker, "trace": trace}


def test_a_hostile_caller_environment_does_not_reach_git(
    tw, workspace, make_repo, tmp_path, monkeypatch
):
    repo = make_repo("lantern")
    first = repo.write("lamp.txt", "wick\n").commit()
    assert tw("subject", "add", "lantern", str(repo.path)).exit_code == 0
    traps = _hostile_environment(tmp_path, monkeypatch)

    # Control: the same environment really does hijack a plain git clone.
    control = subprocess.run(
        ["git", "clone", "-q", "--mirror", "--no-local", str(repo.path), str(tmp_path / "c.git")],
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "GIT_DIR"},
    )
    assert control.returncode != 0 or traps["marker"].exists() or traps["trace"].exists()
    traps["marker"].unlink(missing_ok=True)
    traps["trace"].unlink(missing_ok=True)

    created = tw("fetch", "lantern")
    assert created.exit_code == 0, created.output
    second = repo.write("lamp.txt", "wick\noil\n").commit()
    updated = tw("fetch", "lantern")
    assert updated.exit_code == 0, updated.output
    mirror = Mirror(workspace.mirrors / "lantern.git")
    assert mirror.resolve_commit(first) == first
    assert mirror.resolve_commit(second) == second
    assert not traps["marker"].exists()
    assert not traps["trace"].exists()
    assert not (tmp_path / "no-such-git-dir").exists()
    # the caller's environment is given back untouched after the fetch
    assert os.environ["GIT_DIR"] == str(tmp_path / "no-such-git-dir")
    assert os.environ["GIT_TRACE"] == str(traps["trace"])


def test_the_hostile_global_config_hook_is_real(make_repo, tmp_path, monkeypatch):
    """Control for the test above: plain git with only HOME's config runs the hook."""
    repo = make_repo("lantern")
    repo.write("lamp.txt", "wick\n").commit()
    marker = tmp_path / "hook-ran"
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        f'[uploadpack]\n\tpackObjectsHook = "touch {marker} && exec"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["HOME"] = str(home)
    env.pop("XDG_CONFIG_HOME", None)
    subprocess.run(
        ["git", "clone", "-q", "--mirror", "--no-local", str(repo.path), str(tmp_path / "c.git")],
        check=True,
        capture_output=True,
        env=env,
    )
    assert marker.exists()


def test_hardened_env_config_seen_by_git(tmp_path, monkeypatch):
    _hostile_environment(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)  # outside any repository, so no local config either
    env = hardened_env(["file"])
    assert not any(
        k in env
        for k in (
            "GIT_DIR",
            "GIT_CONFIG_PARAMETERS",
            "GIT_TRACE",
            "GIT_CONFIG_SYSTEM",
            "GIT_SSH_COMMAND",
            "GIT_OBJECT_DIRECTORY",
        )
    )
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_CONFIG_GLOBAL"] == "/dev/null"
    assert env["GIT_ALLOW_PROTOCOL"] == "file"
    out = run_git(None, ["config", "--list", "--show-scope"], protocols=["file"]).stdout.decode()
    scopes = {line.split("\t", 1)[0] for line in out.splitlines()}
    assert scopes == {"command"}  # nothing from system, global or a repository
    listed = {line.split("\t", 1)[1].split("=", 1)[0] for line in out.splitlines()}
    assert "uploadpack.packobjectshook" not in listed
    assert not any("insteadof" in key for key in listed)
    for key, value in SAFE_CONFIG:
        assert f"{key.lower()}={value}" in out
    assert "protocol.file.allow=always" in out
    assert "protocol.ssh.allow" not in out and "protocol.ext.allow" not in out


def test_hardened_env_without_protocols_allows_none():
    env = hardened_env()
    assert env["GIT_ALLOW_PROTOCOL"] == "none"
    keys = [env[f"GIT_CONFIG_KEY_{i}"] for i in range(int(env["GIT_CONFIG_COUNT"]))]
    assert "protocol.allow" in keys
    assert not any(
        k.startswith("protocol.") and k.endswith(".allow") and k != "protocol.allow" for k in keys
    )


# -- fetch refuses malformed and unsupported repositories --------------------------------


@pytest.mark.parametrize(
    ("names", "fsck_id"),
    [
        ([b".."], "hasDotdot"),
        ([b".git"], "hasDotgit"),
        ([b".GIT"], "hasDotgit"),
        ([b"twin.txt", b"twin.txt"], "duplicateEntries"),
    ],
)
def test_fetch_refuses_malformed_trees(tw, workspace, make_repo, names, fsck_id):
    repo = make_repo("lantern")
    repo.write("ok.txt", "fine\n").commit()
    blob = git(repo.path, "hash-object", "-w", "--stdin", input=b"payload\n").strip()
    plant_tree(repo, raw_tree(*(("100644", name, blob) for name in names)))
    assert tw("subject", "add", "lantern", str(repo.path)).exit_code == 0

    result = tw("fetch", "lantern")
    refused(result, "fetching subject lantern failed", fsck_id, "fsck")
    assert mirror_dirs(workspace) == []  # neither the mirror nor a temp folder is left


def test_fetch_update_refuses_a_malformed_tree_and_keeps_the_good_mirror(tw, workspace, make_repo):
    repo = make_repo("lantern")
    good = repo.write("ok.txt", "fine\n").commit()
    assert tw("subject", "add", "lantern", str(repo.path)).exit_code == 0
    assert tw("fetch", "lantern").exit_code == 0
    blob = git(repo.path, "hash-object", "-w", "--stdin", input=b"payload\n").strip()
    bad = plant_tree(repo, raw_tree(("100644", b"..", blob)))

    result = tw("fetch", "lantern")
    refused(result, "fetching subject lantern failed", "hasDotdot")
    mirror = Mirror(workspace.mirrors / "lantern.git")
    assert tip(mirror, "main") == good
    assert mirror.object_types([bad])[bad] == "missing"


def test_fetch_refuses_a_sha256_repository_clearly(tw, workspace, tmp_path):
    path = tmp_path / "modern"
    path.mkdir()
    git(path, "init", "-q", "--object-format=sha256", "-b", "main")
    (path / "f.txt").write_text("content\n")
    git(path, "add", "f.txt")
    git(path, "commit", "-q", "-m", "one")
    assert tw("subject", "add", "modern", str(path)).exit_code == 0
    result = tw("fetch", "modern")
    refused(result, "subject modern", "sha256", "SHA-1 repositories only")
    assert mirror_dirs(workspace) == []


def test_a_sha256_mirror_is_refused_when_opened(tw, workspace, tmp_path):
    """A mirror put in place by hand (not by fetch) is refused by every reader too."""
    path = workspace.mirrors / "modern.git"
    path.parent.mkdir(parents=True, exist_ok=True)
    git(tmp_path, "init", "-q", "--bare", "--object-format=sha256", str(path))
    assert tw("subject", "add", "modern", "https://git.example.org/modern.git").exit_code == 0
    assert tw("register", "new", "demo").exit_code == 0
    before = (workspace.registers / "demo.yaml").read_text()
    result = tw(
        "register", "add-source", "demo", "SRC-1", "--subject", "modern", "--commit", "abcd1234"
    )
    refused(result, "sha256", "SHA-1 repositories only")
    assert (workspace.registers / "demo.yaml").read_text() == before


def test_open_mirror_without_fetch_says_to_fetch(tw, workspace, make_repo):
    repo = make_repo("lantern")
    first = repo.write("lamp.txt", "wick\n").commit()
    assert tw("subject", "add", "lantern", str(repo.path)).exit_code == 0
    assert tw("register", "new", "demo").exit_code == 0
    result = tw(
        "register", "add-source", "demo", "SRC-1", "--subject", "lantern", "--commit", first
    )
    refused(result, "has no mirror yet", "tracework fetch lantern")


def test_fetch_follows_a_changed_subject_url(tw, workspace, make_repo):
    old = make_repo("old-home")
    old_commit = old.write("lamp.txt", "wick\n").commit()
    git(old.path, "branch", "only-in-old")
    new = make_repo("new-home")
    new.write("lamp.txt", "wick\n").commit()
    new_commit = new.write("lamp.txt", "wick\nglass\n").commit()
    assert tw("subject", "add", "lantern", str(old.path)).exit_code == 0
    assert tw("fetch", "lantern").exit_code == 0

    # moving a subject is a deliberate edit of its file (`subject add` refuses to)
    (workspace.sources / "lantern.toml").write_text(f'url = "{new.path}"\ntrack = "HEAD"\n')
    result = tw("fetch", "lantern")
    assert result.exit_code == 0, result.output
    mirror = Mirror(workspace.mirrors / "lantern.git")
    assert mirror.resolve_commit(new_commit) == new_commit
    assert tip(mirror, "main") == new_commit
    refs = git(mirror.git_dir, "--git-dir=.", "for-each-ref", "--format=%(refname)").split()
    assert refs == ["refs/heads/main"]  # the old repository's branch is pruned
    url = git(mirror.git_dir, "--git-dir=.", "config", "remote.origin.url").strip()
    assert url == str(new.path.resolve())
    assert old_commit != new_commit


@pytest.mark.parametrize("leftover", ["empty", "objects-only"])
def test_fetch_into_a_broken_mirror_folder_is_a_clear_error(tw, workspace, make_repo, leftover):
    repo = make_repo("lantern")
    repo.write("lamp.txt", "wick\n").commit()
    assert tw("subject", "add", "lantern", str(repo.path)).exit_code == 0
    broken = workspace.mirrors / "lantern.git"
    broken.mkdir(parents=True)
    if leftover == "objects-only":
        (broken / "objects").mkdir()
    result = tw("fetch", "lantern")
    refused(result, "sources/.mirrors/lantern.git is not a git repository", "remove")
    assert broken.is_dir()  # nothing of the user's is deleted behind their back


def test_only_the_protocols_of_the_url_kind_are_allowed(make_repo, tmp_path, monkeypatch):
    repo = make_repo("lantern")
    repo.write("lamp.txt", "wick\n").commit()
    monkeypatch.chdir(tmp_path)
    allowed = run_git(None, ["ls-remote", "--", str(repo.path)], protocols=["file"], check=False)
    assert allowed.returncode == 0 and b"refs/heads/main" in allowed.stdout
    # an https subject's environment cannot read a local path...
    https = run_git(None, ["ls-remote", "--", str(repo.path)], protocols=["https"], check=False)
    assert https.returncode != 0
    assert b"transport 'file' not allowed" in https.stderr
    # ...and no kind's environment runs a remote helper such as ext::
    marker = tmp_path / "ext-ran"
    for kind in (["file"], ["https"], ["ssh"], []):
        ext = run_git(
            None, ["ls-remote", "--", f"ext::sh -c touch% {marker}"], protocols=kind, check=False
        )
        assert ext.returncode != 0
        assert not marker.exists()
    # control: the same URL does run its command once ext is allowed
    run_git(
        None, ["ls-remote", "--", f"ext::sh -c touch% {marker}"], protocols=["ext"], check=False
    )
    assert marker.exists()


def test_credentials_in_an_https_url_are_refused(tw, workspace):
    result = tw("subject", "add", "lantern", "https://reader:tok@git.example.org/team/lantern")
    assert result.exit_code == 2
    assert "credentials" in result.output and "reader:tok" not in result.output
    assert not (workspace.sources / "lantern.toml").exists()


def test_init_inside_a_repository_adds_what_its_gitignore_lacks(tmp_path):
    """A workspace made inside an analyst's repository keeps its .gitignore and gains the
    lines that keep mirrors, locks, compiled copies and reports out of git, once."""
    root = tmp_path / "analyst"
    root.mkdir()
    (root / ".gitignore").write_text("node_modules/\n/reports/*", encoding="utf-8")
    Workspace.init(root)
    text = (root / ".gitignore").read_text(encoding="utf-8")
    assert text == (
        "node_modules/\n/reports/*\n# tracework\n"
        "/sources/.mirrors/\n/registers/.*.lock\n/registers/.*.compiled.json\n"
        "/captures/*/.*.lock\n/captures/*/.*.staging/\n/captures/*/failed-*/\n"
        ".ipynb_checkpoints/\n"
    )
    Workspace.init(root)
    assert (root / ".gitignore").read_text(encoding="utf-8") == text
    git = ["git", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    (root / "sources" / ".mirrors" / "x.git").mkdir(parents=True)
    (root / "sources" / ".mirrors" / "x.git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "registers" / ".r.yaml.compiled.json").write_text("{}")
    status = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".mirrors" not in status and "compiled" not in status


def test_init_makes_git_commit_notebooks_without_outputs(tmp_path):
    """In a repository, init sets up nbstripout: a notebook saved with outputs is
    committed clean (the file on disk keeps them), and JupyterLab's checkpoints are
    ignored.  In none, init makes one; with --no-git, .gitattributes is written and the
    message says exactly what to run."""

    loose = tmp_path / "loose"
    outside = CliRunner().invoke(main, ["init", str(loose), "--no-git"])
    assert outside.exit_code == 0, outside.output
    assert f"run `git init {loose}` and then `tracework init` there again" in outside.output
    assert "filter=nbstripout" in (loose / ".gitattributes").read_text()
    assert not (loose / ".git").exists()

    made = CliRunner().invoke(main, ["init", str(loose)])  # what the message said, in one
    assert made.exit_code == 0, made.output
    assert f"git repository created: {loose}" in made.output
    assert "git strips them as notebooks are committed" in made.output
    again = CliRunner().invoke(main, ["init", str(loose)])  # once made, never made again
    assert "git repository created" not in again.output

    root = tmp_path / "analyst"
    root.mkdir()
    git = ["git", "-C", str(root), "-c", "user.name=A", "-c", "user.email=a@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    result = CliRunner().invoke(main, ["init", str(root)])
    assert result.exit_code == 0, result.output
    assert "git strips them as notebooks are committed" in result.output
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print('hi')", execution_count=3)
    cell.outputs = [nbformat.v4.new_output("stream", text="secret output\n")]
    nb.cells.append(cell)
    nbformat.write(nb, root / "notebooks" / "r.ipynb")
    (root / "notebooks" / ".ipynb_checkpoints").mkdir()
    (root / "notebooks" / ".ipynb_checkpoints" / "r-checkpoint.ipynb").write_text("{}")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "r"], check=True)
    committed = subprocess.run(
        [*git, "show", "HEAD:notebooks/r.ipynb"], capture_output=True, text=True, check=True
    ).stdout
    assert "secret output" not in committed and "print('hi')" in committed
    assert "secret output" in (root / "notebooks" / "r.ipynb").read_text()
    files = subprocess.run([*git, "ls-files"], capture_output=True, text=True, check=True).stdout
    assert ".ipynb_checkpoints" not in files


def test_init_keeps_a_crlf_gitignore_crlf(tmp_path):
    root = tmp_path / "analyst"
    root.mkdir()
    (root / ".gitignore").write_bytes(b"node_modules/\r\n/reports/*\r\n")
    Workspace.init(root)
    assert (root / ".gitignore").read_bytes() == (
        b"node_modules/\r\n/reports/*\r\n# tracework\r\n"
        b"/sources/.mirrors/\r\n/registers/.*.lock\r\n/registers/.*.compiled.json\r\n"
        b"/captures/*/.*.lock\r\n/captures/*/.*.staging/\r\n/captures/*/failed-*/\r\n"
        b".ipynb_checkpoints/\r\n"
    )


# -- fetch under a broken user configuration --------------------------------------------


def _user_env(**extra: str) -> dict[str, str]:
    """The test process's environment without GIT_* (as a user's shell would have it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(extra)
    return env


@pytest.mark.slow
def test_fetch_with_a_malformed_global_gitconfig_works(tw, workspace, make_repo, tmp_path):
    """A broken ~/.gitconfig stops the user's own git (and stopped GitPython, once used
    for fetches, with a traceback); tracework's git reads no global config."""
    repo = make_repo("lantern")
    first = repo.write("lamp.txt", "wick\n").commit()
    assert tw("subject", "add", "lantern", str(repo.path)).exit_code == 0
    home = tmp_path / "broken-home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".gitconfig").write_text("[core\n")
    (home / ".config" / "git" / "config").write_text("[core\n")
    env = _user_env(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    # control: the user's own git fails in that state
    control = subprocess.run(["git", "version"], env=env, capture_output=True)
    assert control.returncode != 0 and b"bad config line 1" in control.stderr

    command = [sys.executable, "-m", "tracework", "fetch", "lantern"]
    for verb in ("created", "updated"):
        proc = subprocess.run(command, cwd=workspace.root, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert f"mirror {verb}" in proc.stdout and first[:12] in proc.stdout
    assert Mirror(workspace.mirrors / "lantern.git").resolve_commit(first) == first


@pytest.mark.slow
def test_fetch_without_git_on_path_is_one_clear_error(tw, workspace, make_repo, tmp_path):
    repo = make_repo("lantern")
    repo.write("lamp.txt", "wick\n").commit()
    assert tw("subject", "add", "lantern", str(repo.path)).exit_code == 0
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "tracework", "fetch", "lantern"],
        cwd=workspace.root,
        env=_user_env(PATH=str(empty)),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "tracework: error: git is not on PATH" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 2  # the message and its hint
    assert mirror_dirs(workspace) == []


# -- the first clone takes branches and tags only ------------------------------------------


@pytest.mark.slow
def test_first_fetch_takes_branches_and_tags_only(tw, workspace, make_repo):
    repo = make_repo("lantern")
    first = repo.write("lamp.txt", "wick\n").commit()
    git(repo.path, "branch", "side")
    git(repo.path, "tag", "-a", "v1", "-m", "v1")
    # a tag on a commit no branch reaches still comes along
    lone = git(repo.path, "commit-tree", "-m", "lone", f"{first}^{{tree}}").strip()
    git(repo.path, "tag", "lone", lone)
    # refs a forge or a working clone carries besides branches and tags
    pull = git(repo.path, "commit-tree", "-p", first, "-m", "pr", f"{first}^{{tree}}").strip()
    git(repo.path, "update-ref", "refs/pull/1/head", pull)
    git(repo.path, "update-ref", "refs/remotes/origin/x", first)
    git(repo.path, "update-ref", f"refs/tracework/pins/{pull}", pull)
    assert tw("subject", "add", "lantern", str(repo.path)).exit_code == 0

    assert tw("fetch", "lantern").exit_code == 0
    mirror = Mirror(workspace.mirrors / "lantern.git")
    refs = git(mirror.git_dir, "--git-dir=.", "for-each-ref", "--format=%(refname)").split()
    assert refs == ["refs/heads/main", "refs/heads/side", "refs/tags/lone", "refs/tags/v1"]
    assert mirror.object_types([pull])[pull] == "missing"  # not even its objects came
    assert mirror.object_types([lone])[lone] == "commit"
    assert mirror.head_branch() == "refs/heads/main"
    assert tip(mirror, "main") == first

    # a pin survives the branch it was on being rewritten and pruned upstream
    second = repo.write("lamp.txt", "wick\noil\n").commit()
    git(repo.path, "branch", "-f", "side", second)
    assert tw("fetch", "lantern").exit_code == 0
    mirror.keep(second)
    git(repo.path, "branch", "-D", "side")
    git(repo.path, "reset", "-q", "--hard", first)
    assert tw("fetch", "lantern").exit_code == 0
    refs = git(mirror.git_dir, "--git-dir=.", "for-each-ref", "--format=%(refname)").split()
    assert refs == [
        "refs/heads/main",
        "refs/tags/lone",
        "refs/tags/v1",
        f"refs/tracework/pins/{second}",
    ]
    assert mirror.resolve_commit(second) == second


# -- subject add never silently replaces a subject -----------------------------------------


def test_subject_add_again_with_the_same_url_and_track_is_a_no_op(tw, workspace, make_repo):
    repo = make_repo("alpha")
    repo.write("a.txt", "a\n").commit()
    assert tw("subject", "add", "alpha", str(repo.path), "--track", "main").exit_code == 0
    path = workspace.sources / "alpha.toml"
    path.write_text(path.read_text() + "# the analyst's own note\n")
    before = path.read_text()
    again = tw("subject", "add", "alpha", str(repo.path), "--track", "main")
    assert again.exit_code == 0, again.output
    assert "tracking main" in again.output
    assert path.read_text() == before


@pytest.mark.parametrize("change", ["url", "track"])
def test_subject_add_refuses_to_replace_a_different_definition(tw, workspace, make_repo, change):
    one, two = make_repo("one"), make_repo("two")
    for repo in (one, two):
        repo.write("a.txt", "a\n").commit()
    assert tw("subject", "add", "alpha", str(one.path)).exit_code == 0
    path = workspace.sources / "alpha.toml"
    before = path.read_text()
    args = [str(two.path)] if change == "url" else [str(one.path), "--track", "main"]
    result = tw("subject", "add", "alpha", *args)
    refused(result, "subject alpha already exists in sources/alpha.toml", "edit")
    assert "another name" in result.output
    assert path.read_text() == before


def test_subject_add_over_an_unreadable_subject_file_is_refused(tw, workspace):
    path = workspace.sources / "alpha.toml"
    path.write_text("url = [1]\n")
    result = tw("subject", "add", "alpha", "https://git.example.org/a.git")
    refused(result, "subject alpha already exists, but sources/alpha.toml: `url` must be")
    assert path.read_text() == "url = [1]\n"


# -- a tracked ref the subject does not have ---------------------------------------------


@pytest.mark.slow
def test_fetch_says_when_the_tracked_ref_is_not_in_the_mirror(tw, workspace, make_repo):
    repo = make_repo("trk")
    first = repo.write("a.txt", "a\n").commit()
    git(repo.path, "tag", "v1")
    assert tw("subject", "add", "trk", str(repo.path), "--track", "nosuch").exit_code == 0

    result = tw("fetch", "trk")
    refused(
        result,
        "subject trk: mirror created (sources/.mirrors/trk.git)",
        "tracked ref nosuch is not in the mirror",
        "branches and tags: main, refs/tags/v1",  # written as track takes them
        "sources/trk.toml",
        "pinned commits can be read meanwhile",
    )
    # what the fetch brought in stays: it is a mistake in the subject, not in the fetch
    mirror = Mirror(workspace.mirrors / "trk.git")
    assert mirror.resolve_commit(first) == first
    refused(tw("fetch", "trk"), "mirror updated", "tracked ref nosuch")

    # a short name means a branch; the message says how to follow the tag of that name
    (workspace.sources / "trk.toml").write_text(f'url = "{repo.path}"\ntrack = "v1"\n')
    refused(
        tw("fetch", "trk"),
        "tracked ref v1 is no branch of the mirror",
        'write track = "refs/tags/v1" in sources/trk.toml',
    )
    (workspace.sources / "trk.toml").write_text(f'url = "{repo.path}"\ntrack = "refs/tags/v1"\n')
    fixed = tw("fetch", "trk")
    assert fixed.exit_code == 0, fixed.output
    assert f"{first[:12]} at its tracked ref" in fixed.output


def test_fetch_of_an_empty_subject_tracking_head_is_not_an_error(tw, workspace, make_repo):
    repo = make_repo("empty")
    assert tw("subject", "add", "empty", str(repo.path)).exit_code == 0
    result = tw("fetch", "empty")
    assert result.exit_code == 0, result.output
    assert "at its tracked ref" not in result.output


# -- hand-edited subject files ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("url = [1]\n", ["`url` must be a string, not a TOML array"]),
        ("url = 1\n", ["`url` must be a string, not a TOML integer"]),
        ("url = {a = 1}\n", ["`url` must be a string, not a TOML table"]),
        ('url = "{repo}"\ntrack = 2\n', ["`track` must be a string, not a TOML integer"]),
        ('url = "{repo}"\ntrack = ["main"]\n', ["`track` must be a string, not a TOML array"]),
        ('url = "{repo}"\ntrack = true\n', ["`track` must be a string, not a TOML boolean"]),
        ('track = "main"\n', ["the subject file has no `url`"]),
        ('url = "{repo}"\ntrak = "main"\n', ['unknown key "trak"']),
        ('url = "{repo}"\ntrack = "a..b"\n', ["'a..b' is not a ref name"]),
        ('url = "ext::sh -c id"\n', ["not an accepted subject URL"]),
        ("url = \n", ["malformed subject file"]),
    ],
)
@pytest.mark.slow
def test_a_hand_edited_subject_file_is_checked_key_by_key(tw, workspace, make_repo, text, words):
    repo = make_repo("lantern")
    repo.write("lamp.txt", "wick\n").commit()
    (workspace.sources / "lantern.toml").write_text(text.replace("{repo}", str(repo.path)))
    result = tw("fetch", "lantern")
    refused(result, "sources/lantern.toml", *words)
    assert "is not a git repository" not in result.output
    assert len(result.output.strip().splitlines()) <= 2  # one message (and a hint)
    assert mirror_dirs(workspace) == []


def test_a_subject_file_without_track_follows_head(tw, workspace, make_repo):
    repo = make_repo("lantern")
    first = repo.write("lamp.txt", "wick\n").commit()
    (workspace.sources / "lantern.toml").write_text(f'url = "{repo.path}"\n')
    result = tw("fetch", "lantern")
    assert result.exit_code == 0, result.output
    assert first[:12] in result.output


# -- a fetch killed outright -----------------------------------------------------------------


def _descendants(pid: int) -> dict[int, str]:
    """Live processes under ``pid`` (Linux), each with its command line."""
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found and _alive(child):
                    cmdline = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
                    found[child] = cmdline.decode(errors="replace")
                    todo.append(child)
    return found


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie no one reaps yet counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_fetch_killed_outright_takes_its_git_processes_along(tw, workspace, make_repo, how):
    """SIGKILL (or SIGTERM, or Ctrl-C's SIGINT) while git clone, upload-pack, pack-objects
    and index-pack all run: none of them outlives tracework, and the next fetch removes
    the temporary clone a killed one left behind (an interrupted one removes its own).

    One blob of the subject is a FIFO in its object store: pack-objects blocks opening it
    after the clone has started index-pack, so every process is there, and stays there,
    when the kill comes (no race with a fast clone)."""
    repo = make_repo("lantern")
    repo.write("lamp.txt", "wick\n").write("stuck.bin", b"blocks the serving side\n").commit()
    blob = git(repo.path, "rev-parse", "HEAD:stuck.bin").strip()
    loose = repo.path / ".git" / "objects" / blob[:2] / blob[2:]
    saved = loose.read_bytes()
    loose.unlink()
    os.mkfifo(loose)
    assert tw("subject", "add", "lantern", str(repo.path)).exit_code == 0
    fetcher = subprocess.Popen(
        [sys.executable, "-m", "tracework", "fetch", "lantern"],
        cwd=workspace.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=sigint_default,  # Ctrl-C does what it does, whatever the shell ignores
    )
    seen: dict[int, str] = {}
    try:
        for _ in range(3000):  # until index-pack waits for the pack (seconds, not a limit)
            seen = _descendants(fetcher.pid)
            if any("index-pack" in cmd for cmd in seen.values()) and any(
                "pack-objects" in cmd for cmd in seen.values()
            ):
                break
            time.sleep(0.01)
        commands = " ".join(seen.values())
        for part in ("clone", "upload-pack", "pack-objects", "index-pack"):
            assert part in commands, (part, seen)
        fetcher.send_signal(how)
        assert fetcher.wait(timeout=60) != 0
        left = list(seen)
        for _ in range(1000):
            left = [pid for pid in left if _alive(pid)]
            if not left:
                break
            time.sleep(0.01)
        assert not left, {pid: seen[pid] for pid in left}
    finally:
        for pid in seen:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        fetcher.kill()
        fetcher.wait()
    stale = [p.name for p in workspace.mirrors.iterdir() if p.name.endswith(".tmp")]
    if how == signal.SIGINT:
        assert stale == []
    else:
        assert len(stale) == 1 and stale[0].startswith(".lantern."), stale

    loose.unlink()
    loose.write_bytes(saved)
    result = tw("fetch", "lantern")
    assert result.exit_code == 0, result.output
    assert mirror_dirs(workspace) == ["lantern.git"]  # the stale clone swept


def test_the_sweep_leaves_other_subjects_temporaries_alone(tw, workspace, make_repo):
    repo = make_repo("lantern")
    repo.write("lamp.txt", "wick\n").commit()
    assert tw("subject", "add", "lantern", str(repo.path)).exit_code == 0
    workspace.mirrors.mkdir(parents=True)
    mine = [".lantern.abcd1234.tmp", ".lantern.x_y0z9k2.tmp"]  # this version's, and mkdtemp's
    others = [".lantern.x.abcd1234.tmp", ".lantern.abcd1234.staging", ".lanternx.abcd1234.tmp"]
    for name in mine + others:
        (workspace.mirrors / name / "m.git").mkdir(parents=True)
    (workspace.mirrors / ".lantern.link1234.tmp").symlink_to(workspace.root)
    assert tw("fetch", "lantern").exit_code == 0
    assert mirror_dirs(workspace) == sorted([*others, ".lantern.link1234.tmp", "lantern.git"])
    assert (workspace.root / "tracework.toml").is_file()


# -- a failed fetch says why ----------------------------------------------------------------

SSH_TAIL = (
    "fatal: Could not read from remote repository.\n\n"
    "Please make sure you have the correct access rights\nand the repository exists.\n"
)


@pytest.mark.parametrize(
    ("stderr", "cause", "words"),
    [
        (
            "ssh: Could not resolve hostname git.example.org: Name or service not known\n"
            + SSH_TAIL,
            "host not found",
            "ssh: Could not resolve hostname git.example.org",
        ),
        (
            "fatal: unable to access 'https://git.example.org/x.git/': Could not resolve "
            "host: git.example.org\n",
            "host not found",
            "Could not resolve host: git.example.org",
        ),
        (
            "ssh: connect to host 192.0.2.1 port 22: Network is unreachable\n" + SSH_TAIL,
            "network unreachable",
            "port 22: Network is unreachable",
        ),
        (
            "fatal: unable to access 'https://192.0.2.1/x.git/': Failed to connect to "
            "192.0.2.1 port 443 after 0 ms: Couldn't connect to server\n",
            "network unreachable",
            "Couldn't connect to server",
        ),
        (
            "fatal: unable to access 'https://git.example.org/x.git/': Proxy CONNECT aborted\n",
            "network unreachable",
            "Proxy CONNECT aborted",
        ),
        (
            "git@git.example.org: Permission denied (publickey).\n" + SSH_TAIL,
            "authentication refused",
            "Permission denied (publickey)",
        ),
        ("Host key verification failed.\n" + SSH_TAIL, "authentication refused", "Host key"),
        (
            "fatal: could not read Username for 'https://git.example.org': terminal prompts "
            "disabled\n",
            "authentication refused",
            "could not read Username",
        ),
        (
            "remote: Invalid username or password.\nfatal: Authentication failed for "
            "'https://git.example.org/x.git/'\n",
            "authentication refused",
            "Authentication failed",
        ),
        (
            "fatal: unable to access 'https://git.example.org/x.git/': The requested URL "
            "returned error: 403\n",
            "authentication refused",
            "error: 403",
        ),
        ("ERROR: Repository not found.\n" + SSH_TAIL, "not a repository", "Repository not found"),
        (
            "remote: Repository not found.\nfatal: repository "
            "'https://git.example.org/x.git/' not found\n",
            "not a repository",
            "Repository not found",
        ),
        (
            "fatal: '/srv/x' does not appear to be a git repository\n" + SSH_TAIL,
            "not a repository",
            "does not appear to be a git repository",
        ),
        (
            "fatal: unable to access 'https://git.example.org/x.git/': SSL certificate "
            "problem: unable to get local issuer certificate\n",
            "server certificate refused",
            "SSL certificate problem",
        ),
        (
            "error: object 0123456789012345678901234567890123456789: hasDotdot: contains "
            "'..'\nfatal: fsck error in packed object\nfatal: index-pack failed\n",
            "fsck refused an object",
            "hasDotdot: contains '..'",
        ),
        (
            "error: unable to create temporary file: Permission denied\n"
            "fatal: failed to write object\n",
            "git failed",
            "Permission denied; fatal: failed to write object",
        ),
    ],
)
def test_a_failed_fetch_names_its_cause_and_its_own_remedy(workspace, stderr, cause, words):
    from tracework.git.subjects import fetch_failure

    for has_mirror in (True, False):
        failure = fetch_failure(stderr.encode(), workspace, "lantern", has_mirror=has_mirror)
        assert (failure.cause, words in failure.words) == (cause, True), failure
        usable = "the mirror and its pins stay usable" in failure.hint
        assert usable == (has_mirror and cause != "fsck refused an object"), failure.hint
        assert ("fsck" in failure.hint) == (cause == "fsck refused an object"), failure.hint
        assert ("no mirror was made" in failure.hint) == (
            not has_mirror and cause != "fsck refused an object"
        )
    if cause in ("not a repository", "git failed"):
        assert "sources/lantern.toml" in failure.hint


@pytest.mark.parametrize(
    ("said", "cause"),
    [
        ("ssh: Could not resolve hostname example.invalid: Name or service not known", "host"),
        ("ssh: connect to host example.invalid port 22: Network is unreachable", "network"),
        ("git@example.invalid: Permission denied (publickey).", "authentication"),
        ("ERROR: Repository not found.", "not a repository"),
    ],
)
@pytest.mark.slow
def test_a_fetch_that_cannot_reach_the_subject_keeps_the_mirror_usable(
    pinned, tw, workspace, tmp_path, monkeypatch, said, cause
):
    """Through a stand-in ssh on PATH that fails the way ssh and forges do (no network):
    the message names the cause in ssh's words, and the pins still read offline."""
    pinned({"lamp.txt": "wick\n"})
    assert tw("register", "add-file", "demo", "SRC-1", "lamp.txt").exit_code == 0
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f"#!/bin/sh\necho '{said}' >&2\nexit 255\n")
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (workspace.sources / "toy.toml").write_text(
        'url = "ssh://example.invalid/toy.git"\ntrack = "main"\n'
    )
    result = tw("fetch", "toy")
    refused(result, f"fetching subject toy failed ({cause}", said)
    assert "fsck" not in result.output
    assert "the mirror and its pins stay usable" in result.output
    assert tw("check", "demo").exit_code == 0


def test_an_https_fetch_through_a_proxy_that_refuses_says_network(tw, workspace, monkeypatch):
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for name in ("https_proxy", "HTTPS_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{port}")
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert tw("subject", "add", "far", "https://example.invalid/far.git").exit_code == 0
    result = tw("fetch", "far")
    refused(result, "failed (network unreachable)", f"127.0.0.1 port {port}")
    assert "no mirror was made" in result.output and "fsck" not in result.output
    assert mirror_dirs(workspace) == []


# -- a subject seeded from a local clone or bundle ------------------------------------------


def _plant_dotdot(path: Path) -> str:
    """Point ``main`` at a commit whose tree holds an entry named '..' (fsck's hasDotdot)."""
    blob = git(path, "hash-object", "-w", "--stdin", input=b"payload\n").strip()
    entry = b"100644 ..\0" + bytes.fromhex(blob)
    tree = git(path, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", input=entry)
    when = {"GIT_AUTHOR_DATE": "@1767300000 +0000", "GIT_COMMITTER_DATE": "@1767300000 +0000"}
    commit = git(path, "commit-tree", "-p", "HEAD", "-m", "dotdot", tree.strip(), env=when)
    git(path, "update-ref", "refs/heads/main", commit.strip())
    return commit.strip()


def test_a_subject_seeded_from_a_clone_or_bundle_keeps_its_url(tw, workspace, make_repo, tmp_path):
    repo = make_repo("lantern")
    first = repo.write("a.txt", "a\n").commit("first")
    url = "https://github.com/example/lantern"
    result = tw("subject", "add", "lantern", url, "--from", str(repo.path))
    assert result.exit_code == 0, result.output
    assert f"mirror created from {repo.path}: sources/.mirrors/lantern.git" in result.output
    assert (
        'url = "https://github.com/example/lantern"'
        in (workspace.sources / "lantern.toml").read_text()
    )
    mirror = workspace.mirrors / "lantern.git"
    assert Mirror(mirror).resolve_commit(first) == first
    config = ["config", "--file", str(mirror / "config"), "remote.origin.url"]
    assert git(tmp_path, *config).strip() == url
    # a bundle carrying a newer commit updates the mirror; the URL stays
    second = repo.write("b.txt", "b\n").commit("second")
    bundle = tmp_path / "lantern.bundle"
    git(repo.path, "bundle", "create", str(bundle), "--all")
    result = tw("fetch", "lantern", "--from", str(bundle))
    assert result.exit_code == 0, result.output
    assert Mirror(mirror).resolve_commit(second) == second
    assert git(tmp_path, *config).strip() == url
    assert not list(workspace.mirrors.glob(".lantern.*.tmp"))  # the scratch clone went
    # the network failing later offers the bundle it was seeded from
    from tracework.git.subjects import fetch_failure

    failure = fetch_failure(
        b"fatal: unable to access 'https://github.com/x/': Could not resolve host: github.com\n",
        workspace,
        "lantern",
        has_mirror=True,
    )
    assert f"`tracework fetch lantern --from {bundle}`" in failure.hint


@pytest.mark.parametrize("as_bundle", [False, True])
def test_a_fetch_from_a_local_source_has_the_network_fetch_s_fsck(
    tw, workspace, make_repo, tmp_path, as_bundle
):
    repo = make_repo("lantern")
    first = repo.write("a.txt", "a\n").commit("first")
    assert tw("subject", "add", "lantern", "https://example.org/lantern").exit_code == 0
    assert tw("fetch", "lantern", "--from", str(repo.path)).exit_code == 0
    bad = _plant_dotdot(repo.path)
    source = repo.path
    if as_bundle:
        source = tmp_path / "bad.bundle"
        git(repo.path, "bundle", "create", str(source), "--all")
    result = tw("fetch", "lantern", "--from", str(source))
    assert result.exit_code == 2
    assert "fsck refused an object" in result.stderr and "hasDotdot" in result.stderr
    assert "--from" not in result.stderr.split("hint:")[1]  # no offer of what just failed
    mirror = Mirror(workspace.mirrors / "lantern.git")
    assert mirror.resolve_commit(first) == first
    with pytest.raises(Exception, match="no commit"):
        mirror.resolve_commit(bad)


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p, "is not a git repository or a git bundle"),  # nothing there
        (lambda p: (p.write_text("# not a bundle\n"), p)[1], "is not a git repository or a"),
        (lambda p: (p.mkdir(), p)[1], "is not a git repository or a git bundle"),
    ],
)
def test_from_refuses_what_is_no_repository_or_bundle(tw, workspace, tmp_path, make, said):
    assert tw("subject", "add", "lantern", "https://example.org/lantern").exit_code == 0
    result = tw("fetch", "lantern", "--from", str(make(tmp_path / "thing")))
    assert result.exit_code == 2 and said in result.stderr, result.output
    assert "Traceback" not in result.output
    assert not (workspace.mirrors / "lantern.git").exists()


def test_a_source_missing_objects_is_named_as_such(tw, workspace, make_repo):
    """A copy of a repository with objects missing (a partial snapshot) made the fetch say
    git's "possible repository corruption on the remote side" and hint at the subject's
    URL, although the URL was never used: the cause is the --from source, and git fsck
    there names what is missing."""
    repo = make_repo("lantern")
    repo.write("wick.txt", "flame\n").commit("one")
    blob = repo.git("rev-parse", "HEAD:wick.txt").strip()
    (repo.path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    assert tw("subject", "add", "lantern", "https://example.org/lantern").exit_code == 0
    result = tw("fetch", "lantern", "--from", str(repo.path))
    refused(result, "objects missing at the source", "`git fsck` there")
    assert "sources/lantern.toml" not in result.stderr  # the URL played no part
    assert not (workspace.mirrors / "lantern.git").exists()


def test_an_unreachable_host_suggests_from(workspace):
    from tracework.git.subjects import fetch_failure

    failure = fetch_failure(
        b"ssh: connect to host git.example.org port 22: Network is unreachable\n",
        workspace,
        "lantern",
        has_mirror=False,
    )
    assert failure.cause == "network unreachable"
    assert "`tracework fetch lantern --from PATH`" in failure.hint


# -- found in review: each once made tracework hang, crash or lie --------------


@pytest.mark.slow
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
