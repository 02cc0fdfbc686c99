"""Mermaid diagrams: the parser, label escaping, generation from records and checks."""

from __future__ import annotations

import json
import re
from itertools import pairwise

import pytest

import tracework
from conftest import PathStub, RouteStub
from tracework.records.diagrams import (
    DiagramError,
    drawable,
    from_routes,
    identifiers,
    label,
    parse,
    runtime,
    runtime_direction,
    unescape,
)

HOSTILE = '"]<script>alert(1)</script> {x} |y| #z %% `w` ; click n call f()\nflowchart'


def test_parse_reads_the_flowchart_subset():
    parsed = parse(
        "flowchart LR\n"
        "  %% bind s RT-CMP-store\n"
        '  subgraph core ["The core"]\n'
        '    s["uses `store.put`"] --> RT-OBJ-notes(["notes #quot;x#quot;"])\n'
        "  end\n"
        '  RT-OBJ-notes -->|"to the model"| m{{"Model"}} & q[("db")]\n'
        "  a -- says --> b; c -.-> d ==> e\n"
        "  classDef hot fill:#f00\n"
    )
    assert parsed.direction == "LR"
    assert parsed.nodes["s"] == "uses `store.put`"
    assert parsed.nodes["RT-OBJ-notes"] == 'notes "x"'
    assert ("RT-OBJ-notes", "q", "to the model") in parsed.edges
    assert ("a", "b", "says") in parsed.edges and ("d", "e", "") in parsed.edges
    assert parsed.subgraphs == {"core": "The core"}
    assert parsed.bindings == {"s": "RT-CMP-store"}
    assert identifiers(parsed) == ["store.put"]


def test_parse_reads_each_way_mermaid_writes_an_edge_label():
    """Between pipes, dashes, equals signs, and dots (a dotted edge's own form, which
    was refused as unreadable although Mermaid draws it)."""
    parsed = parse(
        "flowchart TD\n"
        "  a -->|piped| b -- dashed --> c == thick ==> d\n"
        "  d -. every 100th `add_note` .-> e -.->|dotted, piped| f\n"
    )
    assert parsed.edges == [
        ("a", "b", "piped"),
        ("b", "c", "dashed"),
        ("c", "d", "thick"),
        ("d", "e", "every 100th `add_note`"),
        ("e", "f", "dotted, piped"),
    ]
    assert identifiers(parsed) == ["add_note"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("sequenceDiagram\n  a->>b: hi", "starts with `flowchart"),
        ("flowchart TB\n  a[open", "not closed"),
        ("flowchart TB\n  subgraph x\n  a --> b", "not closed with `end`"),
        ("flowchart TB\n  end", "without a subgraph"),
        ('flowchart TB\n  a["x"]\n  click a call alert(1)', "refused"),
        ('flowchart TB\n  a["x"]\n  click a href "javascript:alert(1)"', "refused"),
        ("flowchart TB\n  %% bind ghost RT-CMP-x\n  a --> b", "names no node"),
        ('flowchart TB\n  a["`x then text"]', "closing one"),
        ('flowchart TB\n  a["an `` empty pair"]', "closing one"),
        ("flowchart TB\n  a -->|`x| b", "closing one"),
        ("flowchart TB\n  a --> ", "expected a node id"),
    ],
)
def test_parse_refuses_what_it_cannot_check(text, problem):
    with pytest.raises(DiagramError, match=problem):
        parse(text)


def test_labels_escape_everything_that_could_break_out():
    escaped = label(HOSTILE)
    bare = re.sub(r"#\d+;", "", escaped[1:-1])  # what is left besides entity codes
    bare = re.sub(r"`[^`]+`", "", bare)  # and code spans, kept for the code font
    for ch in '"[]{}|<>#%`;':
        assert ch not in bare
    assert "\n" not in escaped
    parsed = parse(f"flowchart TB\n  n[{escaped}] --> m")
    assert parsed.nodes["n"] == " ".join(HOSTILE.split())  # reads back as the same text
    assert list(parsed.nodes) == ["n", "m"] and len(parsed.edges) == 1
    assert unescape(escaped) == " ".join(HOSTILE.split())


def test_generated_diagrams_bind_record_nodes_and_escape_their_text():
    titles = {"RT-CMP-a": HOSTILE, "RT-OBJ-b": "Bee"}
    text = from_routes([RouteStub("RT-RTE-r", "The route", ("RT-CMP-a", "RT-OBJ-b"))], titles, "LR")
    parsed = parse(text)
    assert parsed.edges == [("RT-CMP-a", "RT-OBJ-b", "The route")]
    assert parsed.nodes["RT-CMP-a"] == " ".join(HOSTILE.split())
    text = runtime([], [], [PathStub("RT-BAP-p", "RT-OBJ-b", HOSTILE, "a channel")], titles)
    parsed = parse(text)
    assert parsed.edges == [("RT-OBJ-b", "RT-BAP-p", "a channel")]
    assert parsed.nodes["RT-BAP-p"] == " ".join(HOSTILE.split())
    with pytest.raises(DiagramError, match="passes_through"):
        from_routes([RouteStub("RT-RTE-r", "x", ())], titles, "TB")


STORE = "class Store:\n    def put(self, key, value):\n        self.items[key] = value\n"


@pytest.fixture
def wb(pinned):
    repo = pinned({"pkg/store.py": STORE})
    wb = tracework.open("demo")
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    wb.component("RT-CMP-store", label="Store", identity="The store.", evidence=[q])
    wb.operative_object("RT-OBJ-items", label="Items", description="The dict.")
    wb.route(
        "RT-RTE-put",
        label="Put",
        progression="p",
        implementation="wired",
        operation="uninspected",
        passes_through=["RT-CMP-store", "RT-OBJ-items"],
    )
    wb.authority_path(
        "RT-BAP-items",
        consumer="The caller",
        channel="return value",
        force="data",
        horizon="the call",
        source_material="RT-OBJ-items",
    )
    wb.repo = repo
    return wb


def test_diagrams_are_checked_against_records_and_registered_code(wb, workspace):
    wb.diagram(
        "hand",
        'flowchart TB\n  RT-CMP-store["calls `Store.put`"] --> x["`nowhere_fn`"]',
        caption="By hand",
    )
    wb.diagram("routes", caption="Generated", routes=["RT-RTE-put"])
    wb.diagram("authority", caption="Authority", records=["RT-BAP-items"])
    data = wb.records_json()["diagrams"]
    assert data["hand"]["identifiers"] == {"Store.put": True, "nowhere_fn": False}
    assert data["hand"]["vanished"] == ["nowhere_fn"] and data["hand"]["ok"] is False
    assert data["hand"]["bindings"] == {"RT-CMP-store": "RT-CMP-store"}
    assert data["routes"]["ok"] and data["routes"]["kind"] == "generated"
    assert data["authority"]["bindings"]["RT-BAP-items"] == "RT-BAP-items"
    assert wb.summary()["checks"]["diagrams"]["ok"] is False
    mmd = workspace.reports / "demo" / "draft" / "diagrams" / "routes.mmd"
    assert mmd.read_text().startswith("flowchart TB")


def test_diagram_mistakes_raise_in_the_cell(wb):
    with pytest.raises(DiagramError, match="exactly one of"):
        wb.diagram("x", caption="c")
    with pytest.raises(DiagramError, match="routes= names RT-RTE-missing, which is not decl"):
        wb.diagram("x", caption="c", routes=["RT-RTE-missing"])
    with pytest.raises(DiagramError, match="not a diagram name"):
        wb.diagram("../x", "flowchart TB\n  a", caption="c")
    wb.diagram("unknown", "flowchart TB\n  RT-CMP-ghost --> a", caption="c")
    assert wb.records_json()["diagrams"]["unknown"]["unknown_records"] == ["RT-CMP-ghost"]
    with pytest.raises(DiagramError, match="drawn twice"):
        wb.diagram("unknown", "flowchart TB\n  a", caption="c")


def test_every_diagram_error_names_its_diagram_and_a_declared_record_is_never_called_missing(
    wb,
):
    """The parser's "line 2: expected a node id" said which line, not which diagram; and a
    component given to records= was reported as undeclared ("declare the record above
    the diagram") although it was declared."""
    with pytest.raises(DiagramError, match=r"^diagram broken: line 2: expected a node id"):
        wb.diagram("broken", "flowchart TB\n  a --> ", caption="c")
    with pytest.raises(DiagramError, match=r"^diagram sideways: direction='UP' is not one of"):
        wb.diagram("sideways", "flowchart TB\n  a", caption="c", direction="UP")
    with pytest.raises(DiagramError) as caught:
        wb.diagram("flow", caption="c", routes=["RT-CMP-store"])
    assert str(caught.value).splitlines() == [
        "diagram flow: routes= takes routes (RT-RTE-…), and RT-CMP-store is a component",
        "  hint: other records go into a hand-written source, bound with `%% bind`",
    ]
    with pytest.raises(DiagramError, match=r"routes= takes routes \(RT-RTE-…\), and "):
        wb.diagram("flow", caption="c", routes=["RT-BAP-items"])
    with pytest.raises(DiagramError, match=r"records= names RT-CMP-gone, which is not declared"):
        wb.diagram("runtime", caption="c", records=["RT-CMP-gone"])
    assert "declare the record above" not in str(caught.value)


def test_an_identifier_that_vanishes_at_a_newer_commit_is_drift(wb, tw):
    wb.diagram("hand", 'flowchart TB\n  a["calls `Store.put`"]', caption="c")
    assert wb.records_json()["diagrams"]["hand"]["ok"]
    wb.repo.write("pkg/store.py", STORE.replace("def put", "def store"))
    head = wb.repo.commit("rename put")
    assert tw("fetch", "toy").exit_code == 0
    later = tracework.open("demo", commit=head, mode="render")
    later.diagram("hand", 'flowchart TB\n  a["calls `Store.put`"]', caption="c")
    result = later.records_json()["diagrams"]["hand"]
    assert result["vanished"] == ["Store.put"]
    assert any("Store.put" in p for p in later.summary()["problems"])
    json.dumps(result)  # records.json stays serialisable


# -- code spans ------------------------------------------------------------------------


def test_code_spans_are_drawn_in_code_font_without_their_backticks():
    source = (
        "flowchart LR\n"
        '  subgraph core ["inside `Helper.turn`"]\n'
        '    a["filed by `NoteStore.keep`, then `fold_words`"] --> b[bare `build_prompt`]\n'
        "  end\n"
        "  a -->|calls `EchoModel.complete`| c\n"
        "  a -- through `Model` --> d\n"
        '  d --> e["`whole_label`"] --> f["a literal #96; backtick"]\n'
        "  %% a comment keeps `its backticks`\n"
    )
    parsed = parse(source)
    assert identifiers(parsed) == [
        "Helper.turn",
        "NoteStore.keep",
        "fold_words",
        "build_prompt",
        "EchoModel.complete",
        "Model",
        "whole_label",
    ]
    drawn = drawable(source)
    for ident in identifiers(parsed):
        assert f"<code>{ident}</code>" in drawn
    lines = drawn.split("\n")
    assert lines[-2] == "  %% a comment keeps `its backticks`"
    assert not any("`" in line for line in lines[:-2])
    assert "#96;" in drawn  # the escaped backtick is drawn as written, not as code


def test_generated_labels_keep_code_spans_and_escape_lone_backticks():
    shown = "kept by `NoteStore.keep`, an empty `` pair and a lone ` one"
    text = label(shown)
    assert "`NoteStore.keep`" in text and text.count("`") == 2
    assert text.count("#96;") == 3
    parsed = parse(f"flowchart LR\n  n[{text}]")
    assert identifiers(parsed) == ["NoteStore.keep"]
    assert parsed.nodes["n"] == shown
    hostile = label('`<img src=x onerror=alert(1)>` and `"] --> x["`')
    assert identifiers(parse(f"flowchart LR\n  n[{hostile}]")) == [
        "<img src=x onerror=alert(1)>",
        '"] --> x["',
    ]
    drawn = drawable(f"flowchart LR\n  n[{hostile}]")
    assert "<code>#60;img src=x onerror=alert#40;1#41;#62;</code>" in drawn


def test_jupyterlab_and_the_report_draw_code_while_the_source_keeps_backticks(
    wb, workspace, monkeypatch
):
    shown: list[tuple[object, object]] = []
    monkeypatch.setattr(
        "tracework.notebook.workbench.display",
        lambda obj, metadata=None, raw=False: shown.append((obj, metadata)),
    )
    source = 'flowchart TB\n  RT-CMP-store["calls `Store.put`"]\n'
    wb.diagram("hand", source, caption="c")
    bundle, meta = shown[0]
    assert bundle["text/vnd.mermaid"] == (
        'flowchart TB\n  RT-CMP-store["calls <code>Store.put</code>"]\n'
    )
    assert meta["tracework"]["source"] == source  # the report's "Diagram source" fold
    mmd = workspace.reports / "demo" / "draft" / "diagrams" / "hand.mmd"
    assert mmd.read_text() == source


def test_an_identifier_in_a_generated_label_is_checked(wb):
    wb.component("RT-CMP-keeper", label="calls `Store.put` and `gone_fn`", identity="k")
    wb.diagram("runtime", caption="c", records=["RT-CMP-keeper"])
    result = wb.records_json()["diagrams"]["runtime"]
    assert result["identifiers"] == {"Store.put": True, "gone_fn": False}


# -- the runtime diagram -----------------------------------------------------------------


def _runtime_records(n_components: int, n_objects: int, chain: int):
    """Components, objects, one route through the first ``chain`` of them, one path."""
    comps = [f"RT-CMP-c{i}" for i in range(n_components)]
    objs = [f"RT-OBJ-o{i}" for i in range(n_objects)]
    route = RouteStub("RT-RTE-r", "The route", tuple((comps + objs)[:chain]))
    path = PathStub("RT-BAP-p", objs[0], "The model", "the prompt")
    return comps, objs, route, path


def test_runtime_draws_kinds_apart_routes_along_their_steps_and_dashed_authority():
    titles = {"RT-CMP-store": "Store", "RT-OBJ-notes": "Notes", "RT-BAP-p": "Notes to the model"}
    keep = RouteStub("RT-RTE-keep", "Keep", ("RT-CMP-store", "RT-OBJ-notes"))
    recall = RouteStub("RT-RTE-recall", "Recall", ("RT-CMP-store", "RT-OBJ-notes", "RT-CMP-model"))
    path = PathStub("RT-BAP-p", "RT-OBJ-notes", "The model", "A long channel text")
    text = runtime(["RT-CMP-store"], [keep, recall], [path], titles)
    parsed = parse(text)
    # kinds by shape and class: components boxes, objects stores, consumers rounded
    assert '  RT-CMP-store["Store"]' in text and '  RT-CMP-model["RT-CMP-model"]' in text
    assert '  RT-OBJ-notes[("Notes")]' in text
    assert '  RT-BAP-p(["The model"])' in text
    assert "  class RT-CMP-store,RT-CMP-model component" in text
    assert "  class RT-OBJ-notes object" in text and "  class RT-BAP-p consumer" in text
    assert parsed.subgraphs == {}
    # each route labelled on its first step, its steps in one colour
    assert parsed.edges[:3] == [
        ("RT-CMP-store", "RT-OBJ-notes", "Keep"),
        ("RT-CMP-store", "RT-OBJ-notes", "Recall"),
        ("RT-OBJ-notes", "RT-CMP-model", ""),
    ]
    assert "  linkStyle 0 stroke:#3d7be0,stroke-width:2px" in text
    assert "  linkStyle 1,2 stroke:#2b9a5a,stroke-width:2px" in text
    # the authority path: dashed, labelled with its record label, not its long channel,
    # in a grey that shows on a dark page as on a light one
    assert '  RT-OBJ-notes -.->|"Notes to the model"| RT-BAP-p' in text
    assert "  linkStyle 3 stroke:#8c95a6,stroke-width:2px" in text
    assert len(parsed.edges) == 4
    assert runtime(["RT-CMP-a"], [], [], {}).startswith("flowchart TB")
    assert runtime(["RT-CMP-a"], [], [], {}, "RL").startswith("flowchart RL")
    untitled = runtime([], [], [path], {})
    assert '-.->|"A long channel text"|' in untitled  # no record label: the channel


def test_a_runtime_says_a_consumer_once_and_draws_what_holds_an_object():
    """A path labelled by default (its consumer's words) is labelled with its channel,
    not the consumer's text again; an object's holder is drawn, joined to it."""
    consumer = "The `reply` call"
    path = PathStub("RT-BAP-p", "RT-OBJ-notes", consumer, "the prompt's first line")
    for title in (consumer, "The reply call"):  # as declared, and with its code unwrapped
        text = runtime([], [], [path], {"RT-BAP-p": title})
        assert '-.->|"the prompt\'s first line"| RT-BAP-p' in text
        assert text.count("reply") == 1  # the consumer's node alone
    held = runtime(
        ["RT-OBJ-notes"],
        [],
        [],
        {"RT-CMP-store": "Store"},
        held={"RT-OBJ-notes": "RT-CMP-store", "RT-OBJ-gone": "RT-CMP-other"},
    )
    parsed = parse(held)
    assert ("RT-CMP-store", "RT-OBJ-notes", "holds") in parsed.edges
    assert '  RT-CMP-store["Store"]' in held and "RT-CMP-other" not in held
    assert "  linkStyle 0 stroke:#8c95a6,stroke-width:1.5px" in held


@pytest.mark.parametrize(
    ("components", "objects", "chain", "direction"),
    [
        (3, 2, 5, "TB"),  # 5 nodes in one chain: it runs down the page
        (4, 4, 8, "TB"),
        (30, 10, 3, "LR"),  # 40 nodes, short chains: they stack instead of spreading
        (12, 3, 2, "LR"),
    ],
)
def test_runtime_direction_follows_the_shape(components, objects, chain, direction):
    comps, objs, route, path = _runtime_records(components, objects, chain)
    text = runtime(comps + objs, [route], [path], {})
    parsed = parse(text)
    assert parsed.direction == direction
    assert len(parsed.nodes) == components + objects + 1
    assert all(f"RT-CMP-c{i}" in parsed.nodes for i in range(components))


def test_runtime_direction_ranks_past_cycles():
    """A cycle is ranked as a layered layout ranks it (its closing edge set aside), so
    it neither loops nor counts as a chain as long as the graph."""
    nodes = [f"n{i}" for i in range(12)]
    ring = [("n0", "n1"), ("n1", "n2"), ("n2", "n0")]
    assert runtime_direction(nodes, ring) == "LR"  # 9 loose nodes: broad, shallow
    chain = list(pairwise(nodes))
    assert runtime_direction(nodes, [*chain, ("n11", "n0")]) == "TB"


def test_runtime_refuses_what_it_cannot_draw():
    with pytest.raises(DiagramError, match="passes_through"):
        runtime([], [RouteStub("RT-RTE-r", "x", ())], [], {})
    with pytest.raises(DiagramError, match="source_material"):
        runtime([], [], [PathStub("RT-BAP-p", "", "c", "ch")], {})
    with pytest.raises(DiagramError, match="at least one record"):
        runtime([], [], [], {})


def test_runtime_diagram_of_all_records_in_one_call(wb):
    wb.claim("RT-CLM-x", label="A claim", claim="c", assessment="a", operation="uninspected")
    wb.route(
        "RT-RTE-empty",
        label="Nowhere",
        progression="p",
        implementation="wired",
        operation="uninspected",
    )
    wb.diagram("runtime", caption="The runtime", records="all")
    data = wb.records_json()["diagrams"]["runtime"]
    assert data["ok"] and data["kind"] == "generated"
    assert set(data["bindings"]) == {"RT-CMP-store", "RT-OBJ-items", "RT-BAP-items"}
    wb.diagram("chosen", caption="Some", records=["RT-RTE-put", "RT-BAP-items"])
    assert wb.records_json()["diagrams"]["chosen"]["ok"]
    with pytest.raises(
        DiagramError,
        match=(
            r"records= takes components \(RT-CMP-…\), operative objects \(RT-OBJ-…\), "
            r"routes \(RT-RTE-…\) or behavioural-authority paths \(RT-BAP-…\), "
            r"and RT-CLM-x is a claim"
        ),
    ):
        wb.diagram("bad", caption="c", records=["RT-CLM-x"])
    with pytest.raises(DiagramError, match='neither "all" nor a list'):
        wb.diagram("bad", caption="c", records="RT-CMP-store")
    with pytest.raises(DiagramError, match="names no records in passes_through"):
        wb.diagram("bad", caption="c", records=["RT-RTE-empty"])
