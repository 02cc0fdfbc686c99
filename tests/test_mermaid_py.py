"""mermaid-py flowcharts given to ``wb.diagram``: read as objects, checked, drawn offline.

mermaid-py's own display sends a diagram to mermaid.ink; its ``.script`` quotes labels
raw and lower-cases node ids.  tracework reads the ``FlowChart``'s objects instead and
writes the flowchart text its check parses.  These tests build charts with the real
package, and every test that draws one has the network and mermaid-py's rendering
methods made to fail, so a connection or a call to them would be an error.
"""

from __future__ import annotations

import html
import json
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import mermaid
import pytest
from mermaid import Direction, Style
from mermaid.configuration import Config
from mermaid.flowchart import FlowChart, Link, Node
from mermaid.graph import Graph
from mermaid.sequence import SequenceDiagram

import tracework
from conftest import STORE, needs_chromium, render_store_report
from tracework.records.diagrams import DiagramError, drawable, parse
from tracework.records.mermaidpy import diagram_text, flowchart_text, is_flowchart

HOSTILE = '"]<img src=x> {x} |y| #z %%{init}%% ; click n call f()'


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No connection can be made, and none of mermaid-py's rendering may run: each attempt
    is recorded, then fails."""
    attempts: list[str] = []

    def refuse(what: str) -> Any:
        def refused(*args: Any, **kwargs: Any) -> Any:
            attempts.append(what)
            raise AssertionError(f"{what} was called")

        return refused

    for name in ("connect", "connect_ex", "sendto"):
        monkeypatch.setattr(socket.socket, name, refuse(f"socket.{name}"))
    monkeypatch.setattr(socket, "create_connection", refuse("socket.create_connection"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("socket.getaddrinfo"))
    for name in ("__init__", "_make_request_to_mermaid", "_repr_html_", "to_svg", "to_png"):
        monkeypatch.setattr(mermaid.Mermaid, name, refuse(f"Mermaid.{name}"))
    monkeypatch.setattr(Graph, "save", refuse("Graph.save"))
    return attempts


def chart() -> FlowChart:
    hot = Style("hot", fill="#fee", stroke="#b00", stroke_width="2px")
    caller = Node("caller", "a caller\nwith two lines", shape="stadium-shape")
    store = Node("RT-CMP-store", "kept by `Store.put`", shape="cylindrical", styles=[hot])
    group = Node("inside", "Inside", sub_nodes=[Node("step", "one step")], direction="TB")
    return FlowChart(
        "A title mermaid-py puts in front matter",
        [caller, store, group],
        [
            Link(caller, store, message="puts"),
            Link(store, Node("RT-OBJ-items", "the items"), shape="dotted"),
            Link(caller, group, shape="thick", head_left="left-arrow"),
            Link(store, caller, head_right="bullet"),
            Link(caller, store, shape="dotted", head_right="cross"),
            Link(caller, store, head_right="none"),
            Link(caller, store, shape="thick", head_right="none"),
            Link(store, caller, shape="hidden"),
        ],
        orientation=Direction.LEFT_TO_RIGHT,
    )


#: What :func:`chart` is drawn as: record ids kept, every label escaped, heads Mermaid reads.
CHART_TEXT = """flowchart LR
  caller(["a caller<br>with two lines"])
  RT-CMP-store[("kept by `Store.put`")]
  subgraph inside ["Inside"]
    direction TB
    step["one step"]
  end
  RT-OBJ-items["the items"]
  caller -->|"puts"| RT-CMP-store
  RT-CMP-store -.-> RT-OBJ-items
  caller <==> inside
  RT-CMP-store --o caller
  caller -.-x RT-CMP-store
  caller --- RT-CMP-store
  caller === RT-CMP-store
  RT-CMP-store ~~~ caller
  classDef hot fill:#fee,stroke-width:2px,stroke:#b00
  class RT-CMP-store hot
"""


def test_a_flowchart_is_read_as_objects_into_the_text_the_check_parses(offline):
    built = chart()
    assert "rt-cmp-store" in built.script  # mermaid-py's own text has lost the record id
    text = flowchart_text(built, ["RT-CMP-store", "RT-OBJ-items"])
    assert text == CHART_TEXT
    parsed = parse(text)
    assert parsed.direction == "LR"
    assert parsed.nodes["RT-CMP-store"] == "kept by `Store.put`"
    assert parsed.nodes["caller"] == "a caller<br>with two lines"
    assert parsed.subgraphs == {"inside": "Inside"}
    assert ("caller", "RT-CMP-store", "puts") in parsed.edges and len(parsed.edges) == 8
    assert list(parsed.code) == ["Store.put"]
    assert "title" not in text  # the caption says what the diagram is
    assert flowchart_text(chart(), ["RT-CMP-store", "RT-OBJ-items"]) == text  # byte for byte
    assert offline == []


def test_labels_are_text_whatever_they_hold(offline):
    node = Node("n", HOSTILE)
    text = flowchart_text(FlowChart("t", [node], [Link(node, Node("m"), message=HOSTILE)]), [])
    parsed = parse(text)  # no directive, click, HTML or extra statement got through
    assert parsed.nodes["n"] == " ".join(HOSTILE.split())
    assert parsed.edges == [("n", "m", " ".join(HOSTILE.split()))]
    assert "%%{" not in text and "<img" not in text
    assert not any(line.lstrip().startswith("click") for line in text.split("\n"))
    hidden = flowchart_text(FlowChart("t", [Node("h", "a\u202egnp.exe")]), [])
    assert "#60;U+202E#62;" in hidden  # shown, as record cards show it
    assert offline == []


def test_an_id_that_names_no_declared_record_stays_a_record_id():
    text = flowchart_text(FlowChart("t", [Node("RT-CMP-Ghost", "g"), Node("plain")]), [])
    assert "  RT-CMP-ghost[" in text and "  plain[" in text


@pytest.mark.parametrize(
    ("build", "problem"),
    [
        (lambda: FlowChart("t", [Node("a")], config=Config()), "init directive"),
        (lambda: FlowChart("t", [Node("a", href="https://example.invalid")]), "href is refused"),
        (
            lambda: FlowChart("t", links=[Link(Node("a"), Node("b"), head_left="bullet")]),
            "head at the origin",
        ),
        (
            lambda: FlowChart(
                "t", links=[Link(Node("a"), Node("b"), head_left="left-arrow", head_right="cross")]
            ),
            "head at the origin",
        ),
        (
            lambda: FlowChart("t", [Node("a", styles=[Style("s", font_weight="bold")])]),
            "style s: `classDef` may set only",
        ),
        (
            lambda: FlowChart("t", [Node("a", styles=[Style("s", fill="url(https://e.x/)")])]),
            "style s: `classDef` may set only",
        ),
        (
            lambda: FlowChart("t", [Node("a", styles=[Style("s", other="fill:red\n  b --> c")])]),
            "line break",
        ),
        (
            lambda: FlowChart(
                "t", [Node("a", styles=[Style("s", fill="red")]), Node("b", styles=[Style("s")])]
            ),
            "different values",
        ),
        (lambda: FlowChart("t", [Node("a")], orientation="UP"), "orientation 'UP'"),
        (lambda: FlowChart("t", [Node("a..b")]), "cannot be a diagram node id"),
    ],
)
def test_what_the_check_would_refuse_is_refused_with_its_reason(build, problem):
    with pytest.raises(DiagramError, match=problem):
        flowchart_text(build(), [])


def test_only_text_and_flowcharts_are_diagrams():
    assert diagram_text(None, []) is None
    assert diagram_text("flowchart TB\n  a", []) == "flowchart TB\n  a"
    assert is_flowchart(chart()) and not is_flowchart("flowchart TB")
    with pytest.raises(DiagramError, match="mermaid-py SequenceDiagram; tracework checks and"):
        diagram_text(SequenceDiagram("t", []), [])
    with pytest.raises(DiagramError, match="source is a dict: give Mermaid flowchart text"):
        diagram_text({}, [])


def test_tracework_never_imports_mermaid_nor_makes_a_connection_importing_it():
    """Importing mermaid registers mermaid-py's %%mermaidjs magic (which draws through
    mermaid.ink) in an IPython kernel: tracework leaves that to a notebook that asks."""
    code = textwrap.dedent(
        """
        import socket, sys
        def refuse(*a, **k):
            raise SystemExit("a connection was attempted")
        socket.socket.connect = socket.create_connection = socket.getaddrinfo = refuse
        import tracework, tracework.notebook.workbench, tracework.records.mermaidpy
        assert "mermaid" not in sys.modules, "tracework imported mermaid"
        import mermaid
        from mermaid.flowchart import FlowChart, Node
        from tracework.records.mermaidpy import flowchart_text
        print(flowchart_text(FlowChart("t", [Node("a", "b")]), []), end="")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == 'flowchart TB\n  a["b"]\n'


# -- in the notebook -------------------------------------------------------------------------


@pytest.fixture
def wb(pinned):
    pinned({"pkg/store.py": STORE})
    wb = tracework.open("demo")
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    wb.component("RT-CMP-store", label="Store", identity="The store.", evidence=[q])
    wb.operative_object("RT-OBJ-items", label="Items", description="The dict.")
    return wb


def test_wb_diagram_checks_and_draws_a_flowchart_offline(wb, workspace, offline, monkeypatch):
    shown: list[tuple[Any, Any]] = []
    monkeypatch.setattr(
        "tracework.notebook.workbench.display",
        lambda obj, metadata=None, raw=False: shown.append((obj, metadata)),
    )
    wb.diagram("chart", chart(), caption="Built with mermaid-py")
    result = wb.records_json()["diagrams"]["chart"]
    assert result["bindings"] == {"RT-CMP-store": "RT-CMP-store", "RT-OBJ-items": "RT-OBJ-items"}
    assert result["identifiers"] == {"Store.put": True} and result["ok"]
    bundle, meta = shown[0]
    assert bundle["text/vnd.mermaid"] == drawable(CHART_TEXT)  # JupyterLab's own renderer
    assert meta["tracework"]["source"] == CHART_TEXT
    mmd = workspace.reports / "demo" / "draft" / "diagrams" / "chart.mmd"
    assert mmd.read_text() == CHART_TEXT
    assert offline == []


def test_a_flowchart_is_checked_against_the_register_like_any_diagram(wb, offline):
    ghost = Node("RT-CMP-ghost", "calls `nowhere_fn`")
    wb.diagram("ghost", FlowChart("t", [ghost]), caption="c")
    result = wb.records_json()["diagrams"]["ghost"]
    assert result["unknown_records"] == ["RT-CMP-ghost"]
    assert result["vanished"] == ["nowhere_fn"] and not result["ok"]
    with pytest.raises(DiagramError, match=r"^diagram linked: node a: href is refused"):
        wb.diagram(
            "linked", FlowChart("t", [Node("a", href="https://example.invalid")]), caption="c"
        )
    with pytest.raises(DiagramError, match=r"^diagram seq: source is a mermaid-py SequenceDiag"):
        wb.diagram("seq", SequenceDiagram("t", []), caption="c")
    assert offline == []


# -- rendered: the report draws it with the pinned Mermaid --------------------------------------

CELL = """import socket
def _refused(*args, **kwargs):
    raise AssertionError("a connection was attempted")
socket.socket.connect = socket.create_connection = socket.getaddrinfo = _refused
import mermaid
from mermaid import Direction, Style
from mermaid.flowchart import FlowChart, Link, Node
for _name in ("__init__", "_make_request_to_mermaid", "_repr_html_", "to_svg", "to_png"):
    setattr(mermaid.Mermaid, _name, _refused)
q = src.quote("pkg/store.py", symbol="Store.put")
wb.component("RT-CMP-store", label="Store", identity="The store.", evidence=[q])
wb.operative_object("RT-OBJ-items", label="Items", description="The dict.")
# src.repo in the kernel, whose environment names another repository and config
import os
os.environ["GIT_DIR"] = os.environ["GIT_COMMON_DIR"] = "/nonexistent/decoy.git"
os.environ["GIT_CONFIG_PARAMETERS"] = "'core.bare=false' 'log.showsignature=true'"
assert [c.summary for c in src.repo.iter_commits()] == ["first"]
assert src.repo.git.log("--format=%s") == "first"
"""


def _chart_cell() -> str:
    """The notebook cell that builds :func:`chart` and draws it."""
    import inspect

    body = inspect.getsource(chart).replace("def chart() -> FlowChart:", "def chart():")
    return f'{CELL}{body}\nwb.diagram("chart", chart(), caption="Built with mermaid-py")\n'


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_store_report(tmp_path_factory.mktemp("mermaidpy"), [_chart_cell()])


@pytest.mark.slow
def test_the_report_holds_the_checked_text_and_never_mermaid_ink(report):
    """The figure draws the text the check parsed; its source fold shows it as written."""
    records = json.loads((report / "records.json").read_text(encoding="utf-8"))
    assert records["diagrams"]["chart"]["ok"] is True
    page = (report / "report.html").read_text(encoding="utf-8")
    figure = re.search(r'<figure [^>]*\bid="diagram-chart".*?</figure>', page, re.S)
    assert figure
    drawn = re.search(r'<pre class="mermaid">(.*?)</pre>', figure.group(0), re.S)
    assert drawn and html.unescape(drawn.group(1)) == drawable(CHART_TEXT)
    fold = re.search(r"<pre><code>(.*?)</code></pre>", figure.group(0), re.S)
    assert fold and html.unescape(fold.group(1)) == CHART_TEXT  # the "Diagram source" fold
    assert "mermaid.ink" not in page


@pytest.mark.slow
@pytest.mark.browser
def test_the_pinned_mermaid_draws_every_link_and_shape_it_was_given(browser, report):
    needs_chromium()
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto((report / "report.html").as_uri())
    page.wait_for_function("document.documentElement.dataset.diagrams !== undefined")
    assert page.evaluate("document.documentElement.dataset.diagrams") == "done"
    counts = page.evaluate(
        """() => {
          const svg = document.querySelector('#diagram-chart svg');
          const count = (selector) => svg.querySelectorAll(selector).length;
          return svg && {
            nodes: count('g.node'),
            clusters: count('g.cluster'),
            edges: count('g.edgePaths path'),
            dotted: count('g.edgePaths path.edge-pattern-dotted'),
            thick: count('g.edgePaths path.edge-thickness-thick'),
            invisible: count('g.edgePaths path.edge-thickness-invisible'),
          };
        }"""
    )
    assert counts == {
        "nodes": 4,
        "clusters": 1,
        "edges": 8,
        "dotted": 2,
        "thick": 2,
        "invisible": 1,
    }, counts
    outside = [u for u in requests if not u.startswith(("file://", "data:"))]
    assert outside == [], outside
    page.close()
