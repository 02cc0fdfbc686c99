"""The build's only way out: a proxy to the package registry's hosts and no others.

An environment is built in a sandbox with a network namespace of its own, like a
capture: its loopback, and nothing else.  The one way out is a Unix socket bound into
it, served here, on the host, by :class:`RegistryProxy`: an HTTP proxy that opens a
connection only to the hosts and ports it was given (the registry's, and those of a
``git`` or ``url`` source the declaration opted in), for ``CONNECT`` (https) or a
plain request in absolute form (an http index).  Inside, a forwarder of the build's
own (``harness/tracework_build.py``) listens on the sandbox's loopback and carries
each connection to that socket, and uv is told to use it as its proxy.

So whatever runs during the build — uv, a package's build backend, a ``.pth`` file
run while byte-compiling — reaches the registry or nothing: not the caller's
loopback, not a URL a lock names, not a name server.  A refused request is kept, and
the build's failure names it.  A proxy in the caller's environment (``https_proxy``)
is used for the connections out, as uv itself would.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import select
import socket
import threading
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from urllib.parse import SplitResult, urlsplit

from tracework.capture.errors import CaptureConfigError

log = logging.getLogger(__name__)

#: The largest request head read before it is refused (a CONNECT line is ~100 bytes).
MAX_HEAD = 16 << 10
#: Connections one build may have open at once (uv opens a few dozen in parallel).
MAX_CONNECTIONS = 64


@dataclass(frozen=True)
class Registry:
    """The one package registry a build may reach: its index, and the URL prefixes
    its files are served from."""

    index: str
    files: tuple[str, ...]

    def serves(self, url: str) -> bool:
        prefixes = (self.index.rstrip("/") + "/", *self.files)
        return any(url.startswith(prefix) for prefix in prefixes)

    def hosts(self) -> set[tuple[str, int]]:
        return {host_port(url) for url in (self.index, *self.files)}


#: PyPI: its index, and the host its files are served from.
PYPI = Registry("https://pypi.org/simple", ("https://files.pythonhosted.org/",))


def host_port(url: str) -> tuple[str, int]:
    """``(host, port)`` of an http(s) URL, the port filled in from the scheme."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CaptureConfigError(f"{url!r} is not an http(s) URL")
    return parts.hostname.lower(), parts.port or (443 if parts.scheme == "https" else 80)


def registry_setting(settings: dict[str, object]) -> Registry:
    """The registry ``[capture]`` in ``tracework.toml`` names: ``index`` (its simple
    index, PyPI's by default) and ``index_files`` (the URL prefixes its files come
    from; by default PyPI's file host for PyPI, and the index's own origin otherwise)."""
    section = settings.get("capture", {})
    section = section if isinstance(section, dict) else {}
    index = section.get("index", PYPI.index)
    if not isinstance(index, str):
        raise CaptureConfigError("tracework.toml: [capture] index must be a URL")
    host_port(index)
    files = section.get("index_files")
    if files is None:
        if index.rstrip("/") == PYPI.index:
            return PYPI
        parts = urlsplit(index)
        files = [f"{parts.scheme}://{parts.netloc}/"]
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise CaptureConfigError("tracework.toml: [capture] index_files must be a list of URLs")
    for url in files:
        host_port(url)
    return Registry(index.rstrip("/"), tuple(files))


def public_name(host: str) -> bool:
    """Whether ``host`` is a name, or a literal address that is public (a lock's source
    must never name the caller's loopback, a private network or a link-local one)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_global
    except ValueError:
        return True  # a name: its addresses are checked when it is reached


#: How many refused requests a proxy keeps to name (the rest are counted).
KEEP_REFUSED = 20


class RegistryProxy:
    """Serve the proxy on a Unix socket at ``path`` while the ``with`` block runs.

    ``trusted`` are the registry's hosts, as the analyst's ``tracework.toml`` names
    them (a registry on the local network is theirs to name).  ``public`` are hosts a
    subject's lock names (an opted-in ``git`` or ``url`` source): reached only at the
    public addresses their names resolve to, never loopback or a private network."""

    def __init__(
        self,
        path: Path,
        trusted: Iterable[tuple[str, int]],
        public: Iterable[tuple[str, int]] = (),
    ) -> None:
        self.path = path
        self.trusted = frozenset((host.lower(), port) for host, port in trusted)
        self.public = frozenset((host.lower(), port) for host, port in public) - self.trusted
        self.refused: list[str] = []
        self.refused_count = 0
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._stop = threading.Event()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._thread = threading.Thread(target=self._serve, name="registry-proxy", daemon=True)

    def __enter__(self) -> RegistryProxy:
        self._server.bind(str(self.path))
        os.chmod(self.path, 0o666)  # the build may run as another uid
        self._server.listen(MAX_CONNECTIONS)
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        with suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        self._thread.join(timeout=5)

    def _refuse(self, client: socket.socket, head: bytes) -> None:
        shown = head.split(b"\r\n", 1)[0][:200].decode("ascii", "replace")
        self.refused_count += 1
        if len(self.refused) < KEEP_REFUSED:
            self.refused.append(shown)
        log.debug("registry proxy refused %s", shown)
        client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if not self._slots.acquire(blocking=False):
                client.close()
                continue
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        try:
            with client:
                client.settimeout(60)
                head = _read_head(client)
                if head is None:
                    return
                try:
                    target, forward = _target(head)
                except ValueError:  # a port or a bracket urllib cannot read
                    target, forward = None, None
                if target is None or target not in self.trusted | self.public:
                    self._refuse(client, head)
                    return
                try:
                    upstream = _connect(target, public_only=target in self.public)
                except OSError as exc:
                    log.debug("registry proxy could not reach %s: %s", target, exc)
                    client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                    return
                with upstream:
                    if forward is None:  # CONNECT: a tunnel from here on
                        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    else:
                        upstream.sendall(forward)
                    client.settimeout(None)
                    _splice(client, upstream)
        except OSError as exc:
            log.debug("registry proxy connection ended: %s", exc)
        finally:
            self._slots.release()


def _read_head(client: socket.socket) -> bytes | None:
    """The request head (through the blank line), None when it never ends."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(4096)
        if not chunk or len(data) + len(chunk) > MAX_HEAD:
            return None
        data += chunk
    return data


def _target(head: bytes) -> tuple[tuple[str, int] | None, bytes | None]:
    """Where a request goes, and (for a plain http request) the bytes to forward."""
    line = head.split(b"\r\n", 1)[0].decode("ascii", "replace").split(" ")
    if len(line) != 3:
        return None, None
    method, uri, _version = line
    if method == "CONNECT":
        host, _, port = uri.rpartition(":")
        if not host or not port.isdigit():
            return None, None
        return (host.strip("[]").lower(), int(port)), None
    parts = urlsplit(uri)
    if parts.scheme != "http" or not parts.hostname:
        return None, None
    return (parts.hostname.lower(), parts.port or 80), _origin_form(head, parts)


#: Headers a proxy removes on the way to the origin (it sets its own Connection).
_HOP_BY_HOP = (b"connection:", b"proxy-connection:", b"keep-alive:", b"proxy-authorization:")


def _origin_form(head: bytes, parts: SplitResult) -> bytes:
    """A request in absolute form as the origin server takes it: its path alone on the
    first line, and ``Connection: close``, so that every request on a connection goes
    to the host this one was allowed for."""
    first, _, rest = head.partition(b"\r\n")
    method, _uri, version = first.split(b" ")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = [
        line for line in rest.split(b"\r\n") if line and not line.lower().startswith(_HOP_BY_HOP)
    ]
    lines = [b" ".join((method, path.encode("ascii", "replace"), version)), *headers]
    return b"\r\n".join([*lines, b"Connection: close", b"", b""])


def _connect(target: tuple[str, int], *, public_only: bool) -> socket.socket:
    """A connection to ``target``: direct, or through the caller's own https proxy.
    ``public_only``: the name is resolved once, here, and only a public address it
    resolves to is connected to (a name a subject chose may resolve to loopback)."""
    upstream = os.environ.get("https_proxy") or os.environ.get("HTTPS_PROXY")
    if public_only:
        return _connect_public(target)
    if not upstream or _no_proxy(target[0]):
        return socket.create_connection(target, timeout=30)
    proxy = urlsplit(upstream if "://" in upstream else f"http://{upstream}")
    sock = socket.create_connection((proxy.hostname or "", proxy.port or 80), timeout=30)
    host = f"[{target[0]}]" if ":" in target[0] else target[0]
    sock.sendall(f"CONNECT {host}:{target[1]} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    reply = _read_head(sock) or b""
    if reply.split(b"\r\n", 1)[0].split(b" ")[1:2] != [b"200"]:
        sock.close()
        raise OSError(f"the proxy {proxy.hostname} refused {host}")
    return sock


def _connect_public(target: tuple[str, int]) -> socket.socket:
    """A direct connection to a public address of ``target`` (never through another
    proxy, which would resolve the name again)."""
    host, port = target
    for family, kind, proto, _name, address in socket.getaddrinfo(
        host.strip("[]"), port, type=socket.SOCK_STREAM
    ):
        if not ipaddress.ip_address(address[0]).is_global:
            continue
        sock = socket.socket(family, kind, proto)
        sock.settimeout(30)
        try:
            sock.connect(address)
        except OSError:
            sock.close()
            continue
        return sock
    raise OSError(f"{host} has no public address that answers")


def _no_proxy(host: str) -> bool:
    names = os.environ.get("no_proxy") or os.environ.get("NO_PROXY") or ""
    for name in (n.strip().lower().lstrip(".") for n in names.split(",")):
        if name and (name == "*" or host == name or host.endswith("." + name)):
            return True
    return False


def _splice(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both sides have closed."""
    open_ = {a: b, b: a}
    while open_:
        ready, _, _ = select.select(list(open_), [], [], 300)
        if not ready:
            return  # five idle minutes: the build has moved on
        for source in ready:
            data = source.recv(1 << 16)
            sink = open_[source]
            if data:
                sink.sendall(data)
                continue
            del open_[source]
            with suppress(OSError):
                sink.shutdown(socket.SHUT_WR)
