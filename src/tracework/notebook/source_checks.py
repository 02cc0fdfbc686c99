"""The check of each source of the register at the commit opened, kept current as the
notebook quotes.

Every quote and file a notebook shows carries its state at the commit (verified,
moved, changed, …), which is what ``tracework check`` computes for the whole register.
Checking the whole register again after each quote would make a cell of 200 quotes
check it 200 times, so each git source is checked once, when first needed, and every
quote made since is checked alone and put where a full check would put it.  A review
stamp at another commit needs the check there too: those are kept by register version.
"""

from __future__ import annotations

from typing import Protocol

import tracework.register.store as reg
from tracework.drift.check import (
    CheckItem,
    CheckReport,
    check_register,
    check_workspace_sources,
    read_at_pin,
)
from tracework.errors import TraceworkError
from tracework.register.models import GitSource, Register
from tracework.workspace import Workspace


class Opened(Protocol):
    """The register as a notebook holds it, at the commit it opened."""

    @property
    def ws(self) -> Workspace: ...
    @property
    def register(self) -> Register: ...
    @property
    def register_sha256(self) -> str: ...
    def commit_for(self, sid: str) -> str: ...


class SourceChecks:
    """Each git source's check at the commit its files are read at, by source id."""

    def __init__(self, opened: Opened) -> None:
        self._opened = opened
        self._checks: dict[str, CheckReport] = {}
        #: checks at reviewed commits, by (register hash, source, commit); None: not checkable
        self._reviewed: dict[tuple[str, str, str], CheckReport | None] = {}

    def clear(self) -> None:
        """Forget every check: the register was read again (the reviewed ones are kept by
        register hash, so they need no forgetting)."""
        self._checks.clear()

    def of(self, sid: str) -> CheckReport:
        """The check of source ``sid``: at the commit opened, or at the source's own pin
        for a source of another subject."""
        if sid not in self._checks:
            opened = self._opened
            commit = opened.commit_for(sid)
            at = commit if commit != opened.register.git_source(sid).commit else None
            self._checks[sid] = check_register(opened.ws, opened.register, at=at, only=sid)
        return self._checks[sid]

    def add_quote(self, sid: str, qid: str, new_file: bool) -> None:
        """Bring the source's check up to date with one quote just made (and its file),
        checking only them.  The items take the places a full check gives them (files
        first, quotes in the register's order)."""
        report = self._checks.get(sid)
        if report is None:
            return  # checked in full, new quote and all, when first needed
        opened = self._opened
        register = opened.register
        quote = register.quotes[qid]
        source = register.git_source(sid)
        commit = opened.commit_for(sid)
        if commit == source.commit:  # made from the pin's bytes: verified as made
            file_sha256 = source.files[quote.path].sha256 if new_file else None
            fresh = read_at_pin(sid, qid, quote.path, quote.lines, quote.sha256, file_sha256)
        else:
            files = {quote.path: source.files[quote.path]} if new_file else {}
            alone = register.model_copy(
                update={
                    "sources": {sid: source.model_copy(update={"files": files})},
                    "quotes": {qid: quote},
                    "checks": [],
                    "assertions": [],
                }
            )
            fresh = check_register(opened.ws, alone, at=commit, only=sid).sources[0].items
        items = report.sources[0].items
        for item in fresh:
            if item.kind == "file":
                last = max((n for n, i in enumerate(items) if i.kind == "file"), default=-1)
                items.insert(last + 1, item)
                continue
            at_n = next((n for n, i in enumerate(items) if i.kind == "quote" and i.id == qid), None)
            if at_n is None:
                items.append(item)
            else:
                items[at_n] = item

    def quote_item(self, qid: str) -> CheckItem | None:
        """What the check found of quote ``qid`` (None: verified, or not checked)."""
        quote = self._opened.register.quotes[qid]
        items = self.of(quote.source).sources[0].items
        # from the end: a quote just made is last, and a cell of 200 must not index 10,000
        return next((i for i in reversed(items) if i.kind == "quote" and i.id == qid), None)

    def file_item(self, sid: str, path: str) -> CheckItem | None:
        """What the check found of registered file ``path`` of ``sid`` (its last item)."""
        items = self.of(sid).items
        return next((i for i in reversed(items) if i.kind == "file" and i.id == path), None)

    def git_sources(self) -> list[CheckReport]:
        """The check of every git source, in the register's order."""
        sources = self._opened.register.sources
        return [self.of(sid) for sid, s in sources.items() if isinstance(s, GitSource)]

    def at_reviewed(self, sid: str, commit: str) -> CheckReport | None:
        """Source ``sid`` checked at a reviewed ``commit``, once per register version;
        None when that commit cannot be checked (not in the mirror)."""
        opened = self._opened
        key = (opened.register_sha256, sid, commit)
        if key not in self._reviewed:
            try:
                found: CheckReport | None = check_register(
                    opened.ws, opened.register, at=commit, only=sid
                )
            except TraceworkError:
                found = None
            self._reviewed[key] = found
        return self._reviewed[key]

    def workspace_items(self) -> list[CheckItem]:
        """The register's sources kept as files in the workspace (documents and captures),
        hashed again as ``tracework check`` hashes them."""
        if all(isinstance(s, GitSource) for s in self._opened.register.sources.values()):
            return []  # nothing to hash, and no copy of the register's data to make
        return self.workspace(None).items

    def workspace(self, ids: list[str] | None) -> CheckReport:
        """:func:`check_workspace_sources` of this register (its sources alone: the quotes
        are not what it reads, and a copy of 10,000 of them is not free)."""
        register = self._opened.register
        sources = register.model_copy(update={"quotes": {}, "checks": [], "assertions": []})
        report = CheckReport(register.name, None, [])
        check_workspace_sources(self._opened.ws, reg.data_of(sources), report, ids)
        return report
