"""The preview's side facing the browser: the draft page served on loopback, and its reload.

:class:`Board` holds what the preview shows (the last good page and the files beside it,
the error of the last run if it failed, whether a run is under way), changed by the
preview's loop (:mod:`tracework.render.preview`) and read by the server's threads.
:class:`PreviewServer` serves it on 127.0.0.1 only, to requests that name it by that
address or ``localhost`` (a page elsewhere that points a name of its own at 127.0.0.1
cannot read the draft), from memory: the page, ``assets/`` and ``diagrams/`` of the
render, never a path of the disk.

The page is the render's ``report.html`` as it was written, with three things added as
it is served, and nowhere else (what a render or publish writes never holds them):
the reload script, by a nonce of its own; the error banner when the last run failed;
and, in its Content-Security-Policy, that nonce among the script sources and the
preview's event stream as the one URL the page may connect to
(:func:`preview_policy`).  Every other directive stays as the render wrote it, so the
page runs its own scripts and loads nothing from elsewhere, as published.  The script
listens to the stream (Server-Sent Events) and reloads the page when a newer run is
shown; it also marks the page while a run is under way.
"""

from __future__ import annotations

import functools
import html
import logging
import re
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jinja2

from tracework.render.export import CSP
from tracework.text import visible

log = logging.getLogger(__name__)

TEMPLATES = Path(str(files("tracework") / "templates" / "preview"))

#: Where the preview's own files are served, apart from the report's.
OWN = "/_tracework/"
SCRIPT = OWN + "preview.js"
EVENTS = OWN + "events"

#: Seconds between the comments an idle event stream sends, so that a browser (or a
#: proxy) never takes it for dead, and a closed one is noticed.
KEEPALIVE = 15.0

_META = re.compile(r"<meta\b[^>]*>", re.IGNORECASE)
_BODY = re.compile(r"<body\b[^>]*>", re.IGNORECASE)


@dataclass(frozen=True)
class Problem:
    """Why the last run gave no page: its one line and its hint, as the command line
    would print them."""

    message: str
    hint: str | None = None


@dataclass(frozen=True)
class Shown:
    """What the preview shows now.  ``generation`` counts the runs that finished (it
    changes whenever the page a browser should show does)."""

    generation: int = 0
    page: bytes | None = None  # the last good report.html, as the render wrote it
    files: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))
    problem: Problem | None = None  # the last run's, when it failed
    rendering: bool = False
    title: str = "the report"  # what the page says it previews before any rendered


class Board:
    """What the preview shows, shared between its loop and the server's threads."""

    def __init__(self, title: str) -> None:
        self._changed = threading.Condition()
        self._shown = Shown(title=title)
        self._closed = False

    @property
    def shown(self) -> Shown:
        with self._changed:
            return self._shown

    def rendering(self) -> None:
        """A run has started."""
        self._update(rendering=True)

    def rendered(self, page: bytes, files: Mapping[str, bytes]) -> None:
        """A run gave a page: show it, with no error."""
        files = MappingProxyType(dict(files))
        self._update(page=page, files=files, problem=None, rendering=False, advance=True)

    def failed(self, problem: Problem) -> None:
        """A run failed: keep the last good page, with the run's error over it."""
        self._update(problem=problem, rendering=False, advance=True)

    def idle(self) -> None:
        """A run was superseded before it finished (its inputs were saved again)."""
        self._update(rendering=False)

    def _update(self, advance: bool = False, **changes: Any) -> None:
        """Show what is shown with ``changes``; with ``advance``, as the next generation.
        Every change is a new :class:`Shown`: a stream compares them by identity."""
        with self._changed:
            if advance:
                changes["generation"] = self._shown.generation + 1
            self._shown = replace(self._shown, **changes)
            self._changed.notify_all()

    def wait(self, since: Shown, timeout: float) -> Shown | None:
        """What is shown once it is not ``since`` (or ``timeout`` passed: the same);
        None once the board is closed."""
        with self._changed:
            self._changed.wait_for(lambda: self._closed or self._shown is not since, timeout)
            return None if self._closed else self._shown

    def close(self) -> None:
        """Wake every waiting stream, for good: the preview is stopping."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()


# -- the page as the preview serves it ------------------------------------------------


def preview_policy(policy: str, nonce: str, events: str) -> str:
    """The page's Content-Security-Policy with what the preview adds, and nothing else:
    ``'nonce-NONCE'`` among the script sources and ``events`` (one URL) among the
    sources it may connect to, each in place of ``'none'``.  Every other directive, the
    page's own nonce included, is kept as written; one the page lacks falls back to its
    ``default-src``, so the two are added when missing."""
    added = {"script-src": f"'nonce-{nonce}'", "connect-src": events}
    out = []
    for directive in (d.strip() for d in policy.split(";")):
        if not directive:
            continue
        name, *sources = directive.split()
        extra = added.pop(name.lower(), None)
        if extra is not None:
            sources = [s for s in sources if s != "'none'"] + [extra]
        out.append(" ".join([name, *sources]))
    out += [f"{name} {source}" for name, source in added.items()]
    return "; ".join(out)


@functools.cache
def _environment() -> jinja2.Environment:
    """The preview's templates: autoescaped; an undefined name is an error."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        auto_reload=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def waiting_page(title: str) -> str:
    """The page before any run gave one: what is being rendered, with the report's own
    policy (no scripts of its own; the preview adds its one)."""
    return (
        _environment()
        .get_template("waiting.html.j2")
        .render(title=visible(title), csp=CSP.format(scripts="'none'"))
    )


def served_page(shown: Shown, nonce: str, events: str) -> tuple[str, str]:
    """The page a browser is sent now, and its policy: the last good page (or the
    waiting page), its policy widened by :func:`preview_policy` alone, the reload script
    and the banner's style in its head, and the error banner first in its body when the
    last run failed."""
    page = shown.page.decode("utf-8") if shown.page is not None else waiting_page(shown.title)
    head, end, body = page.partition("</head>")
    policies: list[str] = []

    def widened(match: re.Match[str]) -> str:
        attributes = _attributes(match.group())
        if policies or attributes.get("http-equiv", "").lower() != "content-security-policy":
            return match.group()
        policies.append(preview_policy(attributes.get("content", ""), nonce, events))
        return (
            '<meta http-equiv="Content-Security-Policy" '
            f'content="{html.escape(policies[0], quote=True)}">'
        )

    head = _META.sub(widened, head)
    if not policies:  # never a page tracework wrote: serve nothing that could run
        raise ValueError("the page has no Content-Security-Policy to keep")
    env = _environment()
    head += env.get_template("head.html.j2").render(
        script=SCRIPT, nonce=nonce, generation=shown.generation, rendering=shown.rendering
    )
    if shown.problem is not None:
        banner = env.get_template("banner.html.j2").render(
            message=visible(shown.problem.message),
            hint=visible(shown.problem.hint) if shown.problem.hint else None,
            kept=shown.page is not None,
        )
        body = _BODY.sub(lambda m: m.group() + banner, body, count=1)
    return head + end + body, policies[0]


def _attributes(tag: str) -> dict[str, str]:
    """A start tag's attributes, unescaped, as an HTML parser reads them."""
    found: dict[str, str] = {}

    class _Tag(HTMLParser):
        def handle_starttag(self, name: str, attrs: list[tuple[str, str | None]]) -> None:
            found.update((k.lower(), v or "") for k, v in attrs)

    parser = _Tag()
    parser.feed(tag)
    parser.close()
    return found


def script() -> bytes:
    """The reload script (:file:`templates/preview/preview.js`)."""
    return (TEMPLATES / "preview.js").read_bytes()


# -- the server ------------------------------------------------------------------------


class PreviewServer(ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 serving what ``board`` shows (see the module)."""

    daemon_threads = True  # a stream still open never holds the preview's exit
    block_on_close = False

    def __init__(self, board: Board, port: int = 0) -> None:
        self.board = board
        super().__init__(("127.0.0.1", port), _Handler)
        self.port = int(self.server_address[1])
        self.hosts = frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> PreviewServer:
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving: the streams end, the listening socket closes."""
        self.board.close()
        if self._thread.is_alive():
            self.shutdown()
            self._thread.join(timeout=10)
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: PreviewServer
    protocol_version = "HTTP/1.1"
    server_version = "tracework-preview"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("preview: " + format, *args)

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def do_GET(self) -> None:
        self._answer(head=False)

    def _answer(self, head: bool) -> None:
        host = self.headers.get("Host", "")
        if host not in self.server.hosts:
            self._send(403, b"the preview answers only at 127.0.0.1 or localhost\n", "text/plain")
            return
        path = self.path.split("?", 1)[0]
        if path == EVENTS and not head:
            self._events()
            return
        shown = self.server.board.shown
        if path in ("/", "/report.html"):
            nonce = secrets.token_urlsafe(18)
            page, policy = served_page(shown, nonce, f"http://{host}{EVENTS}")
            # the same policy as a header too, where frame-ancestors counts
            policy += "; frame-ancestors 'none'"
            self._send(200, page.encode("utf-8"), "text/html; charset=utf-8", head, policy)
        elif path == SCRIPT:
            self._send(200, script(), "text/javascript; charset=utf-8", head)
        elif path == "/favicon.ico":  # a browser asks on its own: none, and no error
            self._send(204, b"", "image/x-icon", head)
        elif path.startswith("/") and path[1:] in shown.files:
            rel = path[1:]
            kind = "text/javascript" if rel.endswith(".js") else "text/plain"
            self._send(200, shown.files[rel], f"{kind}; charset=utf-8", head)
        else:
            self._send(404, b"not part of the preview\n", "text/plain", head)

    def _send(
        self, status: int, body: bytes, kind: str, head: bool = False, policy: str | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        if policy is not None:
            self.send_header("Content-Security-Policy", policy)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _events(self) -> None:
        """The event stream: one message each time what is shown changes, its data the
        generation shown and, while a run is under way, ``rendering`` (the script reloads
        when the generation is not its page's own), and a comment when nothing changed
        for :data:`KEEPALIVE` seconds."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.close_connection = True
        board = self.server.board
        shown: Shown | None = board.shown
        sent: Shown | None = None
        try:
            self.wfile.write(b"retry: 500\n\n")
            while shown is not None:
                if shown is not sent:
                    state = " rendering" if shown.rendering else ""
                    self.wfile.write(f"data: {shown.generation}{state}\n\n".encode())
                    sent = shown
                else:
                    self.wfile.write(b": nothing new\n\n")
                self.wfile.flush()
                shown = board.wait(sent, KEEPALIVE)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page went away, or reloaded
