"""Subjects (``sources/NAME.toml``) and their bare mirrors (``sources/.mirrors/NAME.git``).

A subject's URL is checked before git ever sees it: https, ssh (URL or scp-like
``user@host:path``) or a local path to a repository.  Everything else — ``ext::``
and other transports, plain http, values shaped like options — is refused, so no
argument or transport can be injected into git.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .blobs import Mirror
from .errors import GitError, SubjectError, UnsafeInput, UnsupportedRepository
from .fsio import locked, write_atomic
from .gitenv import git_message, hardened_env, run_git
from .workspace import Workspace, check_name

UrlKind = Literal["https", "ssh", "local"]

_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?"
_HTTPS = re.compile(rf"https://{_HOST}(?::\d+)?/[^\s]*")
# A user name or a scp-like path starting with '-' would reach ssh as an option.
_USER = r"[A-Za-z0-9_][A-Za-z0-9._-]*"
_SSH_URL = re.compile(rf"ssh://(?:{_USER}@)?{_HOST}(?::\d+)?/[^\s]*")
_SCP = re.compile(rf"(?:{_USER}@)?{_HOST}:(?!//)(?!-)[^\s]+")
_REF = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]*")


def classify_url(url: str) -> UrlKind:
    """The URL's kind, or :class:`UnsafeInput` for anything tracework does not accept.

    Credentials in an https URL are refused: the URL is copied into reports and
    manifests, where a token would be published.
    """
    if re.match(r"https://[^/]*@", url):
        raise UnsafeInput(
            "credentials in a subject URL are refused: the URL is copied into every report",
            hint="give the URL without user:token@ (fetch runs with no credential prompts)",
        )
    refused = UnsafeInput(
        f"'{url}' is not an accepted subject URL",
        hint="use an https:// or ssh:// URL, user@host:path, or a local path to a git "
        "repository; other transports (ext::, fd::, git://, http://) are refused",
    )
    # C0 and C1 controls and DEL: they would reach git, ssh and the terminal raw
    if not url or url.startswith("-") or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in url):
        raise refused
    if "::" in url.split("/", 1)[0] or url.startswith(("ext:", "fd:")):
        raise refused
    if _HTTPS.fullmatch(url):
        return "https"
    if _SSH_URL.fullmatch(url):
        return "ssh"
    if "://" in url:
        raise refused
    if ":" in url and not url.startswith(("/", ".", "~")) and "/" not in url.split(":")[0]:
        # git reads a colon before any slash as scp-like ssh, so this is no local path
        if _SCP.fullmatch(url):
            return "ssh"
        raise refused
    return "local"


def check_ref(ref: str) -> str:
    """A ref name to track: plain characters, no ``..``, never option-shaped."""
    if ref == "HEAD" or (_REF.fullmatch(ref) and ".." not in ref and not ref.endswith((".", "/"))):
        return ref
    raise UnsafeInput(f"'{ref}' is not a ref name tracework accepts", hint="e.g. main or v1.2")


def _looks_like_repository(path: Path) -> bool:
    """True when ``path`` is a repository, judged from files only (git is not run there)."""
    bare = (path / "HEAD").is_file() and (path / "objects").is_dir()
    return bare or (path / ".git").exists()


@dataclass(frozen=True)
class Subject:
    """A subject definition: where its repository lives and which ref to follow."""

    name: str
    url: str
    track: str = "HEAD"

    @property
    def kind(self) -> UrlKind:
        return classify_url(self.url)

    def git_url(self, root: Path) -> str:
        """The URL handed to git: local paths become absolute, relative to ``root``."""
        if self.kind != "local":
            return self.url
        path = Path(os.path.expanduser(self.url))
        path = path if path.is_absolute() else root / path
        if not _looks_like_repository(path):
            raise SubjectError(
                f"subject {self.name}: {path} is not a git repository",
                hint="give the path of a repository (bare or with a .git folder)",
            )
        return str(path.resolve())

    def protocols(self) -> tuple[str, ...]:
        return {"https": ("https",), "ssh": ("ssh",), "local": ("file",)}[self.kind]

    def to_toml(self) -> str:
        return (
            f"# tracework subject {self.name}\n"
            f"url = {json.dumps(self.url)}\n"
            f"track = {json.dumps(self.track)}\n"
        )


def add_subject(ws: Workspace, name: str, url: str, track: str = "HEAD") -> Subject:
    """Validate and write ``sources/NAME.toml`` (replacing an older definition)."""
    check_name(name, "subject")
    subject = Subject(name, url, check_ref(track))
    subject.kind  # noqa: B018 - validates the URL
    if subject.kind == "local":
        subject.git_url(ws.root)
    write_atomic(ws.subject_file(name), subject.to_toml())
    return subject


def load_subject(ws: Workspace, name: str) -> Subject:
    """Read ``sources/NAME.toml`` with a clear error when it is absent or malformed."""
    path = ws.subject_file(name)
    if not path.is_file():
        known = sorted(p.stem for p in ws.sources.glob("*.toml"))
        raise SubjectError(
            f"unknown subject '{name}' (no {path.relative_to(ws.root)})",
            hint=f"known subjects: {', '.join(known) or 'none'}; add one with "
            "`tracework subject add NAME URL`",
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        subject = Subject(name, str(data["url"]), str(data.get("track", "HEAD")))
    except (tomllib.TOMLDecodeError, KeyError, UnicodeDecodeError) as exc:
        raise SubjectError(f"{path}: malformed subject file ({exc})") from None
    subject.kind  # noqa: B018 - validates the URL
    check_ref(subject.track)
    return subject


@contextmanager
def _clean_git_environ() -> Iterator[None]:
    """Hide inherited ``GIT_*`` variables from GitPython, which merges os.environ."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("GIT_")}
    for key in saved:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(saved)


@dataclass(frozen=True)
class FetchResult:
    """What a fetch did."""

    subject: str
    mirror: Path
    created: bool
    head: str | None


def fetch(ws: Workspace, name: str) -> FetchResult:
    """Create or update the bare mirror of a subject, with fsck on every object received.

    Uses GitPython (its ``allow_unsafe_*`` protections left on) under the hardened
    environment; a local path is cloned with ``--no-local`` so objects go through the
    transport and its fsck rather than being hard-linked unchecked.
    """
    import shutil
    import tempfile

    from git import Repo
    from git.exc import GitCommandError, InvalidGitRepositoryError, NoSuchPathError

    subject = load_subject(ws, name)
    url = subject.git_url(ws.root)
    env = hardened_env(subject.protocols())
    mirror = ws.mirror_dir(name)
    ws.mirrors.mkdir(parents=True, exist_ok=True)
    with locked(mirror), _clean_git_environ():
        created = not mirror.exists()
        try:
            if created:
                tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=ws.mirrors))
                try:
                    Repo.clone_from(
                        url, tmp / "m.git", env=env, multi_options=["--mirror", "--no-local"]
                    )
                    _check_format(tmp / "m.git", name)
                    _fetch_branches_and_tags(tmp / "m.git")
                    os.replace(tmp / "m.git", mirror)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
            else:
                try:
                    repo = Repo(mirror)
                except (InvalidGitRepositoryError, NoSuchPathError):
                    # a folder left by hand or a crash: say so rather than crash in turn
                    raise GitError(
                        f"{mirror.relative_to(ws.root)} is not a git repository",
                        hint=f"remove that folder and run `tracework fetch {name}` again",
                    ) from None
                # GIT_DIR makes the bare repository explicit (safe.bareRepository=explicit)
                repo.git.update_environment(**env, GIT_DIR=str(mirror))
                # the URL checked above, not whatever the mirror was cloned from: a
                # subject re-added with a new URL must be fetched from the new one
                repo.git.config("--end-of-options", "remote.origin.url", url)
                _fetch_branches_and_tags(mirror)
                repo.git.fetch("--prune", "--no-write-fetch-head", "origin")
        except GitCommandError as exc:
            stderr = exc.stderr if isinstance(exc.stderr, str) else str(exc.stderr)
            # GitPython wraps git's words as "\n  stderr: '…'"; keep only git's words
            stderr = stderr.strip().removeprefix("stderr: '").removesuffix("'")
            raise GitError(
                f"fetching subject {name} failed: {git_message(stderr.encode())}",
                hint="git's fsck refuses malformed trees (entries named '..', '.git', "
                "duplicates); check the URL and your access",
            ) from None
    head = None
    try:
        head = Mirror(mirror).head_of(subject.track) or None
    except GitError:
        head = None
    return FetchResult(name, mirror, created, head)


def _fetch_branches_and_tags(git_dir: Path) -> None:
    """Fetch branches and tags only, so ``--prune`` never touches the pin refs.

    ``clone --mirror`` would map every remote ref onto ``refs/*`` and prune the rest;
    the refs under ``refs/tracework/pins/`` keep pinned commits reachable (and so
    readable) after an upstream force-push or a deleted branch.
    """
    run_git(git_dir, ["config", "--unset-all", "remote.origin.fetch"], check=False)
    for spec in ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"):
        run_git(git_dir, ["config", "--add", "remote.origin.fetch", spec])
    run_git(git_dir, ["config", "remote.origin.mirror", "false"])


def _check_format(path: Path, name: str) -> None:
    try:
        Mirror(path)
    except UnsupportedRepository as exc:
        raise UnsupportedRepository(
            f"subject {name}: {exc.message.split(';')[0].replace(str(path), 'the repository')}; "
            "tracework reads SHA-1 repositories only"
        ) from None


def open_mirror(ws: Workspace, name: str) -> Mirror:
    """The subject's mirror, or a clear message telling the user to fetch it."""
    load_subject(ws, name)
    mirror = ws.mirror_dir(name)
    if not mirror.exists():
        raise SubjectError(
            f"subject {name} has no mirror yet", hint=f"run `tracework fetch {name}`"
        )
    return Mirror(mirror, size_cap=ws.quote_size_cap)
