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


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A JupyterLab server on 127.0.0.1 in a workspace holding the Larkspur demo, with
    ``notebooks/newest.ipynb``: the demo notebook at the subject's newest commit."""
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
    nb = nbformat.read(ws / "notebooks" / "larkspur.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = params.source.replace("commit = None", f'commit = "{commits[-1]}"')
    nbformat.write(nb, ws / "notebooks" / "newest.ipynb")
    home = root / "home"
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


def _run_notebook(browser: Any, lab: str, theme: str) -> tuple[Any, list[str], list[str]]:
    """Open the notebook at 1280 px, switch to ``theme``, run every cell, wait for the
    last one's output; returns the page, the requests it made and its console errors."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{lab}/lab/tree/notebooks/newest.ipynb?token={TOKEN}")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget")
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
    page.wait_for_selector(".tw-summary", timeout=240_000)
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
