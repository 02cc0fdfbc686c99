"""Drawing diagrams in a notebook: what ``wb.diagram(...)`` checks before it shows one.

A diagram in a report is a claim like a record: every node bound to a record must name
one declared above, and every `` `identifier` `` in a label must be defined or called
in the registered files at the commit rendered, so a diagram that outlives the code it
draws fails its check instead of misleading.  This module turns the arguments into
Mermaid (written by hand, from routes, or the runtime of the records declared), parses
and checks it (:mod:`tracework.records.diagrams`), and keeps the registered files' text
for looking identifiers up; showing it is the workbench's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, TypeVar

from tracework.notebook.session import RegisterSession
from tracework.notebook.state import ReportState
from tracework.records.diagrams import (
    DIRECTIONS,
    DiagramError,
    from_routes,
    name_pattern,
    parse,
    runtime,
)
from tracework.records.diagrams import check as check_diagram
from tracework.records.kinds import AuthorityPath, Component, OperativeObject, Record, Route
from tracework.records.mermaidpy import FlowChartObject, diagram_text
from tracework.register.models import GitSource
from tracework.views.cards import Diagram

R = TypeVar("R", bound=Record)

#: What ``records=`` takes: ``"all"``, or ids of declared records.
Drawn = Sequence[str] | Literal["all"]


class Diagrams:
    """The diagrams of one report, checked against its records and registered files."""

    def __init__(self, session: RegisterSession, state: ReportState) -> None:
        self.session, self.state = session, state
        self._texts: list[bytes] | None = None  # the registered files, read when first needed

    def draw(
        self,
        name: str,
        source: str | FlowChartObject | None,
        *,
        caption: str,
        routes: Sequence[str],
        records: Drawn,
        direction: str | None,
        cell: str | None,
    ) -> Diagram:
        """Check diagram ``name`` and keep it in the report (see ``Workbench.diagram``)."""
        diagrams = self.state.diagrams
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", name):
            raise DiagramError(
                f"diagram {name!r}: not a diagram name",
                hint="name it with letters, digits, - and _ (up to 64)",
            )
        if name in diagrams and (cell is None or diagrams[name].cell != cell):
            raise DiagramError(f"diagram {name} is drawn twice")
        if direction is not None and direction not in DIRECTIONS:
            raise DiagramError(
                f"diagram {name}: direction={direction!r} is not one of {', '.join(DIRECTIONS)}"
            )
        if sum(bool(x) for x in (source, routes, records)) != 1:
            raise DiagramError(
                f"diagram {name}: give exactly one of source, routes= or records=",
                hint="source is Mermaid text; routes= and records= take record ids",
            )
        kind = "hand-written" if source else "generated"
        declared = self.state.records
        titles = {rid: r.label or rid for rid, r in declared.items()}
        try:
            source = diagram_text(source, declared)  # a mermaid-py FlowChart as text
            if routes:
                chosen = [self._record_of(rid, (Route,), name, "routes") for rid in routes]
                source = from_routes(chosen, titles, direction or "TB")
            elif records:
                source = self._runtime(name, records, titles, direction)
            assert source is not None
            parsed = parse(source)
            result = check_diagram(name, parsed, declared, self._defined)
        except DiagramError as exc:
            if exc.message.startswith(f"diagram {name}:"):
                raise
            # the parser and the generators speak of lines and nodes; say which diagram
            raise DiagramError(f"diagram {name}: {exc.message}", hint=exc.hint) from None
        drawn = Diagram(name, caption, source, result, kind, cell)
        diagrams[name] = drawn
        return drawn

    def _runtime(
        self,
        name: str,
        records: Sequence[str] | str,
        titles: dict[str, str],
        direction: str | None,
    ) -> str:
        """The runtime diagram of ``records``: with ``"all"``, every component, operative
        object and route that passes through something, and every authority path that
        names its retained material, in the order they were declared."""
        drawn = (Component, OperativeObject, Route, AuthorityPath)
        if isinstance(records, str):
            if records != "all":
                raise DiagramError(
                    f'diagram {name}: records={records!r} is neither "all" nor a list',
                    hint='write records="all", or records=["RT-CMP-…", …]',
                )
            chosen: list[Record] = [
                r
                for r in self.state.records.values()
                if isinstance(r, drawn)
                and not (isinstance(r, Route) and not r.passes_through)
                and not (isinstance(r, AuthorityPath) and not r.source_material)
            ]
        else:
            chosen = [self._record_of(rid, drawn, name, "records") for rid in records]
        return runtime(
            [r.id for r in chosen if isinstance(r, (Component, OperativeObject))],
            [r for r in chosen if isinstance(r, Route)],
            [r for r in chosen if isinstance(r, AuthorityPath)],
            titles,
            direction,
            held={r.id: r.held_by for r in chosen if isinstance(r, OperativeObject) and r.held_by},
        )

    def _record_of(self, rid: str, kinds: tuple[type[R], ...], diagram: str, argument: str) -> R:
        """The record ``rid`` given in ``routes=`` or ``records=``, of a kind that argument
        draws; a record of another kind is named as what it is."""
        record = self.state.records.get(rid)
        if record is None:
            raise DiagramError(
                f"diagram {diagram}: {argument}= names {rid}, which is not declared above",
                hint=f"declare {rid} in a cell above the diagram",
            )
        if not isinstance(record, kinds):
            named = [f"{k.kind}s ({k.prefix}…)" for k in kinds]
            wanted = " or ".join([", ".join(named[:-1]), named[-1]] if named[:-1] else named)
            raise DiagramError(
                f"diagram {diagram}: {argument}= takes {wanted}, and {rid} is a {record.kind}",
                hint="other records go into a hand-written source, bound with `%% bind`",
            )
        return record

    def _defined(self, identifier: str) -> bool:
        """Whether an identifier's last part is defined or called in a registered file."""
        pattern = name_pattern(identifier)
        if pattern is None:
            return False
        if self._texts is None:
            self._texts = []
            session = self.session
            for sid, src in session.register.sources.items():
                if isinstance(src, GitSource):
                    mirror = session.mirror(src.subject)
                    tree = mirror.tree(session.commit_for(sid))
                    entries = [tree[p] for p in src.files if p in tree and tree[p].kind == "file"]
                    blobs = mirror.read_blobs(e.oid for e in entries)
                    self._texts += [b.data for b in blobs.values() if b.data is not None]
        return any(pattern.search(text) for text in self._texts)
