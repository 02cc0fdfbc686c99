"""Mermaid flowcharts: drawn from records or by hand, parsed, escaped and checked.

Generated diagrams come from :func:`from_routes` and :func:`runtime`; every label they
write goes through :func:`label`, so no text — the analyst's or the subject's — can
close a label, open a directive or inject markup.  Every diagram, generated or
hand-written, is parsed by :func:`parse` (the flowchart subset tracework uses) and
checked by :func:`check`: bound nodes name records, and each `` `identifier` `` written
in a label is found in the registered files at the commit.  What is drawn is
:func:`drawable` of the checked text: each `` `identifier` `` in code font, without
its backticks.

The parser refuses what it cannot vouch for, since Mermaid would act on it: a
``%%{`` directive anywhere (Mermaid reads one on any line, even inside a label or a
comment, and it can change the configuration: ``themeCSS`` with ``url(…)`` made the
browser fetch), ``click``/``call``, HTML tags in labels other than ``<br>`` (Mermaid's
strict mode keeps ``<img>``, which fetches), style values other than plain colours and
widths, and control, bidi and invisible characters, raw or as entity codes (they would
reorder or hide what the diagram shows; generated labels show them as ``<U+202E>``, as
record cards do).
mermaid-py's own display renders through mermaid.ink, a third-party service, and its
text neither escapes labels nor keeps record ids as node ids: a mermaid-py flowchart is
read as objects by :mod:`tracework.records.mermaidpy`, which writes the text parsed here.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Protocol

from tracework.errors import TraceworkError
from tracework.text import visible

DIRECTIONS = ("TB", "TD", "BT", "RL", "LR")


class DiagramError(TraceworkError):
    """A diagram that does not parse, or asks for something tracework refuses."""


# -- escaping ---------------------------------------------------------------------------

#: Characters that could end a label, start a directive or become markup, as Mermaid
#: entity codes (``#35;`` is ``#``).  Newlines become spaces.
_ENTITY = {ch: f"#{ord(ch)};" for ch in '"[](){}|<>&#%`;:'}


def label(text: str) -> str:
    """A quoted Mermaid label showing ``text`` literally, whatever it contains.

    Control, bidi and invisible characters are first made visible (``<U+202E>``) by
    :func:`tracework.text.visible`, as on record cards, so no override reorders
    the drawn diagram; then the text is folded to one line and escaped.  Backticks
    around text (`` `NoteStore.keep` ``) stay, so the label shows code as a
    hand-written one does (:func:`drawable`); one without a partner, or around
    nothing, is escaped like any other character.
    """
    pieces = " ".join(visible(str(text)).split()).split("`")
    if len(pieces) % 2 == 0:  # an odd number of backticks: the last one has no partner
        pieces[-2:] = [pieces[-2] + "`" + pieces[-1]]
    out = []
    for i, piece in enumerate(pieces):  # odd places lie between two backticks
        escaped = "".join(_ENTITY.get(ch, ch) for ch in piece)
        if i % 2 == 0:
            out.append(escaped)
        elif piece.strip():
            out.append(f"`{escaped}`")
        else:
            out.append(f"#96;{escaped}#96;")
    return '"' + "".join(out) + '"'


#: A code span in a label: backticks around text on one line.
_CODE = re.compile(r"`([^`\n]+)`")


def unwrapped(text: str) -> str:
    """Markdown text as a title shows it: code spans without their backticks, on one
    line (an authority path's consumer, say, when it lends the path its label)."""
    return " ".join(_CODE.sub(r"\1", text).split())


def drawable(source: str) -> str:
    """The Mermaid text to draw: each `` `code` `` span becomes ``<code>code</code>``.

    Mermaid would draw the backticks literally (or, at a label's start, read a
    markdown string, which has no code font).  :func:`parse` has made sure that
    backticks occur only in pairs inside labels, around text that holds no HTML, so
    the only markup this adds is the ``<code>`` element around already-escaped text,
    which Mermaid's strict security level keeps.  Comment lines are left as written.
    """
    return "\n".join(
        line if line.lstrip().startswith("%%") else _CODE.sub(r"<code>\1</code>", line)
        for line in source.split("\n")
    )


def unescape(text: str) -> str:
    """A label as a reader sees it: entity codes decoded, surrounding quotes removed."""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    names = {"quot": '"', "amp": "&", "lt": "<", "gt": ">", "nbsp": " "}

    def decode(m: re.Match[str]) -> str:
        code = m.group(1)
        if code.isdigit():
            return chr(int(code)) if int(code) < 0x110000 else m.group(0)
        return names.get(code, m.group(0))

    return re.sub(r"#([a-z]+|\d+);", decode, text)


def node_id(record_id: str) -> str:
    """Record ids are valid node ids as they are (letters, digits, ``-``, ``_``, ``.``)."""
    if not _ID.fullmatch(record_id):
        raise DiagramError(f"{record_id!r} cannot be a diagram node id")
    return record_id


# -- the parsed form --------------------------------------------------------------------


@dataclass
class Parsed:
    """What a flowchart declares: nodes with labels, edges, subgraphs, bindings, and the
    `` `code` `` spans its labels hold (what the identifier check looks up)."""

    direction: str
    nodes: dict[str, str] = field(default_factory=dict)  # id -> label as shown
    edges: list[tuple[str, str, str]] = field(default_factory=list)  # (from, to, label)
    subgraphs: dict[str, str] = field(default_factory=dict)
    bindings: dict[str, str] = field(default_factory=dict)  # node -> record id
    code: dict[str, None] = field(default_factory=dict)  # `code` spans, in order


_ID = re.compile(r"[A-Za-z0-9_]+(?:[.-][A-Za-z0-9_]+)*")
_SHAPES = [  # longest openers first
    ("(((", ")))"),
    ("([", "])"),
    ("[[", "]]"),
    ("[(", ")]"),
    ("((", "))"),
    ("{{", "}}"),
    ("[/", "/]"),
    ("[\\", "\\]"),
    ("[/", "\\]"),
    ("[\\", "/]"),
    ("[", "]"),
    ("(", ")"),
    ("{", "}"),
    (">", "]"),
]
#: The node shapes the parser reads, as (opener, closer) pairs.
SHAPES: tuple[tuple[str, str], ...] = tuple(_SHAPES)
_ARROW = re.compile(
    r"\s*(?:"
    r"(?P<text>--\s+(?P<t1>[^-|][^|]*?)\s+-->|==\s+(?P<t2>[^=|][^|]*?)\s+==>"
    r"|-\.\s+(?P<t3>[^.|][^|]*?)\s+\.->)"
    r"|(?P<arrow><?(?:-{2,}[->xo]?|-\.+->?|={2,}[=>]?|~~~)[xo>]?)"
    r")\s*(?:\|(?P<pipe>[^|]*)\|)?\s*"
)

# -- styles: plain colours and widths only ---------------------------------------------
#: A style value the check can vouch for: a hex colour, a colour keyword (letters only,
#: so no ``url(``, ``var(`` or ``;``) or a number of pixels, or a dash pattern of them.
_NUMBER = r"\d{1,4}(?:\.\d{1,3})?(?:px)?"
_VALUE = (
    r"(?:#(?:[0-9A-Fa-f]{3,4}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})|[A-Za-z]{1,30}"
    rf"|{_NUMBER}(?: {_NUMBER})*)"
)
_PROPS = rf"(?:fill|stroke|color|stroke-width|stroke-dasharray)\s*:\s*{_VALUE}"
_PROPS = rf"{_PROPS}(?:\s*,\s*{_PROPS})*"
_IDS = r"[A-Za-z0-9_]+(?:[.-][A-Za-z0-9_]+)*(?:\s*,\s*[A-Za-z0-9_]+(?:[.-][A-Za-z0-9_]+)*)*"
_STYLING = re.compile(r"(classDef|class|style|linkStyle)\s")
_STYLES = {
    "class": re.compile(rf"class\s+{_IDS}\s+[A-Za-z0-9_]+"),
    "classDef": re.compile(rf"classDef\s+{_IDS}\s+{_PROPS}"),
    "style": re.compile(rf"style\s+{_ID.pattern}\s+{_PROPS}"),
    "linkStyle": re.compile(rf"linkStyle\s+(?:default|\d+(?:\s*,\s*\d+)*)\s+{_PROPS}"),
}

#: HTML in a label becomes markup in the drawing (Mermaid's strict mode keeps ``<img>``,
#: which makes the browser fetch its ``src``); only a line break is allowed.
_TAG = re.compile(r"<[A-Za-z/!?]")
_BREAK = re.compile(r"<br\s*/?>", re.I)


def _drawn(text: str) -> str:
    """Text as the browser draws it: Mermaid entity codes (``#8238;``, ``#rlm;``) become
    HTML references, then every reference is decoded once, as in Mermaid's labels."""

    def reference(m: re.Match[str]) -> str:
        code = m.group(1)
        return f"&#{code};" if code.isdigit() else f"&{code};"

    def decode(m: re.Match[str]) -> str:
        ref = m.group(1)
        if ref[0] != "#":
            return html.unescape(f"&{ref};")
        code = int(ref[2:], 16) if ref[1] in "xX" else int(ref[1:])
        return chr(code) if code < 0x110000 else "\ufffd"

    text = re.sub(r"#([A-Za-z0-9_]+);", reference, text)
    return re.sub(r"&(#[xX][0-9A-Fa-f]{1,8}|#\d{1,9}|[A-Za-z][A-Za-z0-9]{0,31});?", decode, text)


def _hidden(text: str) -> list[str]:
    """The control, bidi and invisible characters in ``text``, as ``<U+XXXX>`` marks."""
    return sorted({visible(ch) for ch in text if ch not in "\t\n" and visible(ch) != ch})


def _refuse_unsafe_lines(text: str) -> None:
    """Line by line, what no diagram may hold, wherever it is (comments included)."""
    for n, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")  # a CRLF line ending
        if "%%{" in line:
            raise DiagramError(
                f"line {n}: `%%{{` opens a Mermaid directive, which can change how every "
                "diagram is drawn; directives are refused"
            )
        if re.match(r"\s*%%\s*\{", line):
            raise DiagramError(f"line {n}: a comment may not start with `{{` (a directive)")
        raw = _hidden(line)
        if raw:
            raise DiagramError(
                f"line {n}: control, bidi and invisible characters are refused in a diagram "
                f"({', '.join(raw)}); describe them in words"
            )
        coded = _hidden(_drawn(line))
        if coded:
            raise DiagramError(
                f"line {n}: an entity code draws a control, bidi or invisible character "
                f"({', '.join(coded)}); describe it in words"
            )


def _label_text(raw: str, n: int, parsed: Parsed) -> str:
    """A label as written (quotes and entity codes as they are) → the text it shows;
    its `` `code` `` spans are noted in ``parsed`` for the identifier check."""
    bare = _BREAK.sub("", raw)
    tag = _TAG.search(bare)
    if tag:
        raise DiagramError(
            f"line {n}: HTML in a label ({bare[tag.start() : tag.start() + 12]!r}…) is "
            "refused, only <br> is allowed; write `<` as #60; to show it"
        )
    if _CODE.sub("", raw).count("`"):
        raise DiagramError(
            f"line {n}: a backtick in a label opens code and needs a closing one, with "
            "text between; write #96; to show a backtick as it is"
        )
    for m in _CODE.finditer(raw):
        parsed.code.setdefault(unescape(m.group(1)).strip(), None)
    return unescape(raw)


def parse(text: str) -> Parsed:
    """Parse the flowchart subset; a problem raises :class:`DiagramError` with its line."""
    _refuse_unsafe_lines(text)
    statements = [
        (n, part.strip())
        for n, line in enumerate(text.split("\n"), start=1)
        for part in _split_statements(line)
    ]
    statements = [(n, s) for n, s in statements if s]
    if not statements:
        raise DiagramError("the diagram is empty")
    n, head = statements[0]
    m = re.fullmatch(r"(flowchart|graph)\s+(\w+)", head)
    if not m or m.group(2) not in DIRECTIONS:
        raise DiagramError(f"line {n}: a diagram starts with `flowchart TB` (or LR, BT, RL)")
    parsed = Parsed(direction=m.group(2))
    per_line = Counter(n for n, _ in statements)
    depth = 0
    for n, stmt in statements[1:]:
        if stmt.startswith("%%"):
            bind = re.fullmatch(r"%%\s*bind\s+(\S+)\s+(\S+)", stmt)
            if bind:
                parsed.bindings[bind.group(1)] = bind.group(2)
            continue
        if stmt == "end":
            depth -= 1
            if depth < 0:
                raise DiagramError(f"line {n}: `end` without a subgraph")
            continue
        if stmt.startswith("subgraph "):
            depth += 1
            _subgraph(stmt[9:].strip(), parsed, n)
            continue
        if re.fullmatch(r"direction\s+(?:TB|TD|BT|RL|LR)", stmt):
            continue
        if re.match(r"(?:click|call|href)\b", stmt) or "javascript:" in stmt:
            raise DiagramError(f"line {n}: click, call and href directives are refused")
        styling = _STYLING.match(stmt)
        if styling:
            _styling(styling.group(1), stmt, per_line[n], n)
            continue
        _chain(stmt, parsed, n)
    if depth:
        raise DiagramError("a subgraph is not closed with `end`")
    for node, _record in parsed.bindings.items():
        if node not in parsed.nodes:
            raise DiagramError(f"`%% bind {node} …` names no node of the diagram")
    return parsed


def _styling(kind: str, stmt: str, on_line: int, n: int) -> None:
    """``class``, and ``classDef``/``style``/``linkStyle`` with plain colours and widths."""
    if not _STYLES[kind].fullmatch(stmt):
        raise DiagramError(
            f"line {n}: `{kind}` may set only fill, stroke, color, stroke-width and "
            "stroke-dasharray to a colour (#f00, red) or a width (2px)"
        )
    if on_line > 1:  # Mermaid drops the last `;` of a style line, joining what follows
        raise DiagramError(f"line {n}: put `{kind}` on a line of its own")


def _split_statements(line: str) -> list[str]:
    if line.strip().startswith("%%"):
        return [line]
    parts: list[str] = []
    buf: list[str] = []
    quoted = False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        if ch == ";" and not quoted:
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
    parts.append("".join(buf))
    return parts


def _subgraph(rest: str, parsed: Parsed, n: int) -> None:
    m = _ID.match(rest)
    if not m:
        raise DiagramError(f"line {n}: a subgraph needs an id")
    sid, tail = m.group(0), rest[m.end() :].strip()
    if tail:
        if not (tail.startswith("[") and tail.endswith("]")):
            raise DiagramError(f"line {n}: a subgraph title goes in [brackets]")
        parsed.subgraphs[sid] = _label_text(tail[1:-1].strip(), n, parsed)
    else:
        parsed.subgraphs[sid] = sid


def _chain(stmt: str, parsed: Parsed, n: int) -> None:
    """``A[label] --> B & C -->|text| D``: nodes joined by arrows."""
    pos, previous, edge_label = 0, None, ""
    while True:
        group, pos = _node_group(stmt, pos, parsed, n)
        if previous is not None:
            parsed.edges.extend((a, b, edge_label) for a in previous for b in group)
        if pos >= len(stmt):
            return
        m = _ARROW.match(stmt, pos)
        if not m or m.end() == pos:
            raise DiagramError(f"line {n}: cannot read {stmt[pos : pos + 30]!r}")
        edge_label = _label_text(
            (m.group("t1") or m.group("t2") or m.group("t3") or m.group("pipe") or "").strip(),
            n,
            parsed,
        )
        previous, pos = group, m.end()


def _node_group(stmt: str, pos: int, parsed: Parsed, n: int) -> tuple[list[str], int]:
    group = []
    while True:
        pos = _skip_spaces(stmt, pos)
        m = _ID.match(stmt, pos)
        if not m:
            raise DiagramError(f"line {n}: expected a node id at {stmt[pos : pos + 30]!r}")
        nid, pos = m.group(0), m.end()
        shown, pos = _shape(stmt, pos, n, parsed)
        if shown is not None:
            parsed.nodes[nid] = shown
        else:
            parsed.nodes.setdefault(nid, nid)
        if stmt.startswith(":::", pos):
            cls = _ID.match(stmt, pos + 3)
            pos = cls.end() if cls else pos + 3
        group.append(nid)
        after = _skip_spaces(stmt, pos)
        if after < len(stmt) and stmt[after] == "&":
            pos = after + 1
            continue
        return group, pos


def _shape(stmt: str, pos: int, n: int, parsed: Parsed) -> tuple[str | None, int]:
    for opener, closer in _SHAPES:
        if stmt.startswith(opener, pos):
            start = pos + len(opener)
            if stmt.startswith('"', start):
                end_quote = stmt.find('"', start + 1)
                if end_quote == -1 or not stmt.startswith(closer, end_quote + 1):
                    continue
                shown = _label_text(stmt[start : end_quote + 1], n, parsed)
                return shown, end_quote + 1 + len(closer)
            end = stmt.find(closer, start)
            if end == -1:
                continue
            return _label_text(stmt[start:end].strip(), n, parsed), end + len(closer)
    if pos < len(stmt) and stmt[pos] in "[({>":
        raise DiagramError(f"line {n}: a node label is not closed")
    return None, pos


def _skip_spaces(stmt: str, pos: int) -> int:
    while pos < len(stmt) and stmt[pos] in " \t":
        pos += 1
    return pos


# -- generating from records -------------------------------------------------------------


def from_routes(routes: Iterable[RouteLike], titles: Mapping[str, str], direction: str) -> str:
    """Each route's progression as a chain through the records it passes through."""
    lines = [f"flowchart {direction}"]
    declared: set[str] = set()
    for route in routes:
        chain = list(route.passes_through)
        if not chain:
            raise DiagramError(f"{route.id} names no records in passes_through to draw")
        for rid in chain:
            if rid not in declared:
                lines.append(f"  {node_id(rid)}[{label(titles.get(rid, rid))}]")
                declared.add(rid)
        text = label(route.label or route.id)
        for a, b in pairwise(chain):
            lines.append(f"  {node_id(a)} -->|{text}| {node_id(b)}")
    return "\n".join(lines) + "\n"


#: How a runtime diagram tells kinds apart, by record id prefix: class, shape, style.
#: Operative objects (retained material) are drawn as stores, consumers as rounded ends.
_KINDS = {
    "RT-CMP-": ("component", "[", "]", "fill:#eef2fb,stroke:#2451a6"),
    "RT-OBJ-": ("object", "[(", ")]", "fill:#fdf6e9,stroke:#9a5b00"),
    "RT-BAP-": ("consumer", "([", "])", "fill:#f3f3f3,stroke:#5b6270"),
    "": ("record", "[", "]", "fill:#ffffff,stroke:#5b6270"),
}
#: One colour per route (in turn), so a route can be followed past its labelled step:
#: mid tones, which read on a light page and on a dark one (JupyterLab's dark theme, a
#: reader's dark mode) alike.
_ROUTE_COLOURS = ("#3d7be0", "#2b9a5a", "#d08a1e", "#9a62d0", "#d9534f", "#1f9e93")
#: Authority paths (dashed) and what holds an object: a grey that shows on both too.
_PATH_STYLE = "stroke:#8c95a6,stroke-width:2px"
_HELD_STYLE = "stroke:#8c95a6,stroke-width:1.5px"


def runtime(
    nodes: Iterable[str],
    routes: Iterable[RouteLike],
    paths: Iterable[AuthorityLike],
    titles: Mapping[str, str],
    direction: str | None = None,
    held: Mapping[str, str] | None = None,
) -> str:
    """The runtime as a flowchart: components and operative objects as nodes, each
    route as edges along its ``passes_through``, each authority path as a dashed edge
    from its retained material to its consumer, and each drawn object joined to the
    record that holds it (``held``: object id → its ``held_by``), drawn too.

    Besides ``nodes``, every record a route passes through and every path's retained
    material is drawn.  Kinds are told apart by shape and colour (rectangles for
    components, stores for operative objects, rounded ends for consumers) rather than
    by subgraphs: a route runs from component to object and back, and a subgraph per
    kind made the layout stretch every edge across the clusters (the demo's runtime
    drew 1,671 px wide that way, 816 px without).  A route's label is written once,
    on its first step, and its edges share a colour; a path's edge is labelled with
    its record label, or its channel when the label only repeats the consumer (the
    consumer's node already says it).  Without a ``direction``,
    :func:`runtime_direction` picks one.
    """
    members: dict[str, None] = dict.fromkeys(nodes)
    steps: list[tuple[str, str, str, int]] = []  # from, to, label, route's colour
    for n, route in enumerate(routes):
        chain = list(route.passes_through)
        if not chain:
            raise DiagramError(f"{route.id} names no records in passes_through to draw")
        members.update(dict.fromkeys(chain))
        text = label(route.label or route.id)
        for i, (a, b) in enumerate(pairwise(chain)):
            steps.append((a, b, text if i == 0 else "", n % len(_ROUTE_COLOURS)))
    reaches: list[tuple[str, AuthorityLike]] = []
    for path in paths:
        if not path.source_material:
            raise DiagramError(f"{path.id} names no source_material to draw from")
        members.setdefault(path.source_material, None)
        reaches.append((path.source_material, path))
    if not members:
        raise DiagramError("a runtime diagram needs at least one record to draw")
    holds = [(holder, obj) for obj, holder in (held or {}).items() if obj in members]
    members.update(dict.fromkeys(holder for holder, _ in holds))
    consumers = {path.id: path.consumer for _, path in reaches}
    edges = [(a, b) for a, b, _, _ in steps] + [(src, p.id) for src, p in reaches] + holds
    direction = direction or runtime_direction([*members, *consumers], edges)
    lines = [f"flowchart {direction}"]
    kinds: dict[str, list[str]] = {}
    for rid, text in [*((rid, titles.get(rid, rid)) for rid in members), *consumers.items()]:
        prefix = next((p for p in _KINDS if p and rid.startswith(p)), "")
        kind, opener, closer, _ = _KINDS[prefix]
        lines.append(f"  {node_id(rid)}{opener}{label(text)}{closer}")
        kinds.setdefault(kind, []).append(rid)
    for a, b, text, _ in steps:
        lines.append(f"  {node_id(a)} -->{f'|{text}|' if text else ''} {node_id(b)}")
    for source, path in reaches:
        title = titles.get(path.id, path.id)
        repeats = title in (path.id, path.consumer, unwrapped(path.consumer))
        text = label(path.channel if repeats else title)
        lines.append(f"  {node_id(source)} -.->|{text}| {node_id(path.id)}")
    for holder, obj in holds:
        lines.append(f"  {node_id(holder)} ---|holds| {node_id(obj)}")
    for colour in sorted({c for *_, c in steps}):
        numbers = ",".join(str(i) for i, step in enumerate(steps) if step[3] == colour)
        lines.append(f"  linkStyle {numbers} stroke:{_ROUTE_COLOURS[colour]},stroke-width:2px")
    for first, count, style in (
        (len(steps), len(reaches), _PATH_STYLE),
        (len(steps) + len(reaches), len(holds), _HELD_STYLE),
    ):
        if count:
            numbers = ",".join(str(first + i) for i in range(count))
            lines.append(f"  linkStyle {numbers} {style}")
    for kind, _, _, style in _KINDS.values():
        if kind in kinds:
            lines.append(f"  classDef {kind} {style}")
            lines.append(f"  class {','.join(kinds[kind])} {kind}")
    return "\n".join(lines) + "\n"


def runtime_direction(nodes: Sequence[str], edges: Iterable[tuple[str, str]]) -> str:
    """``TB`` unless the graph is broader than it is deep, then ``LR``.

    Nodes are ranked as a layered layout ranks them: edges that close a cycle are set
    aside (found by a depth-first walk, as dagre does), then each node sits one rank
    after its furthest predecessor.  The longer of depth and breadth is laid along
    the page's own scrolling, downwards, so a runtime of many short routes stacks its
    nodes rather than spreading them past the column, and a long route runs down the
    page rather than across it.
    """
    after: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        if a in after and b in after:
            after[a].append(b)
    state: dict[str, int] = {}  # 1 while on the walk's path, 2 when done
    order: list[str] = []
    forward: dict[str, list[str]] = {n: [] for n in after}
    for root in after:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(after[root]))]
        while stack:
            node, rest = stack[-1]
            nxt = next(rest, None)
            if nxt is None:
                state[node] = 2
                order.append(node)
                stack.pop()
            elif state.get(nxt) != 1:  # an edge back onto the path closes a cycle
                forward[node].append(nxt)
                if nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, iter(after[nxt])))
    rank = dict.fromkeys(after, 0)
    for node in reversed(order):  # reverse post-order: every edge kept points forward
        for nxt in forward[node]:
            rank[nxt] = max(rank[nxt], rank[node] + 1)
    depth = max(rank.values(), default=0) + 1
    breadth = max(Counter(rank.values()).values(), default=1)
    return "LR" if breadth > depth else "TB"


class RouteLike(Protocol):
    """What :func:`from_routes` reads from a route record."""

    @property
    def id(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def passes_through(self) -> tuple[str, ...]: ...


class AuthorityLike(Protocol):
    """What :func:`runtime` reads from an authority path record."""

    @property
    def id(self) -> str: ...
    @property
    def source_material(self) -> str | None: ...
    @property
    def consumer(self) -> str: ...
    @property
    def channel(self) -> str: ...


# -- checking --------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiagramCheck:
    """A diagram's check at one commit."""

    name: str
    bindings: dict[str, str]
    unknown_records: tuple[str, ...]
    identifiers: dict[str, bool]  # identifier -> found at the commit

    @property
    def vanished(self) -> tuple[str, ...]:
        return tuple(i for i, found in self.identifiers.items() if not found)

    @property
    def ok(self) -> bool:
        return not self.unknown_records and not self.vanished


def identifiers(parsed: Parsed) -> list[str]:
    """Every `` `code` `` span written in a label, in order, without repeats (a
    backtick written as ``#96;`` is shown as it is, so it opens no span)."""
    return list(parsed.code)


def bound_records(parsed: Parsed, is_record: Callable[[str], bool]) -> dict[str, str]:
    """Node → record: explicit ``%% bind`` lines, and nodes whose id is a record id."""
    bound = {nid: nid for nid in parsed.nodes if is_record(nid)}
    bound.update(parsed.bindings)
    return bound


def check(
    name: str,
    parsed: Parsed,
    records: Mapping[str, object],
    defined: Callable[[str], bool],
) -> DiagramCheck:
    """Bound nodes must name declared records; code identifiers must exist at the commit."""
    looks_like_record = re.compile(r"RT-[A-Z]+-")
    bound = bound_records(parsed, lambda nid: bool(looks_like_record.match(nid)))
    unknown = tuple(sorted({r for r in bound.values() if r not in records}))
    found = {ident: defined(ident) for ident in identifiers(parsed)}
    return DiagramCheck(name, bound, unknown, found)


def name_pattern(identifier: str) -> re.Pattern[bytes] | None:
    """The regex that finds ``identifier`` (its last dotted part) defined or called."""
    last = identifier.rstrip("()").split(".")[-1]
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", last):
        return None
    word = re.escape(last.encode())
    return re.compile(
        rb"(?:\b(?:def|class|function|fn|func|struct|interface|type)\s+" + word + rb"\b)"
        rb"|(?:\b" + word + rb"\s*\()"
        rb"|(?:^\s*(?:self\.)?" + word + rb"\s*[:=])",
        re.M,
    )
