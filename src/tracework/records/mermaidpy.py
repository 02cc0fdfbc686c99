"""mermaid-py flowcharts read as objects and written as the flowchart text tracework checks.

mermaid-py (the ``mermaid`` package) builds a flowchart as ``mermaid.flowchart.FlowChart``
with ``Node``, ``Link`` and ``mermaid.Style`` objects.  :func:`flowchart_text` reads those
objects' attributes and writes the text :func:`tracework.records.diagrams.parse` reads;
the diagram is then checked and drawn like any other, by the pinned local Mermaid.

Nothing of mermaid-py runs: not ``mermaid.Mermaid`` (its display, which sends the diagram
to mermaid.ink to be drawn), not the chart's ``.script`` (which quotes labels without
escaping them, lower-cases node ids so that ``RT-CMP-store`` is no longer the record's
id, and writes ``click`` lines and ``%%{init}%%`` directives the check refuses).  This
module does not even import mermaid: importing it registers mermaid-py's
``%%mermaidjs`` cell magic, which draws through mermaid.ink, in the kernel that imports
it.  A chart can only come from a notebook that imported mermaid itself, so the class is
looked up in :data:`sys.modules`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import Any

from tracework.records.diagrams import DIRECTIONS, SHAPES, DiagramError, label, node_id, parse

#: The links mermaid-py draws (its ``LINK_SHAPES`` values) → (with a head, without one).
_BODIES = {"--": ("--", "---"), "-.-": ("-.-", "-.-"), "==": ("==", "===")}
_HIDDEN = "~~~"
_RIGHT_HEADS = {"": "", ">": ">", "o": "o", "x": "x"}
_STYLE_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
#: Style fields mermaid-py writes, in its order, with the CSS property each sets.
_STYLE_FIELDS = (
    ("fill", "fill"),
    ("color", "color"),
    ("font_weight", "font-weight"),
    ("stroke_width", "stroke-width"),
    ("stroke", "stroke"),
)


#: What ``wb.diagram`` takes besides text: a ``mermaid.flowchart.FlowChart`` (typed as
#: Any, since tracework never imports mermaid).
FlowChartObject = Any


def diagram_text(source: object, records: Iterable[str]) -> str | None:
    """``source`` as flowchart text: text as it is, a mermaid-py ``FlowChart`` by
    :func:`flowchart_text`, None as None; anything else is refused."""
    if source is None or isinstance(source, str):
        return source
    if is_flowchart(source):
        return flowchart_text(source, records)
    raise not_a_diagram(source)


def is_flowchart(obj: object) -> bool:
    """Whether ``obj`` is a mermaid-py ``FlowChart`` (False when mermaid was never imported)."""
    module = sys.modules.get("mermaid.flowchart")
    chart = getattr(module, "FlowChart", None)
    return isinstance(chart, type) and isinstance(obj, chart)


def not_a_diagram(obj: object) -> DiagramError:
    """The error for a ``source`` that is neither text nor a mermaid-py flowchart."""
    graph = getattr(sys.modules.get("mermaid.graph"), "Graph", None)
    kind = type(obj).__name__
    if isinstance(graph, type) and isinstance(obj, graph):
        return DiagramError(
            f"source is a mermaid-py {kind}; tracework checks and draws flowcharts only",
            hint="build it with mermaid.flowchart.FlowChart, or write the flowchart as text",
        )
    return DiagramError(
        f"source is a {kind}: give Mermaid flowchart text or a mermaid-py FlowChart",
    )


def flowchart_text(chart: Any, records: Iterable[str]) -> str:
    """The flowchart text of a mermaid-py ``FlowChart``, every label escaped.

    What is read: ``orientation``; ``nodes`` (each node's ``id_``, ``content``, ``shape``,
    ``sub_nodes`` — a subgraph, with its ``direction`` — and ``styles``); ``links`` (each
    link's ``origin``, ``end``, ``shape``, ``head_left``, ``head_right`` and
    ``message``); and the ``Style`` objects of nodes and of the chart.  A node's content
    is text, shown as it is (a newline is a line break, a pair of backticks names code,
    which the check looks up).  mermaid-py lower-cases node ids; a node whose id is a
    declared record's, lower-cased, gets the record's id back, so it is bound to it.
    Links to nodes that no list holds are drawn with those nodes' labels.

    Refused, with what to do instead: a ``config`` (an init directive, which could change
    how every diagram is drawn), a node's ``href`` (a ``click`` line; a node bound to a
    record already links to its card), link heads the parser cannot read (``o`` or ``x``
    at the origin, or an origin head without the same head at the end), style values
    other than plain colours and widths.  The chart's ``title`` is not drawn: the
    figure's caption says what the diagram is.
    """
    if getattr(chart, "config", None) is not None:
        raise DiagramError(
            "a FlowChart with a config is refused: it is written as a Mermaid init directive, "
            "which could change how every diagram is drawn",
            hint="leave config out: the report's theme draws every diagram",
        )
    writer = _Writer({rid.lower(): rid for rid in records})
    direction = _direction(getattr(chart, "orientation", "TB"), "orientation")
    lines = [f"flowchart {direction}"]
    for node in _list(chart, "nodes"):
        lines += writer.node(node, "  ")
    links = [writer.link(link) for link in _list(chart, "links")]
    lines += writer.undeclared  # nodes only a link names, with their labels
    lines += [f"  {text}" for text in links]
    for style in _list(chart, "styles"):
        writer.style(style)
    lines += writer.style_lines()
    return "\n".join(lines) + "\n"


class _Writer:
    """Nodes, links and styles written one by one, remembering what was declared."""

    def __init__(self, records: dict[str, str]) -> None:
        self.records = records
        self.declared: set[str] = set()
        self.undeclared: list[str] = []
        self.styles: dict[str, str] = {}  # name -> classDef line
        self.classes: dict[str, list[str]] = {}  # style name -> node ids

    def ident(self, node: Any) -> str:
        """A node's id as drawn: a declared record's id when it is one, lower-cased."""
        raw = str(_attr(node, "id_", "Node"))
        found = self.records.get(raw.lower())
        if found is None and re.match(r"rt-[a-z]+-", raw, re.I):
            # a record id that names no declared record: keep it a record id, so the check
            # says which record is missing instead of drawing an unbound node
            head, kind, rest = raw.split("-", 2)
            found = f"{head.upper()}-{kind.upper()}-{rest}"
        shown = found or raw
        try:
            return node_id(shown)
        except DiagramError:
            raise DiagramError(
                f"node id {raw!r} cannot be a diagram node id",
                hint="use letters, digits and _, joined by single - or .",
            ) from None

    def node(self, node: Any, indent: str) -> list[str]:
        nid = self.ident(node)
        self.declared.add(nid)
        if str(getattr(node, "href", "#")) != "#":
            raise DiagramError(
                f"node {nid}: href is refused (it is written as a `click` line)",
                hint="leave href out: a node bound to a record links to its card",
            )
        for style in _list(node, "styles"):
            self.style(style)
            self.classes.setdefault(str(style.name), []).append(nid)
        children = _list(node, "sub_nodes")
        text = _label(getattr(node, "content", "") or nid)
        if not children:
            return [f"{indent}{nid}{self.shape(node, nid, text)}"]
        direction = _direction(getattr(node, "direction", "LR"), f"node {nid}: direction")
        out = [f"{indent}subgraph {nid} [{text}]", f"{indent}  direction {direction}"]
        for child in children:
            out += self.node(child, indent + "  ")
        return [*out, f"{indent}end"]

    def shape(self, node: Any, nid: str, text: str) -> str:
        shape = getattr(node, "shape", None)
        pair = (str(getattr(shape, "start", "")), str(getattr(shape, "end", "")))
        if pair not in SHAPES:
            raise DiagramError(f"node {nid}: the shape {pair[0]}…{pair[1]} is not one Mermaid has")
        return f"{pair[0]}{text}{pair[1]}"

    def link(self, link: Any) -> str:
        ends = []
        for side in ("origin", "end"):
            node = _attr(link, side, "Link")
            nid = self.ident(node)
            if nid not in self.declared and not _list(node, "sub_nodes"):
                self.undeclared += self.node(node, "  ")
            ends.append(nid)
        body, left = str(getattr(link, "shape", "--")), str(getattr(link, "head_left", ""))
        right = str(getattr(link, "head_right", ">"))
        if body == _HIDDEN:
            arrow = _HIDDEN  # an invisible link has no heads
        elif body not in _BODIES or right not in _RIGHT_HEADS:
            raise DiagramError(f"link {ends[0]} → {ends[1]}: not a link shape Mermaid has")
        elif left not in ("", "<") or (left == "<" and right != ">"):
            raise DiagramError(
                f"link {ends[0]} → {ends[1]}: a head at the origin is drawn only as `<` with "
                "`>` at the end",
                hint='write head_left="left-arrow" with head_right="arrow", or no head_left',
            )
        else:
            headed, bare = _BODIES[body]
            arrow = f"{left}{headed}{right}" if right else f"{left}{bare}"
        message = str(getattr(link, "message", "") or "")
        text = f"|{_label(message)}|" if message else ""
        return f"{ends[0]} {arrow}{text} {ends[1]}"

    def style(self, style: Any) -> None:
        name = str(_attr(style, "name", "Style"))
        if not _STYLE_NAME.fullmatch(name):
            raise DiagramError(
                f"style {name!r}: a style's name is letters, digits and _ (up to 64)"
            )
        props = [
            f"{css}:{value}"
            for field, css in _STYLE_FIELDS
            if (value := getattr(style, field, None)) is not None
        ]
        if getattr(style, "other", None):
            props.append(str(style.other))
        line = f"  classDef {name} {','.join(props)}"
        if any(ch in line for ch in "\r\n;"):
            raise DiagramError(f"style {name}: a style value holds a line break or `;`")
        if self.styles.get(name, line) != line:
            raise DiagramError(f"style {name}: two Style objects of this name set different values")
        try:
            parse(f"flowchart TB\n{line}")
        except DiagramError as exc:
            raise DiagramError(
                f"style {name}: {exc.message.split(': ', 1)[-1]}", hint=exc.hint
            ) from None
        self.styles[name] = line

    def style_lines(self) -> list[str]:
        out = list(self.styles.values())
        for name, nodes in self.classes.items():
            out.append(f"  class {','.join(dict.fromkeys(nodes))} {name}")
        return out


def _label(text: object) -> str:
    """A label showing ``text`` as it is, each of its lines escaped by
    :func:`tracework.records.diagrams.label`, joined by line breaks."""
    lines = str(text).replace("\r\n", "\n").split("\n")
    return '"' + "<br>".join(label(line)[1:-1] for line in lines) + '"'


def _direction(value: object, what: str) -> str:
    text = str(getattr(value, "value", value))  # mermaid.Direction or its text
    if text not in DIRECTIONS:
        raise DiagramError(f"{what} {text!r} is not one of {', '.join(DIRECTIONS)}")
    return text


def _list(obj: object, name: str) -> list[Any]:
    """An attribute holding objects (a list, or mermaid-py's set of styles), in a stable
    order: a set is sorted by style name, so the text is the same on every run."""
    value = getattr(obj, name, None) or ()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=lambda s: str(getattr(s, "name", "")))
    return list(value)


def _attr(obj: object, name: str, kind: str) -> Any:
    if not hasattr(obj, name):
        raise DiagramError(
            f"a {type(obj).__name__} given as a mermaid-py {kind} has no {name}",
            hint="tracework reads mermaid-py 0.9's flowchart objects",
        )
    return getattr(obj, name)
