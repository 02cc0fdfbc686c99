"""Adding evidence to a register: sources, registered files, assertions and captures
(quotes: :mod:`tracework.register.quotes`).

Each function validates everything first (subject, commit, paths, span), then
changes the register in one locked, atomic edit, so bad input leaves it unchanged.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import tracework.register.edits as regy
import tracework.register.nodes as nodes
import tracework.register.store as reg
from tracework.errors import (
    CommitAbsent,
    PathNotFound,
    RegisterError,
)
from tracework.git.mirror import FULL_OID, Blob, Mirror, TreeEntry, registered_kind
from tracework.git.subjects import open_mirror
from tracework.hashing import (
    display_text,
    document_location_problem,
    is_binary,
    is_document_url,
    workspace_file_sha256,
)
from tracework.register.fileappend import write_files
from tracework.register.models import (
    Assertion,
    DocumentSource,
    FileEntry,
    GitSource,
)
from tracework.workspace import Workspace


def add_source(
    ws: Workspace, register_path: Path, sid: str, subject: str, commit: str
) -> GitSource:
    """Pin a subject at a commit as source ``sid`` (``SRC-<n>``)."""
    _check_source_id(sid)
    mirror = open_mirror(ws, subject)
    oid = mirror.resolve_commit(commit)
    info = mirror.commit_info(oid)
    mirror.keep(oid)
    source = GitSource(subject=subject, commit=oid, date=info.date)
    _write_source(register_path, sid, source)
    return source


def _write_source(register_path: Path, sid: str, source: GitSource | DocumentSource) -> None:
    """Add a new source under ``sid``; a source is written once, never replaced."""
    with regy.edit(register_path) as doc:
        sources = regy.section(doc, "sources")
        if sid in sources:
            raise RegisterError(
                f"{register_path.name}: source {sid} already exists",
                hint="a source is added once; give the new one another id (SRC-n)",
            )
        sources[sid] = nodes.source_node(source)


def _check_source_id(sid: str) -> None:
    if not re.fullmatch(r"SRC-[0-9]+", sid):
        raise RegisterError(f"'{sid}' is not a source id", hint="source ids look like SRC-1")


def add_document(
    ws: Workspace, register_path: Path, sid: str, location: str, sha256: str | None = None
) -> DocumentSource:
    """Register a document cited as evidence as source ``sid``: a file in the workspace,
    hashed now (``sha256``, when given, must match), or an https URL with the ``sha256``
    its content must have (never fetched: tracework reads the network only in ``fetch``)."""
    _check_source_id(sid)
    if sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise RegisterError(f"--sha256 {sha256!r} is not 64 lower-case hex digits")
    if "://" in location and not is_document_url(location):
        raise RegisterError(
            f"{location!r} is not an https URL", hint="give an https URL or a file in the workspace"
        )
    if not is_document_url(location):
        location = _workspace_relative(ws, location)
    problem = document_location_problem(location)
    if problem:
        raise RegisterError(f"{location!r}: {problem}")
    if is_document_url(location):
        if sha256 is None:
            raise RegisterError(
                f"a document by URL needs --sha256: tracework never fetches {location}",
                hint="download it, then `sha256sum` it, or register the downloaded file by path",
            )
        digest = sha256
    else:
        try:
            digest = workspace_file_sha256(ws.root, location)
        except OSError as exc:
            raise RegisterError(f"{location}: cannot be read ({exc.strerror})") from None
        if sha256 is not None and sha256 != digest:
            raise RegisterError(
                f"{location} hashes to {digest}, not the --sha256 given ({sha256})",
                hint="check that this is the document the dossier means",
            )
    source = DocumentSource(location=location, sha256=digest)
    _write_source(register_path, sid, source)
    return source


def _workspace_relative(ws: Workspace, location: str) -> str:
    """A path given on the command line, as the workspace-relative path the register
    keeps (symlinks are not resolved: the register names what the analyst named)."""
    path = Path(os.path.normpath(ws.root / location))
    root = Path(os.path.normpath(ws.root))
    if root not in path.parents:
        raise RegisterError(
            f"{location} is not inside the workspace",
            hint="copy the document into the workspace (e.g. sources/documents/) so that "
            "the register stays valid wherever the workspace goes",
        )
    return path.relative_to(root).as_posix()


# -- files -----------------------------------------------------------------------------

_GLOB_CHARS = re.compile(r"[*?\[]")


def glob_regex(pattern: str) -> Any:
    """A tree glob as a compiled RE2 expression, for :func:`matchable` paths: ``*`` and
    ``?`` stay within a folder, ``**`` crosses folders, ``[..]`` is a set.

    RE2 runs in time linear in the path whatever the pattern.  Python's backtracking
    engine, given the same expression, took 37 s to find that eight ``**/`` do not
    match one path 40 folders deep (each ``**/`` tries every split of the folders
    left).  The expression is the one it always was; only the engine changed, so the
    glob means what it meant.
    """
    import re2  # a compiled engine: loaded by the commands that match globs

    out, i = ["(?s)"], 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            start = i + 2 if pattern.startswith(("[!", "[^"), i) else i + 1
            end = pattern.find("]", start + 1 if pattern.startswith("]", start) else start)
            if end == -1:  # no closing bracket: a literal "["
                out.append(_char(ch))
            else:  # a set: "!" or "^" negates (as in git and bash), "-" makes ranges
                body = _set_body(pattern, pattern[start:end])
                out.append(f"[{'^' if start == i + 2 else ''}{body}]")
                i = end
        else:
            out.append(_char(ch))
        i += 1
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile("".join(out).encode("utf-8"), options)
    except re2.error:  # the ranges are checked above: what is left is size
        raise PathNotFound(
            f"{pattern!r} is not a valid glob (too long for the matcher)",
            hint="name fewer files per glob, or give several globs",
        ) from None


def _set_body(pattern: str, body: str) -> str:
    """A glob set's body as an RE2 set's: every character literal, but a ``-`` between
    two others, which makes a range (so no ``[:alpha:]``, ``&&`` or ``--`` means more
    to the engine)."""
    out, k = [], 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-" and "-" not in (body[k], body[k + 2]):
            low, high = ord(body[k]), ord(body[k + 2])
            if low > high:
                raise PathNotFound(
                    f"{pattern!r} is not a valid glob (the range {body[k : k + 3]} runs backwards)",
                    hint="write a range low to high, e.g. [a-z]",
                )
            out.append(_range(low, high))
            k += 3
        else:
            out.append(_char(body[k]))
            k += 1
    return "".join(out)


#: Where a path's lone surrogates go for matching (see :func:`matchable`): the last
#: 2,048 code points, private use, which RE2 can match as any other character.  A name
#: holding one of those very code points would match as the byte it stands for here.
_SURROGATE_SHIFT = 0x10F800 - 0xD800
_SURROGATES = re.compile("[\ud800-\udfff]")


def matchable(path: str) -> bytes:
    """A path as the UTF-8 a glob from :func:`glob_regex` matches.

    A file name that is not UTF-8 reaches tracework as text holding lone surrogates
    (``surrogateescape``), which UTF-8 cannot encode; each is moved to a private-use
    code point, as the glob's own characters are, so ``?`` still matches it and a set
    or range holds it as it did.
    """
    try:
        return path.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub(lambda m: chr(ord(m[0]) + _SURROGATE_SHIFT), path).encode("utf-8")


def _char(ch: str) -> str:
    """One literal character in RE2 syntax (a letter or digit as itself, else by code)."""
    if ch.isascii() and (ch.isalnum() or ch == "_"):
        return ch
    code = ord(ch)
    return f"\\x{{{code + _SURROGATE_SHIFT if 0xD800 <= code <= 0xDFFF else code:x}}}"


def _range(low: int, high: int) -> str:
    """A range of code points in an RE2 set: the lone surrogates it spans, moved as
    :func:`matchable` moves them, then the rest."""
    parts = [(low, min(high, 0xD7FF)), (max(low, 0xE000), high)]
    parts.append((max(low, 0xD800) + _SURROGATE_SHIFT, min(high, 0xDFFF) + _SURROGATE_SHIFT))
    return "".join(f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in parts if a <= b)


def match_paths(tree: dict[str, TreeEntry], pattern: str) -> list[str]:
    """Paths of the tree one plain path, folder or glob names (sorted; maybe none)."""
    pattern = pattern.strip("/") if pattern not in ("", "/") else pattern
    if _GLOB_CHARS.search(pattern):
        rx = glob_regex(pattern)
        return sorted(p for p in tree if rx.fullmatch(matchable(p)))
    if pattern in tree:
        return [pattern]
    return sorted(p for p in tree if p.startswith(pattern + "/"))


def expand_paths(tree: dict[str, TreeEntry], patterns: list[str], commit: str) -> list[str]:
    """Paths of the tree named by plain paths, folders or globs; each must name something."""
    chosen: dict[str, None] = {}
    for pattern in patterns:
        hits = match_paths(tree, pattern)
        if not hits:
            raise PathNotFound(
                f"{pattern} matches nothing in the tree at {commit[:12]}",
                hint="paths are relative to the repository root; globs use * ? [..] and **",
            )
        chosen.update(dict.fromkeys(hits))
    return list(chosen)


def file_entry(entry: TreeEntry, blob: Blob | None, expect_sha256: str | None = None) -> FileEntry:
    """The register entry for a tree entry (see :func:`tracework.git.mirror.registered_kind`)."""
    kind, sha256 = registered_kind(entry, blob)
    if blob is None or kind == "submodule":
        return FileEntry(
            sha256=sha256, kind=kind, size=0, target=entry.oid, expect_sha256=expect_sha256
        )
    return FileEntry(
        sha256=sha256,
        kind=kind,
        size=blob.size,
        binary=entry.kind == "file" and is_binary(blob.head),
        target=display_text(blob.head) if entry.kind == "symlink" else None,
        expect_sha256=expect_sha256,
    )


def read_entries(mirror: Mirror, entries: list[TreeEntry]) -> dict[str, Blob]:
    """Blobs of the non-submodule entries, in one batch."""
    return mirror.read_blobs(e.oid for e in entries if e.kind != "submodule")


@dataclass(frozen=True)
class AddedFile:
    """One file an ``add-file`` named: newly registered, updated, or already as given."""

    path: str
    entry: FileEntry
    status: Literal["new", "updated", "unchanged"]
    before: FileEntry | None = None  #: the entry it replaced, when updated


def add_files(
    ws: Workspace,
    register_path: Path,
    sid: str,
    patterns: list[str],
    expect_sha256: str | None = None,
) -> list[AddedFile]:
    """Register every file the paths or globs name, with its SHA-256 at the source's pin.

    A file registered again without ``expect_sha256`` keeps the expectation it was
    given before: re-adding a folder must not silently drop a dossier's hash.
    """
    source = reg.load(register_path).git_source(sid)
    if expect_sha256 is not None:
        if len(patterns) != 1 or _GLOB_CHARS.search(patterns[0]):
            raise RegisterError("--expect-sha256 goes with exactly one path (no globs)")
        if not re.fullmatch(r"[0-9a-fA-F]{64}", expect_sha256):
            raise RegisterError(f"'{expect_sha256}' is not a 64-hex SHA-256")
        expect_sha256 = expect_sha256.lower()
    mirror = open_mirror(ws, source.subject)
    tree = mirror.tree(source.commit)
    paths = expand_paths(tree, patterns, source.commit)
    if expect_sha256 is not None and len(paths) != 1:
        raise RegisterError(
            f"--expect-sha256 goes with exactly one file; {patterns[0]} names {len(paths)}"
        )
    refuse_undecodable(paths)
    blobs = read_entries(mirror, [tree[p] for p in paths])

    def decide(registered: Callable[[str], FileEntry | None]) -> list[AddedFile]:
        added: list[AddedFile] = []
        for path in paths:
            before = registered(path)
            expected = expect_sha256
            if expected is None and before is not None:
                expected = before.expect_sha256
            entry = file_entry(tree[path], blobs.get(tree[path].oid), expected)
            if before == entry:
                added.append(AddedFile(path, entry, "unchanged"))
            elif before is None:
                added.append(AddedFile(path, entry, "new"))
            else:
                added.append(AddedFile(path, entry, "updated", before))
        return added

    # spliced in while the register is as tracework wrote it: dumping 100,000 entries
    # and parsing the register again would take a minute
    decided: list[AddedFile] = []

    def plan(registered: Callable[[str], FileEntry | None]) -> list[tuple[str, FileEntry]]:
        decided[:] = decide(registered)
        return [(a.path, a.entry) for a in decided if a.status != "unchanged"]

    if write_files(register_path, sid, plan):
        return decided
    with regy.edit(register_path) as doc:
        files = regy.section(doc["sources"][sid], "files")
        decided = decide(
            lambda path: FileEntry.model_validate(dict(files[path])) if path in files else None
        )
        for item in decided:
            if item.status != "unchanged":
                files[item.path] = nodes.file_node(item.entry)
    return decided


class AddedAssertion(NamedTuple):
    """What ``register assert`` recorded, and the file's hash where it was compared."""

    assertion: Assertion
    found: str | None  #: the file's hash at ``compared_at``; None: no such file there
    compared_at: str  #: the assertion's own commit, else the pin
    absent: bool  #: the assertion's commit is not in this mirror: compared at the pin


def add_assertion(
    ws: Workspace,
    register_path: Path,
    sid: str,
    path: str,
    sha256: str,
    by: str,
    at_commit: str | None = None,
    required: bool = False,
) -> AddedAssertion:
    """Record that document source ``by`` asserts ``path`` of git source ``sid`` has
    ``sha256`` (at ``at_commit``, or whichever commit is checked), and hash the file at
    once — at ``at_commit``, else at the pin — so the caller can say whether it holds.

    A dossier may be about a commit the subject's public history no longer has (a
    force-push, a rebased branch).  Such a commit, given in full, is kept as asserted:
    the assertion says it is about that commit, and is compared at the pin instead (see
    :func:`asserted_commit`).  The same asserter, file and commit again replaces the
    assertion: one document, one claim per file and commit."""
    register = reg.load(register_path)
    source = register.git_source(sid)
    if not isinstance(register.sources.get(by), DocumentSource):
        documents = [k for k, v in register.sources.items() if isinstance(v, DocumentSource)]
        raise RegisterError(
            f"--by {by} is not a document source of register {register.name}",
            hint=f"document sources: {', '.join(documents) or 'none'}; add the dossier with "
            "`tracework register add-document`",
        )
    if not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
        raise RegisterError(f"'{sha256}' is not a 64-hex SHA-256")
    mirror = open_mirror(ws, source.subject)
    about, absent = asserted_commit(mirror, at_commit) if at_commit is not None else (None, False)
    if about is not None and not absent:
        mirror.keep(about)  # as a pin is kept: readable after an upstream force-push
    compared = about if about is not None and not absent else source.commit
    refuse_undecodable([path])
    entry = mirror.tree(compared).get(path)
    found = registered_kind(entry, mirror.read_blob(entry.oid))[1] if entry else None
    made = Assertion(
        source=sid, path=path, sha256=sha256.lower(), by=by, at_commit=about, required=required
    )
    with regy.edit(register_path) as doc:
        kept = regy.section(doc, "assertions", regy.CommentedSeq)
        same = (made.source, made.path, made.by, made.at_commit)
        for i in reversed(range(len(kept))):
            old = kept[i]
            if (old.get("source"), old.get("path"), old.get("by"), old.get("at_commit")) == same:
                del kept[i]
        kept.append(nodes.assertion_node(made))
    return AddedAssertion(made, found, compared, absent)


def asserted_commit(mirror: Mirror, text: str) -> tuple[str, bool]:
    """The full id of the commit an assertion is about, and whether this mirror lacks it.

    A commit the mirror has is given by any unique prefix.  One it lacks can only be
    kept as the dossier gives it, in full: a prefix of a commit nobody here has names
    nothing, so it is refused, asking for the full id.  An object that is not a commit
    (a tree, a blob) is refused as it is everywhere.
    """
    try:
        return mirror.resolve_commit(text), False
    except CommitAbsent:
        oid = text.lower()
        if FULL_OID.fullmatch(oid):
            return oid, True
        raise RegisterError(
            f"no commit {text} in {mirror.git_dir.name}: a commit this mirror lacks is "
            "asserted about by its full id only",
            hint="give the commit's full 40-hex id, as the dossier gives it (a short one "
            "cannot be resolved here); the assertion is then compared at the pin",
        ) from None


def refuse_undecodable(paths: list[str]) -> None:
    """Refuse file names a register cannot store (not UTF-8), naming the first."""
    for path in paths:
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise PathNotFound(
                f"{path.encode('utf-8', 'surrogateescape')!r} is not a UTF-8 file name",
                hint="registers store UTF-8 names; such files cannot be registered yet",
            ) from None
