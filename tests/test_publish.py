"""``tracework publish``: the demo's site, its links, determinism, atomicity and a11y;
where ``--out`` may be; hidden characters on every page.

One module fixture copies the demo's inputs (notebook, register, rubric, subject
definition) into a temporary workspace, builds the Larkspur subject there, renders the
report at its pin and at the newest commit, and publishes.  The tests then read the
site as files; one drives it in chromium, as ``test_browser.py`` does a published
report carrying hostile analyst HTML.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import refused
from tracework.cli import main
from tracework.errors import TraceworkError
from tracework.records.artefacts import ReportRecords, dumps, read_manifest, read_records, to_json
from tracework.render.history import read_history
from tracework.site import publish as publish_module
from tracework.site.publish import write_site
from tracework.site.read import gather
from tracework.text import visible
from tracework.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples"))

from build_subject import copy_demo  # noqa: E402


def run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def demo_workspace(root: Path) -> tuple[Workspace, list[str]]:
    """The demo's committed inputs in a fresh workspace, with its subject built."""
    ws = Workspace.init(root)
    return ws, copy_demo(root)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, list[str]]:
    root = tmp_path_factory.mktemp("site") / "ws"
    ws, commits = demo_workspace(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        run("fetch", "larkspur")
        run("render", "larkspur")
        run("render", "larkspur", "--commit", commits[-1])
        run("publish")
    return ws, commits


@pytest.fixture
def site(demo: tuple[Workspace, list[str]]) -> Path:
    return demo[0].reports / "site"


class Page(HTMLParser):
    """What a link check needs from a page: ids, links and resources, headings, a11y."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.headings: list[int] = []
        self.csp: str | None = None
        self.anchors_without_href = 0
        self.tabindex: list[str] = []
        self.figures: list[dict[str, str | None]] = []
        self.inputs: list[str | None] = []
        self.labels: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        for attr in ("href", "src"):
            if a.get(attr) is not None:
                self.links.append((tag, attr, str(a[attr])))
        if tag == "a" and a.get("href") is None and not a.get("id"):
            self.anchors_without_href += 1
        if a.get("tabindex") is not None:
            self.tabindex.append(str(a["tabindex"]))
        if len(tag) == 2 and tag[0] == "h" and tag[1].isdigit():
            self.headings.append(int(tag[1]))
        if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy":
            self.csp = a.get("content")
        if tag == "figure" and "tw-diagram" in (a.get("class") or ""):
            self.figures.append(a)
        if tag == "input" and a.get("type") != "hidden":
            self.inputs.append(a.get("id"))
        if tag == "label" and a.get("for"):
            self.labels.add(str(a["for"]))


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


@pytest.mark.slow
def test_publish_writes_index_report_pages_registers_and_rubrics(site, demo):
    ws, commits = demo
    assert (site / "index.html").is_file()
    assert (site / "reports" / "larkspur" / "index.html").is_file()
    assert (site / "reports" / "larkspur" / "register.html").is_file()
    assert (site / "reports" / "larkspur" / "register.yaml").read_bytes() == (
        ws.registers / "larkspur.yaml"
    ).read_bytes()
    for commit in (commits[0], commits[-1]):
        render = site / "reports" / "larkspur" / commit[:12]
        assert (render / "report.html").read_bytes() == (
            ws.reports / "larkspur" / commit[:12] / "report.html"
        ).read_bytes()
        assert (render / "assets" / "mermaid.min.js").is_file()
    assert (site / "rubrics" / "retention.html").is_file()
    index = (site / "index.html").read_text()
    assert f"13/13 verified at {commits[0][:12]}" not in index  # only the newest render
    assert f"drift: 3 changed, 2 missing, 1 broken absence at {commits[-1][:12]}" in index
    assert "Retention controls</a>: 3 of 7" in index
    assert "2026-03-20" in index  # last checked: the newest render's analysis date
    report = (site / "reports" / "larkspur" / "index.html").read_text()
    assert f"13/13 verified at {commits[0][:12]}" in report  # the history lists the pin
    assert f'href="{commits[0][:12]}/report.html"' in report
    assert f'href="{commits[-1][:12]}/report.html"' in report
    assert "The newest render used exactly this register." in report


@pytest.mark.slow
def test_every_internal_link_and_anchor_resolves_and_nothing_points_outside(site):
    parsed = {path: parse(path) for path in pages(site)}
    problems = []
    checked = 0
    for path, page in parsed.items():
        for tag, attr, value in page.links:
            url = urlsplit(value)
            if url.scheme or value.startswith("//"):
                # a reader may follow a link out; nothing is ever loaded from outside
                if attr == "src" or tag == "link" or url.scheme not in ("https", "mailto"):
                    problems.append(f"{path.relative_to(site)}: {tag} {attr}={value}")
                continue
            target = (path.parent / unquote(url.path)).resolve() if url.path else path
            if site.resolve() not in (target, *target.parents):
                problems.append(f"{path.relative_to(site)}: {value} leaves the site")
                continue
            if not target.is_file():
                problems.append(f"{path.relative_to(site)}: {value} does not exist")
                continue
            if url.fragment:
                ids = parsed[target].ids if target in parsed else parse(target).ids
                if unquote(url.fragment) not in ids:
                    problems.append(f"{path.relative_to(site)}: no #{url.fragment} in {value}")
            checked += 1
    assert not problems, "\n".join(problems[:20])
    assert checked > 100  # the check really walked the site


def test_site_pages_carry_a_csp_that_allows_nothing_from_outside(site):
    scripted = set()
    for path in pages(site):
        csp = parse(path).csp
        assert csp, f"{path} has no Content-Security-Policy"
        assert "default-src 'none'" in csp and "http" not in csp
        assert "connect-src 'none'" in csp
        # scripts: exactly the page's own by nonce ('self' is any file on file://): every
        # page its theme script, inline in the head; the index, a rubric page and a
        # report with diagrams files of their own too
        scripts = re.search(r"script-src ([^;]*);", csp)
        assert scripts and re.fullmatch(r"'nonce-[\w-]{24}'", scripts.group(1)), csp
        nonce = scripts.group(1)[7:-1]
        text = path.read_text(encoding="utf-8")
        tags = re.findall(r"<script\b[^>]*>", text)
        assert tags and all(f'nonce="{nonce}"' in t for t in tags), tags
        head = text[: text.index("</head>")]
        assert len(re.findall(r"<script\b[^>]*>", head)) == len(tags)  # all in the head
        assert '"tracework-theme"' in head, path  # the theme script, inline
        if any("src=" in t for t in tags):
            scripted.add(path.name)
    assert scripted == {"index.html", "report.html", "retention.html"}


def test_accessibility_headings_text_alternatives_keyboard_and_labels(site):
    for path in pages(site):
        page = parse(path)
        rel = path.relative_to(site)
        assert page.headings[:1] == [1] and page.headings.count(1) == 1, rel
        for before, after in zip(page.headings, page.headings[1:], strict=False):
            assert after <= before + 1, f"{rel}: h{before} then h{after}"
        for figure in page.figures:
            assert figure.get("aria-label"), f"{rel}: a diagram without a text alternative"
        assert all(int(t) <= 0 for t in page.tabindex), f"{rel}: a positive tabindex"
        assert page.anchors_without_href == 0, f"{rel}: a link keyboard users cannot reach"
        for input_id in page.inputs:
            assert input_id in page.labels, f"{rel}: input {input_id} has no label"
    report = parse(next(site.glob("reports/larkspur/*/report.html")))
    assert len(report.figures) == 3


def test_the_rubric_matrix_links_each_cell_to_the_mark(site, demo):
    _, commits = demo
    page = (site / "rubrics" / "retention.html").read_text()
    newest = commits[-1][:12]
    for mechanism in ("recall-into-prompt", "per-user-scope", "expiry"):
        href = f"../reports/larkspur/{newest}/report.html#mark/retention/{mechanism}"
        assert f'href="{href}"' in page
    assert "3 of 7" in page and ">re-review</span>" in page
    assert "Carries none or one: 0% of systems." in page


def test_search_index_covers_records_quotes_and_paths(site):
    entries = json.loads((site / "search.json").read_text())
    by_id = {e["id"]: e for e in entries}
    assert by_id["RT-CMP-note-store"]["paths"] == ["larkspur/notes.py"]
    assert by_id["RT-CMP-note-store"]["href"].endswith("/report.html#RT-CMP-note-store")
    assert by_id["Q-keep"]["label"].startswith("larkspur/notes.py:")
    script = (site / "assets" / "search-index.js").read_text()
    assert json.loads(script.removeprefix("window.TRACEWORK_SEARCH = ").rstrip(";\n")) == entries


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.mark.slow
def test_publishing_twice_gives_identical_bytes(demo, site, tmp_path, monkeypatch):
    ws, _ = demo
    monkeypatch.chdir(ws.root)
    before = _tree(site)
    other = tmp_path / "elsewhere"
    out = json.loads(run("publish", "--out", str(other), "--json"))
    assert out["ok"] and out["reports"] == 1 and out["renders"] == 2
    assert out["rubrics"] == ["retention"]
    assert _tree(other) == before
    run("publish")
    assert _tree(site) == before


def test_a_failed_publish_leaves_the_previous_site(demo, site, monkeypatch):
    ws, _ = demo
    monkeypatch.chdir(ws.root)
    before = _tree(site)
    real = publish_module.write_site

    def write_then_fail(built, root):  # a failure half-way through writing
        real(built, root)
        raise TraceworkError("the disk filled up")

    monkeypatch.setattr(publish_module, "write_site", write_then_fail)
    result = CliRunner().invoke(main, ["publish"])
    assert result.exit_code == 2 and "the disk filled up" in result.output
    assert "Traceback" not in result.output
    assert _tree(site) == before
    assert not list(site.parent.glob(".site.*.staging"))


def test_a_broken_rubric_or_register_is_left_out_and_named(demo, tmp_path, monkeypatch):
    ws, _ = demo
    monkeypatch.chdir(ws.root)
    rubric = ws.registers / "rubrics" / "retention.yaml"
    register = ws.registers / "larkspur.yaml"
    good_rubric, good_register = rubric.read_bytes(), register.read_bytes()
    rubric.write_text("title: [broken\n")
    register.write_text("sources: 3\n")
    (ws.registers / "rubrics" / "a folder.yaml").mkdir()
    try:
        out = json.loads(run("publish", "--out", str(tmp_path / "s"), "--json"))
    finally:
        rubric.write_bytes(good_rubric)
        register.write_bytes(good_register)
        (ws.registers / "rubrics" / "a folder.yaml").rmdir()
    assert out["rubrics"] == [] and out["reports"] == 1
    skipped = "\n".join(out["skipped"])
    assert "registers/rubrics/retention.yaml: not valid YAML" in skipped
    assert "registers/rubrics/a folder.yaml: 'a folder' is not a valid rubric name" in skipped
    assert "registers/larkspur.yaml: " in skipped
    report = (tmp_path / "s" / "reports" / "larkspur" / "index.html").read_text()
    assert "No readable register" in report and not (tmp_path / "s" / "rubrics").exists()


def test_a_register_edited_during_publish_is_shown_as_one_version(demo, tmp_path, monkeypatch):
    """The register page's table, its YAML copy and its SHA-256 come from one read: an
    edit landing in between must not give a page that mixes two versions."""
    from ruamel.yaml import YAML

    from tracework.register import store as register_module

    ws, _ = demo
    monkeypatch.chdir(ws.root)
    path = ws.registers / "larkspur.yaml"
    original = path.read_bytes()
    yaml = YAML()
    edited = yaml.load(original)
    dropped = sorted(edited["quotes"])[0]
    del edited["quotes"][dropped]
    real_load = register_module.load

    def load_after_an_edit(*args, **kwargs):  # the analyst saves between the two reads
        with path.open("w", encoding="utf-8") as out:
            yaml.dump(edited, out)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(register_module, "load", load_after_an_edit)
    try:
        run("publish", "--out", str(tmp_path / "s"))
    finally:
        path.write_bytes(original)
    page = tmp_path / "s" / "reports" / "larkspur" / "register.html"
    copy = (tmp_path / "s" / "reports" / "larkspur" / "register.yaml").read_bytes()
    assert copy == original
    assert f'id="{dropped}"' in page.read_text(encoding="utf-8")


def test_a_broken_render_folder_is_skipped_and_named(demo, tmp_path, monkeypatch):
    ws, commits = demo
    monkeypatch.chdir(ws.root)
    broken = ws.reports / "larkspur" / "0123456789ab"
    broken.mkdir()
    (broken / "records.json").write_text("{not json")
    partial = ws.reports / "larkspur" / "ba9876543210"
    shutil.copytree(ws.reports / "larkspur" / commits[-1][:12], partial)
    (partial / "records.json").write_text(json.dumps({"commit": "ba9876543210" + "0" * 28}))
    try:
        out = json.loads(run("publish", "--out", str(tmp_path / "s"), "--json"))
    finally:
        shutil.rmtree(broken)
        shutil.rmtree(partial)
    assert out["renders"] == 2
    assert [s.split(":")[0] for s in out["skipped"]] == [
        "reports/larkspur/0123456789ab",
        "reports/larkspur/ba9876543210",
    ]
    assert "records.json: format: Field required (and 17 more)" in out["skipped"][1]


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("commit_date", "last Tuesday", "not an ISO 8601 date and time"),
        ("commit_date", "2026-03-23T16:40:00", "without its UTC offset"),
        ("pin", "HEAD", "should match pattern"),
        # the whole file is read through its model: any part that is not what a render
        # writes names where it is, and the render is left out
        ("checks", {"ok": True}, "checks.commit: Field required"),
        ("quotes", {"Q-x": {"state": "verified"}}, "quotes.Q-x.source: Field required"),
        ("marks", {"r": {"title": 3}}, "marks.r.title: Input should be a valid string"),
        ("drift", {"commits_since_pin": "many"}, "drift.commits_since_pin: Input should be"),
        ("surprise", "a key no render writes", "surprise: Extra inputs are not permitted"),
    ],
)
def test_a_render_whose_records_cannot_be_ordered_is_skipped(
    demo, tmp_path, monkeypatch, field, value, problem
):
    ws, commits = demo
    monkeypatch.chdir(ws.root)
    odd = ws.reports / "odd" / commits[-1][:12]
    shutil.copytree(ws.reports / "larkspur" / commits[-1][:12], odd)
    records = json.loads((odd / "records.json").read_text())
    records[field] = value
    (odd / "records.json").write_text(json.dumps(records))
    try:
        out = json.loads(run("publish", "--out", str(tmp_path / "s"), "--json"))
    finally:
        shutil.rmtree(ws.reports / "odd")
    assert out["reports"] == 1
    assert any(s.startswith("reports/odd/") and problem in s for s in out["skipped"])


def test_the_matrix_counts_systems_and_the_distribution(demo, tmp_path, monkeypatch):
    """Two more systems, made from the rendered one with other marks, fill the matrix."""
    ws, commits = demo
    monkeypatch.chdir(ws.root)
    made = []
    for name, present in (("second", set()), ("third", {"expiry"})):
        folder = ws.reports / name / commits[-1][:12]
        shutil.copytree(ws.reports / "larkspur" / commits[-1][:12], folder)
        records = json.loads((folder / "records.json").read_text())
        marks = records["marks"]["retention"]
        for mid, mark in marks["marks"].items():
            mark["present"] = mid in present
        marks["carries"] = len(present)
        (folder / "records.json").write_text(json.dumps(records))
        made.append(ws.reports / name)
    try:
        run("publish", "--out", str(tmp_path / "s"))
    finally:
        for folder in made:
            shutil.rmtree(folder)
    page = (tmp_path / "s" / "rubrics" / "retention.html").read_text()
    assert "3 systems marked against 7 mechanisms" in page
    assert "Carries none or one: 67% of systems." in page
    footer = page.split("<tfoot>", 1)[1].split("</tfoot>", 1)[0]
    # larkspur carries recall, bounded and framing; "third" carries expiry only
    assert re.findall(r"<td[^>]*>(\d) of 3</td>", footer) == ["1", "0", "0", "0", "1", "1", "1"]
    assert '<td data-label="Carries">0 of 7</td>' in page  # "second" carries nothing


@pytest.mark.slow
@pytest.mark.browser
def test_a_reader_browses_the_site_from_disk(browser, site, demo):
    """Index → search → a report → a history entry → the rubric → a cell: all from
    file://, with no request leaving the site."""
    _, commits = demo
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto((site / "index.html").as_uri())

    page.fill("#search", "notes.py keep")
    results = page.locator("#search-results li")
    results.first.wait_for()
    assert "match" in (page.text_content("#search-status") or "")
    texts = [results.nth(i).text_content() or "" for i in range(results.count())]
    assert any(t.startswith("RT-CMP-note-store") for t in texts), texts
    page.locator("#search-results a", has_text="RT-CMP-note-store").click()
    assert page.url.endswith(f"/{commits[-1][:12]}/report.html#RT-CMP-note-store")
    page.locator('[id="RT-CMP-note-store"]').wait_for(state="visible")

    page.goto((site / "index.html").as_uri())
    page.locator("table.reports a", has_text="larkspur").first.click()
    assert page.url.endswith("/reports/larkspur/index.html")
    page.locator(f"#render-{commits[0][:12]} a").click()  # the pin, from the history
    assert page.url.endswith(f"/{commits[0][:12]}/report.html")
    page.locator("h1").first.wait_for(state="visible")

    page.goto((site / "index.html").as_uri())
    page.locator("header.site nav a", has_text="Retention controls").click()
    page.locator("table.matrix td.cell-absent a").first.click()
    assert "#mark/retention/" in page.url
    anchor = page.url.split("#", 1)[1]
    page.locator(f'[id="{anchor}"]').wait_for(state="visible")

    # keyboard: Tab from the top reaches the skip link, then the site's links
    page.goto((site / "index.html").as_uri())
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to the content"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.tagName") == "A"

    outside = [u for u in requests if not u.startswith("file://")]
    assert outside == [], outside
    page.close()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every path into a JSON value (dict keys and list indices)."""
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out += _paths(child, (*prefix, i))
    return out


@settings(
    max_examples=80,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@pytest.mark.slow
@given(data=st.data())
def test_fuzzed_records_and_history_never_break_a_publish(demo, tmp_path, data):
    """Any records.json or history.json a render could have left, however mangled, is
    published or skipped with a message; never an exception."""
    ws, commits = demo
    folder = commits[-1][:12]
    good = json.loads((ws.reports / "larkspur" / folder / "records.json").read_text())
    history = json.loads((ws.reports / "larkspur" / "history.json").read_text())
    target = data.draw(st.sampled_from(["records", "history"]))
    value = good if target == "records" else history
    path = data.draw(st.sampled_from(_paths(value)))
    replacement = data.draw(JSON)
    if path:
        node = value
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = replacement
    else:
        value = replacement
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    reports = root / "reports" / "larkspur"
    shutil.copytree(ws.reports / "larkspur" / folder, reports / folder, copy_function=os.link)
    (reports / folder / "records.json").unlink()
    (reports / folder / "records.json").write_text(
        json.dumps(value if target == "records" else good)
    )
    (reports / "history.json").write_text(json.dumps(value if target == "history" else history))
    (root / "tracework.toml").write_text("")
    shutil.copytree(ws.registers / "rubrics", root / "registers" / "rubrics")
    shutil.copy(ws.registers / "larkspur.yaml", root / "registers" / "larkspur.yaml")
    try:
        site = gather(Workspace(root), root / "out")
        write_site(site, root / "out")
        assert (root / "out" / "index.html").is_file()
        assert len(site.reports) + len(site.skipped) >= 1
        if site.reports:  # the pages that show records and marks were written too
            assert (root / "out" / "rubrics" / "retention.html").is_file()
            assert (root / "out" / "reports" / "larkspur" / "register.html").is_file()
    finally:
        shutil.rmtree(root)


def _refused(out: str, words: str) -> None:
    result = CliRunner().invoke(main, ["publish", "--out", out])
    refused(result, words, "only reports/site and such sites directly in reports/")  # the rule


def _snapshot(root: Path) -> list[tuple[str, bytes | None]]:
    return [
        (str(p.relative_to(root)), p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    ]


@pytest.mark.parametrize("folder", ["sources", "registers", "notebooks", "reports"])
def test_publish_refuses_each_workspace_folder_even_empty(tw, workspace, folder):
    """An empty registers/ was once accepted, and the next publish replaced it with
    everything analysts had added to it since."""
    before = _snapshot(workspace.root)
    _refused(folder, f"is the workspace's {folder}/ folder")
    _refused(str(workspace.root / folder), f"is the workspace's {folder}/ folder")
    assert _snapshot(workspace.root) == before
    assert tw("register", "new", "kept").exit_code == 0
    _refused(folder, f"is the workspace's {folder}/ folder")  # and when it holds something
    assert (workspace.registers / "kept.yaml").is_file()


@pytest.mark.parametrize(
    ("out", "words"),
    [
        (".", "is the workspace"),
        ("..", "contains the workspace"),
        ("/", "contains the workspace"),
        ("registers/rubrics", "lies inside the workspace's registers/rubrics/ folder"),
        ("sources/.mirrors", "lies inside the workspace's sources/.mirrors/ folder"),
        ("notebooks/site", "lies inside the workspace's notebooks/site/ folder"),
        ("reports/demo/abcdef123456", "lies inside the workspace's reports/demo/ folder"),
        ("reports/site/inner", "lies inside the workspace's reports/site/ folder"),
        ("reports/other", "is a folder of the workspace's reports/ that holds no site"),
        ("reports/demo", "is a folder of the workspace's reports/ that holds no site"),
        ("docs/site", "lies inside the workspace"),
        (".git", "lies inside the workspace"),
    ],
)
def test_publish_refuses_the_root_its_parents_and_anything_inside_the_workspace(
    workspace, out, words
):
    (workspace.reports / "demo" / "abcdef123456").mkdir(parents=True)
    (workspace.root / ".git").mkdir()
    before = _snapshot(workspace.root)
    _refused(out, words)
    assert _snapshot(workspace.root) == before


def test_publish_refuses_the_folders_of_another_workspace(workspace, tmp_path):
    other = Workspace.init(tmp_path / "other")
    for out, words in (
        (other.registers, f"is the workspace {other.root}'s registers/ folder"),
        (other.root, f"is the workspace {other.root}"),
        (other.reports / "x", f"is a folder of the workspace {other.root}'s reports/"),
    ):
        _refused(str(out), words)
    assert not (other.reports / "x").exists()


def test_publish_refuses_folders_it_did_not_make_and_follows_links(workspace, tmp_path):
    empty, mine, file = tmp_path / "empty", tmp_path / "mine", tmp_path / "file.txt"
    empty.mkdir()
    mine.mkdir()
    (mine / "keep.txt").write_text("mine")
    file.write_text("a file")
    (tmp_path / "link").symlink_to(workspace.registers)
    _refused(str(empty), "is an empty folder publish did not make (no .tracework-site in it)")
    _refused(str(mine), "is a folder publish did not make (no .tracework-site in it)")
    with pytest.raises(TraceworkError, match="is a file, not a folder"):  # (click says so too)
        publish_module.checked_out(workspace, file)
    _refused(str(tmp_path / "link"), "is the workspace's registers/ folder")
    assert empty.is_dir() and not any(empty.iterdir())
    assert (mine / "keep.txt").read_text() == "mine" and file.read_text() == "a file"


def test_publish_replaces_only_sites_it_made(tw, workspace, tmp_path):
    new = tmp_path / "new"
    out = json.loads(tw("publish", "--out", str(new), "--json").output)
    assert out["out"] == str(new) and (new / ".tracework-site").is_file()
    (new / "stale.html").write_text("left from an earlier publish")
    assert tw("publish", "--out", str(new)).exit_code == 0
    assert not (new / "stale.html").exists()  # a site of its own: replaced whole
    _refused(str(new / "nested"), f"lies inside the site {new}")
    # the default, then a site an earlier version published directly in reports/
    assert tw("publish").exit_code == 0 and (workspace.reports / "site" / "index.html").is_file()
    earlier = workspace.reports / "elsewhere"
    earlier.mkdir()
    (earlier / ".tracework-site").write_text("published by tracework 0.0.9\n")
    out = json.loads(tw("publish", "--out", "reports/elsewhere", "--json").output)
    assert out["out"] == "reports/elsewhere" and (earlier / "index.html").is_file()
    # relative to the workspace root, wherever the command runs
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(workspace.notebooks)
        assert tw("publish", "--out", "reports/site").exit_code == 0
        _refused("registers", "is the workspace's registers/ folder")


def test_a_report_named_site_is_never_taken_for_the_site(workspace):
    (workspace.reports / "site" / "0123456789ab").mkdir(parents=True)
    _refused("reports/site", "is a folder publish did not make")
    result = CliRunner().invoke(main, ["publish"])
    assert result.exit_code == 2 and "reports/site is a folder publish did not make" in (
        result.output
    )
    assert (workspace.reports / "site" / "0123456789ab").is_dir()


def test_the_folder_is_checked_again_before_the_swap(tw, workspace, monkeypatch):
    """A folder that lost its marker while the site was built is not replaced."""
    assert tw("publish").exit_code == 0
    site = workspace.reports / "site"
    real = publish_module.write_site

    def write_then_unmark(built, root):
        pages = real(built, root)
        (site / ".tracework-site").unlink()
        (site / "analyst.txt").write_text("saved meanwhile")
        return pages

    monkeypatch.setattr(publish_module, "write_site", write_then_unmark)
    _refused("reports/site", "is a folder publish did not make")
    assert (site / "analyst.txt").read_text() == "saved meanwhile"
    assert not list(workspace.reports.glob(".site.*.staging"))


def test_the_site_is_readable_by_others_as_the_umask_allows(site):
    mask = os.umask(0)
    os.umask(mask)
    assert site.stat().st_mode & 0o777 == 0o777 & ~mask


def test_an_unmarked_mechanism_and_a_hostile_rubric_publish_safely(demo, tmp_path, monkeypatch):
    ws, commits = demo
    monkeypatch.chdir(ws.root)
    rubric = ws.registers / "rubrics" / "retention.yaml"
    good = rubric.read_text()
    folder = ws.reports / "partial" / commits[-1][:12]
    shutil.copytree(ws.reports / "larkspur" / commits[-1][:12], folder)
    records = json.loads((folder / "records.json").read_text())
    del records["marks"]["retention"]["marks"]["expiry"]
    (folder / "records.json").write_text(json.dumps(records))
    rubric.write_text(
        good.replace("title: Retention controls", 'title: "<script>alert(1)</script> controls"')
        + "  - id: audit\n    name: <b>Audited</b>\n    definition: '# Not a heading'\n"
        "    evidence: A log line.\n"
    )
    try:
        run("publish", "--out", str(tmp_path / "s"))
    finally:
        rubric.write_text(good)
        shutil.rmtree(ws.reports / "partial")
    page = (tmp_path / "s" / "rubrics" / "retention.html").read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>Audited" not in page and "&lt;b&gt;Audited" in page
    assert "<h1>Not a heading" not in page and "# Not a heading" in page
    row = page.split('href="../reports/partial/index.html"', 1)[1].split("</tr>", 1)[0]
    assert row.count("not marked") == 2  # expiry, unmarked, and audit, new to the rubric
    assert "(marked against an earlier version of this rubric)" in row
    index = (tmp_path / "s" / "index.html").read_text()
    assert "<script>alert" not in index


def test_the_newest_render_is_at_the_current_pin_then_by_time():
    from tracework.records.artefacts import Drift, RenderManifest, ReportRecords
    from tracework.site.read import Render

    def render(commit: str, pin: str, date: str, since: int) -> Render:
        drift = Drift.model_construct(commits_since_pin=since)
        records = ReportRecords.model_construct(
            commit=commit, pin=pin, commit_date=date, drift=drift
        )
        return Render(commit[:12], records, RenderManifest.model_construct())

    old_pin, new_pin = "a" * 40, "b" * 40
    old = render("c" * 40, old_pin, "2026-03-10T10:00:00+00:00", 10)
    new = render("d" * 40, new_pin, "2026-03-09T10:00:00+00:00", 0)
    assert sorted([old, new], key=lambda r: r.order(new_pin))[-1] is new
    # commit times compare in UTC, whatever offset each was written with
    east = render("e" * 40, new_pin, "2026-03-09T12:30:00+02:00", 1)  # 10:30 UTC
    west = render("f" * 40, new_pin, "2026-03-09T06:00:00-04:00", 1)  # 10:00 UTC
    assert sorted([east, west], key=lambda r: r.order(new_pin))[-1] is east


# -- hidden characters: one rule for every page ---------------------------------------

HIDDEN = "\u202egnp.exe \x1b[31m \u2066x\u2069 \u200b\x07\x85\ufeff"
HIDDEN_CHARS = re.compile("[\u202e\x1b\u2066\u2069\u200b\x07\x85\ufeff]")
#: Values a render's files must keep as they are for the site to read them at all (the
#: format id and the mode are one of a few fixed words, never shown).
KEPT = {"commit", "pin", "commit_date", "pin_date", "date", "checked", "sha256", "format", "mode"}


def _hide(value: Any, key: str | None = None) -> Any:
    """Every text value (not the keys, not what must parse) with the hidden suffix."""
    if isinstance(value, dict):
        return {k: _hide(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_hide(v, key) for v in value]
    if isinstance(value, str) and key not in KEPT:
        return value + HIDDEN
    return value


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [*value.keys(), *(s for v in value.values() for s in _strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_every_page_and_the_search_show_hidden_characters_as_marks(demo, tmp_path, monkeypatch):
    """The site title, rubric titles and mechanism names, report records and history,
    register fields and search results all carry bidi, escape and invisible characters:
    every page kind shows each as <U+XXXX>, as report cards do, and so does the search."""
    from ruamel.yaml import YAML

    ws, commits = demo
    root = tmp_path / "ws"
    hostile = Workspace.init(root)
    marker = root / "tracework.toml"
    marker.write_text(marker.read_text() + f"\n[site]\ntitle = {json.dumps('Site' + HIDDEN)}\n")
    yaml = YAML(typ="safe")
    rubric = yaml.load((ws.registers / "rubrics" / "retention.yaml").read_text())
    for field in ("title", "description"):
        rubric[field] += HIDDEN
    for mechanism in rubric["mechanisms"]:
        for field in ("name", "definition", "evidence"):
            mechanism[field] += HIDDEN
    (hostile.registers / "rubrics").mkdir()
    (hostile.registers / "rubrics" / "retention.yaml").write_text(json.dumps(rubric))
    register = yaml.load((ws.registers / "larkspur.yaml").read_text())
    register["name"] += HIDDEN
    git = register["sources"]["SRC-1"]
    git["subject"] += HIDDEN
    path, text = "larkspur/odd" + HIDDEN + ".py", "x = 1" + HIDDEN + "\n"
    git["files"][path] = {"sha256": "0" * 64, "kind": "symlink", "size": 3, "target": HIDDEN}
    register["quotes"]["Q-hidden"] = {
        "source": "SRC-1",
        "path": path,
        "lines": [1, 1],
        "anchor": {"match": "x" + HIDDEN},
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "text": text,
    }
    register["checks"] = [
        {
            "date": "2026-03-30",
            "source": "SRC-1" + HIDDEN,
            "commit": commits[0],
            "counts": {HIDDEN: 1},
        }
    ]
    (hostile.registers / "larkspur.yaml").write_text(json.dumps(register))
    for name in ("larkspur", "odd" + HIDDEN):
        for commit in (commits[0], commits[-1]):
            folder = hostile.reports / name / commit[:12]
            shutil.copytree(ws.reports / "larkspur" / commit[:12], folder, copy_function=os.link)
            records = json.loads((folder / "records.json").read_text())
            (folder / "records.json").unlink()
            (folder / "records.json").write_text(json.dumps(_hide(records)))
    history = json.loads((ws.reports / "larkspur" / "history.json").read_text())
    (hostile.reports / "larkspur" / "history.json").write_text(json.dumps(_hide(history)))
    monkeypatch.chdir(root)

    out = json.loads(run("publish", "--json"))
    assert out["skipped"] == [
        "reports/odd<U+202E>gnp.exe <U+001B>[31m <U+2066>x<U+2069> "
        "<U+200B><U+0007><U+0085><U+FEFF>: not a report name"
    ]
    site = hostile.reports / "site"
    kinds = {
        "index.html",
        "reports/larkspur/index.html",
        "reports/larkspur/register.html",
        "rubrics/retention.html",
    }
    shown = html.escape(visible(HIDDEN))
    for page in pages(site):
        text = page.read_text(encoding="utf-8")
        assert not HIDDEN_CHARS.search(text), page
        rel = str(page.relative_to(site))
        if rel in kinds:
            kinds.remove(rel)
            assert text.count(shown) >= 3, rel  # the fields really were shown, as marks
    assert not kinds
    for data in (
        json.loads((site / "search.json").read_text()),
        json.loads(
            (site / "assets" / "search-index.js")
            .read_text()
            .removeprefix("window.TRACEWORK_SEARCH = ")
            .rstrip(";\n")
        ),
    ):
        strings = _strings(data)
        assert not any(HIDDEN_CHARS.search(s) for s in strings)
        assert sum(visible(HIDDEN) in s for s in strings) > 20


def test_what_a_render_writes_reads_back_through_its_model_byte_for_byte(demo):
    """records.json, manifest.json and history.json are each one model, written by one
    function: reading a render's file and writing it again gives the same bytes."""
    ws, commits = demo
    report = ws.reports / "larkspur"
    folders = sorted(p for p in report.iterdir() if re.fullmatch(r"[0-9a-f]{12}", p.name))
    assert [f.name for f in folders] == sorted({commits[0][:12], commits[-1][:12]})
    for folder in folders:
        records_file, manifest_file = folder / "records.json", folder / "manifest.json"
        records = read_records(records_file)
        assert dumps(to_json(records)).encode() == records_file.read_bytes()
        assert dumps(to_json(read_manifest(manifest_file))).encode() == manifest_file.read_bytes()
        # typed all the way down: what mypy sees is what the file holds
        counts = records.checks.checks.registered.counts
        assert sum(counts["quote"].values()) == len(records.quotes)
        assert records.register_name == "larkspur" and records.title
    history_file = report / "history.json"
    entries = read_history(history_file)
    assert [e.commit for e in entries] == [commits[0], commits[-1]]
    assert dumps([to_json(e) for e in entries]).encode() == history_file.read_bytes()


def test_marks_with_a_review_and_the_rubrics_mechanisms_read_back_as_written(demo):
    """A mark's review (``reviewed=``, ``reviewer=``) and the rubric's list of mechanisms
    are part of records.json's model: a file holding them reads and writes back as is."""
    ws, commits = demo
    data = json.loads((ws.reports / "larkspur" / commits[-1][:12] / "records.json").read_text())
    for rubric in data["marks"].values():
        rubric["rubric_mechanisms"] = [{"id": m, "name": m.title()} for m in rubric["marks"]]
        for mark in rubric["marks"].values():
            mark["reviewed_at"] = {"commit": commits[0], "date": "2026-03-20"}
            mark["reviewer"] = "an analyst"
    records = ReportRecords.model_validate(data)
    assert dumps(to_json(records)) == dumps(data)
    mark = next(iter(records.marks["retention"].marks.values()))
    assert mark.reviewed_at is not None and mark.reviewed_at.commit == commits[0]


def test_the_site_shows_the_title_records_json_gives(demo, site):
    """The site read records.json through a partial model that dropped ``title``, so its
    index, report page and search named every report "NAME KIND" instead."""
    ws, commits = demo
    records = json.loads((ws.reports / "larkspur" / commits[-1][:12] / "records.json").read_text())
    title = records["title"]
    assert title != "larkspur runtime report"  # the notebook's own heading
    assert f">{title}</a>" in (site / "index.html").read_text()
    assert f"<h1>{title}</h1>" in (site / "reports" / "larkspur" / "index.html").read_text()
    labels = [e["label"] for e in json.loads((site / "search.json").read_text())]
    assert f"{title} · larkspur at {commits[-1][:12]}" in labels


# -- pages at every width, and the charts ---------------------------------------------


class Charts(HTMLParser):
    """Each inline SVG of a page: its class, role, text alternative and what it holds."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.charts: list[dict[str, Any]] = []
        self.texts: dict[str, str] = {}
        self._depth = 0
        self._open: list[str] = []
        self._text_of: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "svg" and "chart" in a.get("class", "").split():
            self.charts.append({**a, "inside": [], "titles": []})
            self._depth = 1
        elif self._depth:
            self._depth += tag != "rect" and tag not in ("line", "circle", "polyline")
            self.charts[-1]["inside"].append((tag, a))
            if tag in ("title", "desc"):
                self._text_of = a.get("id") or f"{tag}-{len(self.charts)}-{len(self.texts)}"
                self.texts[self._text_of] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag in ("title", "desc"):
            if self._text_of and self._depth:
                self.charts[-1]["titles"].append(self.texts[self._text_of])
            self._text_of = None
        if self._depth and tag not in ("rect", "line", "circle", "polyline"):
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._text_of:
            self.texts[self._text_of] += data


def charts_of(path: Path) -> Charts:
    found = Charts()
    found.feed(path.read_text(encoding="utf-8"))
    return found


def test_charts_are_inline_svg_with_text_alternatives(site, demo):
    """The history (a stacked bar per render, format-only apart), the rubric's
    distribution and the index's sparklines: drawn at publish time, no script, each an
    image with a text alternative that says what it shows, coloured by class only."""
    _, commits = demo
    history = charts_of(site / "reports" / "larkspur" / "index.html")
    (chart,) = history.charts
    assert chart["role"] == "img" and "chart-history" in chart["class"]
    title, desc = chart["aria-labelledby"].split()
    assert history.texts[title] == "Quote states per render"
    assert history.texts[desc] == (
        "Larkspur runtime report: quote states at 2 renders, oldest first: from 13 of 13 "
        f"quotes verified at {commits[0][:12]} to 5 of 13 quotes verified, 2 moved, 1 changed "
        f"(format only), 3 changed, 2 missing at {commits[-1][:12]}."
    )
    bars = [t for t in chart["titles"] if t.startswith("at ")]
    assert bars[1] == (
        f"at {commits[-1][:12]} (2026-03-23), 3 commits after the pin: 5 of 13 quotes verified, "
        "2 moved, 1 changed (format only), 3 changed, 2 missing"
    )
    states = [a["class"] for tag, a in chart["inside"] if tag == "rect"]
    pin_bar = ["s-verified"]
    newest_bar = ["s-verified", "s-moved", "s-format-only", "s-changed", "s-missing"]
    assert states == [*pin_bar, *newest_bar]
    rubric = charts_of(site / "rubrics" / "retention.html")
    (chart,) = rubric.charts
    desc = rubric.texts[chart["aria-labelledby"].split()[1]]
    assert desc.startswith("Systems by how many mechanisms they carry: 0 of 7: 0 (0%);")
    assert "3 of 7: 1 (100%)" in desc
    index = charts_of(site / "index.html")
    (spark,) = index.charts
    assert spark["role"] == "img" and spark["aria-label"] == (
        "Larkspur runtime report: share of quotes verified at each of 2 renders, oldest "
        "first: 100%, 38%"
    )
    for path in pages(site):
        text = path.read_text(encoding="utf-8")
        for svg in re.findall(r"<svg\b.*?</svg>", text, re.S):
            assert "<script" not in svg and " style=" not in svg and "<foreignObject" not in svg


def test_a_hostile_report_title_stays_text_in_its_charts(demo, tmp_path, monkeypatch):
    ws, commits = demo
    monkeypatch.chdir(ws.root)
    hostile = '</title></desc></svg><script>alert(1)</script>"><img src=x>'
    folder = ws.reports / "hostile" / commits[-1][:12]
    shutil.copytree(ws.reports / "larkspur" / commits[-1][:12], folder)
    records = json.loads((folder / "records.json").read_text())
    records["title"] = hostile
    (folder / "records.json").write_text(json.dumps(records))
    try:
        run("publish", "--out", str(tmp_path / "s"))
    finally:
        shutil.rmtree(ws.reports / "hostile")
    for page in ("index.html", "reports/hostile/index.html"):
        text = (tmp_path / "s" / page).read_text(encoding="utf-8")
        assert "<script>alert" not in text and "<img src=x" not in text, page
        found = charts_of(tmp_path / "s" / page)
        assert any(hostile in " ".join(c["titles"]) for c in found.charts) or any(
            hostile in t for t in found.texts.values()
        ), page
    spark = charts_of(tmp_path / "s" / "index.html").charts
    assert any(c.get("aria-label", "").startswith(hostile + ": share") for c in spark)


def test_format_only_is_drawn_apart_from_changed():
    from tracework.site.charts import quote_states

    counts = {"verified": 5, "moved": 2, "changed": 4, "missing": 2, "ambiguous": 0}
    assert list(quote_states(counts, 1).items()) == [
        ("verified", 5),
        ("moved", 2),
        ("format only", 1),
        ("changed", 3),
        ("ambiguous", 0),
        ("missing", 2),
    ]
    # a mangled history cannot make a bar negative or larger than its quotes
    assert quote_states({"changed": 1, "verified": -3, "moved": "x"}, 7)["format only"] == 1
    assert quote_states({"changed": True}, 0)["changed"] == 0


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
def test_every_page_kind_fits_and_shows_its_charts(browser, site, width):
    """Index, report history, register, rubric and both renders' pages: no sideways
    scrolling of the page, the charts drawn with their text alternatives, no console
    error, nothing requested from outside the site."""
    from conftest import page_fits

    kinds = set()
    for path in pages(site):
        found = page_fits(browser, path.as_uri(), width)
        rel = str(path.relative_to(site))
        assert found["scroll"] <= found["width"] and found["past"] == [], (rel, found)
        assert found["errors"] == [] and all(u.startswith("file://") for u in found["requests"]), (
            rel,
            found,
        )
        kinds.add(re.sub(r"compare-.*", "compare", rel.split("/")[-1]))
    assert kinds == {"index.html", "register.html", "report.html", "retention.html", "compare"}
    page = browser.new_page(viewport={"width": width, "height": 900})
    for rel, selector in (
        ("index.html", "svg.sparkline"),
        ("reports/larkspur/index.html", "svg.chart-history"),
        ("rubrics/retention.html", "svg.chart-distribution"),
    ):
        page.goto((site / rel).as_uri())
        chart = page.locator(selector)
        assert chart.count() == 1 and chart.is_visible(), rel
        box = chart.bounding_box()
        assert box and box["width"] > 40 and box["x"] + box["width"] <= width, (rel, box)
        assert page.evaluate(
            """(s) => { const c = document.querySelector(s);
                const ids = (c.getAttribute('aria-labelledby') || '').split(' ').filter(Boolean);
                return c.getAttribute('aria-label') || ids.map(
                    i => document.getElementById(i).textContent).join(' '); }""",
            selector,
        ), rel
    page.close()


def test_the_register_table_is_one_template_on_both_pages(site, demo):
    """The report's appendix and the site's register page show the registered files by
    the same template: the same table, byte for byte."""
    _, commits = demo

    def tables(path: Path) -> list[str]:
        text = path.read_text(encoding="utf-8")
        return re.findall(r'<table class="register-files[^"]*">.*?</table>', text, re.S)

    on_site = tables(site / "reports" / "larkspur" / "register.html")
    in_report = tables(site / "reports" / "larkspur" / commits[0][:12] / "report.html")
    assert len(on_site) == 1 and on_site == in_report
    assert "<code>larkspur/notes.py</code>" in on_site[0]


def test_the_rubric_keeps_every_render_of_a_system_and_its_mark_history(site, demo):
    """A column per render of each system (the newest shown; counts compare newest
    renders), each cell linking the mark at that render; the system's mark history on
    its report page says what changed, where and when."""
    _, commits = demo
    pin, newest = commits[0][:12], commits[-1][:12]
    page = (site / "rubrics" / "retention.html").read_text(encoding="utf-8")
    body = page.split('<tbody id="system-larkspur">', 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr data-commit=\"([0-9a-f]{40})\"( hidden)?>", body)
    assert rows == [(commits[-1], ""), (commits[0], " hidden")]
    shown, older = body.split("<tr data-commit=")[1:]
    assert f"../reports/larkspur/{newest}/report.html#mark/retention/expiry" in shown
    assert f"../reports/larkspur/{pin}/report.html#mark/retention/expiry" in older
    assert "re-review" in shown and "re-review" not in older
    assert shown.count("<option") == 2 and 'class="choice" hidden' in shown
    assert 'href="../reports/larkspur/index.html#marks-retention">Mark history</a>' in shown
    history = (site / "reports" / "larkspur" / "index.html").read_text(encoding="utf-8")
    section = history.split('<section id="marks-retention"', 1)[1].split("</section>", 1)[0]
    items = [
        html.unescape(re.sub(r"<[^>]+>", "", i)) for i in re.findall(r"<li>(.*?)</li>", section)
    ]
    assert f"expiry: marked absent at {pin}, 2026-03-02" in items
    assert f"per-user-scope: absent → absent (needs re-review) at {newest}, 2026-03-23" in items
    assert len(items) == 7 + 4  # each mark first, then the four that drifted


@pytest.mark.browser
def test_a_reader_chooses_which_render_a_system_shows(browser, site, demo):
    _, commits = demo
    url = (site / "rubrics" / "retention.html").as_uri()
    for script in (False, True):
        context = browser.new_context(java_script_enabled=script)
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m, seen=errors: seen.append(m.text) if m.type == "error" else 0)
        page.goto(url)
        page.wait_for_load_state("load")
        rows = page.locator("#system-larkspur tr")
        assert rows.nth(0).is_visible() and not rows.nth(1).is_visible()
        select = rows.nth(0).locator("select")
        assert select.is_visible() == script  # no script: the newest, and nothing to choose
        if script:
            select.select_option(commits[0])
            assert not rows.nth(0).is_visible() and rows.nth(1).is_visible()
            assert page.evaluate("document.activeElement.value") == commits[0]
            link = rows.nth(1).locator("td.cell-absent a").first.get_attribute("href")
            assert link and f"/{commits[0][:12]}/report.html#mark/retention/" in link
            rows.nth(1).locator("select").select_option(commits[-1])
            assert rows.nth(0).is_visible() and not rows.nth(1).is_visible()
        assert errors == []
        context.close()


def test_a_compare_page_says_what_changed_state_between_two_renders(site, demo):
    _, commits = demo
    pin, newest = commits[0][:12], commits[-1][:12]
    name = f"compare-{pin}-{newest}.html"
    history = (site / "reports" / "larkspur" / "index.html").read_text(encoding="utf-8")
    assert f'<a href="{name}">compared with <code>{pin}</code></a>' in history
    page = (site / "reports" / "larkspur" / name).read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "Q-keep: verified → changed" in text
    assert "Q-build-prompt: verified → changed (format only)" in text
    assert "Q-length-guard: verified → missing" in text
    assert "Q-drop: verified → moved" in text
    keep = page.split('id="Q-keep"', 1)[1].split("</article>", 1)[0]
    diff = keep.split('<pre class="diff"><code>', 1)[1].split("</code>", 1)[0]
    # a line per span, the kind it is as its class, the sign kept in the text
    kinds = re.findall(r'<span class="d d-(\w+)">([^<]*)\n</span>', diff)
    assert [k for k, _ in kinds[:3]] == ["file", "file", "hunk"]
    assert all(k == {"+": "add", "-": "del"}.get(t[:1], "same") for k, t in kinds[3:])
    diff = html.unescape(re.sub(r"<[^>]+>", "", diff))
    assert diff.startswith(f"--- larkspur/notes.py:30-39 @ {pin}\n+++ larkspur/notes.py:")
    assert any(line.startswith("-") and not line.startswith("---") for line in diff.splitlines())
    assert any(line.startswith("+") and not line.startswith("+++") for line in diff.splitlines())
    assert "RT-RTE-keep: holds → needs re-review" in text
    assert "retention · per-user-scope: absent → absent (needs re-review)" in text
    assert "RT-ABS-owner: holds → broken" in text
    assert "Q-recall-unchanged" not in text and "RT-CMP-model:" not in text  # held: not listed


def test_a_compare_page_lists_what_the_screen_gained_and_lost(demo, tmp_path, monkeypatch):
    """Both renders carry a screen (as `wb.screen()` records it): the page lists the
    findings each lacks, by their text not their line, escaped and made visible."""
    ws, commits = demo
    monkeypatch.chdir(ws.root)

    def screen(*items: tuple[str, int, str]) -> dict[str, Any]:
        return {
            "items": [
                {"category": "unpinned", "path": path, "line": line, "kind": "CI step installs "
                 "a package without an exact version", "text": text, "run_by": [],
                 "step": "job test, step 2"}
                for path, line, text in items
            ],
            "cooldown": {"locks": []},
        }  # fmt: skip

    kept = (".github/workflows/ci.yml", 4, "pip install -U pkg")
    files = [ws.reports / "larkspur" / c[:12] / "records.json" for c in (commits[0], commits[-1])]
    saved = [f.read_bytes() for f in files]
    screens = [
        screen(kept, (".github/workflows/ci.yml", 9, "npm install")),
        screen(
            (kept[0], 6, kept[2]),  # two lines lower: the same finding
            ("w/\u202eci.yml", 3, "</code><script>alert(1)</script>"),
        ),
    ]
    try:
        for path, raw, recorded in zip(files, saved, screens, strict=True):
            data = json.loads(raw)
            data["screen"] = recorded
            path.write_text(dumps(data), encoding="utf-8")
        run("publish", "--out", str(tmp_path / "s"))
    finally:
        for path, raw in zip(files, saved, strict=True):
            path.write_bytes(raw)
    name = f"compare-{commits[0][:12]}-{commits[-1][:12]}.html"
    page = (tmp_path / "s" / "reports" / "larkspur" / name).read_text(encoding="utf-8")
    assert "<script>alert" not in page and "\u202e" not in page
    section = page.split('id="screen-heading"', 1)[1].split("</section>", 1)[0]
    gained, lost = section.split('id="screen-lost"', 1)
    text = html.unescape(re.sub(r"<[^>]+>", "", gained))
    assert "w/<U+202E>ci.yml:3 CI step installs a package without an exact version " in text
    assert "(job test, step 2): </code><script>alert(1)</script>" in text
    assert "pip install -U pkg" not in section  # held, though it moved
    assert "npm install" in html.unescape(lost) and "ci.yml:9" in lost


def test_a_compare_page_without_the_mirror_names_the_missing_diffs(demo, tmp_path, monkeypatch):
    ws, commits = demo
    monkeypatch.chdir(ws.root)
    mirrors = ws.root / "sources" / ".mirrors"
    aside = tmp_path / "mirrors"
    mirrors.rename(aside)
    try:
        run("publish", "--out", str(tmp_path / "s"))
    finally:
        aside.rename(mirrors)
    name = f"compare-{commits[0][:12]}-{commits[-1][:12]}.html"
    page = (tmp_path / "s" / "reports" / "larkspur" / name).read_text(encoding="utf-8")
    assert "No diff: the subject's mirror cannot be read" in page
    assert "Q-keep" in page and "RT-ABS-owner" in page
