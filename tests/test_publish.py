"""``tracework publish``: the demo's site, its links, determinism, atomicity and a11y.

One module fixture copies the demo's inputs (notebook, register, rubric, subject
definition) into a temporary workspace, builds the Larkspur subject there, renders the
report at its pin and at the newest commit, and publishes.  The tests then read the
site as files; ``test_browser_site.py`` drives it in chromium.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracework import publish as publish_module
from tracework.cli import main
from tracework.errors import TraceworkError
from tracework.publish import write_site
from tracework.site import gather
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
    for path in pages(site):
        csp = parse(path).csp
        assert csp, f"{path} has no Content-Security-Policy"
        assert "default-src 'none'" in csp and "http" not in csp
        assert "connect-src 'none'" in csp


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

    from tracework import register as register_module

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
    assert "records.json: commit_date: Field required" in out["skipped"][1]


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("commit_date", "last Tuesday", "not an ISO 8601 date and time"),
        ("commit_date", "2026-03-23T16:40:00", "without its UTC offset"),
        ("pin", "HEAD", "should match pattern"),
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
    assert re.findall(r"<td>(\d) of 3</td>", footer) == ["1", "0", "0", "0", "1", "1", "1"]
    assert "<td>0 of 7</td>" in page  # "second" carries nothing


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


def test_publish_never_replaces_a_folder_it_did_not_make(demo, tmp_path, monkeypatch):
    ws, _ = demo
    monkeypatch.chdir(ws.root)
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine")
    for out in (str(mine), "notebooks", "registers"):
        result = CliRunner().invoke(main, ["publish", "--out", out])
        assert result.exit_code == 2 and "a folder publish did not make" in result.output
    assert (mine / "keep.txt").read_text() == "mine"
    assert (ws.notebooks / "larkspur.ipynb").is_file()
    # a report that happens to be called "site" is never taken for the published site
    other = tmp_path / "other"
    other_ws = Workspace.init(other)
    (other_ws.reports / "site" / "0123456789ab").mkdir(parents=True)
    monkeypatch.chdir(other)
    result = CliRunner().invoke(main, ["publish"])
    assert result.exit_code == 2 and "reports/site" in result.output
    assert (other_ws.reports / "site" / "0123456789ab").is_dir()
    # an empty folder, or an earlier site, is fine; "relative" means from the workspace root
    monkeypatch.chdir(ws.root / "notebooks")
    out = json.loads(run("publish", "--out", "reports/elsewhere", "--json"))
    assert (
        out["out"] == "reports/elsewhere"
        and (ws.reports / "elsewhere" / ".tracework-site").is_file()
    )
    run("publish", "--out", "reports/elsewhere")
    # never inside a report's folder, nor inside a site (the next publish would eat it)
    for out, words in (
        ("reports/larkspur/abcdef123456", "is inside reports/larkspur/"),
        ("reports/elsewhere/nested", "is inside the site"),
    ):
        result = CliRunner().invoke(main, ["publish", "--out", out])
        assert result.exit_code == 2 and words in result.output, result.output
        assert not (ws.root / out).exists()
    shutil.rmtree(ws.reports / "elsewhere")


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
    from tracework.site import Render

    def render(commit: str, pin: str, date: str, since: int) -> Render:
        records = {"commit": commit, "pin": pin, "commit_date": date}
        return Render(commit[:12], {**records, "drift": {"commits_since_pin": since}}, {})

    old_pin, new_pin = "a" * 40, "b" * 40
    old = render("c" * 40, old_pin, "2026-03-10T10:00:00+00:00", 10)
    new = render("d" * 40, new_pin, "2026-03-09T10:00:00+00:00", 0)
    assert sorted([old, new], key=lambda r: r.order(new_pin))[-1] is new
    # commit times compare in UTC, whatever offset each was written with
    east = render("e" * 40, new_pin, "2026-03-09T12:30:00+02:00", 1)  # 10:30 UTC
    west = render("f" * 40, new_pin, "2026-03-09T06:00:00-04:00", 1)  # 10:00 UTC
    assert sorted([east, west], key=lambda r: r.order(new_pin))[-1] is east
