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
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn

from .blobs import Mirror
from .errors import (
    GitError,
    SubjectError,
    TraceworkError,
    UnsafeInput,
    UnsupportedRepository,
)
from .fsio import locked, write_atomic
from .gitenv import git_message, hardened_env, run_git
from .readers import DataError, load_toml
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
    """Validate and write ``sources/NAME.toml``; never replace a different definition.

    Adding the same URL and track again is a no-op, so scripts and ``make demo`` can
    run it every time.  A different URL or track is refused: registers pin commits of
    the subject by name, and a quiet change of where it comes from would make those
    pins unreadable or let another repository answer for them.  Changing a subject is
    meant to be a deliberate edit of its file.
    """
    check_name(name, "subject")
    subject = Subject(name, url, check_ref(track))
    subject.kind  # noqa: B018 - validates the URL
    if subject.kind == "local":
        subject.git_url(ws.root)
    path = ws.subject_file(name)
    rel = path.relative_to(ws.root)
    if path.exists():
        try:
            existing = load_subject(ws, name)
        except TraceworkError as exc:
            raise SubjectError(
                f"subject {name} already exists, but {exc.message}",
                hint=f"fix or remove {rel} by hand, or choose another name",
            ) from None
        if existing == subject:
            return existing
        raise SubjectError(
            f"subject {name} already exists in {rel} with url {json.dumps(existing.url)} "
            f"and track {existing.track}; refusing to replace it with url "
            f"{json.dumps(subject.url)} and track {subject.track}",
            hint=f"to change the subject, edit {rel} on purpose (then `tracework fetch "
            f"{name}`); to add this repository as well, choose another name",
        )
    write_atomic(path, subject.to_toml())
    return subject


_SUBJECT_KEYS = ("url", "track")


def _toml_type(value: object) -> str:
    """The TOML name of a parsed value's type, for messages about a hand-edited file."""
    names = {bool: "boolean", int: "integer", float: "float", str: "string"}
    names.update({list: "array", dict: "table"})
    return names.get(type(value), "date or time")


def load_subject(ws: Workspace, name: str) -> Subject:
    """Read ``sources/NAME.toml`` with a clear error when it is absent or malformed.

    The file is often edited by hand, so each key is checked for its type and unknown
    keys are refused: ``url = [1]`` would otherwise turn into a path named ``[1]``, and a
    misspelt ``trak = "main"`` would silently follow HEAD.  ``track`` may be left out;
    it then means HEAD, as ``subject add`` without ``--track`` does.
    """
    path = ws.subject_file(name)
    if not path.is_file():
        known = sorted(p.stem for p in ws.sources.glob("*.toml"))
        raise SubjectError(
            f"unknown subject '{name}' (no {path.relative_to(ws.root)})",
            hint=f"known subjects: {', '.join(known) or 'none'}; add one with "
            "`tracework subject add NAME URL`",
        )
    rel = path.relative_to(ws.root)
    try:
        data = load_toml(path.read_text(encoding="utf-8"))
    except (DataError, UnicodeDecodeError) as exc:
        raise SubjectError(f"{rel}: malformed subject file: {exc}") from None
    unknown = sorted(set(data) - set(_SUBJECT_KEYS))
    if unknown:
        raise SubjectError(
            f"{rel}: unknown key {json.dumps(unknown[0])} in the subject file",
            hint='a subject file holds url = "…" and track = "…" only',
        )
    if "url" not in data:
        raise SubjectError(
            f"{rel}: the subject file has no `url`",
            hint='add a line url = "https://…" (or an ssh URL or a local path, quoted)',
        )
    for key in _SUBJECT_KEYS:
        if key in data and not isinstance(data[key], str):
            raise SubjectError(
                f"{rel}: `{key}` must be a string, not a TOML {_toml_type(data[key])}",
                hint=f'write it in quotes, e.g. {key} = "'
                + ("https://git.example.org/team/repo.git" if key == "url" else "main")
                + '"',
            )
    subject = Subject(name, data["url"], data.get("track", "HEAD"))
    try:
        subject.kind  # noqa: B018 - validates the URL
        check_ref(subject.track)
    except UnsafeInput as exc:
        raise UnsafeInput(f"{rel}: {exc.message}", hint=exc.hint) from None
    return subject


@contextmanager
def _hardened_os_environ(env: Mapping[str, str]) -> Iterator[None]:
    """Give ``os.environ`` exactly the ``GIT_*`` variables of ``env`` for a while.

    GitPython merges ``os.environ`` into every git it starts, and runs ``git version``
    on import and on refresh with ``os.environ`` alone.  Under the user's environment
    a malformed ``~/.gitconfig`` makes that git fail (an ImportError out of ``import
    git``), and an inherited ``GIT_DIR`` or ``GIT_PYTHON_GIT_EXECUTABLE`` would redirect
    it; under the hardened one, neither global nor system config is read.  The
    caller's variables are given back afterwards.
    """
    saved = {k: v for k, v in os.environ.items() if k.startswith("GIT_")}
    for key in saved:
        del os.environ[key]
    os.environ.update({k: v for k, v in env.items() if k.startswith("GIT_")})
    try:
        yield
    finally:
        for key in [k for k in os.environ if k.startswith("GIT_")]:
            del os.environ[key]
        os.environ.update(saved)


def _gitpython() -> Any:
    """The ``git`` package (GitPython), started under the current ``os.environ``.

    Call it inside :func:`_hardened_os_environ`.  A first import runs GitPython's
    refresh (``git version``) there; when something imported it earlier, perhaps under
    another environment, it is refreshed again so that it runs the same ``git`` from
    PATH as :func:`~tracework.gitenv.run_git`.  A git that still cannot start becomes
    one :class:`GitError` instead of GitPython's ImportError and traceback.
    """
    imported = "git" in sys.modules
    try:
        import git
    except ImportError as exc:
        raise _gitpython_failed(exc) from None
    if imported:
        try:
            git.refresh()
        except (git.exc.GitError, ImportError, OSError) as exc:
            raise _gitpython_failed(exc) from None
    return git


def _gitpython_failed(exc: BaseException) -> GitError:
    """GitPython's start-up failure as one line: git's own words when git ran at all."""
    cause = exc.__cause__ or exc
    stderr = getattr(cause, "stderr", None)
    if isinstance(stderr, str) and stderr.strip():
        words = stderr.strip().removeprefix("stderr: '").removesuffix("'")
        detail = git_message(words.encode())
    else:
        first = next((ln.strip() for ln in str(cause).splitlines() if ln.strip()), "")
        detail = git_message((first or type(cause).__name__).encode())
    return GitError(
        f"GitPython could not start git: {detail}",
        hint="fetch needs a working `git` on PATH (it runs with no system or global config)",
    )


@dataclass(frozen=True)
class FetchResult:
    """What a fetch did: the mirror, whether it was new, and the tracked ref's commit.

    ``head`` is None only when the tracked ref is HEAD and the subject has no commit
    yet; any other tracked ref that does not resolve after a fetch is an error.
    """

    subject: str
    mirror: Path
    created: bool
    head: str | None


def fetch(ws: Workspace, name: str) -> FetchResult:
    """Create or update the bare mirror of a subject, with fsck on every object received.

    Uses GitPython (its ``allow_unsafe_*`` protections left on), imported and run
    under the hardened environment; a local path is cloned with ``--no-local`` so
    objects go through the transport and its fsck rather than being hard-linked
    unchecked.  The first clone is ``--bare``, not ``--mirror``: like every later fetch
    it takes branches and tags only, never a forge's ``refs/pull/*``, a source's own
    ``refs/remotes/*`` or its ``refs/tracework/pins/*``.

    A tracked ref (other than HEAD) that the subject does not have is a
    :class:`SubjectError` raised after the fetch: what was fetched stays in the mirror,
    but the analyst learns now, not when ``rerender --latest`` finds nothing.
    """
    import shutil
    import tempfile

    subject = load_subject(ws, name)
    url = subject.git_url(ws.root)
    env = hardened_env(subject.protocols())
    mirror = ws.mirror_dir(name)
    ws.mirrors.mkdir(parents=True, exist_ok=True)
    with locked(mirror), _hardened_os_environ(env):
        git = _gitpython()
        created = not mirror.exists()
        try:
            if created:
                tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=ws.mirrors))
                try:
                    git.Repo.clone_from(
                        url, tmp / "m.git", env=env, multi_options=["--bare", "--no-local"]
                    )
                    _check_format(tmp / "m.git", name)
                    _fetch_branches_and_tags(tmp / "m.git")
                    os.replace(tmp / "m.git", mirror)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
            else:
                try:
                    repo = git.Repo(mirror)
                except (git.exc.InvalidGitRepositoryError, git.exc.NoSuchPathError):
                    # a folder left by hand or a crash: say so rather than crash in turn
                    raise GitError(
                        f"{mirror.relative_to(ws.root)} is not a git repository",
                        hint=f"remove that folder and run `tracework fetch {name}` again",
                    ) from None
                # GIT_DIR makes the bare repository explicit (safe.bareRepository=explicit)
                repo.git.update_environment(**env, GIT_DIR=str(mirror))
                # the URL checked above, not whatever the mirror was cloned from: a
                # subject whose file was edited to a new URL is fetched from the new one
                repo.git.config("--end-of-options", "remote.origin.url", url)
                _fetch_branches_and_tags(mirror)
                repo.git.fetch("--prune", "--no-write-fetch-head", "origin")
        except git.exc.GitCommandError as exc:
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
    if head is None and subject.track != "HEAD":
        _missing_track(ws, subject, created)
    return FetchResult(name, mirror, created, head)


def _missing_track(ws: Workspace, subject: Subject, created: bool) -> NoReturn:
    """Raise the error for a tracked ref the fetched mirror does not have.

    The fetch itself succeeded and is kept, so the message says so; it names a few of
    the branches and tags there are, to make a typo plain.
    """
    mirror = ws.mirror_dir(subject.name)
    proc = run_git(
        mirror,
        ["for-each-ref", "--format=%(refname:short)", "refs/heads/", "refs/tags/"],
        check=False,
    )
    names = proc.stdout.decode("utf-8", errors="replace").split()
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    rel = ws.subject_file(subject.name).relative_to(ws.root)
    raise SubjectError(
        f"subject {subject.name}: mirror {'created' if created else 'updated'} "
        f"({mirror.relative_to(ws.root)}), but its tracked ref {subject.track} is not in it "
        f"(branches and tags: {shown or 'none'})",
        hint=f"set track in {rel} to one of those by hand, then `tracework fetch "
        f"{subject.name}` again; pinned commits can be read meanwhile",
    )


def _fetch_branches_and_tags(git_dir: Path) -> None:
    """Fetch branches and tags only, so ``--prune`` never touches the pin refs.

    A mirror refspec (``+refs/*:refs/*``, which ``clone --mirror`` set up in mirrors
    made by earlier versions) would map every remote ref onto ``refs/*`` and prune the
    rest; the refs under ``refs/tracework/pins/`` keep pinned commits reachable (and so
    readable) after an upstream force-push or a deleted branch.  The first clone is
    ``--bare``, which sets no refspec at all: this sets the one later fetches use.
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
