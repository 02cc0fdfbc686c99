"""``tracework check``: verify a register at its pin, or report drift at another commit.

Reads each source's tree once and all needed blobs in one batch, so a register of
thousands of files and quotes checks in about the time git takes to read them.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from tracework.errors import RegisterError, TraceworkError, check_iso_date
from tracework.git.mirror import Blob, BlobStream, Changes, Mirror, TreeEntry, registered_kind
from tracework.git.subjects import open_mirror
from tracework.hashing import (
    Lines,
    is_document_url,
    span_bytes,
    text_lines,
    workspace_file_sha256,
)
from tracework.register.data import (
    CaptureSourceData,
    DocumentSourceData,
    FileEntryData,
    GitSourceData,
    QuoteData,
    RegisterData,
)
from tracework.register.store import data_of
from tracework.workspace import Workspace

if TYPE_CHECKING:
    from tracework.drift.contract import (
        AssertionJson,
        CaptureSourceJson,
        CheckItemJson,
        CheckJson,
        DocumentSourceJson,
        GitSourceJson,
    )
    from tracework.drift.relocate import QuoteDrift, Target
    from tracework.register.models import Register


class CheckItem(NamedTuple):
    """One checked file or quote (the JSON contract's item).

    A named tuple, not a frozen dataclass: as immutable and typed, and three times
    cheaper to build, which counts when a check makes one per file and per quote.
    """

    kind: Literal["file", "quote"]
    id: str
    source: str
    path: str
    state: str
    lines: tuple[int, int] | None = None
    new_lines: tuple[int, int] | None = None
    new_path: str | None = None
    candidates: tuple[tuple[int, int], ...] | None = None
    diff: str | None = None
    detail: str = ""
    format_only: bool = False
    candidate_paths: tuple[str, ...] | None = None  # the file of each candidate
    sha256: str | None = None  # what the register holds, in full
    sha256_at_commit: str | None = None  # what the checked commit holds, None if nothing
    hint: str | None = None  # the fix, a command, when one command is it

    def as_json(self) -> CheckItemJson:
        (
            kind, id_, source, path, state, lines, new_lines, new_path, candidates, diff,
            detail, format_only, candidate_paths, sha256, sha256_at_commit, hint,
        ) = self  # one unpacking, not sixteen look-ups: this runs once per item  # fmt: skip
        return {
            "kind": kind,
            "id": id_,
            "source": source,
            "path": path,
            "state": state,
            "lines": list(lines) if lines else None,
            "new_lines": list(new_lines) if new_lines else None,
            "new_path": new_path,
            "candidates": [list(c) for c in candidates] if candidates else None,
            "candidate_paths": list(candidate_paths) if candidate_paths else None,
            "diff": diff,
            "format_only": format_only,
            "detail": detail,
            "sha256": sha256,
            "sha256_at_commit": sha256_at_commit,
            "hint": hint,
        }


class AssertionCheck(NamedTuple):
    """One asserted hash, checked: does the file hold what its asserter says?"""

    source: str
    path: str
    by: str | None  # a document source; None: the analyst's own --expect-sha256
    commit: str  # where the hash was compared: the assertion's own, the checked, or the pin
    state: Literal["holds", "differs", "missing"]
    sha256: str  # asserted
    sha256_at_commit: str | None  # the file's hash there; None when the file is not there
    required: bool = False
    about: str | None = None  # the commit asserted about, as asserted; None: any commit
    absent: bool = False  # ``about`` is not in this mirror: compared at the pin instead

    @property
    def fails(self) -> bool:
        """A required assertion that does not hold fails the check; others are findings."""
        return self.required and self.state != "holds"

    def where(self) -> str:
        """Where it was compared, in words: ``at <commit>``, or for a commit this mirror
        lacks, that it is about that commit and was compared at the pin."""
        return where_compared(self.commit, self.about, self.absent)

    def as_json(self) -> AssertionJson:
        return {
            "source": self.source,
            "path": self.path,
            "by": self.by,
            "commit": self.commit,
            "state": self.state,
            "sha256": self.sha256,
            "sha256_at_commit": self.sha256_at_commit,
            "required": self.required,
            "about": self.about,
            "absent": self.absent,
        }


def where_compared(commit: str, about: str | None, absent: bool) -> str:
    """``at <commit>``; for an assertion about a commit this mirror lacks, ``asserted
    about <it> (not in this mirror); compared at the pin <commit>`` (abbreviated)."""
    if absent and about is not None:
        return (
            f"asserted about {about[:12]} (not in this mirror); compared at the pin {commit[:12]}"
        )
    return f"at {commit[:12]}"


@dataclass
class SourceCheck:
    source: str
    subject: str
    pin: str
    commit: str
    items: list[CheckItem] = field(default_factory=list)
    assertions: list[AssertionCheck] = field(default_factory=list)


@dataclass
class CheckReport:
    """The result of checking a register at its pins or at another commit."""

    register: str
    at: str | None
    sources: list[SourceCheck]
    #: document sources kept as files in the workspace, and the files of capture sources,
    #: hashed again (not bound to the commit checked)
    documents: list[CheckItem] = field(default_factory=list)
    #: document sources by URL: never fetched, so not checked (their ids)
    unchecked: list[str] = field(default_factory=list)
    document_sources: dict[str, DocumentSourceData] = field(default_factory=dict)
    capture_sources: dict[str, CaptureSourceData] = field(default_factory=dict)

    @property
    def items(self) -> list[CheckItem]:
        return [item for src in self.sources for item in src.items] + self.documents

    @property
    def commit(self) -> str:
        return self.sources[0].commit if self.sources else ""

    @property
    def assertions(self) -> list[AssertionCheck]:
        return [a for src in self.sources for a in src.assertions]

    @property
    def ok(self) -> bool:
        allowed = {"verified", "moved"} if self.at else {"verified"}
        return (
            bool(self.items)
            and all(i.state in allowed for i in self.items)
            and not any(a.fails for a in self.assertions)
        )

    def counts(self, kind: str | None = None) -> dict[str, int]:
        return dict(Counter(i.state for i in self.items if kind is None or i.kind == kind))

    def as_json(self) -> CheckJson:
        """``check --json``'s object (:mod:`tracework.drift.contract`)."""
        return {
            "ok": self.ok,
            "register": self.register,
            "commit": self.commit,
            "sources": self._sources_json(),
            "items": [i.as_json() for i in self.items],
            "assertions": [a.as_json() for a in self.assertions],
            "unchecked": list(self.unchecked),
        }

    def streamed_json(self) -> dict[str, object]:
        """:meth:`as_json` with its items an iterator, each made as
        :func:`tracework.jsonout.write_json` draws it: a large check's items are never all
        held as dicts at once."""
        return {
            "ok": self.ok,
            "register": self.register,
            "commit": self.commit,
            "sources": self._sources_json(),
            "items": (i.as_json() for i in self.items),
            "assertions": [a.as_json() for a in self.assertions],
            "unchecked": list(self.unchecked),
        }

    def _sources_json(self) -> list[GitSourceJson | DocumentSourceJson | CaptureSourceJson]:
        sources: list[GitSourceJson | DocumentSourceJson | CaptureSourceJson] = []
        for s in self.sources:
            git: GitSourceJson = {
                "id": s.source,
                "kind": "git",
                "subject": s.subject,
                "pin": s.pin,
                "commit": s.commit,
            }
            sources.append(git)
        for sid, d in self.document_sources.items():
            document: DocumentSourceJson = {
                "id": sid,
                "kind": "document",
                "location": d.location,
                "sha256": d.sha256,
            }
            sources.append(document)
        for sid, c in self.capture_sources.items():
            capture: CaptureSourceJson = {
                "id": sid,
                "kind": "capture",
                "capture": c.capture,
                "commit": c.commit,
            }
            sources.append(capture)
        return sources


class BlobCache:
    """Blobs of one commit's tree, kept for the check's duration.

    :meth:`prefetch` starts reading paths in the order given and :meth:`blob` takes
    each one as it is needed, so the check works on the first files while git still
    reads the next ones.  Close the cache (it is a context manager) to end git early.
    """

    def __init__(self, mirror: Mirror, tree: dict[str, TreeEntry]) -> None:
        self.mirror, self.tree = mirror, tree
        self.blobs: dict[str, Blob] = {}
        self._stream: BlobStream | None = None
        self._lines: dict[str, Lines | None] = {}

    def prefetch(self, paths: Iterable[str]) -> None:
        """Start reading the blobs of ``paths`` (in this order) that are not read yet."""
        oids = dict.fromkeys(
            self.tree[p].oid for p in paths if p in self.tree and self.tree[p].kind != "submodule"
        )
        self._finish_stream()
        wanted = [oid for oid in oids if oid not in self.blobs]
        if wanted:
            self._stream = self.mirror.stream_blobs(wanted)

    def blob(self, path: str) -> Blob | None:
        entry = self.tree.get(path)
        if entry is None or entry.kind == "submodule":
            return None
        oid = entry.oid
        if oid not in self.blobs:
            if self._stream is None or oid not in self._stream:
                self.prefetch([path])
            assert self._stream is not None
            self.blobs[oid] = self._stream.get(oid)
        return self.blobs[oid]

    def lines(self, path: str) -> Lines | None:
        try:
            return self._lines[path]
        except KeyError:  # once per path
            blob = self.blob(path)
            entry = self.tree.get(path)
            found = text_lines(entry.kind if entry else None, blob.data if blob else None)
            self._lines[path] = found
            return found

    def close(self) -> None:
        """End a read still running (the blobs read so far stay)."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def __enter__(self) -> BlobCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _finish_stream(self) -> None:
        """Keep every blob the running read was asked for, then end it."""
        if self._stream is not None:
            self.blobs.update(self._stream.read_all())
            self.close()


def check_register(
    ws: Workspace,
    register: Register | RegisterData,
    *,
    at: str | None = None,
    only: str | None = None,
) -> CheckReport:
    """Check every git source (or only ``only``) at its pin, or at commit ``at``.

    The register is read as plain data (see :func:`tracework.register.store.load_data`),
    so a check run from the command line never imports pydantic.
    """
    if not isinstance(register, RegisterData):
        register = data_of(register)
    sources = {sid: s for sid, s in register.sources.items() if isinstance(s, GitSourceData)}
    documents = [sid for sid, s in register.sources.items() if isinstance(s, DocumentSourceData)]
    captures = [sid for sid, s in register.sources.items() if isinstance(s, CaptureSourceData)]
    if only is not None:
        if only in documents or only in captures:
            report = CheckReport(register.name, at, [])
            check_workspace_sources(ws, register, report, [only])
            return report
        sources = {only: _git_source(register, only)}
    if not sources and not documents and not captures:
        raise RegisterError(
            f"register {register.name} has no source to check",
            hint="add one with `tracework register add-source` or `add-document`",
        )
    if at is not None and len({s.subject for s in sources.values()}) > 1:
        raise RegisterError(
            "--at needs one subject, but this register pins several",
            hint="choose one with --source SRC-ID",
        )
    results = []
    for sid, source in sources.items():
        mirror = open_mirror(ws, source.subject)
        mirror.resolve_commit(source.commit)
        commit = mirror.resolve_commit(at) if at is not None else source.commit
        results.append(_check_source(mirror, register, sid, source, commit))
    report = CheckReport(register.name, at, results)
    if only is None:
        check_workspace_sources(ws, register, report)
    return report


def check_workspace_sources(
    ws: Workspace, register: RegisterData, report: CheckReport, ids: list[str] | None = None
) -> None:
    """The sources kept as files in the workspace — documents and captures — hashed again
    (all of them, or ``ids``), into ``report``.  ``tracework check`` and a report's check
    summary both check them here, so the two never disagree about a capture captured
    again since it was registered."""
    kinds = {sid: s.kind for sid, s in register.sources.items()}
    chosen = list(kinds) if ids is None else ids
    check_documents(ws, register, report, [s for s in chosen if kinds.get(s) == "document"])
    check_captures(ws, register, report, [s for s in chosen if kinds.get(s) == "capture"])


def check_captures(
    ws: Workspace, register: RegisterData, report: CheckReport, ids: list[str]
) -> None:
    """Hash the files of each capture source again: a transcript edited by hand, a file
    gone, a capture made again since it was registered (a changed harness) is caught (a
    capture is not bound to the commit checked: it is what ran at its own commit).  Each
    item that does not hold names its fix: register the capture as it is now, or make it
    again."""
    from tracework.hashing import sha256_file

    for sid in ids:
        src = register.sources[sid]
        assert isinstance(src, CaptureSourceData)
        report.capture_sources[sid] = src
        folder = ws.captures / src.capture / src.commit[:12]
        for rel, expected in sorted(src.files.items()):
            path = folder / rel
            shown = f"captures/{src.capture}/{src.commit[:12]}/{rel}"
            found = sha256_file(path) if path.is_file() and not path.is_symlink() else None
            state = "missing" if found is None else "verified" if found == expected else "changed"
            detail, hint = "capture", None
            if state == "changed":
                detail = "changed since the capture was registered"
                hint = add_capture_command(register, src)
            elif state == "missing":
                detail = "missing: the capture is not in the workspace"
                hint = capture_command(src)
            report.documents.append(
                CheckItem(
                    "file",
                    shown,
                    sid,
                    shown,
                    state,
                    detail=detail,
                    sha256=expected,
                    sha256_at_commit=found,
                    hint=hint,
                )
            )


def add_capture_command(register: RegisterData, src: CaptureSourceData) -> str:
    """The command that registers capture ``src`` as it is now (``register add-capture``,
    whose ``--commit`` defaults to the register's first pin)."""
    pins = [s.commit for s in register.sources.values() if isinstance(s, GitSourceData)]
    at = "" if pins and pins[0] == src.commit else f" --commit {src.commit[:12]}"
    return f"tracework register add-capture {register.name} {src.capture}{at}"


def capture_command(src: CaptureSourceData) -> str:
    """The command that makes capture ``src`` again at its commit (byte-identical, it
    holds as registered; if not, the check then names ``register add-capture``)."""
    return f"tracework capture {src.capture} --commit {src.commit[:12]}"


def problem_text(item: CheckItem, kind: str) -> str:
    """An item that does not hold, in one line, as ``tracework check`` and a report's check
    summary both say it: what it is (a git file or quote, a document source, a capture
    source's file), its state, and the fix when one command is it.  ``kind`` is its
    source's kind in the register."""
    if kind == "capture":  # its detail says its state
        line = f"capture source {item.source} file {item.id}: {item.detail}"
    elif kind == "document":
        line = f"document source {item.source} {item.id}: {item.state} ({item.detail})"
    else:
        line = f"{item.kind} {item.id}: {item.state} ({item.detail})"
    return f"{line}; fix: `{item.hint}`" if item.hint else line


def check_documents(
    ws: Workspace, register: RegisterData, report: CheckReport, ids: list[str]
) -> None:
    """Hash the document sources ``ids`` kept in the workspace again (regular files inside
    it only); a URL is never fetched, so it is listed as unchecked."""
    for sid in ids:
        src = register.sources[sid]
        assert isinstance(src, DocumentSourceData)
        report.document_sources[sid] = src
        if is_document_url(src.location):
            report.unchecked.append(sid)
            continue
        try:
            digest = workspace_file_sha256(ws.root, src.location)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            state, detail = "missing", f"document: {reason or 'cannot be read'}"
        else:
            state = "verified" if digest == src.sha256 else "changed"
            detail = "document" if state == "verified" else f"document: sha256 {digest}"
        report.documents.append(
            CheckItem(
                "file",
                src.location,
                sid,
                src.location,
                state,
                detail=detail,
                sha256=src.sha256,
                sha256_at_commit=None if state == "missing" else digest,
            )
        )


def _git_source(register: RegisterData, sid: str) -> GitSourceData:
    src = register.sources.get(sid)
    if not isinstance(src, GitSourceData):
        known = ", ".join(k for k, v in register.sources.items() if isinstance(v, GitSourceData))
        raise RegisterError(
            f"register {register.name} has no git source {sid}",
            hint=f"git sources: {known or 'none'}; add one with `tracework register add-source`",
        )
    return src


def _check_source(
    mirror: Mirror, register: RegisterData, sid: str, source: GitSourceData, commit: str
) -> SourceCheck:
    result = SourceCheck(sid, source.subject, source.commit, commit)
    # a register validates that every quote cites a git source and a file registered
    # under it: with one git source, every quote is this source's
    git_sources = sum(isinstance(s, GitSourceData) for s in register.sources.values())
    quotes = (
        register.quotes
        if git_sources == 1
        else {qid: q for qid, q in register.quotes.items() if q.source == sid}
    )
    tree = mirror.tree(commit)
    pin_tree = mirror.tree(source.commit) if quotes and commit != source.commit else tree
    changes = (
        mirror.changes(source.commit, commit)
        if commit != source.commit
        else Changes({}, frozenset())
    )
    # The paths in the order the first pass reads them: the files, each followed by
    # its new name when renamed (a quote's file is one of them: a quote of another
    # would only be left to relocate, which reads what it needs).
    renamed = changes.renamed
    wanted = dict.fromkeys(p for path in source.files for p in (path, renamed.get(path)) if p)
    quoted: dict[str, list[tuple[str, QuoteData]]] = {}
    for qid, quote in quotes.items():
        quoted.setdefault(quote.path, []).append((qid, quote))
    held: dict[str, CheckItem] = {}  # quotes the first pass found at their own lines
    unheld: dict[str, None] = {}  # the files of the others, the only ones drift reads at the pin
    with BlobCache(mirror, tree) as cache, BlobCache(mirror, pin_tree) as pin_cache:
        cache.prefetch(wanted)
        # The first pass, in the order git reads the blobs, while it reads the next
        # ones: each file checked, then the quotes its blob holds at their own lines
        # (the common case, at the pin or not, without relocate's machinery: the same
        # bytes at the same lines of the same path, relocate's first answer).
        for path, expected in source.files.items():
            result.items.append(_check_file(sid, path, expected, tree, cache, changes))
            here = quoted.get(path)
            if here is None:
                continue
            lines = cache.lines(path)
            for qid, quote in here:
                if lines is not None and lines.holds_at(
                    quote.lines[0], span_bytes(quote.text, quote.raw_b64)
                ):
                    held[qid] = _verified(sid, qid, quote)
                else:
                    unheld[path] = None

        touched_read = False

        def lines_of(path: str) -> Lines | None:
            nonlocal touched_read
            if path not in wanted and not touched_read:
                cache.prefetch(sorted(changes.touched))  # the order drift asks for them
                touched_read = True
            return cache.lines(path)

        pin_read = False

        def pin_lines_of(path: str) -> Lines | None:
            nonlocal pin_read
            if not pin_read:  # one blob read for every drifting file not the same at the target
                pin_read = True
                pin_cache.prefetch(
                    sorted(
                        p
                        for p in unheld
                        if p in pin_tree and (p not in tree or pin_tree[p].oid != tree[p].oid)
                    )
                )
            return pin_cache.lines(path)

        batch: dict[str, list[tuple[int, int, int, int]]] | None = None

        def hunks(old_path: str, new_path: str) -> list[tuple[int, int, int, int]]:
            nonlocal batch
            old, new = pin_tree.get(old_path), tree.get(new_path)
            if old is None or new is None or old.oid == new.oid:
                return []
            if batch is None:  # one git diff for every edited file a quote drifts in
                edited = sorted(  # whose blob differs at the target
                    p
                    for p in unheld
                    if p in pin_tree and p in tree and pin_tree[p].oid != tree[p].oid
                )
                batch = mirror.line_hunks_many(source.commit, commit, edited)
            if old_path == new_path and old_path in batch:
                return batch[old_path]
            return mirror.line_hunks(old.oid, new.oid)

        at_pin = commit == source.commit
        target = None
        checked = [c.commit for c in reversed(register.checks) if c.source == sid]
        origins = _Origins(mirror, source.commit, checked, commit, tree, cache, changes)
        try:
            for qid, quote in quotes.items():  # in the register's order
                verified = held.get(qid)
                if verified is not None:
                    result.items.append(verified)
                    continue
                if at_pin:  # not at the pin's lines: not recorded at this pin (a re-pin since)
                    result.items.append(_quote_item(sid, quote, origins.relocate(qid, quote)))
                    continue
                if target is None:  # relocate's machinery, loaded once a quote may have moved
                    from tracework.drift.relocate import Target, relocate

                    target = Target(
                        commit,
                        tree,
                        changes,
                        lines_of if changes.touched else cache.lines,  # nothing else to read
                        hunks,
                        pin=source.commit,
                        pin_lines_of=pin_lines_of,
                    )
                drift = relocate(qid, quote, target)
                if drift.state != "verified" and not _holds(pin_lines_of(quote.path), quote):
                    drift = origins.relocate(qid, quote)  # it read another text's file
                result.items.append(_quote_item(sid, quote, drift))
        finally:
            origins.close()
        result.assertions = _check_assertions(mirror, register, sid, source, commit, cache, changes)
    return result


def _holds(lines: Lines | None, quote: QuoteData) -> bool:
    """Whether ``lines`` hold the quote's bytes at its own lines."""
    needle = span_bytes(quote.text, quote.raw_b64)
    return lines is not None and lines.holds_at(quote.lines[0], needle)


class _Origins:
    """Where a quote its pin does not hold was recorded, and its drift from there.

    A quote carries no commit of its own: it is taken at its source's pin.  After a
    re-pin (docs/how-to/pin.md) a quote not yet quoted again holds the text of an earlier
    commit, and relocating it from the new pin would compare the pin's file with itself
    (every quote "format only", both sides of a diff the same commit).  Its *recorded*
    commit is the newest commit of the register's recorded checks of this source whose
    file holds the quote's bytes at its lines (the old pin, checked with ``--record``
    before it moved), else, walking the file's versions back from the pin on its
    first-parent line, the commit that wrote the newest version that holds them.  None
    when neither is found (a text edited by hand, a version older than :attr:`DEPTH`):
    the quote is then relocated from its own text, and its diff's old side says "as
    registered".  Only quotes the pin does not hold are looked for, so a register in
    step with its pin never pays for this.
    """

    #: versions of a file looked at, at most, walking back from the pin
    DEPTH = 64

    def __init__(
        self,
        mirror: Mirror,
        pin: str,
        checked: list[str],
        commit: str,
        tree: dict[str, TreeEntry],
        cache: BlobCache,
        changes: Changes,
    ) -> None:
        self.mirror, self.pin, self.commit, self.tree = mirror, pin, commit, tree
        self.checked = [c for c in dict.fromkeys(checked) if c != pin]  # newest first
        self.cache, self.changes = cache, changes
        self._stream: BlobStream | None = None
        self._lines: dict[tuple[str, str], Lines | None] = {}
        self._versions: dict[str, list[str]] = {}
        self._targets: dict[str | None, Target] = {}
        self._caches: list[BlobCache] = []

    def recorded(self, quote: QuoteData) -> str | None:
        """The commit ``quote`` was recorded at (see the class), None if none is found."""
        for commit in self.checked:
            if _holds(self._lines_at(commit, quote.path), quote):
                return commit
        if quote.path not in self._versions:
            out = self.mirror._git(
                "rev-list", "--first-parent", f"--max-count={self.DEPTH}",
                "--end-of-options", self.pin, "--", quote.path,
                reading=f"the history of {quote.path} before {self.pin[:12]}",
            ).stdout.decode()  # fmt: skip
            self._versions[quote.path] = out.split()
        for commit in self._versions[quote.path]:  # each commit that wrote a version
            if _holds(self._lines_at(commit, quote.path), quote):
                return commit
        return None

    def relocate(self, qid: str, quote: QuoteData) -> QuoteDrift:
        """``quote`` relocated from where it was recorded; the detail says where that was."""
        from tracework.drift.relocate import relocate

        recorded = self.recorded(quote)
        drift = relocate(qid, quote, self._target(recorded))
        note = (
            f"recorded at {recorded[:12]}, not at the pin"
            if recorded
            else "not recorded at the pin, nor found before it"
        )
        return drift._replace(how=f"{drift.how}; {note}" if drift.how else note)

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
        for cache in self._caches:
            cache.close()

    def _lines_at(self, commit: str, path: str) -> Lines | None:
        key = (commit, path)
        if key not in self._lines:
            if self._stream is None:
                self._stream = self.mirror.stream_blobs([])
            blob = self._stream.at(commit, path)
            self._lines[key] = text_lines("file", blob.data) if blob is not None else None
        return self._lines[key]

    def _target(self, recorded: str | None) -> Target:
        from tracework.drift.relocate import Target

        if recorded in self._targets:
            return self._targets[recorded]
        if recorded is None:  # from the quote's own text: no file, no line mapping
            made = Target(self.commit, self.tree, self.changes, self.cache.lines, _no_hunks)
        else:
            old_tree = self.mirror.tree(recorded)
            old = BlobCache(self.mirror, old_tree)
            self._caches.append(old)

            def hunks(old_path: str, new_path: str) -> list[tuple[int, int, int, int]]:
                before, after = old_tree.get(old_path), self.tree.get(new_path)
                if before is None or after is None or before.oid == after.oid:
                    return []
                return self.mirror.line_hunks(before.oid, after.oid)

            made = Target(
                self.commit,
                self.tree,
                self.mirror.changes(recorded, self.commit),
                self.cache.lines,
                hunks,
                pin=recorded,
                pin_lines_of=old.lines,
            )
        self._targets[recorded] = made
        return made


def _no_hunks(_old: str, _new: str) -> list[tuple[int, int, int, int]]:
    return []


def _check_assertions(
    mirror: Mirror,
    register: RegisterData,
    sid: str,
    source: GitSourceData,
    commit: str,
    cache: BlobCache,
    changes: Changes,
) -> list[AssertionCheck]:
    """The hashes others assert of this source's files (and the analyst's own
    ``--expect-sha256``), each at its own commit or at the commit checked (where a
    renamed file is followed to its new name, as the file check follows it).  One about a
    commit this mirror lacks (a dossier's commit the public history has since lost) is
    compared at the pin, and says so."""
    asserted = [
        (path, None, entry.expect_sha256, None, False)
        for path, entry in source.files.items()
        if entry.expect_sha256
    ] + [
        (a.path, a.by, a.sha256, a.at_commit, a.required)
        for a in register.assertions
        if a.source == sid
    ]
    about_commits = {about for *_, about, _ in asserted if about is not None and about != commit}
    kinds = mirror.object_types(sorted(about_commits)) if about_commits else {}
    out = []
    for path, by, sha256, about, required in asserted:
        absent = about is not None and about != commit and kinds.get(about) != "commit"
        where = source.commit if absent else about or commit
        found = None
        try:
            if where == commit:
                now = path if path in cache.tree else changes.renamed.get(path, path)
                entry = cache.tree.get(now)
                blob = cache.blob(now) if entry is not None else None
            else:
                entry = mirror.tree(where).get(path)
                blob = mirror.read_blob(entry.oid) if entry is not None else None
        except TraceworkError:  # a tree git cannot read
            entry = None
        if entry is not None:
            found = registered_kind(entry, blob)[1]
        state: Literal["holds", "differs", "missing"] = (
            "missing" if found is None else "holds" if found == sha256 else "differs"
        )
        out.append(
            AssertionCheck(sid, path, by, where, state, sha256, found, required, about, absent)
        )
    return out


def _verified(sid: str, qid: str, quote: QuoteData) -> CheckItem:
    """What :func:`_quote_item` makes of relocate's verdict "verified, same lines".

    Every field given, in order, so the tuple is made without the named tuple's
    ``__new__`` (a Python function): this runs once for nearly every quote.
    """
    return _new_tuple(
        CheckItem,
        (
            "quote",
            qid,
            sid,
            quote.path,
            "verified",
            quote.lines,
            None,
            None,
            None,
            None,
            "same lines",
            False,
            None,
            quote.sha256,
            quote.sha256,
            None,
        ),
    )


_new_tuple = tuple.__new__


def read_at_pin(
    sid: str, qid: str, path: str, lines: tuple[int, int], sha256: str, file_sha256: str | None
) -> list[CheckItem]:
    """The items a check at the pin gives a quote just made from the pin's own bytes
    (and its file, when it was registered from them too): verified by construction, so
    a notebook quoting in author mode need not read them again."""
    quote = CheckItem(
        "quote", qid, sid, path, "verified", lines, detail="same lines", sha256=sha256,
        sha256_at_commit=sha256,
    )  # fmt: skip
    if file_sha256 is None:
        return [quote]
    file = CheckItem(
        "file", path, sid, path, "verified", sha256=file_sha256, sha256_at_commit=file_sha256
    )
    return [file, quote]


def _check_file(
    sid: str,
    path: str,
    expected: FileEntryData,
    tree: dict[str, TreeEntry],
    cache: BlobCache,
    changes: Changes,
) -> CheckItem:
    new_path = None
    entry = tree.get(path)
    if entry is None and path in changes.renamed:
        new_path = changes.renamed[path]
        entry = tree.get(new_path)
    registered = expected.sha256
    if entry is None:
        return CheckItem(
            "file", path, sid, path, "missing", detail="not in the tree", sha256=registered
        )
    kind, sha256 = registered_kind(entry, cache.blob(new_path or path))
    if sha256 != expected.sha256 or kind != expected.kind:
        detail = f"sha256 {sha256} (registered {expected.sha256})"
        if kind != expected.kind:
            detail = f"now a {kind} (registered as a {expected.kind})"
        return CheckItem(
            "file",
            path,
            sid,
            path,
            "changed",
            new_path=new_path,
            detail=detail,
            sha256=registered,
            sha256_at_commit=sha256,
        )
    if new_path:
        return CheckItem(
            "file",
            path,
            sid,
            path,
            "moved",
            new_path=new_path,
            detail="renamed",
            sha256=registered,
            sha256_at_commit=sha256,
        )
    return _new_tuple(  # as _verified makes a quote's: once for nearly every file
        CheckItem,
        ("file", path, sid, path, "verified", None, None, None, None, None, "", False, None,
         registered, sha256, None),
    )  # fmt: skip


def _quote_item(sid: str, quote: QuoteData, drift: QuoteDrift) -> CheckItem:
    holds = drift.state in ("verified", "moved")  # the same bytes: the same hash
    return CheckItem(  # positional, in field order: built once per quote
        "quote",
        drift.quote_id,
        sid,
        quote.path,
        drift.state,
        quote.lines,
        drift.new_lines if drift.state != "verified" else None,
        drift.new_path,
        drift.candidates,
        drift.diff,
        drift.how,
        drift.format_only,
        drift.candidate_paths,
        quote.sha256,
        quote.sha256 if holds else drift.new_sha256,
    )


def record_check(path: Path, report: CheckReport, date: str | None = None) -> None:
    """Append one dated history entry per checked source to the register."""
    if date is not None:
        day = check_iso_date(date, "--date")
    else:
        day = dt.datetime.now(dt.UTC).date().isoformat()  # an explicit --record action
    import tracework.register.edits as regy
    import tracework.register.nodes as nodes
    from tracework.register.models import CheckEntry

    with regy.edit(path) as doc:
        history = regy.section(doc, "checks", nodes.CommentedSeq)
        for src in report.sources:
            counts = dict(Counter(i.state for i in src.items))
            history.append(
                nodes.check_node(
                    CheckEntry(date=day, source=src.source, commit=src.commit, counts=counts)
                )
            )
