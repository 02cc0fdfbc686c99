"""Subjects (``sources/NAME.toml``) and their bare mirrors (``sources/.mirrors/NAME.git``).

A subject's URL is checked before git ever sees it: https, ssh (URL or scp-like
``user@host:path``) or a local path to a repository.  Everything else — ``ext::``
and other transports, plain http, values shaped like options — is refused, so no
argument or transport can be injected into git.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NoReturn

from tracework.errors import (
    GitError,
    SubjectError,
    TraceworkError,
    UnsafeInput,
    UnsupportedRepository,
)
from tracework.fsio import locked, write_atomic
from tracework.git.env import git_message, run_git, run_git_supervised
from tracework.git.mirror import Mirror
from tracework.readers import DataError, load_toml
from tracework.workspace import Workspace, check_name

log = logging.getLogger(__name__)

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
    """A ref to track: HEAD, a branch name, or a full ``refs/heads/…``/``refs/tags/…`` name.

    A short name always means a branch (:func:`tracked_ref`); a tag is written in full,
    so that no tag can be taken for the branch or the branch for the tag.  Refused: option
    shapes and revision syntax (``..``, ``~``, ``^``, ``@{``, ``:``), 40 hex digits (git
    reads them as a commit id, whatever the branches are called), and other namespaces
    (``refs/remotes/``, ``refs/notes/``…), which are not the subject's branches or tags.
    """
    if ref != "HEAD" and not (
        _REF.fullmatch(ref) and ".." not in ref and not ref.endswith((".", "/"))
    ):
        raise UnsafeInput(f"'{ref}' is not a ref name tracework accepts", hint="e.g. main or v1.2")
    if re.fullmatch(r"[0-9a-fA-F]{40}", ref):
        raise UnsafeInput(
            f"track '{ref}' is a commit id, not a branch or tag to follow",
            hint="track a branch (main) or a tag (refs/tags/v1.2); to stay at one commit, "
            "pin it with `tracework register add-source … --commit`; a branch named by 40 "
            f"hex digits is written refs/heads/{ref}",
        )
    if ref.startswith("refs/") and not re.match(r"refs/(heads|tags)/[A-Za-z0-9_]", ref):
        raise UnsafeInput(
            f"track '{ref}' is not a branch or tag of the subject",
            hint="a mirror holds the subject's branches and tags only: write a branch as "
            "main (or refs/heads/main), a tag as refs/tags/v1.2",
        )
    return ref


def tracked_ref(track: str) -> str:
    """The full name a ``track`` other than HEAD names in the mirror: ``main`` is the
    branch ``refs/heads/main``, never a tag or any other ref of that name."""
    return track if track.startswith("refs/") else f"refs/heads/{track}"


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


@dataclass(frozen=True)
class FetchResult:
    """What a fetch did: the mirror, whether it was new, the tracked ref's commit, and
    the keys of the mirror's config that tracework removed (see :func:`fetch`).

    ``head`` is None only when the subject has no commit yet; any tracked ref that does
    not resolve to a commit after a fetch is an error.
    """

    subject: str
    mirror: Path
    created: bool
    head: str | None
    removed_config: tuple[str, ...] = ()


#: What the mirror takes from its subject: branches and tags, never a forge's
#: ``refs/pull/*``, a source's own ``refs/remotes/*`` or ``refs/tracework/pins/*``.
REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")


def fetch(ws: Workspace, name: str, source: str | None = None) -> FetchResult:
    """Create or update the bare mirror of a subject, with fsck on every object received.

    Nothing in the mirror's own config may run a program or send the fetch elsewhere,
    and how that is ensured is a decision worth its reasons:

    - Overrides in the environment (what :func:`~tracework.git.env.hardened_env` passes
      as ``GIT_CONFIG_COUNT``) are not enough.  They only add keys, so they cannot reach
      ``url.<any base>.insteadOf``, ``http.<url>.proxy``, ``fetch.fsck.<check> =
      ignore`` or whatever an ``include.path`` pulls in (any file, under any name); and
      for ``remote.<name>.uploadpack`` git keeps the first value it reads, the
      repository's, so an override of it loses.
    - A config of the fetch's own is not possible: git has no variable that replaces
      the repository's config (``GIT_CONFIG_NOSYSTEM`` and ``GIT_CONFIG_GLOBAL`` cover
      the other scopes; ``GIT_CONFIG`` steers only ``git config``), and fetching into a
      scratch repository would lose the mirror's objects for negotiation and its refs.
    - So the mirror's config is rewritten, whole, before every fetch, under the
      subject's lock: the few lines tracework needs (:func:`mirror_config`), keeping only
      the keys that describe the on-disk format.  tracework owns the mirror, so nothing
      of value is lost; the keys removed are returned for the user to see.  The URL from
      ``sources/NAME.toml`` is also passed on the command line, with the refspecs and
      ``--upload-pack``, and the overrides stay, for the git processes that read the
      mirror between fetches.
    - What cannot be made sound by rewriting a file is refused: a mirror that borrows
      objects from elsewhere (``objects/info/alternates``, which is also what arms
      ``core.alternateRefsCommand``) or a partial clone.

    A local path is cloned with ``--no-local`` so objects go through the transport and
    its fsck rather than being hard-linked unchecked.  The first clone is ``--bare``;
    like every later fetch it takes :data:`REFSPECS` only, and ``--prune`` leaves the
    pins alone.  Git runs under :func:`~tracework.git.env.run_git_supervised`, so no git
    outlives a fetch killed outright, and the temporary clone such a fetch left behind
    is removed by the next one (:func:`_sweep_clones`).

    A tracked ref that does not resolve to a commit is a :class:`SubjectError` raised
    after the fetch (:func:`tracked_commit`): what was fetched stays in the mirror, but
    the analyst learns now, not when ``rerender --latest`` finds nothing.

    ``source`` (``--from``) seeds or updates the mirror from a local repository or a
    bundle instead of the subject's URL, through the same transfer (``file`` the only
    protocol, ``--no-local``, fsck on); the URL stays the subject's identity, in the
    mirror's config as in reports.  A bundle is first cloned into a scratch repository
    and fetched from there, so its objects meet fetch's fsck whatever git's version
    (git checks bundles itself only since 2.46).  Where the mirror was last seeded
    from is kept in it, for the messages of later fetches.
    """
    subject = load_subject(ws, name)
    url = subject.git_url(ws.root) if source is None else _identity(ws, subject)
    mirror = ws.mirror_dir(name)
    ws.mirrors.mkdir(parents=True, exist_ok=True)
    removed: tuple[str, ...] = ()
    with locked(mirror):
        _sweep_clones(ws.mirrors, name)
        with _origin(ws, subject, source) as (origin, protocols):
            created = not mirror.exists()
            if created:
                _clone(ws, subject, url, mirror, origin, protocols)
            else:
                _refuse_foreign(ws, name, mirror)
                removed = _reset_config(ws, name, mirror, url)
                _check_format(mirror, name)
                _transfer(
                    ws,
                    subject,
                    mirror,
                    ["fetch", "--prune", "--no-write-fetch-head", "--quiet", _UPLOAD_PACK],
                    origin,
                    *REFSPECS,
                    protocols=protocols,
                    seeding=source is not None,
                )
        if source is not None:
            write_atomic(mirror / SEEDED_FROM, _local_path(source) + "\n")
    head = tracked_commit(ws, subject, Mirror(mirror), fetched="created" if created else "updated")
    return FetchResult(name, mirror, created, head, removed)


#: The file in a mirror naming the local repository or bundle it was last seeded from.
SEEDED_FROM = "tracework-seeded-from"


def _identity(ws: Workspace, subject: Subject) -> str:
    """The URL a mirror seeded from elsewhere keeps in its config: the subject's own (a
    local subject's path made absolute when it exists, as a plain fetch would write)."""
    try:
        return subject.git_url(ws.root)
    except SubjectError:
        return subject.url


def _local_path(source: str) -> str:
    return str(Path(os.path.expanduser(source)).absolute())


@contextmanager
def _origin(
    ws: Workspace, subject: Subject, source: str | None
) -> Iterator[tuple[str, tuple[str, ...]]]:
    """What a fetch transfers from, and the protocols it may use: the subject's URL, or
    the repository ``--from`` names (a bundle: a scratch clone of it, removed after)."""
    if source is None:
        yield subject.git_url(ws.root), subject.protocols()
        return
    what = f"--from {source}"
    if classify_url(source) != "local" and not Path(source).exists():
        raise UnsafeInput(
            f"{what}: not a local path", hint="give the path of a git repository or a bundle file"
        )
    path = Path(_local_path(source))
    if path.is_dir() and _looks_like_repository(path):
        yield str(path.resolve()), ("file",)
        return
    if not (path.is_file() and _is_bundle(path)):
        raise SubjectError(
            f"{what}: {path} is not a git repository or a git bundle",
            hint="give a clone (bare or with a .git folder) or a file made by `git bundle create`",
        )
    import secrets
    import shutil

    scratch = ws.mirrors / f".{subject.name}.{secrets.token_hex(4)}.tmp"
    scratch.mkdir(mode=0o700)
    try:
        _transfer(
            ws,
            subject,
            None,
            ["clone", "--bare", "--quiet"],
            str(path.resolve()),
            str(scratch / "bundle.git"),
            protocols=("file",),
            seeding=True,
        )
        yield str(scratch / "bundle.git"), ("file",)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _is_bundle(path: Path) -> bool:
    """Whether ``path`` starts as ``git bundle create`` writes (v2 or v3)."""
    with path.open("rb") as handle:
        return handle.read(16) in (b"# v2 git bundle\n", b"# v3 git bundle\n")


def seeded_from(mirror: Path) -> str | None:
    """Where a mirror was last seeded from with ``--from``, if it was."""
    try:
        return (mirror / SEEDED_FROM).read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


# the serving program is named on the command line, so no config names another one
_UPLOAD_PACK = "--upload-pack=git-upload-pack"


def _clone(
    ws: Workspace,
    subject: Subject,
    url: str,
    mirror: Path,
    origin: str,
    protocols: tuple[str, ...],
) -> None:
    """The first clone, from ``origin``, made in a temporary folder and renamed into
    place when whole, its config naming ``url``.

    The folder is ``.NAME.<8 characters>.tmp`` beside the mirrors, the shape
    :func:`_sweep_clones` removes when a fetch was killed before the rename.
    """
    import secrets
    import shutil

    tmp = ws.mirrors / f".{subject.name}.{secrets.token_hex(4)}.tmp"
    tmp.mkdir(mode=0o700)
    try:
        clone = tmp / "m.git"
        _transfer(
            ws,
            subject,
            None,
            ["clone", "--bare", "--no-local", "--quiet", _UPLOAD_PACK],
            origin,
            str(clone),
            protocols=protocols,
            seeding=origin != url,
        )
        _check_format(clone, subject.name)
        _reset_config(ws, subject.name, clone, url)
        os.replace(clone, mirror)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _sweep_clones(mirrors: Path, name: str) -> None:
    """Remove the temporary clones a fetch of subject ``name`` left when it was killed.

    Only the holder of the subject's lock makes them, and the caller holds it now, so
    every one there is a dead fetch's: no lock per folder is needed, unlike the staging
    folders of renders (:func:`~tracework.fsio.sweep_staging`), which run side by side.
    The name is matched whole (8 letters, digits or ``_``, as tracework and earlier
    versions' ``mkdtemp`` made them), so subject ``toy`` never sweeps ``toy.x``'s.
    """
    import shutil

    pattern = re.compile(rf"\.{re.escape(name)}\.[a-z0-9_]{{8}}\.tmp")
    for path in sorted(mirrors.iterdir()):
        if pattern.fullmatch(path.name) and path.is_dir() and not path.is_symlink():
            log.debug("removing %s, left by a fetch that was killed", path)
            shutil.rmtree(path, ignore_errors=True)


def _transfer(
    ws: Workspace,
    subject: Subject,
    git_dir: Path | None,
    args: list[str],
    *operands: str,
    protocols: tuple[str, ...],
    seeding: bool = False,
) -> None:
    """Run a clone or fetch of ``subject`` (operands after ``--end-of-options``); a
    failure is one :class:`GitError` naming its cause, with the remedy for that cause."""
    proc = run_git_supervised(git_dir, [*args, "--end-of-options", *operands], protocols=protocols)
    if proc.returncode != 0:
        failure = fetch_failure(
            proc.stderr, ws, subject.name, has_mirror=git_dir is not None, seeding=seeding
        )
        raise GitError(
            f"fetching subject {subject.name} failed ({failure.cause}): {failure.words}",
            hint=failure.hint,
        )


# What git's words say went wrong, most specific first: (cause, patterns, remedy).
_FAILURES: tuple[tuple[str, str, str], ...] = (
    (
        "fsck refused an object",
        r"fsck|hasDot|duplicateEntries|zeroPaddedFilemode|badTree|missingSpaceBeforeDate",
        "git's fsck refuses malformed objects (trees with entries named '..' or '.git', "
        "duplicates); the subject's history holds one, so it cannot be mirrored as is",
    ),
    (
        "objects missing at the source",
        r"unable to read [0-9a-f]{40}|possible repository corruption|missing (?:blob|tree|commit)",
        "the repository fetched from lacks objects its history needs (a partial or damaged "
        "copy): `git fsck` there names them; fetch from a complete clone",
    ),
    (
        "host not found",
        r"could not resolve host|name or service not known|temporary failure in name "
        r"resolution|no address associated with hostname|nodename nor servname",
        "check the host name in the URL, and that this machine can resolve names",
    ),
    (
        "server certificate refused",
        r"ssl certificate problem|certificate verification failed|server certificate",
        "the https server's certificate is not trusted here: check the URL, or install "
        "the certificate authority system-wide",
    ),
    (
        "authentication refused",
        r"authentication failed|permission denied \(|could not read (?:username|password)|"
        r"returned error: 40[13]|host key verification failed|access denied",
        "tracework never prompts: give ssh a key through ssh-agent (and the host's key in "
        "~/.ssh/known_hosts), or make the repository readable without credentials",
    ),
    (
        "not a repository",
        r"does not appear to be a git repository|repository (?:'[^']*' )?not found|"
        r"returned error: 404|not a git repository|no such repository",
        "check the URL in the subject file: there is no git repository there",
    ),
    (
        "network unreachable",
        r"network is unreachable|no route to host|connection refused|timed out|"
        r"failed to connect|could not connect|couldn't connect|connection reset|"
        r"connection closed|proxy",
        "check the network connection (and https_proxy, if this machine needs a proxy)",
    ),
)


#: The causes that mean the subject's host could not be reached from here.
_OFFLINE = frozenset({"host not found", "network unreachable"})


@dataclass(frozen=True)
class FetchFailure:
    """Why a clone or fetch failed: the cause, git's (or ssh's) own words, the remedy."""

    cause: str
    words: str
    hint: str


def fetch_failure(
    stderr: bytes, ws: Workspace, name: str, *, has_mirror: bool, seeding: bool = False
) -> FetchFailure:
    """The cause of a failed clone or fetch, and its remedy, from git's stderr.

    Each cause gets its own hint (a fsck refusal says nothing of the network, a missing
    host nothing of fsck), and the words shown are the line that told the cause (ssh's
    "Could not resolve hostname", not git's "Could not read from remote repository"
    after it).  When the fetch could not reach the subject, an existing mirror is
    untouched: the hint says that it and its pins stay usable.  When the network failed
    (and this was no ``--from`` fetch), the hint offers ``--from``, naming the clone or
    bundle the mirror was last seeded from if it was.
    """
    text = stderr.decode("utf-8", errors="replace")
    rel = ws.subject_file(name).relative_to(ws.root)
    lines = text.splitlines()
    cause, line, remedy = next(
        (
            (cause, line, remedy)
            for cause, pattern, remedy in _FAILURES
            for line in lines
            if re.search(pattern, line, re.I)
        ),
        (
            "git failed",
            None,
            "check the repository or bundle given with --from"
            if seeding
            else f"check the URL in {rel} and your access to it",
        ),
    )
    words = git_message(stderr if line is None else line.encode())
    if cause == "fsck refused an object":
        return FetchFailure(cause, words, remedy)
    remedy = remedy.replace(
        "the URL in the subject file",
        "the path given with --from" if seeding else f"the URL in {rel}",
    )
    if cause in _OFFLINE and not seeding:
        before = seeded_from(ws.mirror_dir(name))
        remedy += (
            f"; or update the mirror from {before}: `tracework fetch {name} --from {before}`"
            if before
            else f"; or fetch from a clone or bundle at hand: `tracework fetch {name} --from PATH`"
        )
    if has_mirror:
        remedy += (
            "; meanwhile the mirror and its pins stay usable: check, render and rerender "
            "without --fetch read what was fetched before"
        )
    else:
        remedy += "; no mirror was made"
    return FetchFailure(cause, words, remedy)


def _refuse_foreign(ws: Workspace, name: str, mirror: Path) -> None:
    """Refuse a mirror whose objects may not all have come through fetch's fsck.

    Not a repository at all (a folder left by hand or a crash), or a mirror that
    borrows objects from another repository (``objects/info/alternates``, or the
    dumb-http ``http-alternates``: objects read from there never met fsck, and a fetch
    would run ``core.alternateRefsCommand`` for them).  tracework makes neither; each is
    named with its file, and deleting the folder and fetching again gives a sound
    mirror.  (A partial clone is refused by :func:`_reset_config`, which reads the
    config.)
    """
    rel = mirror.relative_to(ws.root)
    again = f"remove that folder and run `tracework fetch {name}` again"
    if not ((mirror / "HEAD").is_file() and (mirror / "objects").is_dir()):
        raise GitError(f"{rel} is not a git repository", hint=again)
    for borrowed in ("alternates", "http-alternates"):
        if (mirror / "objects" / "info" / borrowed).exists():
            raise GitError(
                f"{rel} borrows objects from another repository (objects/info/{borrowed}): "
                "they never passed fetch's fsck, and fetch would run commands for them",
                hint=f"a tracework mirror holds its own objects only: {again}",
            )


# Keys that describe how the repository is stored: kept as found when the config is
# rewritten, since a different value would make git misread the objects or refs.
_FORMAT_KEYS = ("core.repositoryformatversion", "extensions.objectformat", "extensions.refstorage")
# Keys clone writes and earlier versions of tracework set: replaced without remark.
_USUAL_KEYS = frozenset(
    {
        "core.bare",
        "core.filemode",
        "core.ignorecase",
        "core.logallrefupdates",
        "core.precomposeunicode",
        "remote.origin.fetch",
        "remote.origin.mirror",
        "remote.origin.url",
    }
)


def _reset_config(ws: Workspace, name: str, git_dir: Path, url: str) -> tuple[str, ...]:
    """Rewrite the config of mirror ``git_dir`` to :func:`mirror_config`; return the keys
    it held that tracework never sets (sorted, each once), for the user to see.

    The old config is read by git itself (``config --file --list``, which never follows
    ``include.path``).  One that git cannot parse, and extensions other than the format
    (a partial clone, a worktree config), are refused: such a folder is no mirror
    tracework made.
    """
    rel = (git_dir / "config").relative_to(ws.root)
    again = (
        f"delete {git_dir.relative_to(ws.root)} and run `tracework fetch {name}` to make a "
        "sound mirror"
    )
    proc = run_git(
        None,
        ["config", "--file", str(git_dir / "config"), "--no-includes", "--null", "--list"],
        check=False,
    )
    if proc.returncode != 0:
        raise GitError(f"{rel} cannot be read: {git_message(proc.stderr)}", hint=again)
    entries = []
    for entry in proc.stdout.decode("utf-8", errors="replace").split("\0"):
        if entry:
            key, _, value = entry.partition("\n")
            entries.append((key, value))
    kept = {key: value for key, value in entries if key in _FORMAT_KEYS}
    for key, value in entries:
        if key.startswith("extensions.") and key not in _FORMAT_KEYS:
            raise GitError(
                f"{rel} sets {key}: the folder is not a mirror tracework made",
                hint=again,
            )
        if key in kept and not re.fullmatch(r"[A-Za-z0-9]+", value):
            raise GitError(f"{rel} sets {key} to {value!r}, which git cannot read", hint=again)
    write_atomic(git_dir / "config", mirror_config(url, kept))
    return tuple(sorted({key for key, _ in entries if key not in _USUAL_KEYS and key not in kept}))


def mirror_config(url: str, format_keys: Mapping[str, str]) -> str:
    """The whole config of a mirror: its format, ``bare``, and where it comes from.

    ``remote.origin`` is kept for a person who runs git in the mirror by hand (fetch
    itself passes the URL and refspecs on the command line).  Values are written quoted,
    with git's escapes for ``\\``, ``"``, newline and tab, so that no URL or path can
    end its line or start a section.
    """
    lines = [
        "# tracework rewrites this file before every fetch",
        "[core]",
        f"\trepositoryformatversion = {format_keys.get('core.repositoryformatversion', '0')}",
        "\tfilemode = true",
        "\tbare = true",
    ]
    extensions = sorted((k, v) for k, v in format_keys.items() if k.startswith("extensions."))
    if extensions:
        lines.append("[extensions]")
        lines += [f"\t{key.split('.', 1)[1]} = {value}" for key, value in extensions]
    lines += ['[remote "origin"]', f"\turl = {_config_value(url)}"]
    lines += [f"\tfetch = {spec}" for spec in REFSPECS]
    return "\n".join(lines) + "\n"


def _config_value(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\t", "\\t") + '"'


def tracked_commit(
    ws: Workspace, subject: Subject, mirror: Mirror, *, fetched: str | None = None
) -> str | None:
    """The commit the subject's tracked ref names in its mirror: what "latest" means.

    Read by full name only (:meth:`~tracework.git.mirror.Mirror.read_ref`): ``main`` is
    ``refs/heads/main`` and nothing else, so a tag, note, replace or remote ref a
    subject names like its branch changes nothing.  ``HEAD`` is the branch the mirror's
    HEAD names, which must be a branch.  None when the subject has no commit at all
    (its HEAD names a branch not born yet); anything else that names no commit is a
    :class:`SubjectError` naming the subject file.  ``fetched`` ("created" or
    "updated") says, in the message, that the fetch itself succeeded and was kept.
    """
    track = subject.track
    rel = ws.subject_file(subject.name).relative_to(ws.root)
    if track == "HEAD":
        name = mirror.head_branch()
        if name is None or not name.startswith("refs/heads/"):
            where = "is detached" if name is None else f"names {name}"
            problem = (
                f"its tracked ref HEAD names no branch: the mirror's HEAD {where} (the "
                "subject's HEAD was detached, or named a tag, when it was cloned)"
            )
            _track_problem(ws, subject, mirror, fetched, problem)
    else:
        name = tracked_ref(track)
    target = mirror.read_ref(name)
    if target is None:
        if track == "HEAD":
            if not _branches_and_tags(mirror):
                return None  # a subject with no commit yet
            branch = name.removeprefix("refs/heads/")
            problem = f"its tracked ref HEAD names branch {branch}, which is not in the mirror"
            _track_problem(ws, subject, mirror, fetched, problem)
        if not track.startswith("refs/") and mirror.read_ref(f"refs/tags/{track}"):
            problem = (
                f"its tracked ref {track} is no branch of the mirror (a short name means a "
                "branch), but a tag"
            )
            fix = f'to follow the tag, write track = "refs/tags/{track}" in {rel}'
            _track_problem(ws, subject, mirror, fetched, problem, fix=fix)
        _track_problem(
            ws, subject, mirror, fetched, f"its tracked ref {track} is not in the mirror"
        )
    if target.symref:
        problem = (
            f"its tracked ref {track} ({name}) is a symbolic ref to {target.symref}, which "
            "no fetch makes"
        )
        mirror_rel = ws.mirror_dir(subject.name).relative_to(ws.root)
        fix = f"delete {mirror_rel} and run `tracework fetch {subject.name}` again"
        _track_problem(ws, subject, mirror, fetched, problem, fix=fix, final=True)
    if target.commit is None:
        problem = f"its tracked ref {track} ({name}) points at a {target.peeled_kind}, not a commit"
        fix = f"track a branch, or a tag of a commit, in {rel}"
        _track_problem(ws, subject, mirror, fetched, problem, fix=fix)
    return target.commit


def _track_problem(
    ws: Workspace,
    subject: Subject,
    mirror: Mirror,
    fetched: str | None,
    problem: str,
    *,
    fix: str | None = None,
    final: bool = False,
) -> NoReturn:
    """Raise the error for a tracked ref that names no commit in the mirror.

    Without a particular ``fix``, the message lists a few of the mirror's branches and
    tags, written as ``track`` takes them, to make a typo plain.  After a fetch it says
    that the fetch was kept and pinned commits can be read meanwhile; the hint then
    says to fetch again once ``track`` is fixed (unless the ``fix`` is ``final``).
    """
    rel = ws.subject_file(subject.name).relative_to(ws.root)
    where = ws.mirror_dir(subject.name).relative_to(ws.root)
    if fix is None:
        names = _branches_and_tags(mirror)
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        problem += f" (branches and tags: {shown or 'none'})"
        fix = f"set track in {rel} to one of those"
    if fetched:
        message = f"subject {subject.name}: mirror {fetched} ({where}), but {problem}"
        then = "" if final else f", then `tracework fetch {subject.name}` again"
        hint = f"{fix}{then}; pinned commits can be read meanwhile"
    else:
        message = f"subject {subject.name} (mirror {where}): {problem}"
        then = (
            "" if final else f", or run `tracework fetch {subject.name}` if the subject has it now"
        )
        hint = f"{fix}{then}"
    raise SubjectError(message, hint=hint)


def _branches_and_tags(mirror: Mirror) -> list[str]:
    """The mirror's branches and tags, written as ``track`` takes them (``main``,
    ``refs/tags/v1``)."""
    proc = run_git(
        mirror.git_dir,
        ["for-each-ref", "--format=%(refname)", "refs/heads/", "refs/tags/"],
        check=False,
    )
    names = proc.stdout.decode("utf-8", errors="replace").split()
    return [name.removeprefix("refs/heads/") for name in names]


def _check_format(path: Path, name: str) -> None:
    try:
        Mirror(path)
    except UnsupportedRepository as exc:
        raise UnsupportedRepository(
            f"subject {name}: {exc.message.split(';')[0].replace(str(path), 'the repository')}; "
            "tracework reads SHA-1 repositories only"
        ) from None


def open_mirror(ws: Workspace, name: str) -> Mirror:
    """The subject's mirror, or a clear message telling the user to fetch it.

    A mirror that is no repository, or borrows objects from elsewhere, is refused as
    :func:`fetch` refuses it: objects that never passed fetch's fsck are never read.
    """
    load_subject(ws, name)
    mirror = ws.mirror_dir(name)
    if not mirror.exists():
        raise SubjectError(
            f"subject {name} has no mirror yet", hint=f"run `tracework fetch {name}`"
        )
    _refuse_foreign(ws, name, mirror)
    return Mirror(mirror, size_cap=ws.quote_size_cap)
