"""`tracework preview`: the draft served on loopback, rendered again on each save.

The page as the preview serves it (its policy widened by one nonce and one URL, the
reload script and the error banner added, nothing else), the server (loopback, its
Host check, its event stream, files from memory only) and the watch are tested without a
kernel.  In a real browser (chromium, marked slow): the page reloads itself when the
notebook is saved, shows a cell's error and a failing check as one line and its hint
over the last good page, recovers when fixed, requests nothing outside the preview and
breaks no rule of its policy; a second preview of the report is refused; Ctrl-C stops
the server and every kernel, exit 130.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import nbformat
import pytest

from conftest import HANG_GUARD, needs_chromium, refused, running_in, sigint_default
from tracework.render.export import CSP
from tracework.render.preview import Preview, watched
from tracework.render.preview_server import (
    EVENTS,
    SCRIPT,
    Board,
    PreviewServer,
    Problem,
    preview_policy,
    served_page,
)

NONCE_OF_PAGE = "page0nonce0page0nonce0pa"
#: A report page's head as the render writes it (nbconvert's formatter puts the policy's
#: attributes in this order, the quotes unescaped).
PAGE = (
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8"/>\n'
    f'<meta content="{CSP.format(scripts=f"{chr(39)}nonce-{NONCE_OF_PAGE}{chr(39)}")}" '
    'http-equiv="Content-Security-Policy"/>\n<title>A report</title>\n'
    f'<script nonce="{NONCE_OF_PAGE}" src="assets/report.js"></script>\n</head>\n'
    '<body class="tw-report">\n<main>the report</main>\n</body>\n</html>\n'
)
EVENTS_URL = "http://127.0.0.1:8123/_tracework/events"


def _directives(policy: str) -> dict[str, list[str]]:
    out = {}
    for part in policy.split(";"):
        name, *sources = part.split()
        out[name] = sources
    return out


def _policy_of(page: str) -> str:
    import html

    found = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)
    assert found, page[:400]
    return html.unescape(found.group(1))


# -- the page as served ---------------------------------------------------------------


def test_the_policy_gains_one_nonce_and_one_url_and_keeps_the_rest() -> None:
    page_policy = CSP.format(scripts=f"'nonce-{NONCE_OF_PAGE}'")
    widened = _directives(preview_policy(page_policy, "N", EVENTS_URL))
    before = _directives(page_policy)
    assert widened["script-src"] == [f"'nonce-{NONCE_OF_PAGE}'", "'nonce-N'"]
    assert widened["connect-src"] == [EVENTS_URL]
    assert {k: v for k, v in widened.items() if k not in ("script-src", "connect-src")} == {
        k: v for k, v in before.items() if k not in ("script-src", "connect-src")
    }
    # a page without scripts of its own: 'none' gives way to the preview's nonce alone
    bare = _directives(preview_policy(CSP.format(scripts="'none'"), "N", EVENTS_URL))
    assert bare["script-src"] == ["'nonce-N'"]
    # a policy without the two directives gets them (default-src would forbid both)
    assert _directives(preview_policy("default-src 'none'", "N", EVENTS_URL)) == {
        "default-src": ["'none'"],
        "script-src": ["'nonce-N'"],
        "connect-src": [EVENTS_URL],
    }


def test_the_served_page_is_the_rendered_page_plus_the_reload_script() -> None:
    board = Board("notebooks/demo.ipynb")
    board.rendered(PAGE.encode(), {})
    page, policy = served_page(board.shown, "N0nce", EVENTS_URL)
    assert _policy_of(page) == policy == preview_policy(_policy_of_raw(PAGE), "N0nce", EVENTS_URL)
    scripts = re.findall(r"<script[^>]*>", page)
    assert scripts == [
        f'<script nonce="{NONCE_OF_PAGE}" src="assets/report.js">',
        f'<script src="{SCRIPT}" nonce="N0nce" data-generation="1" defer>',
    ]
    assert 'tw-preview-error"' not in page.partition("<body")[2]  # no banner: it rendered
    # everything but the head's additions is the page as rendered
    assert page.partition("</head>")[2] == PAGE.partition("</head>")[2]


def _policy_of_raw(page: str) -> str:
    found = re.search(r'<meta content="([^"]*)" http-equiv', page)
    assert found
    return found.group(1)


def test_an_error_is_one_line_and_its_hint_over_the_last_good_page() -> None:
    board = Board("notebooks/demo.ipynb")
    board.rendered(PAGE.encode(), {})
    hostile = "the notebook failed in cell 3: NameError: name '<script>x</script>' \u202e"
    board.failed(Problem(hostile, hint="fix <b>it</b>"))
    page, _ = served_page(board.shown, "N", EVENTS_URL)
    body = page.partition("</head>")[2]
    banner = body.partition('<div class="tw-preview-error"')[2].partition("</div>")[0]
    assert "error: the notebook failed in cell 3: NameError: name &#39;&lt;script&gt;" in banner
    assert "&lt;U+202E&gt;" in banner and "\u202e" not in page  # hidden characters shown
    assert "hint: fix &lt;b&gt;it&lt;/b&gt;" in banner
    assert "the last one that rendered" in banner
    assert "<main>the report</main>" in body  # the last good page, under the banner
    assert 'data-generation="2"' in page


def test_before_any_page_the_waiting_page_keeps_a_report_policy() -> None:
    board = Board("notebooks/demo.ipynb")
    page, policy = served_page(board.shown, "N", EVENTS_URL)
    assert "Rendering notebooks/demo.ipynb" in page
    assert _directives(policy)["script-src"] == ["'nonce-N'"]
    assert _directives(policy)["default-src"] == ["'none'"]
    board.failed(Problem("registers/demo.yaml: a broken register"))
    page, _ = served_page(board.shown, "N", EVENTS_URL)
    assert "error: registers/demo.yaml: a broken register" in page
    assert "No page has rendered yet" in page


def test_a_page_without_a_policy_is_never_served() -> None:
    board = Board("x")
    board.rendered(b"<html><head></head><body>x</body></html>", {})
    with pytest.raises(ValueError, match="Content-Security-Policy"):
        served_page(board.shown, "N", EVENTS_URL)


# -- the server -----------------------------------------------------------------------


@pytest.fixture
def served() -> Iterator[tuple[Board, PreviewServer]]:
    board = Board("notebooks/demo.ipynb")
    server = PreviewServer(board).start()
    try:
        yield board, server
    finally:
        server.close()


def _get(port: int, path: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path, headers={"Host": host or f"127.0.0.1:{port}"})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), body


def test_the_server_answers_on_loopback_only_by_its_own_names(served) -> None:
    board, server = served
    assert server.server_address[0] == "127.0.0.1"
    board.rendered(PAGE.encode(), {"assets/report.js": b"// the page's own\n"})
    status, headers, body = _get(server.port, "/")
    assert status == 200 and b"the report" in body
    assert headers["Cache-Control"] == "no-store"
    assert headers["Content-Security-Policy"].endswith("; frame-ancestors 'none'")
    assert _get(server.port, "/", host=f"localhost:{server.port}")[0] == 200
    # a name pointed at 127.0.0.1 by a page elsewhere (DNS rebinding) reads nothing
    status, _, body = _get(server.port, "/", host=f"evil.example:{server.port}")
    assert status == 403 and b"the report" not in body
    assert _get(server.port, "/assets/report.js")[2] == b"// the page's own\n"
    assert _get(server.port, SCRIPT)[1]["Content-Type"].startswith("text/javascript")
    for path in ("/../../etc/passwd", "/assets/../../x", "/records.json", "/report.ipynb"):
        assert _get(server.port, path)[0] == 404, path


def test_the_event_stream_says_each_new_run(served) -> None:
    board, server = served
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(f"GET {EVENTS} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
    stream = sock.makefile("rb")

    def next_data() -> str:
        for line in stream:
            if line.startswith(b"data: "):
                return line[6:].decode().strip()
        raise AssertionError("the stream ended")

    assert next_data() == "0"
    board.rendering()
    assert next_data() == "0 rendering"
    board.rendered(PAGE.encode(), {})
    assert next_data() == "1"
    board.failed(Problem("a cell failed"))
    assert next_data() == "2"
    server.close()  # a stopping preview ends its streams
    assert stream.read().strip() == b""  # then the stream ends
    sock.close()


# -- the watch ------------------------------------------------------------------------


def test_the_watch_sees_the_notebook_the_register_rubrics_and_cited_captures(
    pinned, workspace
) -> None:
    pinned({"a.py": "x = 1\n"}, reports=["demo"])
    rubric = workspace.registers / "rubrics" / "r.yaml"
    rubric.parent.mkdir(parents=True, exist_ok=True)
    rubric.write_text("title: R\n")
    manifest = workspace.captures / "cap" / "0123456789ab" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text("{}")
    rel = [p.relative_to(workspace.root).as_posix() for p in watched(workspace, "demo")]
    assert rel == ["notebooks/demo.ipynb", "registers/demo.yaml", "registers/rubrics/r.yaml"]
    cited = watched(workspace, "demo", frozenset({"cap"}))
    assert cited[-1] == manifest
    preview = Preview(workspace, "demo")  # nothing starts before it is entered
    seen = preview.signature()
    assert preview.signature() == seen
    time.sleep(0.01)
    (workspace.notebooks / "demo.ipynb").write_bytes(
        (workspace.notebooks / "demo.ipynb").read_bytes()
    )
    assert preview.signature() != seen  # a save, even of the same bytes
    seen = preview.signature()
    rubric.unlink()
    assert preview.signature() != seen


def test_a_report_that_is_not_there_is_refused(tw, workspace) -> None:
    refused(tw("preview", "nosuch"), "nosuch", "notebooks/nosuch.ipynb")
    refused(tw("preview", "../x"), "report")


# -- in a real browser ----------------------------------------------------------------

BODY = """q = src.quote("pkg/store.py", symbol="Store.put")
wb.component("RT-CMP-store", label="LABEL", identity="The `Store` class.", evidence=[q])"""
BROKEN_CELL = "undefined_name_in_the_preview_test"
#: An evidenced absence that does not hold at the pin: the check fails.
FAILING_CHECK = """wb.absence("RT-ABS-items", statement="Nothing keeps items.", scope=["pkg/**"],
           patterns=[r"self\\.items"])"""


class Running:
    """`tracework preview` in a subprocess and a session of its own, its output read
    line by line in a thread."""

    def __init__(self, folder: Path, *args: str) -> None:
        code = f"from tracework.cli import main\nmain({['preview', *args]!r})"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=sigint_default,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, after: int = 0) -> str:
        deadline = time.monotonic() + HANG_GUARD
        while time.monotonic() < deadline:
            for line in self.lines[after:]:
                if re.search(pattern, line):
                    return line
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        stderr = self.proc.stderr.read() if self.proc.poll() is not None else ""
        pytest.fail(f"no line matching {pattern!r}: {self.lines} {stderr}")

    def stop(self) -> tuple[int, str]:
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail("the preview did not stop on Ctrl-C")
        self._reader.join(timeout=10)
        return self.proc.returncode, err

    def kill(self) -> None:
        with suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.communicate()


def _save(path: Path, nb: Any) -> None:
    """Save as an editor does: a new file renamed over the old one."""
    tmp = path.with_name(f".{path.name}.saving")
    nbformat.write(nb, tmp)
    os.replace(tmp, path)


@pytest.mark.slow
@pytest.mark.browser
def test_the_page_reloads_on_each_save_shows_errors_and_recovers(
    browser, pinned, workspace, tw
) -> None:
    needs_chromium()
    pinned(
        {
            "pkg/store.py": "class Store:\n    def put(self, key, value):\n"
            "        self.items[key] = value\n"
        },
        reports=["demo"],
    )
    assert tw("quote", "demo", "SRC-1", "pkg/store.py", "--symbol", "Store.put").exit_code == 0
    path = workspace.notebooks / "demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(4, nbformat.v4.new_code_cell(BODY.replace("LABEL", "The first label")))
    _save(path, nb)
    reports = workspace.reports / "demo"
    preview = Running(workspace.root, "demo")
    try:
        url = preview.wait_for(r"^serving http://127\.0\.0\.1:\d+/").split()[1]
        port = int(url.rsplit(":", 1)[1].strip("/"))
        context = browser.new_context()
        page = context.new_page()
        requests: list[str] = []
        errors: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(url)
        from playwright.sync_api import expect

        expect(page.locator("main")).to_contain_text("The first label", timeout=120_000)
        preview.wait_for(r"^rendered in ")
        reloads: list[str] = []
        page.on("load", lambda: reloads.append(page.url))

        # a save: the page reloads itself with the change
        nb.cells[4].source = BODY.replace("LABEL", "The second label")
        with page.expect_event("load", timeout=120_000):  # the reload itself, not the clock
            _save(path, nb)
        expect(page.locator("main")).to_contain_text("The second label", timeout=120_000)
        assert reloads and page.locator("#tw-preview-error").count() == 0

        # a save that changes no byte: nothing to render, no reload
        before = len(preview.lines)
        _save(path, nb)
        preview.wait_for(r"^unchanged \(", after=before)
        assert len(reloads) == 1

        # a cell that fails: its one line over the last good page
        nb.cells.insert(5, nbformat.v4.new_code_cell(BROKEN_CELL))
        _save(path, nb)
        banner = page.locator("#tw-preview-error")
        expect(banner).to_be_visible(timeout=120_000)
        expect(banner).to_contain_text(
            re.compile(
                r"error: the notebook failed in cell \d+ of \d+ \(id [^)]+\): "
                rf"NameError: name '{BROKEN_CELL}' "
                "is not defined"
            )
        )
        expect(banner).to_contain_text(
            "the executed notebook is kept in reports/demo/failed-preview/"
        )
        assert "The second label" in page.locator("main").inner_text()
        assert (reports / "failed-preview" / "report.ipynb").is_file()
        preview.wait_for(r"^failed in .*NameError")

        # a check that fails at the pin: the same, with its hint
        nb.cells[5].source = FAILING_CHECK
        _save(path, nb)
        expect(banner).to_contain_text(
            "ChecksFailed: checks fail at the register's pin", timeout=120_000
        )
        expect(banner).to_contain_text("hint: fix the notebook or the register")
        assert "The second label" in page.locator("main").inner_text()

        # fixed: the error goes, the new page shows
        del nb.cells[5]
        nb.cells[4].source = BODY.replace("LABEL", "The third label")
        _save(path, nb)
        expect(page.locator("main")).to_contain_text("The third label", timeout=120_000)
        expect(page.locator("#tw-preview-error")).to_have_count(0)

        outside = [r for r in requests if not r.startswith(f"http://127.0.0.1:{port}/")]
        assert outside == []
        assert errors == []  # nothing the policy had to refuse, no script error
        context.close()

        # the preview's folder holds what a render writes, and no reload script;
        # no render folder, no history
        folder = reports / "preview"
        assert {"report.html", "report.ipynb", "records.json", "manifest.json"} <= {
            p.name for p in folder.iterdir()
        }
        written = (folder / "report.html").read_text()
        assert "The third label" in written and "_tracework" not in written
        assert sorted(p.name for p in reports.iterdir() if not p.name.startswith(".")) == [
            "preview"
        ]  # the kept failure went with the good run; no <commit12>/, no history.json

        # one preview of a report at a time
        second = subprocess.run(
            [sys.executable, "-m", "tracework", "preview", "demo"],
            cwd=workspace.root,
            capture_output=True,
            text=True,
            timeout=HANG_GUARD,
        )
        assert second.returncode == 2
        assert "another `tracework preview demo` is running" in second.stderr
    except BaseException:
        preview.kill()
        raise
    code, err = preview.stop()
    assert code == 130, err
    assert err.strip() == "interrupted"
    assert running_in(workspace.root, "ipykernel", "host_main") == {}
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=5)
    json.loads((reports / "preview" / "records.json").read_text())  # left whole
