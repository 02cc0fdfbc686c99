"""Mermaid diagrams: the parser, label escaping, generation from records and checks."""

from __future__ import annotations

import json
import re

import pytest

import tracework
from conftest import PathStub, RouteStub
from tracework.notebook.diagrams import (
    DiagramError,
    from_authority_paths,
    from_routes,
    identifiers,
    label,
    parse,
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
        ('flowchart TB\n  a["`x` then text"]', "markdown string"),
        ("flowchart TB\n  a --> ", "expected a node id"),
    ],
)
def test_parse_refuses_what_it_cannot_check(text, problem):
    with pytest.raises(DiagramError, match=problem):
        parse(text)


def test_labels_escape_everything_that_could_break_out():
    escaped = label(HOSTILE)
    bare = re.sub(r"#\d+;", "", escaped[1:-1])  # what is left besides entity codes
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
    text = from_authority_paths(
        [PathStub("RT-BAP-p", "RT-OBJ-b", HOSTILE, "a channel")], titles, "TB"
    )
    parsed = parse(text)
    assert parsed.edges == [("RT-OBJ-b", "RT-BAP-p", "a channel")]
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
        wb.diagram("authority", caption="c", records=["RT-CMP-store"])
    assert str(caught.value).splitlines() == [
        "diagram authority: records= takes behavioural-authority paths (RT-BAP-…), and "
        "RT-CMP-store is a component",
        "  hint: routes= draws routes; other records go into a hand-written source bound "
        "with `%% bind`",
    ]
    with pytest.raises(DiagramError, match=r"routes= takes routes \(RT-RTE-…\), and "):
        wb.diagram("flow", caption="c", routes=["RT-BAP-items"])
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
