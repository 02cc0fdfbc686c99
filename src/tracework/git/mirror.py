"""Reading a mirror's object store: commits, trees and blobs, never a work tree.

Nothing here checks anything out, so no checkout filter, hook, LFS smudge or
symlink is ever applied or followed.  Trees come from one ``git ls-tree -r -z`` and
blobs from one ``git cat-file --batch`` pass per request, which is what keeps a
check of thousands of files fast.
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import subprocess
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryFile
from typing import IO, Literal, NamedTuple

from tracework.errors import (
    CommitAbsent,
    CommitNotFound,
    GitError,
    PathNotFound,
    UnsafeInput,
    UnsupportedRepository,
)
from tracework.git.env import git_message, hardened_env, run_git
from tracework.hashing import is_lfs_pointer, sha256_hex

HEX_PREFIX = re.compile(r"[0-9a-fA-F]{4,40}")
FULL_OID = re.compile(r"[0-9a-f]{40}")
# a full ref name of the two namespaces a mirror holds besides its pins
_FULL_REF = re.compile(r"refs/(?:heads|tags)/[A-Za-z0-9_][A-Za-z0-9._/-]*")

#: Files larger than this are registered by hash (streamed) but not quoted.
DEFAULT_SIZE_CAP = 4 * 1024 * 1024
#: Blobs :meth:`Mirror.read_blob` keeps (each at most its size cap: a 4 MiB cap, 64 MiB).
RECENT_BLOBS = 16
#: Bytes of git's answers read at a time, and held in the pipe, when blobs are streamed.
READ_BUFFER = 1 << 20

EntryKind = Literal["file", "symlink", "submodule"]
RegisteredKind = Literal["file", "symlink", "submodule", "lfs-pointer"]


class RefTarget(NamedTuple):
    """One ref of a mirror, read by its full name (see :meth:`Mirror.read_ref`)."""

    name: str
    oid: str
    symref: str  # the ref it points to when it is a symbolic ref, else ""
    commit: str | None  # the commit it peels to, None when it peels to something else
    peeled_kind: str  # the type of the object it peels to: commit, tree, blob


class TreeEntry(NamedTuple):
    """One path in a commit's tree (a named tuple: a check makes one per path).

    Its kind is read from the mode once, when the tree is listed: a check asks for it
    several times a file.
    """

    path: str
    mode: str
    oid: str
    kind: EntryKind


#: The kind of a tree entry by its mode: a symlink, a submodule, else a file.
_KIND_OF_MODE: dict[str, EntryKind] = {"120000": "symlink", "160000": "submodule"}


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """A commit's id, committer date (ISO 8601) and subject line."""

    oid: str
    date: str
    subject: str


@dataclass(frozen=True, slots=True)
class Changes:
    """Paths renamed (old → new) and paths added or modified (new names) between commits."""

    renamed: dict[str, str]
    touched: frozenset[str]


class Blob(NamedTuple):
    """A blob's size and hash; ``data`` is None when it was larger than the cap.

    ``head`` always holds the first 8000 bytes, enough to tell binary from text.  A
    named tuple, like :class:`TreeEntry`: as immutable as a frozen dataclass, and
    several times cheaper to build for thousands of blobs.
    """

    oid: str
    size: int
    sha256: str
    data: bytes | None
    head: bytes


def registered_kind(entry: TreeEntry, blob: Blob | None) -> tuple[RegisteredKind, str]:
    """The kind and SHA-256 a tree entry is registered with, and checked against.

    A submodule (or an entry without a blob) is hashed as its commit id; a file whose
    blob is a Git LFS pointer is an ``lfs-pointer``, hashed as the pointer, since the
    content it names is not in the repository.
    """
    if entry.kind == "submodule" or blob is None:
        return "submodule", sha256_hex(entry.oid.encode())
    if entry.kind == "file" and is_lfs_pointer(blob.head):
        return "lfs-pointer", blob.sha256
    return entry.kind, blob.sha256


def decode_path(raw: bytes) -> str:
    """Git path bytes as text; names that are not UTF-8 keep their bytes as escapes."""
    return raw.decode("utf-8", errors="surrogateescape")


def check_commit_text(text: str) -> str:
    """Refuse anything but a hex object id or prefix (no refs, ``HEAD~2``, ``:/x``)."""
    if text.startswith("-") or not HEX_PREFIX.fullmatch(text):
        raise UnsafeInput(
            f"'{text}' is not a commit id: give 4 to 40 hex digits of a commit",
            hint="refs, HEAD~N, :/text and values starting with '-' are refused; "
            "use `git log` in the mirror to find the id",
        )
    return text.lower()


class Mirror:
    """A bare repository read through its object store."""

    def __init__(self, git_dir: Path, *, size_cap: int | None = None) -> None:
        self.git_dir = git_dir
        self.size_cap = DEFAULT_SIZE_CAP if size_cap is None else size_cap
        if not (git_dir / "objects").is_dir():
            raise GitError(
                f"no mirror at {git_dir}", hint=f"run {_fetch_command(git_dir)} to create it"
            )
        fmt = self._git("rev-parse", "--show-object-format").stdout.decode().strip()
        if fmt != "sha1":
            raise UnsupportedRepository(
                f"{git_dir} uses the {fmt} object format; tracework reads SHA-1 repositories only",
            )
        self._trees: dict[str, dict[str, TreeEntry]] = {}
        self._recent: dict[str, Blob] = {}  # read_blob's, oldest first
        self._recent_lock = threading.Lock()

    def _git(
        self, *args: str, input: bytes | None = None, reading: str | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """Run git in the mirror; ``reading`` names what git reads (``commit 1a2b…``).

        With ``reading``, a failure is the mirror's: fetch only lets in objects that
        fsck accepts and pins keep commits reachable, so git failing to read a
        resolved commit (a truncated tree, a bad mode) means damaged or hand-written
        objects, and the message says which commit and how to get a sound mirror.
        """
        if reading is None:
            return run_git(self.git_dir, args, input=input)
        proc = run_git(self.git_dir, args, input=input, check=False)
        if proc.returncode != 0:
            raise GitError(
                f"cannot read {reading} in {self.git_dir.name}: {git_message(proc.stderr)}",
                hint=_damaged_hint(self.git_dir),
            )
        return proc

    # -- commits -----------------------------------------------------------------

    def object_types(self, oids: Iterable[str]) -> dict[str, str]:
        """Type of each object id (``missing`` when absent), via one batch-check."""
        wanted = list(oids)
        out = self._git(
            "cat-file",
            "--batch-check=%(objectname) %(objecttype)",
            input="".join(f"{o}\n" for o in wanted).encode(),
        ).stdout.decode()
        types: dict[str, str] = {}
        for oid, line in zip(wanted, out.splitlines(), strict=False):
            parts = line.split()
            types[oid] = parts[1] if len(parts) == 2 and parts[1] != "missing" else "missing"
        return types

    def resolve_commit(self, text: str) -> str:
        """A full 40-hex commit id from an id or a unique object-id prefix.

        A prefix is matched against object ids only (``rev-parse --disambiguate``),
        never against ref names, so a branch named like a hex prefix is ignored.
        """
        text = check_commit_text(text)
        if len(text) == 40:
            candidates = [text]
        else:
            out = self._git("rev-parse", f"--disambiguate={text}").stdout.decode()
            candidates = sorted(set(out.split()))
        types = self.object_types(candidates)
        commits = [o for o, t in types.items() if t == "commit"]
        if not commits:
            others = {o: t for o, t in types.items() if t != "missing"}
            if others:
                raise self._not_a_commit(text, others)
            raise CommitAbsent(
                f"no commit {text} in {self.git_dir.name}",
                hint=f"run {_fetch_command(self.git_dir)} if the subject has new commits",
            )
        if len(commits) > 1:
            raise CommitNotFound(
                f"commit prefix {text} is ambiguous: " + ", ".join(c[:12] for c in commits),
                hint="give more hex digits",
            )
        oid = commits[0]
        if not FULL_OID.fullmatch(oid):
            raise CommitNotFound(f"{text} did not resolve to a full commit id")
        return oid

    def _not_a_commit(self, text: str, found: dict[str, str]) -> CommitNotFound:
        """The error for an id (or prefix) of objects that exist but are not commits.

        Saying what they are beats "no commit": the user gave a tree or a blob id by
        mistake, or an annotated tag's.  A tag is not peeled silently (a pin must name
        a commit, and the register must say which); the hint gives its commit instead.
        """
        what = " and ".join(
            f"{_KIND_NAMES.get(kind, kind)}" + ("" if oid == text else f" ({oid[:12]})")
            for oid, kind in sorted(found.items())
        )
        message = f"no commit {text} in {self.git_dir.name}: {text} is {what}, not a commit"
        tags = [oid for oid, kind in sorted(found.items()) if kind == "tag"]
        if len(found) == 1 and tags and FULL_OID.fullmatch(tags[0]):
            target = run_git(
                self.git_dir,
                ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{tags[0]}^{{commit}}"],
                check=False,
            )
            peeled = target.stdout.decode().strip() if target.returncode == 0 else ""
            if FULL_OID.fullmatch(peeled):
                hint = f"a pin must be a commit; the tag points at commit {peeled}: give that id"
            else:
                hint = "a pin must be a commit, and this tag points at no commit"
        else:
            hint = "give the id of a commit (`git log` in the mirror lists them)"
        return CommitNotFound(message, hint=hint)

    def commit_info(self, oid: str) -> CommitInfo:
        """Committer date and subject line of a resolved commit."""
        out = self._git(
            "show",
            "-s",
            "--no-show-signature",
            "--format=%H%x00%cI%x00%s",
            "--end-of-options",
            oid,
            reading=f"commit {oid[:12]}",
        ).stdout.decode("utf-8", errors="replace")
        full, date, subject = out.rstrip("\n").split("\x00", 2)
        return CommitInfo(full, date, subject)

    def ancestors(self, oid: str) -> list[str]:
        """The commits before a resolved commit (its ancestors, without it), the nearest
        first (``git rev-list --topo-order``: no parent before its children)."""
        out = self._git(
            "rev-list", "--topo-order", "--end-of-options", oid, reading=f"commit {oid[:12]}"
        ).stdout.decode("ascii")
        return [c for c in out.split() if c != oid]

    def read_ref(self, name: str) -> RefTarget | None:
        """The ref of exactly this full name (``refs/heads/main``), or None when there is none.

        Never through git's abbreviation rules: ``rev-parse main`` tries ``refs/main``,
        then ``refs/tags/main``, before ``refs/heads/main`` (and ``refs/remotes/main``
        after it), so a tag a subject names like its branch, or a ref a copied mirror
        carries, would stand in for the branch.  ``for-each-ref`` matches by name;
        rows of longer names it also lists (``refs/heads/main/x``) are left out.
        """
        if not _FULL_REF.fullmatch(name):
            raise UnsafeInput(f"'{name}' is not a full ref name tracework reads")
        out = self._git(
            "for-each-ref",
            "--format=%(refname)%00%(objectname)%00%(objecttype)%00%(symref)",
            "--end-of-options",
            name,
        ).stdout.decode("utf-8", errors="replace")
        rows = [line.split("\0") for line in out.splitlines()]
        row = next((r for r in rows if len(r) == 4 and r[0] == name), None)
        if row is None:
            return None
        _, oid, kind, symref = row
        if kind == "tag":
            # an annotated tag (perhaps of another tag): peel it all the way; the oid is a
            # full object id, which git never reads as a ref name
            peeled = self._git(
                "rev-parse", "--verify", "--quiet", "--end-of-options", f"{oid}^{{}}"
            ).stdout.decode()
            oid_peeled = peeled.strip()
            kind = self.object_types([oid_peeled])[oid_peeled]
        else:
            oid_peeled = oid
        commit = oid_peeled if kind == "commit" and FULL_OID.fullmatch(oid_peeled) else None
        return RefTarget(name, oid, symref, commit, kind)

    def head_branch(self) -> str | None:
        """The full name of the branch the mirror's HEAD names; None when HEAD is detached.

        ``clone`` makes HEAD name the subject's default branch; when the subject's HEAD
        is detached or names a tag, the mirror's HEAD is left detached at one commit.
        """
        proc = run_git(self.git_dir, ["symbolic-ref", "--quiet", "HEAD"], check=False)
        if proc.returncode == 1:
            return None
        if proc.returncode != 0:
            raise GitError(
                f"cannot read HEAD in {self.git_dir.name}: {git_message(proc.stderr)}",
                hint=_damaged_hint(self.git_dir),
            )
        return proc.stdout.decode("utf-8", errors="replace").strip()

    def keep(self, commit: str) -> None:
        """Keep a pinned commit reachable: ``refs/tracework/pins/<id>`` points at it.

        The commit's tree is read first (and refused if malformed, see :meth:`tree`):
        a pin every later command would refuse is better refused when it is made.
        """
        if not FULL_OID.fullmatch(commit):
            raise CommitNotFound(f"{commit!r} is not a full commit id")
        self.tree(commit)
        self._git("update-ref", f"refs/tracework/pins/{commit}", commit)

    # -- trees -------------------------------------------------------------------

    def tree(self, commit: str) -> dict[str, TreeEntry]:
        """Every path in the commit's tree (recursively), cached per commit.

        Fetch's fsck refuses malformed trees on the way in, but a tree written straight
        into the mirror never met it; what ``ls-tree -r -t`` shows of such a tree is
        refused here (see :func:`_tree_problem`), so no path like ``..`` or ``.git/x``
        is ever registered, quoted or checked.  The listing's folder rows (``-t``) are
        read only for that check.
        """
        if commit not in self._trees:
            proc = run_git(
                self.git_dir,
                ["ls-tree", "-r", "-t", "-z", "--full-tree", "--end-of-options", commit],
                check=False,
            )
            if proc.returncode != 0:
                raise GitError(
                    f"cannot read the tree of commit {commit[:12]} in {self.git_dir.name}: "
                    f"{git_message(proc.stderr)}",
                    hint=_damaged_hint(self.git_dir),
                )
            out = proc.stdout
            entries: dict[str, TreeEntry] = {}
            folders: list[str] = []
            kind_of_mode = _KIND_OF_MODE
            # decoded once: NUL, tab and space are never part of a UTF-8 sequence, so
            # the whole listing decodes as each of its paths would on its own
            for record in decode_path(out).split("\0"):
                if not record:
                    continue
                meta, _, path = record.partition("\t")
                mode, kind, oid = meta.split(" ")
                if kind == "tree":
                    folders.append(path)
                else:
                    entries[path] = TreeEntry(path, mode, oid, kind_of_mode.get(mode, "file"))
            problem = _tree_problem(out, entries, folders)
            if problem is not None:
                raise GitError(
                    f"the tree of commit {commit[:12]} in {self.git_dir.name} is malformed: "
                    f"{problem}",
                    hint=_damaged_hint(self.git_dir),
                )
            self._trees[commit] = entries
        return self._trees[commit]

    def entry(self, commit: str, path: str) -> TreeEntry:
        """The tree entry of ``path`` at ``commit``, or a clear error."""
        entry = self.tree(commit).get(path)
        if entry is None:
            raise PathNotFound(
                f"{path} is not in the tree at {commit[:12]}",
                hint="paths are relative to the repository root, with '/' separators",
            )
        return entry

    # -- blobs -------------------------------------------------------------------

    def read_blobs(self, oids: Iterable[str]) -> dict[str, Blob]:
        """Read many blobs in one ``cat-file --batch`` pass (see :class:`BlobStream`)."""
        wanted = list(oids)
        if not wanted:
            return {}
        with self.stream_blobs(wanted) as stream:
            return stream.read_all()

    def stream_blobs(self, oids: list[str], *, whole: bool = False) -> BlobStream:
        """Start reading blobs ``oids`` in that order; take each one when it is needed.

        ``whole`` keeps every blob's bytes whatever its size: the first-change search
        looks for a quote's bytes in each version of its file.
        """
        return BlobStream(self.git_dir, oids, None if whole else self.size_cap)

    def read_blob(self, oid: str) -> Blob:
        """One blob (see :meth:`read_blobs`), kept among the last :data:`RECENT_BLOBS`
        read this way: a notebook reads a file once for each span it quotes of it, and
        a blob's bytes never change."""
        with self._recent_lock:
            blob = self._recent.pop(oid, None)
        if blob is None:
            blob = self.read_blobs([oid])[oid]
        with self._recent_lock:  # a mirror may be read from several threads
            self._recent[oid] = blob  # the newest last
            if len(self._recent) > RECENT_BLOBS:
                del self._recent[next(iter(self._recent))]
        return blob

    # -- history -----------------------------------------------------------------

    def changes(self, old: str, new: str) -> Changes:
        """What changed between two commits: renames (git's detection) and touched paths."""
        out = self._git(
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--find-renames",
            "--name-status",
            "-z",
            "--end-of-options",
            old,
            new,
            reading=f"the change from {old[:12]} to {new[:12]}",
        ).stdout
        fields = out.split(b"\0")
        renamed: dict[str, str] = {}
        touched: set[str] = set()
        i = 0
        while i < len(fields) and fields[i]:
            status = fields[i].decode()
            if status.startswith(("R", "C")):
                if status.startswith("R"):
                    renamed[decode_path(fields[i + 1])] = decode_path(fields[i + 2])
                touched.add(decode_path(fields[i + 2]))
                i += 3
            else:
                if not status.startswith("D"):
                    touched.add(decode_path(fields[i + 1]))
                i += 2
        return Changes(renamed, frozenset(touched))

    def line_hunks_many(
        self, old: str, new: str, paths: list[str]
    ) -> dict[str, list[tuple[int, int, int, int]]]:
        """``git diff -U0`` hunks of many files edited in place, in one git call per 500.

        Paths git would print quoted (with ``"``, ``\\`` or control characters) are
        left out; the caller diffs those blobs one by one with :meth:`line_hunks`.
        """
        plain = [p for p in paths if not _QUOTED_BY_GIT.search(p) and not p.startswith(" ")]
        result: dict[str, list[tuple[int, int, int, int]]] = {}
        for start in range(0, len(plain), 500):
            chunk = plain[start : start + 500]
            out = self._git(
                "-c",
                "core.quotePath=false",
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--no-renames",
                "-U0",
                "--no-color",
                "--end-of-options",
                old,
                new,
                "--",
                *chunk,
                reading=f"the change from {old[:12]} to {new[:12]}",
            ).stdout.decode("utf-8", errors="surrogateescape")
            current: str | None = None
            in_header = False  # file headers come between "diff --git" and the first "@@"
            for line in out.split("\n"):
                if line.startswith("diff --git "):
                    in_header, current = True, None
                elif in_header and line.startswith("+++ b/"):
                    current = line[6:].removesuffix("\t")
                    result.setdefault(current, [])
                elif line.startswith("@@ ") and current is not None:
                    in_header = False
                    result[current].append(_hunk(line))
        asked = set(plain)
        return {p: h for p, h in result.items() if p in asked}

    def line_hunks(self, old_blob: str, new_blob: str) -> list[tuple[int, int, int, int]]:
        """``git diff -U0`` hunks between two blobs: (old_start, old_len, new_start, new_len)."""
        out = self._git(
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "-U0",
            "--no-color",
            "--end-of-options",
            old_blob,
            new_blob,
            reading=f"the change from blob {old_blob[:12]} to {new_blob[:12]}",
        ).stdout.decode("utf-8", errors="replace")
        return [_hunk(line) for line in out.split("\n") if line.startswith("@@ ")]


class BlobStream:
    """The one reader of blobs: a ``git cat-file --batch`` process, read only as far as asked.

    Blobs named up front (by object id) are git's input, an unlinked file of their
    names, and git answers with ``--buffer`` through a 1 MiB pipe, so a caller asking for
    them in the order given (:meth:`get`) works on the blobs read so far while git
    decompresses the next ones on another core.  A stream given no names answers
    :meth:`at` instead, for ``<commit>:<path>`` asked one at a time when the next name
    depends on the last answer (a bisection): there git answers each name as it comes,
    since ``--buffer`` holds answers back until the input ends.  The size comes from
    each object's header before its content is read; a blob over the size cap is
    streamed into the hash and its bytes are not kept.  Close it (or use it as a context
    manager) to end git early.
    """

    def __init__(self, git_dir: Path, oids: list[str], size_cap: int | None) -> None:
        oids = list(dict.fromkeys(oids))
        self._git_dir, self._name, self._size_cap = git_dir, git_dir.name, size_cap
        self._order = iter(oids)
        self.blobs: dict[str, Blob] = {}
        self._found: dict[str, Blob | None] = {}
        self._asking = not oids  # names asked one at a time, answered at once
        if self._asking:
            self._proc = subprocess.Popen(
                ["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=hardened_env(),
            )
        else:
            with _names_file(oids) as names:
                self._proc = subprocess.Popen(
                    ["git", f"--git-dir={git_dir}", "cat-file", "--batch", "--buffer"],
                    stdin=names,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=hardened_env(),
                    bufsize=READ_BUFFER,
                )
        assert self._proc.stdout is not None
        resize = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux's
        if not self._asking and resize is not None:
            with suppress(OSError):  # a larger pipe: git runs further ahead of the reader
                fcntl.fcntl(self._proc.stdout, resize, READ_BUFFER)
        self._stdin, self._stdout = self._proc.stdin, self._proc.stdout
        self._wanted = frozenset(oids)

    def __contains__(self, oid: str) -> bool:
        return oid in self._wanted

    def get(self, oid: str) -> Blob:
        """Blob ``oid`` (one of those given), reading forward to it if need be."""
        if oid not in self._wanted:
            raise KeyError(oid)
        while oid not in self.blobs:
            self._read_next()
        return self.blobs[oid]

    def read_all(self) -> dict[str, Blob]:
        """Every blob given, read to the end."""
        while len(self.blobs) < len(self._wanted):
            self._read_next()
        return self.blobs

    def at(self, commit: str, path: str) -> Blob | None:
        """The blob at ``path`` in ``commit``'s tree, asked now; None when the path is
        not there or is not a file (each name is asked once)."""
        if not self._asking:
            raise ValueError("at() reads from a stream given no blobs up front")
        spec = f"{commit}:{path}"
        if spec not in self._found:
            if "\n" in spec or "\r" in spec:  # one name per line: git would read two
                self._found[spec] = None
                return None
            self._ask(spec)
            self._found[spec] = self._read_object(spec, missing_ok=True)
        return self._found[spec]

    def close(self) -> None:
        """End git (killed if blobs are left unread) and reap it."""
        if self._proc.returncode is None:
            if len(self.blobs) < len(self._wanted):
                self._proc.kill()
            if self._stdin is not None:
                with suppress(OSError):  # git died while a question was written
                    self._stdin.close()
            self._stdout.close()
            self._proc.wait()

    def __enter__(self) -> BlobStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ask(self, spec: str) -> None:
        if self._proc.returncode is not None or self._stdin is None:
            raise self._ended()
        try:
            self._stdin.write(spec.encode("utf-8", "surrogateescape") + b"\n")
            self._stdin.flush()
        except OSError:
            raise self._ended() from None

    def _ended(self) -> GitError:
        return GitError(
            f"the read of blobs from {self._name} was ended early",
            hint="read a closed stream's blobs from its `blobs`, or start a new one",
        )

    def _read_next(self) -> None:
        if self._proc.returncode is not None:
            raise self._ended()
        oid = next(self._order)
        try:
            blob = self._read_object(oid, missing_ok=False)
        except BaseException:
            self.close()  # kills git, which unblocks the feeder
            raise
        assert blob is not None
        self.blobs[oid] = blob

    def _read_object(self, name: str, *, missing_ok: bool) -> Blob | None:
        """The next answer on the pipe, the object called ``name``.  An object that is
        not there, or not a blob, is None when ``missing_ok`` (a path a commit lacks),
        else an error (an object id the mirror should hold)."""
        stream = self._stdout
        header = stream.readline().split()
        if len(header) != 3:
            if missing_ok and len(header) == 2:  # "<name> missing" or "<name> ambiguous"
                return None
            raise GitError(
                f"object {name[:12]} is missing or unreadable in {self._name}",
                hint=f"the mirror may be incomplete; run {_fetch_command(self._git_dir)} again",
            )
        raw_oid, kind, size_text = header
        size = int(size_text)
        if kind != b"blob":
            _drain(stream, size + 1)
            if missing_ok:
                return None
            raise GitError(f"object {name[:12]} is a {kind.decode(errors='replace')}, not a file")
        oid = raw_oid.decode()
        if self._size_cap is None or size <= self._size_cap:
            data = _read_exact(stream, size)
            stream.read(1)
            return Blob(oid, size, sha256_hex(data), data, data[:8000])
        head = _read_exact(stream, min(size, 8000))
        digest = _hash_stream(stream, size - len(head), hashlib.sha256(head))
        stream.read(1)
        return Blob(oid, size, digest, None, head)


# A path component fsck refuses that a listing can show: empty (it stood beside a '/' in
# the name), '.', '..' or '.git' in any case.  Spellings only a checkout on HFS+ or NTFS
# would read as '.git' ('GIT~1', '.g\u200cit') are fsck's business at fetch: nothing here
# checks out, so they are read as the plain names they are.
_BAD_COMPONENT = re.compile(r"[\0/](\.{0,2}|\.git)(?=[\0/])", re.IGNORECASE)


def _tree_problem(out: bytes, entries: dict[str, TreeEntry], folders: list[str]) -> str | None:
    """What makes a tree malformed, judged from its ``ls-tree -r -t -z`` listing, or None.

    Fsck refuses these, so a fetched tree never has them; a tree written straight into
    the mirror may.  In a listing a refused name (``..``, ``.GIT``) is a path component,
    a duplicate name is a path listed twice (a file and a folder of one name included),
    and a name holding '/' is an empty component (``/x``, ``x/``), a duplicate, or a path
    whose folder the listing lacks.  One such name cannot be seen: ``a/b`` beside a
    folder ``a`` that lacks ``b`` lists exactly like a well-formed tree, and yields the
    same paths, so nothing reads it wrongly.  One regex and a few set operations: about
    0.3 µs an entry, on the hot path of ``check``.
    """
    if not entries and not folders:
        return None  # an empty tree: a commit that holds no file is well formed
    text = "\0" + "\0".join([*entries, *folders]) + "\0"
    bad = _BAD_COMPONENT.search(text)
    if bad is not None:
        path = text[text.rfind("\0", 0, bad.start() + 1) + 1 : text.find("\0", bad.end())]
        name = bad.group(1)
        what = f"holds the name '{_shown(_raw(name))}'" if name else "has an empty name"
        return f"entry '{_shown(_raw(path))}' {what}"
    folder_set = set(folders)
    if len(entries) + len(folder_set) != out.count(b"\0") or not folder_set.isdisjoint(entries):
        seen: set[bytes] = set()
        for record in out.split(b"\0"):
            raw_path = record.partition(b"\t")[2]
            if raw_path in seen:
                return f"entry '{_shown(raw_path)}' is listed twice"
            seen.add(raw_path)
    parents = {path.rpartition("/")[0] for path in entries}
    parents.update(folder.rpartition("/")[0] for folder in folders)
    parents.discard("")
    if not parents <= folder_set:
        lost = min(parents - folder_set)
        child = min(p for p in (*entries, *folders) if p.rpartition("/")[0] == lost)
        return (
            f"entry '{_shown(_raw(child))}' has a name holding '/' "
            f"(the tree lists no folder '{_shown(_raw(lost))}')"
        )
    return None


def _raw(path: str) -> bytes:
    """A path's bytes again (the inverse of :func:`decode_path`)."""
    return path.encode("utf-8", errors="surrogateescape")


def _shown(raw: bytes) -> str:
    """Path bytes fit for one line of a message: not UTF-8 and unprintable characters
    are escaped, so a name cannot break or forge the message."""
    text = raw.decode("utf-8", errors="backslashreplace")
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )


def _subject_of(git_dir: Path) -> str | None:
    """The subject a mirror belongs to, when it sits where fetch puts mirrors
    (``sources/.mirrors/NAME.git``); None for any other folder (a test's, a temp one)."""
    if git_dir.parent.name == ".mirrors" and git_dir.parent.parent.name == "sources":
        return git_dir.name.removesuffix(".git") if git_dir.suffix == ".git" else None
    return None


def _fetch_command(git_dir: Path) -> str:
    """The fetch a hint suggests: with the subject's name when the folder tells it."""
    name = _subject_of(git_dir)
    return f"`tracework fetch {name}`" if name else "`tracework fetch` with the subject's name"


def _damaged_hint(git_dir: Path) -> str:
    """The remedy for objects fetch would have refused: only a fresh mirror is trusted."""
    name = _subject_of(git_dir)
    cause = "the mirror's objects were damaged or written by hand (fetch refuses such objects)"
    if name:
        return f"{cause}; delete sources/.mirrors/{name}.git and run `tracework fetch {name}`"
    return f"{cause}; delete the mirror {git_dir} and fetch its subject again"


_KIND_NAMES = {"tree": "a tree", "blob": "a blob", "tag": "an annotated tag"}

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_QUOTED_BY_GIT = re.compile(r'["\\\x00-\x1f\x7f]')


def _hunk(header: str) -> tuple[int, int, int, int]:
    """(old_start, old_len, new_start, new_len) from a ``@@ -a,n +b,m @@`` header."""
    m = _HUNK.match(header)
    if m is None:
        raise GitError(f"unexpected diff hunk header {header[:80]!r}")
    a, alen, b, blen = m.groups()
    return int(a), 1 if alen is None else int(alen), int(b), 1 if blen is None else int(blen)


@contextmanager
def _names_file(names: list[str]) -> Iterator[IO[bytes]]:
    """The names, one a line, in an unlinked file that git reads as its input: nothing
    to feed from a thread, so git never waits on this process (a busy interpreter
    hands a feeder thread the GIL only every few milliseconds)."""
    with TemporaryFile() as handle:
        handle.write("".join(f"{name}\n" for name in names).encode("utf-8", "surrogateescape"))
        handle.seek(0)
        yield handle


def _read_exact(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise GitError("git cat-file ended early while reading a blob")
    return data


def _drain(stream: IO[bytes], size: int) -> None:
    while size > 0:
        chunk = stream.read(min(size, 1 << 20))
        if not chunk:
            return
        size -= len(chunk)


def _hash_stream(stream: IO[bytes], size: int, digest: hashlib._Hash) -> str:
    while size > 0:
        chunk = stream.read(min(size, 1 << 20))
        if not chunk:
            raise GitError("git cat-file ended early while streaming a blob")
        digest.update(chunk)
        size -= len(chunk)
    return digest.hexdigest()
