"""tracework's displays in a real JupyterLab: the demo notebook run in the browser.

A JupyterLab server is started on loopback in a temporary workspace holding the
Larkspur demo, with every setting that would reach the network off (news, update
checks, the extension manager); Playwright drives Debian's chromium to run every cell
of the notebook at the subject's newest commit (so verified and drifted evidence, a
broken absence and a failing diagram all show), and the test reads computed styles:
highlighted code has colour, badges a background, a record's id and kind are separate
elements, the two palettes follow the theme.  Run in the light theme, then the dark
one, with no console error and no request outside 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from click.testing import CliRunner
from playwright.sync_api import expect

from conftest import needs_chromium
from tracework.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from build_subject import copy_demo

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TOKEN = "tracework-lab-test"
#: JupyterLab settings that keep the server and the page off the network, and keep
#: every cell attached to the page (the default windowing detaches cells out of view).
SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/extensionmanager-extension/plugin.jupyterlab-settings": {"enabled": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/themes.jupyterlab-settings": {"theme": "JupyterLab Light"},
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: Reports of their own beside the demo, pinned where it is, for the notebook tests that
#: write into their register (the demo's register stays as the demo has it).
OWN_REPORTS = ("feedback", "gone", "fails")


@pytest.fixture(scope="module")
def lab_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace holding the Larkspur demo, with ``notebooks/newest.ipynb`` (the demo
    notebook at the subject's newest commit) and the reports :data:`OWN_REPORTS` made by
    ``tracework new`` at the demo's pin."""
    needs_chromium()
    root = tmp_path_factory.mktemp("lab")
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        assert runner.invoke(main, ["init", "ws"]).exit_code == 0
        ws = root / "ws"
        commits = copy_demo(ws)
        patch.chdir(ws)
        result = runner.invoke(main, ["fetch", "larkspur"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        for name in OWN_REPORTS:
            made = runner.invoke(
                main, ["new", name, "--subject", "larkspur", "--commit", commits[0]]
            )
            assert made.exit_code == 0, made.output
    nb = nbformat.read(ws / "notebooks" / "larkspur.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = params.source.replace("commit = None", f'commit = "{commits[-1]}"')
    nbformat.write(nb, ws / "notebooks" / "newest.ipynb")
    return ws


@pytest.fixture(scope="module")
def lab(lab_workspace: Path) -> Iterator[str]:
    """A JupyterLab server on 127.0.0.1 in :func:`lab_workspace`; its address."""
    ws = lab_workspace
    home = ws.parent / "home"
    settings = home / "lab-settings"
    for rel, values in SETTINGS.items():
        (settings / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings / rel).write_text(json.dumps(values), encoding="utf-8")
    config = home / "config"
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(
        json.dumps(
            {
                "LabApp": {
                    "news_url": None,
                    "check_for_updates_class": (
                        "jupyterlab.handlers.announcements.NeverCheckForUpdate"
                    ),
                    "expose_app_in_browser": True,
                    "extension_manager": "readonly",
                    "user_settings_dir": str(settings),
                    "workspaces_dir": str(home / "lab-workspaces"),
                }
            }
        ),
        encoding="utf-8",
    )
    env = {
        **os.environ,
        "HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    port = _free_port()
    log = (home / "lab.log").open("wb")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={ws}",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        cwd=ws,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.close()
                    pytest.fail((home / "lab.log").read_text(errors="replace"))
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _run_notebook(
    browser: Any, lab: str, theme: str, notebook: str = "newest", until: str = ".tw-summary"
) -> tuple[Any, list[str], list[str]]:
    """Open ``notebooks/NOTEBOOK.ipynb`` at 1280 px, switch to ``theme``, run every cell,
    wait for ``until`` to show; returns the page, the requests it made and its console
    errors."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    # a JupyterLab workspace of its own for each notebook: it reopens no other's tabs
    page.goto(f"{lab}/lab/workspaces/{notebook}/tree/notebooks/{notebook}.ipynb?token={TOKEN}")
    page.wait_for_function(
        "path => window.jupyterapp?.shell.currentWidget?.context?.path === path",
        arg=f"notebooks/{notebook}.ipynb",
    )
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    # commands are started, not awaited: a command's promise may outlive the page's use of it
    page.evaluate(
        "theme => { window.jupyterapp.commands.execute('apputils:change-theme', {theme}); }",
        theme,
    )
    page.wait_for_function(
        "light => document.body.dataset.jpThemeLight === light",
        arg="true" if theme == "JupyterLab Light" else "false",
    )
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status"
        " === 'idle'",
        timeout=120_000,
    )
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    page.wait_for_selector(until, timeout=240_000)
    return page, requests, errors


#: What the test reads of the page: computed styles and boxes of tracework's displays.
MEASURE = """() => {
  const all = s => Array.from(document.querySelectorAll(s));
  const one = s => document.querySelector(s);
  const style = e => getComputedStyle(e);
  const box = e => e.getBoundingClientRect();
  const record = one('.tw-records .tw-record');
  const lineno = one('.tw-records figure.tw-quote .linenos');
  const colour = s => style(one(s)).color;
  return {
    keyword: colour('.tw-records figure.tw-quote .tw-hl .k'),
    name: colour('.tw-records figure.tw-quote .tw-hl .n'),
    codeBackground: style(one('.tw-records figure.tw-quote .tw-hl')).backgroundColor,
    badgeBackgrounds: all('.tw-badge').map(b => style(b).backgroundColor),
    idAndKind: [box(record.querySelector('.tw-record-id')).right,
                box(record.querySelector('.tw-kind')).left],
    linenoAndCode: [box(lineno).right, box(lineno.nextElementSibling).left,
                    lineno.textContent],
    escaping: all('.tw-record').flatMap(r => Array.from(r.querySelectorAll('dd, dt'))
      .filter(d => box(d).right > box(r).right + 0.5 || box(d).left < box(r).left)
      .map(d => r.id + ': ' + d.textContent.slice(0, 40))),
    failing: {
      verified: colour('.tw-records .tw-cite .tw-badge.tw-verified'),
      missing: colour('.tw-records .tw-cite .tw-badge.tw-missing'),
      broken: colour('#RT-ABS-owner .tw-absence .tw-badge.tw-broken'),
      diagram: colour('.tw-diagram-note .tw-badge.tw-fails'),
      review: colour('.tw-records .tw-record header .tw-badge.tw-needs-re-review'),
    },
    quoteCardsInRecords: all('.tw-records .tw-record figure').length,
    citesOpen: all('.tw-records .tw-record details.tw-cite[open]').length,
    cites: all('.tw-records .tw-record details.tw-cite').length,
  };
}"""


def _rgb(css: str) -> tuple[int, ...]:
    return tuple(int(float(v)) for v in css[css.index("(") + 1 : -1].split(",")[:3])


def _lightness(css: str) -> float:
    r, g, b = _rgb(css)
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


@pytest.mark.parametrize(
    ("theme", "keyword"),
    [("JupyterLab Light", (0, 128, 0)), ("JupyterLab Dark", (255, 123, 114))],
    ids=["light", "dark"],
)
def test_the_demo_notebook_reads_as_the_report_does(browser, lab, tmp_path, theme, keyword):
    page, requests, errors = _run_notebook(browser, lab, theme)
    found = page.evaluate(MEASURE)
    # code is highlighted in the theme's palette, on the theme's own background
    assert _rgb(found["keyword"]) == keyword, found
    dark = theme == "JupyterLab Dark"
    assert (_lightness(found["codeBackground"]) < 0.3) is dark, found
    assert (_lightness(found["name"]) > 0.6) is dark, found
    # badges are coloured pills; ids, kinds, line numbers and code are apart
    assert found["badgeBackgrounds"] and "rgba(0, 0, 0, 0)" not in found["badgeBackgrounds"]
    id_right, kind_left = found["idAndKind"]
    assert kind_left >= id_right + 4, found
    number_right, code_left, number = found["linenoAndCode"]
    assert number.strip().isdigit() and code_left >= number_right, found
    assert found["escaping"] == [], found  # every field stays inside its card
    # failing states stand out in the error colour, apart from what holds
    failing = found["failing"]
    for state in ("missing", "broken", "diagram"):
        r, g, b = _rgb(failing[state])
        assert r > g + 40 and r > b + 40, (state, failing)
    assert failing["review"] != failing["verified"] != failing["missing"]
    # a record cites its quotes folded; one opens in place on a click
    assert found["quoteCardsInRecords"] == 0 and found["citesOpen"] == 0 and found["cites"]
    cite = page.locator(".tw-records .tw-record details.tw-cite").first
    cite.locator("summary").click(position={"x": 4, "y": 6})
    assert cite.evaluate("d => d.open") and cite.locator(".linenos").first.is_visible()
    shot = tmp_path / f"{theme.split()[-1].lower()}.png"
    page.locator("#RT-RTE-keep").scroll_into_view_if_needed()
    page.screenshot(path=str(shot))
    assert errors == [], errors
    outside = [u for u in requests if not u.startswith(("http://127.0.0.1:", "data:", "blob:"))]
    assert outside == [], outside
    page.close()


# -- the analyst's feedback: every declaration, one-line mistakes, cells named alike -----


def _write_report(ws: Path, name: str, cells: list[tuple[str, str, str]]) -> None:
    """Write ``notebooks/NAME.ipynb``: the scaffold's title, parameters and set-up cells,
    then ``cells`` as (id, "code" or "markdown", source)."""
    path = ws / "notebooks" / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells = nb.cells[:3]
    for cell_id, kind, source in cells:
        make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
        nb.cells.append(make(source, id=cell_id))
    nbformat.write(nb, path)


DECLARING = r"""q_keep = src.quote("larkspur/notes.py", symbol="NoteStore.keep")
wb.component("RT-CMP-store", label="The note store", identity="`NoteStore`", evidence=[q_keep])
wb.component("RT-CMP-helper", label="The helper", identity="`Helper`", evidence=[q_keep])
wb.absence("RT-ABS-pickle", statement="Nothing is pickled.", scope=["larkspur/**"],
           patterns=[r"\bpickle\b"])
wb.absence("RT-ABS-limit", statement="Notes have no length limit.", scope=["larkspur/**"],
           patterns=["MAX_NOTE_CHARS"])
wb.component("RT-CMP-prompt", label="The prompt", identity="`build_prompt`", evidence=[q_keep])
"""
TYPO = 'wb.component("RT-CMP-typo", label="A typo", identty="`Helper`")'

#: What the test reads of a cell's list of declarations, and of the error a typo made.
DECLARED = """() => {
  const list = document.querySelector('.tw-declared');
  const items = Array.from(list.querySelectorAll(':scope > ul > li'));
  const badges = li => Array.from(li.querySelectorAll(
    ':scope > details > summary > .tw-badge, :scope > .tw-declared-line > .tw-badge'));
  const cell = list.closest('.jp-Cell');
  const shown = Array.from(cell.querySelectorAll('.tw-record'))
    .filter(r => !r.closest('.tw-declared'));
  const error = document.querySelector(
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]');
  return {
    lists: document.querySelectorAll('.tw-declared').length,
    ids: items.map(li => li.querySelector('.tw-declared-id').textContent),
    open: items.map(li => li.querySelector(':scope > details')?.open ?? null),
    states: items.map(li => badges(li).map(b => b.textContent)),
    colours: Object.fromEntries(items.flatMap(li => badges(li))
      .map(b => [b.textContent, getComputedStyle(b).color])),
    shown: shown.map(r => r.querySelector('.tw-record-id').textContent),
    shownFirst: shown.length === 1
      && !!(shown[0].compareDocumentPosition(list) & Node.DOCUMENT_POSITION_FOLLOWING),
    error: error ? error.textContent : null,
  };
}"""


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"], ids=["light", "dark"])
def test_a_cell_lists_every_declaration_and_a_typo_is_one_line(
    browser, lab, lab_workspace, tmp_path, theme
):
    """A cell declaring five records shows its last one's card, then one line for each
    record it declared (an absence with holds or broken), each opening to its card; a
    misspelled field is one line and a hint, no traceback."""
    _write_report(
        lab_workspace,
        "feedback",
        [
            ("heading", "markdown", "## Components"),
            ("declares", "code", DECLARING),
            ("done", "code", "wb.done()"),
            ("typo", "code", TYPO),
        ],
    )
    until = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
    page, requests, errors = _run_notebook(browser, lab, theme, "feedback", until)
    found = page.evaluate(DECLARED)
    assert found["lists"] == 1, found  # the declaring cell alone; done() declares nothing
    assert found["ids"] == [
        "RT-CMP-store", "RT-CMP-helper", "RT-ABS-pickle", "RT-ABS-limit", "RT-CMP-prompt",
    ], found  # fmt: skip
    assert found["open"] == [False, False, False, False, None], found  # the last: shown above
    assert found["states"] == [[], [], ["holds"], ["broken", "needs re-review"], []], found
    assert found["shown"] == ["RT-CMP-prompt"] and found["shownFirst"], found
    r, g, b = _rgb(found["colours"]["broken"])
    assert r > g + 40 and r > b + 40, found  # broken in the error colour
    assert found["colours"]["holds"] != found["colours"]["broken"], found
    lines = [line for line in found["error"].splitlines() if line.strip()]
    assert lines[0] == (
        "RecordError: RT-CMP-typo: component() has no field identty=; did you mean identity=?"
    ), found["error"]
    assert lines[1].startswith("  hint: it takes id, label= (required), identity= (required)")
    assert len(lines) == 2 and "Traceback" not in found["error"], found["error"]
    name = theme.split()[-1].lower()
    page.locator(until).scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / f"typo-{name}.png"))
    item = page.locator(".tw-declared > ul > li").nth(3)
    item.locator("summary").click(position={"x": 4, "y": 6})
    card = item.locator(".tw-record")
    assert item.locator("details").evaluate("d => d.open") and card.is_visible()
    assert card.locator(".tw-record-id").text_content() == "RT-ABS-limit"
    assert card.locator(".tw-absence .tw-badge.tw-broken").is_visible()
    inside = card.evaluate(
        "c => { const r = c.getBoundingClientRect(), l = c.closest('.tw-declared')"
        ".getBoundingClientRect(); return r.left >= l.left && r.right <= l.right + 0.5; }"
    )
    assert inside
    page.locator(".tw-declared").scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / f"declared-{name}.png"))
    assert errors == [], errors
    outside = [u for u in requests if not u.startswith(("http://127.0.0.1:", "data:", "blob:"))]
    assert outside == [], outside
    page.close()


#: The checks' "records" line of the notebook's summary, as the page shows it.
RECORDS_LINE = """() => Array.from(document.querySelectorAll('.tw-summary .tw-checks tr'))
  .filter(tr => tr.querySelector('th').textContent === 'records')
  .map(tr => tr.lastElementChild.textContent)[0]"""


def test_a_deleted_cells_quote_is_uncited_alike_in_jupyterlab_and_render(
    browser, lab, lab_workspace, monkeypatch
):
    """Delete the cell that quoted Q-extra, save, run done() again: JupyterLab says what
    `tracework render` says, names the quote and the command, which then removes it."""
    extra = 'src.quote("larkspur/notes.py", symbol="NoteStore.recall", id="Q-extra")'
    keeps = (
        'q = src.quote("larkspur/notes.py", symbol="NoteStore.keep")\n'
        'wb.component("RT-CMP-store", label="Store", identity="`NoteStore`", evidence=[q])'
    )
    _write_report(
        lab_workspace,
        "gone",
        [("extra", "code", extra), ("keeps", "code", keeps), ("done", "code", "wb.done()")],
    )
    page, _, errors = _run_notebook(browser, lab, "JupyterLab Light", "gone")
    assert page.evaluate(RECORDS_LINE).endswith("; 0 register quotes not cited")
    page.evaluate(
        """() => { const panel = window.jupyterapp.shell.currentWidget, nb = panel.content;
        nb.activeCellIndex = nb.widgets.findIndex(w => w.model.id === 'extra');
        window.jupyterapp.commands.execute('notebook:delete-cell'); }"""
    )
    page.wait_for_function(
        "() => !window.jupyterapp.shell.currentWidget.content.widgets"
        ".some(w => w.model.id === 'extra')"
    )
    path = lab_workspace / "notebooks" / "gone.ipynb"
    page.evaluate("() => { window.jupyterapp.commands.execute('docmanager:save'); }")
    deadline = time.monotonic() + 60
    while '"extra"' in path.read_text(encoding="utf-8"):  # saved by the server
        assert time.monotonic() < deadline, "the notebook was never saved"
        time.sleep(0.2)
    page.evaluate(
        """() => { const nb = window.jupyterapp.shell.currentWidget.content;
        nb.activeCellIndex = nb.widgets.length - 1;
        window.jupyterapp.commands.execute('notebook:run-cell'); }"""
    )
    page.wait_for_function(
        "() => document.querySelector('.tw-summary')?.textContent.includes('Q-extra')",
        timeout=120_000,
    )
    shown = page.evaluate(RECORDS_LINE)
    assert shown.endswith(
        "; 1 register quote not cited: Q-extra (`tracework quote gone --remove Q-extra` removes it)"
    ), shown
    notes = page.locator(".tw-note").all_text_contents()
    gone = "Removed quote Q-extra: the cell that declared or quoted them is no longer in the "
    assert gone + "notebook." in notes, notes
    assert errors == [], errors
    page.close()
    monkeypatch.chdir(lab_workspace)
    runner = CliRunner()
    rendered = runner.invoke(main, ["render", "gone"])
    assert rendered.exit_code == 0, rendered.output
    [line] = [ln for ln in rendered.stdout.splitlines() if ln.startswith("  records ")]
    assert line.split(None, 2)[2] == shown  # the same words, from the same function
    removed = runner.invoke(main, ["quote", "gone", "--remove", "Q-extra"])
    assert removed.exit_code == 0, removed.output


def test_render_and_quote_name_a_cell_as_jupyterlab_places_it(
    browser, lab, lab_workspace, monkeypatch
):
    """The cell a render failed in, and the cell that still cites a quote, are named by
    their place among the notebook's cells as JupyterLab holds them, and their id."""
    quoting = 'q = src.quote("larkspur/notes.py", symbol="NoteStore.keep", id="Q-keep-here")'
    breaking = (
        'wb.route("RT-RTE-x", label="X", progression="p", implementation="wired",\n'
        '         operation="uninspected", passes_through=["RT-CMP-none"], evidence=[q])'
    )
    _write_report(
        lab_workspace,
        "fails",
        [
            ("one", "markdown", "## One"),
            ("quotes", "code", quoting),
            ("two", "markdown", "## Two"),
            ("breaks", "code", breaking),
            ("done", "code", "wb.done()"),
        ],
    )
    until = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
    page, _, errors = _run_notebook(browser, lab, "JupyterLab Light", "fails", until)
    places = {}
    for cell in ("quotes", "breaks"):  # what JupyterLab's status bar says: "Cell 6/9"
        page.evaluate(
            """id => { const nb = window.jupyterapp.shell.currentWidget.content;
            nb.activeCellIndex = nb.widgets.findIndex(w => w.model.id === id); }""",
            cell,
        )
        status = page.locator(".jp-StatusBar-Item", has_text=re.compile(r"^Cell \d+/\d+$"))
        index = page.evaluate(
            "id => window.jupyterapp.shell.currentWidget.content.widgets"
            ".findIndex(w => w.model.id === id) + 1",
            cell,
        )
        expect(status).to_have_text(re.compile(rf"^Cell {index}/\d+$"))
        place, total = (int(n) for n in status.inner_text().strip()[5:].split("/"))
        places[cell] = place
    assert errors == [], errors
    page.close()
    monkeypatch.chdir(lab_workspace)
    runner = CliRunner()
    rendered = runner.invoke(main, ["render", "fails"])
    assert rendered.exit_code == 2
    assert rendered.stderr.startswith(
        f"tracework: error: the notebook failed in cell {places['breaks']} of {total} "
        "(id breaks): RecordError: RT-RTE-x: passes_through[0] names 'RT-CMP-none'"
    ), rendered.stderr
    refused = runner.invoke(main, ["quote", "fails", "--remove", "Q-keep-here"])
    assert refused.exit_code == 2
    assert (
        f"Q-keep-here is still cited by notebooks/fails.ipynb cell {places['quotes']} of "
        f"{total} (id quotes)"
    ) in refused.stderr, refused.stderr
