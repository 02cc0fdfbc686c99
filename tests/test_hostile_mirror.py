"""Hostile mirrors: a mirror's own config never runs a program or redirects a fetch.

A mirror left by an older version, or copied from elsewhere, may carry any config. Each
case below arms the mirror with keys (and files) that name a program or a URL; the
control runs plain git against that same mirror and sees it FIRE (a marker file
appears, a decoy repository answers, a proxy is contacted, pins are pruned, fsck lets a
malformed tree in); through ``tracework fetch`` the same mirror is INERT, and the key
is gone from its config.  Cases marked ``env_inert`` are also inert under tracework's
git environment alone, with the armed config left in place: the commands that only
read a mirror (which never rewrite its config) rely on that, and a last test runs them
against a mirror armed with every key that concerns them.

No test touches the network: remote URLs go to a fake ``ssh`` on PATH or to proxies
listening on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from conftest import Repo, git
from tracework.git.env import hardened_env
from tracework.git.mirror import Mirror
from tracework.workspace import Workspace

Transport = Literal["local", "ssh", "https"]
# what firing looks like: the marker appears, the decoy's commit (or a push) reaches the
# decoy or the mirror, the mirror's proxy is contacted, the pins are pruned, or the
# malformed commit gets past fsck
Fired = Literal["marker", "decoy", "decoy-push", "proxy", "pins", "malformed"]

SSH_URL = "ssh://example.invalid/toy.git"
HTTPS_URL = "https://example.invalid/toy.git"
FETCH = ("fetch", "origin")
PUSH = ("push", "origin", "refs/heads/main:refs/heads/pushed")
CREDENTIAL = ("credential", "fill")
CREDENTIAL_INPUT = b"protocol=https\nhost=example.invalid\n\n"


@dataclass(frozen=True)
class Case:
    """Keys armed in the mirror's config (``{fire}``, ``{decoy}``, ``{subject}``,
    ``{mirror}``, ``{include}``, ``{hooks}``, ``{skiplist}``, ``{proxy}`` are filled in),
    the plain git command that shows them firing, and what tracework does instead."""

    keys: tuple[tuple[str, str], ...]
    control: tuple[str, ...] = FETCH
    fired: Fired = "marker"
    transport: Transport = "local"
    env_inert: bool = True
    refused: tuple[str, ...] = ()  # tracework refuses the mirror (these words), not repairs it
    files: tuple[str, ...] = ()  # files armed in the mirror: "alternates", "hook"
    malformed: bool = False  # the subject's new commit holds a tree named '..'
    reader: bool = False  # the control only reads (tracework reads with no protocol allowed)
    replace: bool = False  # the keys replace the values of the same name (else: added)


CASES: dict[str, Case] = {
    # what a fetch runs on the serving side, or instead of a transport
    # git keeps the first uploadpack and receivepack it reads, the repository's: an
    # override in the environment loses, so these are disarmed by the rewrite alone
    "remote.origin.uploadpack": Case((("remote.origin.uploadpack", "{fire}"),), env_inert=False),
    "remote.origin.receivepack": Case(
        (("remote.origin.receivepack", "{fire}"),), control=PUSH, env_inert=False
    ),
    "remote.origin.vcs": Case((("remote.origin.vcs", "evil"),)),
    "core.sshCommand": Case((("core.sshCommand", "{fire}"),), transport="ssh"),
    "core.gitProxy": Case(
        (
            ("url.git://example.invalid/toy.git.insteadOf", "{subject}"),
            ("core.gitProxy", "{fire}"),
        )
    ),
    "core.alternateRefsCommand": Case(
        (("core.alternateRefsCommand", "{fire}"),),
        files=("alternates",),
        env_inert=False,
        refused=("borrows objects from another repository", "objects/info/alternates"),
    ),
    "core.hooksPath": Case((("core.hooksPath", "{hooks}"),)),
    "hooks/reference-transaction": Case((), files=("hook",)),
    # where a fetch goes
    "remote.origin.url": Case(
        (("remote.origin.url", "{decoy}"),), fired="decoy", env_inert=False, replace=True
    ),
    "url.<base>.insteadOf": Case(
        (("url.{decoy}.insteadOf", "{subject}"),), fired="decoy", env_inert=False
    ),
    "url.<base>.pushInsteadOf": Case(
        (("url.{decoy}.pushInsteadOf", "{subject}"),),
        control=PUSH,
        fired="decoy-push",
        env_inert=False,
    ),
    "remote.origin.fetch": Case(
        (("remote.origin.fetch", "+refs/*:refs/*"),),
        control=("fetch", "--prune", "origin"),
        fired="pins",
        env_inert=False,
    ),
    "protocol.<name>.allow": Case(
        (("url.ext::{fire}.insteadOf", "{subject}"), ("protocol.ext.allow", "always"))
    ),
    "protocol.allow": Case(
        (("url.ext::{fire}.insteadOf", "{subject}"), ("protocol.allow", "always"))
    ),
    "http.proxy": Case(
        (("http.proxy", "{proxy}"),), fired="proxy", transport="https", env_inert=False
    ),
    "http.<url>.proxy": Case(
        (("http.https://example.invalid/.proxy", "{proxy}"),),
        fired="proxy",
        transport="https",
        env_inert=False,
    ),
    "remote.origin.proxy": Case(
        (("remote.origin.proxy", "{proxy}"),), fired="proxy", transport="https", env_inert=False
    ),
    "credential.helper": Case(
        (("credential.helper", "{fire}"),), control=CREDENTIAL, transport="https"
    ),
    "credential.<url>.helper": Case(
        (("credential.https://example.invalid.helper", "{fire}"),),
        control=CREDENTIAL,
        transport="https",
    ),
    "core.askPass": Case((("core.askPass", "{fire}"),), control=CREDENTIAL, transport="https"),
    # config brought in from elsewhere
    # (the file included names an uploadpack)
    "include.path": Case((("include.path", "{include}"),), env_inert=False),
    "includeIf.gitdir:<mirror>.path": Case(
        (("includeIf.gitdir:{mirror}.path", "{include}"),), env_inert=False
    ),
    "includeIf.onbranch:main.path": Case(
        (("includeIf.onbranch:main.path", "{include}"),), env_inert=False
    ),
    # objects fetched from elsewhere whenever one is missing
    "extensions.partialClone": Case(
        (
            ("core.repositoryformatversion", "1"),
            ("extensions.partialClone", "origin"),
            ("remote.origin.promisor", "true"),
            ("remote.origin.uploadpack", "{fire}"),
        ),
        control=("cat-file", "-e", "0123456789012345678901234567890123456789"),
        refused=("sets extensions.partialclone", "not a mirror tracework made"),
        reader=True,
    ),
    # fsck switched off for one check, or for one object: neither names a program, but
    # each lets in the trees fsck exists to refuse, and no override can unset them
    "fetch.fsck.<check>": Case(
        (("fetch.fsck.hasDotdot", "ignore"),),
        control=("-c", "transfer.fsckObjects=true", *FETCH),
        fired="malformed",
        env_inert=False,
        refused=("fsck refused an object", "hasDotdot"),
        malformed=True,
    ),
    "fetch.fsck.skipList": Case(
        (("fetch.fsck.skipList", "{skiplist}"),),
        control=("-c", "transfer.fsckObjects=true", *FETCH),
        fired="malformed",
        env_inert=False,
        refused=("fsck refused an object", "hasDotdot"),
        malformed=True,
    ),
}


# -- the armed mirror -------------------------------------------------------------------


class Listener:
    """A TCP server on 127.0.0.1 that records what each connection sends first, then
    closes it: a proxy that answers nothing, so a fetch through it fails at once."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.received: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            with conn:
                conn.settimeout(5)
                try:
                    self.received.append(conn.recv(4096))
                except OSError:
                    self.received.append(b"")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() in the thread
        self.sock.close()
        self._thread.join(timeout=5)


@dataclass
class Armed:
    """A subject fetched once (its first commit pinned), a newer commit upstream, a decoy
    repository, and everything a case needs to arm the mirror and tell if it fired."""

    ws: Workspace
    tw: Callable[..., Any]
    subject: Repo
    decoy: Repo
    decoy_commit: str
    new_commit: str
    marker: Path
    bin: Path
    include: Path
    hooks: Path
    skiplist: Path
    ssh_log: Path
    mirror_proxy: Listener
    user_proxy: Listener
    values: dict[str, str] = field(default_factory=dict)

    @property
    def mirror(self) -> Path:
        return self.ws.mirror_dir("toy")

    def arm(self, case: Case) -> None:
        for key, value in case.keys:
            key, value = key.format(**self.values), value.format(**self.values)
            how = "--replace-all" if case.replace else "--add"
            git(self.mirror, "config", "--file", str(self.mirror / "config"), how, key, value)
        if "alternates" in case.files:
            (self.mirror / "objects" / "info").mkdir(exist_ok=True)
            alternates = self.mirror / "objects" / "info" / "alternates"
            alternates.write_text(f"{self.decoy.path / '.git' / 'objects'}\n")
        if "hook" in case.files:
            (self.mirror / "hooks").mkdir(exist_ok=True)
            hook = self.mirror / "hooks" / "reference-transaction"
            hook.write_text(fire_script(self.marker))
            hook.chmod(0o755)

    def fired(self, kind: Fired) -> bool:
        if kind == "marker":
            return self.marker.exists()
        if kind == "decoy":
            return has_object(self.mirror, self.decoy_commit)
        if kind == "decoy-push":
            return "refs/heads/pushed" in git(self.decoy.path, "for-each-ref")
        if kind == "proxy":
            return bool(self.mirror_proxy.received)
        if kind == "pins":
            return "refs/tracework/pins/" not in git(self.mirror, "--git-dir=.", "for-each-ref")
        return has_object(self.mirror, self.new_commit)  # "malformed": it got past fsck

    def point_subject_at(self, transport: Transport) -> None:
        """A deliberate edit of the subject file: the same subject, served over ssh or
        https (reached through the fake ssh on PATH, or the user's proxy)."""
        url = {"local": str(self.subject.path), "ssh": SSH_URL, "https": HTTPS_URL}[transport]
        (self.ws.sources / "toy.toml").write_text(f'url = {json.dumps(url)}\ntrack = "main"\n')


def fire_script(marker: Path) -> str:
    return f"#!/bin/sh\ntouch '{marker}'\nexit 1\n"


def has_object(git_dir: Path, oid: str) -> bool:
    return (
        subprocess.run(
            ["git", f"--git-dir={git_dir}", "cat-file", "-e", oid],
            env=plain_git_env(),
            capture_output=True,
        ).returncode
        == 0
    )


def plain_git_env() -> dict[str, str]:
    """The environment of a user's plain git (this test's PATH included), with no system
    or global config of the machine running the tests."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"})
    return env


def run_control(
    armed: Armed, case: Case, env: dict[str, str]
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", f"--git-dir={armed.mirror}", *case.control],
        input=CREDENTIAL_INPUT if case.control == CREDENTIAL else None,
        env=env,
        capture_output=True,
        timeout=60,
    )


def plant_malformed_commit(repo: Repo) -> str:
    """Point ``main`` at a commit whose tree holds an entry named '..' (fsck's
    hasDotdot); returns the commit and writes nothing else."""
    blob = git(repo.path, "hash-object", "-w", "--stdin", input=b"payload\n").strip()
    entry = b"100644 ..\0" + bytes.fromhex(blob)
    tree = git(
        repo.path, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", input=entry
    ).strip()
    when = {"GIT_AUTHOR_DATE": "@1767300000 +0000", "GIT_COMMITTER_DATE": "@1767300000 +0000"}
    commit = git(repo.path, "commit-tree", "-p", "HEAD", "-m", "dotdot", tree, env=when).strip()
    git(repo.path, "update-ref", "refs/heads/main", commit)
    return commit


@pytest.fixture
def make_armed(
    make_repo: Callable[[str], Repo],
    pinned: Callable[..., Repo],
    tw: Callable[..., Any],
    workspace: Workspace,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Callable[[Case], Armed]]:
    listeners: list[Listener] = []

    def factory(case: Case) -> Armed:
        subject = pinned({"lamp.txt": "wick\n"}, track="main")
        decoy = make_repo("decoy")
        decoy_commit = decoy.write("decoy.txt", "not the subject\n").commit("decoy")
        if case.malformed:
            new = plant_malformed_commit(subject)
        else:
            new = subject.write("lamp.txt", "wick\noil\n").commit("second")
        marker = tmp_path / "fired"
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        ssh_log = tmp_path / "ssh.log"
        for name, text in (
            ("fire", fire_script(marker)),
            ("git-remote-evil", fire_script(marker)),
            (
                "ssh",
                f"#!/bin/sh\nprintf '%s\\n' \"$@\" >> '{ssh_log}'\n"
                "echo 'ssh: Could not resolve hostname example.invalid: Name or service not "
                "known' >&2\nexit 255\n",
            ),
        ):
            (bin_dir / name).write_text(text)
            (bin_dir / name).chmod(0o755)
        hooks = tmp_path / "hooks"
        hooks.mkdir()
        (hooks / "reference-transaction").write_text(fire_script(marker))
        (hooks / "reference-transaction").chmod(0o755)
        include = tmp_path / "included.gitconfig"
        git(
            tmp_path,
            "config",
            "--file",
            str(include),
            "remote.origin.uploadpack",
            str(bin_dir / "fire"),
        )
        skiplist = tmp_path / "skiplist"
        tree = git(subject.path, "rev-parse", f"{new}^{{tree}}").strip()
        skiplist.write_text(f"{tree}\n")
        mirror_proxy, user_proxy = Listener(), Listener()
        listeners.extend((mirror_proxy, user_proxy))
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        for name in ("https_proxy", "HTTPS_PROXY"):
            monkeypatch.setenv(name, user_proxy.url)  # the user's own proxy, which is honoured
        for name in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
            monkeypatch.delenv(name, raising=False)
        armed = Armed(
            workspace,
            tw,
            subject,
            decoy,
            decoy_commit,
            new,
            marker,
            bin_dir,
            include,
            hooks,
            skiplist,
            ssh_log,
            mirror_proxy,
            user_proxy,
        )
        armed.values = {
            "fire": str(bin_dir / "fire"),
            "decoy": str(decoy.path),
            "subject": str(subject.path.resolve()),
            "mirror": str(armed.mirror),
            "include": str(include),
            "hooks": str(hooks),
            "skiplist": str(skiplist),
            "proxy": mirror_proxy.url,
        }
        return armed

    yield factory
    for listener in listeners:
        listener.close()


# -- every key: it fires with plain git, it is inert through tracework --------------------


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(CASES))
def test_an_armed_mirror_is_inert_through_fetch(make_armed, key):
    case = CASES[key]
    armed = make_armed(case)
    armed.point_subject_at(case.transport)
    armed.arm(case)

    result = armed.tw("fetch", "toy")
    assert "Traceback" not in result.output
    assert not armed.fired(case.fired), result.output
    assert not armed.marker.exists(), result.output
    assert not armed.mirror_proxy.received
    if case.refused:
        assert result.exit_code == 2, result.output
        for word in case.refused:
            assert word in result.output, (word, result.output)
    elif case.transport == "local":
        assert result.exit_code == 0, result.output
        assert has_object(armed.mirror, armed.new_commit)  # from the subject, as asked
        assert not has_object(armed.mirror, armed.decoy_commit)
        named = [k for k, _ in case.keys if k not in ("remote.origin.url", "remote.origin.fetch")]
        said = "mirror config rewritten; removed keys tracework never sets" in result.output
        assert said == bool(named), result.output
    else:  # the fetch went out the way the subject file and the user's environment say
        assert result.exit_code == 2, result.output
        if case.transport == "ssh":
            assert "host not found" in result.output
            assert "BatchMode=yes" in armed.ssh_log.read_text()
        else:
            assert any(b"example.invalid:443" in got for got in armed.user_proxy.received)
    if not case.refused:
        config = git(armed.mirror, "config", "--file", "config", "--list")
        for armed_key, value in case.keys:
            line = f"{armed_key}={value}".format(**armed.values)
            assert line.lower() not in config.lower()

    # control: the same mirror, armed again, fires with plain git (the subject moves on,
    # so that the control's fetch has refs to update and the hooks something to see)
    if not case.malformed:
        armed.subject.write("lamp.txt", "wick\noil\nglass\n").commit("third")
    armed.arm(case)
    run_control(armed, case, plain_git_env())
    assert armed.fired(case.fired), f"the {key} trap did not fire with plain git"

    if case.env_inert:
        # tracework's git environment alone disarms it, armed config and all
        armed.marker.unlink(missing_ok=True)
        protocols = {"local": ["file"], "ssh": ["ssh"], "https": ["https"]}[case.transport]
        if case.reader:
            protocols = []
        assert not armed.fired(case.fired)
        run_control(armed, case, hardened_env(protocols))
        assert not armed.fired(case.fired), f"{key} fired under tracework's git environment"


def test_every_key_tracework_does_not_set_is_removed_and_named(make_armed):
    """Keys that name a file, a header or a program for transports this test cannot
    reach (cookies, keys and certificates sent to the server, ssh variants, editors,
    signing programs) are removed from the config before a fetch, like every other key
    tracework never sets; the format keys stay."""
    armed = make_armed(Case(()))
    keys = {
        "http.cookieFile": "/etc/hostname",
        "http.extraHeader": "X-From-Mirror: 1",
        "http.sslCert": "/etc/hostname",
        "http.sslKey": "/etc/hostname",
        "http.sslCAInfo": "/etc/hostname",
        "http.sslVerify": "false",
        "ssh.variant": "plink",
        "core.editor": "touch x",
        "gpg.program": "touch x",
        "diff.external": "touch x",
        "core.pager": "touch x",
        "core.fsmonitor": "touch x",
        "uploadpack.packObjectsHook": "touch x",
        "transfer.fsckObjects": "false",
        "fetch.prune": "false",
        "gc.auto": "1",
    }
    format_keys = {"core.repositoryformatversion": "1", "extensions.objectFormat": "sha1"}
    for key, value in {**keys, **format_keys}.items():
        git(armed.mirror, "config", "--file", str(armed.mirror / "config"), key, value)
    result = armed.tw("fetch", "toy")
    assert result.exit_code == 0, result.output
    removed = result.output.split("removed keys tracework never sets: ", 1)[1].split(", ")
    assert [key.strip() for key in removed] == sorted(key.lower() for key in keys)
    config = (armed.mirror / "config").read_text()
    assert config == (
        "# tracework rewrites this file before every fetch\n"
        "[core]\n\trepositoryformatversion = 1\n\tfilemode = true\n\tbare = true\n"
        "[extensions]\n\tobjectformat = sha1\n"
        f'[remote "origin"]\n\turl = {json.dumps(str(armed.subject.path.resolve()))}\n'
        "\tfetch = +refs/heads/*:refs/heads/*\n\tfetch = +refs/tags/*:refs/tags/*\n"
    )
    again = armed.tw("fetch", "toy")
    assert again.exit_code == 0 and "removed keys" not in again.output  # a clean config is quiet


def test_a_mirror_config_that_git_cannot_parse_is_refused_and_kept(make_armed):
    armed = make_armed(Case(()))
    config = armed.mirror / "config"
    config.write_text(config.read_text() + "[core\n")
    result = armed.tw("fetch", "toy")
    assert result.exit_code == 2, result.output
    assert "sources/.mirrors/toy.git/config cannot be read" in result.output
    assert "delete sources/.mirrors/toy.git" in result.output
    assert config.read_text().endswith("[core\n")


@pytest.mark.parametrize("path", ["objects/info/alternates", "objects/info/http-alternates"])
def test_a_mirror_that_borrows_objects_is_refused_by_fetch_and_readers(make_armed, path):
    armed = make_armed(Case(()))
    (armed.mirror / path).write_text(f"{armed.decoy.path / '.git' / 'objects'}\n")
    before = (armed.mirror / "config").read_bytes()
    for args in (("fetch", "toy"), ("check", "demo"), ("screen", "toy", "--commit", "HEAD")):
        result = armed.tw(*args)
        assert result.exit_code == 2, result.output
        assert "borrows objects from another repository" in result.output, args
        assert path in result.output
    assert (armed.mirror / "config").read_bytes() == before


def test_a_urls_quotes_and_backslashes_cannot_break_out_of_the_config(tmp_path):
    from tracework.git.subjects import mirror_config

    for url in (
        '/srv/a "b" \\c; #d [remote "x"]',
        "/srv/tab\there",
        "/srv/line\nbreak",
        "/srv/ünïcödé",
    ):
        path = tmp_path / "config"
        path.write_text(mirror_config(url, {}))
        got = subprocess.run(
            ["git", "config", "--file", str(path), "--null", "--list"],
            env=plain_git_env(),
            capture_output=True,
            check=True,
        ).stdout.decode()
        entries = [e.split("\n", 1) for e in got.split("\0") if e]
        assert ["remote.origin.url", url] in entries
        assert len(entries) == 6, entries


# -- a mirror that serves another subject ----------------------------------------------------


def test_a_pack_objects_hook_in_a_served_repository_is_inert(make_armed, tw, tmp_path):
    """``uploadpack.packObjectsHook`` runs on the serving side of a fetch.  Git itself
    honours it only in system and global config; the control puts the armed file there.
    Through tracework, a subject whose URL is the armed mirror never runs it."""
    armed = make_armed(Case(()))
    hooked = tmp_path / "hooked.gitconfig"
    git(
        tmp_path,
        "config",
        "--file",
        str(hooked),
        "uploadpack.packObjectsHook",
        str(armed.bin / "fire"),
    )
    git(
        armed.mirror,
        "config",
        "--file",
        "config",
        "uploadpack.packObjectsHook",
        str(armed.bin / "fire"),
    )
    assert tw("subject", "add", "copy", str(armed.mirror)).exit_code == 0
    result = tw("fetch", "copy")
    assert result.exit_code == 0, result.output
    assert not armed.marker.exists()

    env = plain_git_env() | {"GIT_CONFIG_GLOBAL": str(hooked)}
    subprocess.run(
        ["git", "clone", "-q", "--bare", "--no-local", str(armed.mirror), str(tmp_path / "c.git")],
        env=env,
        capture_output=True,
    )
    assert armed.marker.exists()


# -- the commands that only read a mirror ------------------------------------------------------


READER_KEYS = (
    ("core.pager", "{fire}"),
    ("pager.log", "true"),
    ("pager.show", "true"),
    ("pager.diff", "true"),
    ("diff.external", "{fire}"),
    ("log.showSignature", "true"),
    ("gpg.program", "{fire}"),
    ("core.hooksPath", "{hooks}"),
    ("core.fsmonitor", "{fire}"),
    ("core.repositoryformatversion", "1"),
    ("extensions.partialClone", "origin"),
    ("remote.origin.promisor", "true"),
    ("remote.origin.uploadpack", "{fire}"),
    ("include.path", "{include}"),
)


def sign(repo: Repo) -> str:
    """Give ``main`` a commit with a (bogus) signature, which showing it verifies."""
    text = git(repo.path, "cat-file", "commit", "HEAD")
    head, _, message = text.partition("\n\n")
    signature = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----"
    signed = f"{head}\n{signature}\n\n{message}"
    commit = git(
        repo.path, "hash-object", "-t", "commit", "-w", "--stdin", input=signed.encode()
    ).strip()
    git(repo.path, "update-ref", "refs/heads/main", commit)
    return commit


@pytest.mark.slow
def test_the_readers_run_nothing_the_mirror_config_names(make_armed, tmp_path):
    armed = make_armed(Case(()))
    signed = sign(armed.subject)
    assert armed.tw("fetch", "toy").exit_code == 0
    first = armed.subject.commits[0]
    case = Case(READER_KEYS, files=("hook",))
    armed.arm(case)

    # control: plain git pages, diffs, verifies, runs hooks and fetches lazily
    mirror, env = armed.mirror, plain_git_env()

    def fires(*args: str, tty: bool = False) -> bool:
        armed.marker.unlink(missing_ok=True)
        if tty:  # git pages only to a terminal
            main, child = pty.openpty()
            subprocess.run(
                ["git", f"--git-dir={mirror}", *args],
                env=env,
                stdout=child,
                stderr=child,
                timeout=60,
            )
            os.close(child)
            os.close(main)
        else:
            subprocess.run(
                ["git", f"--git-dir={mirror}", *args], env=env, capture_output=True, timeout=60
            )
        return armed.marker.exists()

    assert fires("log", "-1", "--format=%s", first, tty=True)  # core.pager
    assert fires("diff", first, signed)  # diff.external
    assert fires("show", "-s", signed)  # log.showSignature: gpg.program
    assert fires("update-ref", "refs/heads/x", first)  # the hooks
    assert fires("cat-file", "-e", "0123456789012345678901234567890123456789")  # lazy fetch
    armed.marker.unlink(missing_ok=True)

    tw = armed.tw
    for args in (
        ("register", "add-source", "demo", "SRC-2", "--subject", "toy", "--commit", signed),
        ("register", "add-file", "demo", "SRC-2", "lamp.txt"),
        ("quote", "demo", "SRC-2", "lamp.txt", "--lines", "1-2", "--id", "Q-lamp"),
        ("quote", "demo", "SRC-1", "lamp.txt", "--lines", "1-1", "--id", "Q-wick"),
        ("check", "demo"),
        ("screen", "toy", "--commit", signed),
    ):
        result = tw(*args)
        assert result.exit_code == 0, (args, result.output)
    moved = tw("check", "demo", "--source", "SRC-1", "--at", signed, "--json")
    assert moved.exit_code in (0, 1), moved.output
    assert Mirror(mirror).commit_info(signed).subject == "second"
    assert not armed.marker.exists()
