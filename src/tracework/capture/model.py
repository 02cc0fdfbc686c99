"""The model-driven arm's one way out: tracework's side of the model relay.

A capture whose declaration has a ``[model]`` table may reach exactly one endpoint, a
model server on the analyst's loopback.  The sandbox's network namespace has no way out,
so tracework binds a Unix socket into it (at :data:`tracework.capture.isolation.MODEL`);
inside, the runner listens on the endpoint's address and port and carries every
connection to that socket (see ``tracework_relay``); here, :class:`Relay` accepts each
one and connects to the declared endpoint — an address literal and a port fixed by the
declaration, never a name resolved or an address the sandbox chose — and to nothing else.

It keeps every byte it carries, both ways (the requests as the sandbox sent them, with
the model-driven case and trial each was sent in; the replies as the server sent them),
and bounds what a subject can make it do: connections open at once (``[model]
connections``; one more is refused), connections in all (:data:`MAX_CONNECTIONS`), and
bytes, both ways together (``[limits] output_mib``: past it, the run is stopped, as past
any output limit).  :func:`fetch_info` makes the ``[model] info`` requests once, before
the runs; their replies go in the manifest.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import json
import logging
import os
import selectors
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from tracework.capture.config import ModelConfig
from tracework.capture.errors import CaptureError, ModelEndpointUnavailable
from tracework.capture.store import ModelReply

log = logging.getLogger(__name__)

#: The socket's name in its folder (bound into the sandbox at isolation.MODEL).
SOCKET_NAME = "relay.sock"
#: Connections one run may open to the endpoint, refused ones included.
MAX_CONNECTIONS = 10_000
#: The largest frame the inside half sends: a label, or one read of the client.
MAX_LABEL = 4096  # a case id and a condition of 100 characters, escaped
MAX_DATA = 1 << 16
#: How long the endpoint has to accept a connection, or to answer an info request.
CONNECT_SECONDS = 10
#: The most bytes of one info reply that are kept (a larger one is refused).
MAX_INFO = 1 << 20

#: Which model-driven case and trial a request was sent in: (case, condition, trial).
Label = tuple[str, str | None, int | None]


@dataclass
class Carried:
    """One connection the relay carried: what the sandbox sent, in the parts it sent it
    with the label each was sent under, what the endpoint replied, and why it ended
    early, if it did."""

    number: int
    sent: list[tuple[Label | None, bytes]] = field(default_factory=list)
    received: bytearray = field(default_factory=bytearray)
    error: str | None = None


class Relay:
    """The relay's host side for one run: ``with Relay(…) as relay:`` around the run;
    :meth:`stopped` says why the run must stop (polled by the supervisor), and
    :attr:`carried` holds every connection once it is closed."""

    def __init__(self, model: ModelConfig, folder: Path, byte_limit: int) -> None:
        folder.mkdir(mode=0o755)
        folder.chmod(0o755)  # whatever the umask: the harness's uid must reach the socket
        self.socket_path = folder / SOCKET_NAME
        if len(os.fsencode(self.socket_path)) > 107:
            raise CaptureError(
                f"the model relay's socket path is too long for a Unix socket: {folder}",
                hint="set TMPDIR to a shorter folder",
            )
        self._address = model.address
        self._at_once = model.connections
        self._limit = byte_limit
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.socket_path))
        os.chmod(self.socket_path, 0o666)  # connect(2) needs write permission on it
        self._listener.listen(model.connections)
        self._listener.settimeout(0.2)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._reason: str | None = None
        self._bytes = 0
        self._open = 0
        self._sockets: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self.carried: list[Carried] = []

    def __enter__(self) -> Relay:
        accept = threading.Thread(target=self._accept, name="model-relay", daemon=True)
        self._threads.append(accept)
        accept.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def stopped(self) -> str | None:
        """Why the run must stop (a bound passed), or None."""
        return self._reason

    def close(self) -> None:
        """Stop accepting, cut every connection, and wait for their threads."""
        self._closing.set()
        with self._lock:
            for sock in self._sockets:
                _shut(sock)
        for thread in list(self._threads):
            thread.join(timeout=5)
        self._listener.close()

    def _stop(self, reason: str) -> None:
        with self._lock:
            if self._reason is None:
                self._reason = reason
            self._closing.set()
            for sock in self._sockets:
                _shut(sock)

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                inside, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._closing.is_set():
                    return
                continue
            inside.setblocking(True)
            with self._lock:
                if len(self.carried) >= MAX_CONNECTIONS:
                    refused = None
                else:
                    refused = Carried(len(self.carried) + 1)
                    self.carried.append(refused)
                    if self._open < self._at_once and not self._closing.is_set():
                        self._open += 1
                        self._sockets.add(inside)
                        carry = threading.Thread(
                            target=self._carry, args=(inside, refused), daemon=True
                        )
                        self._threads.append(carry)
                        carry.start()
                        continue
                    refused.error = (
                        f"refused: {self._at_once} connections were open ([model] connections)"
                    )
            inside.close()
            if refused is None:
                self._stop(
                    f"it opened more than {MAX_CONNECTIONS:,} connections to the model endpoint"
                )
                return

    def _count(self, size: int) -> bool:
        with self._lock:
            self._bytes += size
            over = self._bytes > self._limit
        if over:
            mib = self._limit >> 20
            self._stop(
                f"its exchanges with the model endpoint went over the limit of {mib} MiB "
                "([limits] output_mib)"
            )
        return not over

    def _carry(self, inside: socket.socket, record: Carried) -> None:
        upstream: socket.socket | None = None
        try:
            upstream = self._pump(inside, record)
        except OSError as exc:
            if not self._closing.is_set() and record.error is None:
                record.error = f"cut: {exc.strerror or exc}"
        finally:
            with self._lock:
                self._open -= 1
                for sock in (inside, upstream):
                    if sock is not None:
                        self._sockets.discard(sock)
                        sock.close()

    def _connect(self, record: Carried) -> socket.socket | None:
        """The one connection out: to the declared endpoint's address, nowhere else."""
        try:
            upstream = socket.create_connection(self._address, timeout=CONNECT_SECONDS)
        except OSError as exc:
            record.error = f"the endpoint did not accept the connection: {exc.strerror or exc}"
            return None
        upstream.settimeout(None)
        with self._lock:
            if self._closing.is_set():
                upstream.close()
                return None
            self._sockets.add(upstream)
        return upstream

    def _pump(self, inside: socket.socket, record: Carried) -> socket.socket | None:
        """Carry one connection until both sides have closed: the sandbox's frames
        unwrapped to the endpoint, the endpoint's bytes back as they are."""
        upstream: socket.socket | None = None
        label: Label | None = None
        frames = bytearray()
        with selectors.DefaultSelector() as selector:
            selector.register(inside, selectors.EVENT_READ)
            ends = 1
            while ends and not self._closing.is_set():
                for key, _ in selector.select(0.5):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    data = sock.recv(MAX_DATA)
                    if not data:
                        selector.unregister(sock)
                        ends -= 1
                        if sock is inside and upstream is None:
                            return None  # it closed before sending a byte
                        other = upstream if sock is inside else inside
                        assert other is not None
                        other.shutdown(socket.SHUT_WR)
                        continue
                    if not self._count(len(data)):
                        return upstream
                    if sock is not inside:
                        record.received += data
                        inside.sendall(data)
                        continue
                    frames += data
                    while True:
                        frame = _frame(frames)
                        if frame is None:
                            break
                        if isinstance(frame, str):
                            record.error = frame
                            return upstream
                        kind, payload = frame
                        if kind == b"L":
                            label = _label(payload)
                            if label is None:
                                record.error = "the sandbox's side sent a label that is not one"
                                return upstream
                            continue
                        record.sent.append((label, payload))
                        if upstream is None:
                            upstream = self._connect(record)
                            if upstream is None:
                                return None
                            selector.register(upstream, selectors.EVENT_READ)
                            ends += 1
                        upstream.sendall(payload)
        return upstream


def _frame(buffer: bytearray) -> tuple[bytes, bytes] | str | None:
    """The first whole frame of ``buffer`` (removed from it), None until one has come,
    or what is wrong with it."""
    if len(buffer) < 5:
        return None
    kind, size = bytes(buffer[:1]), int.from_bytes(buffer[1:5], "big")
    if kind not in (b"L", b"D") or size > (MAX_LABEL if kind == b"L" else MAX_DATA):
        return "the sandbox's side broke the relay's framing"
    if len(buffer) < 5 + size:
        return None
    payload = bytes(buffer[5 : 5 + size])
    del buffer[: 5 + size]
    return kind, payload


def _label(payload: bytes) -> Label | None:
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(data, dict) or set(data) - {"case", "condition", "trial"}:
        return None
    case, condition, trial = data.get("case"), data.get("condition"), data.get("trial")
    if not isinstance(case, str) or not 0 < len(case) <= 64:
        return None
    if condition is not None and (not isinstance(condition, str) or len(condition) > 100):
        return None
    if trial is not None and (isinstance(trial, bool) or not isinstance(trial, int)):
        return None
    return case, condition, trial


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _Endpoint(http.client.HTTPConnection):
    """An HTTP connection to the declared endpoint's address literal: ``Host`` says the
    host as declared, and no name is ever resolved."""

    def __init__(self, model: ModelConfig) -> None:
        super().__init__(model.host.strip("[]"), model.port, timeout=CONNECT_SECONDS)
        self._fixed = model.address

    def connect(self) -> None:
        self.sock = socket.create_connection(self._fixed, timeout=CONNECT_SECONDS)


def fetch_info(model: ModelConfig, name: str) -> tuple[ModelReply, ...]:
    """GET each ``[model] info`` path from the endpoint, once, before the runs: what the
    server says about the model, for the manifest.  A server that does not answer, or
    answers with more than :data:`MAX_INFO` bytes, refuses the capture."""
    replies = []
    for path in model.info:
        connection = _Endpoint(model)
        try:
            connection.request("GET", path, headers={"Accept": "application/json"})
            response = connection.getresponse()
            body = response.read(MAX_INFO + 1)
            status = response.status
        except (OSError, http.client.HTTPException) as exc:
            raise ModelEndpointUnavailable(
                f"capture {name}: the model endpoint {model.endpoint} did not answer "
                f"GET {path}: {getattr(exc, 'strerror', None) or exc or type(exc).__name__}",
                hint=f"start the model server there, or correct [model] in captures/{name}.toml",
            ) from None
        finally:
            connection.close()
        if len(body) > MAX_INFO:
            raise ModelEndpointUnavailable(
                f"capture {name}: the model endpoint's reply to GET {path} is larger than "
                f"{MAX_INFO >> 20} MiB",
                hint=f"name a smaller reply in [model] info of captures/{name}.toml",
            )
        try:
            text: str | None = body.decode("utf-8")
            encoded = None
        except UnicodeDecodeError:
            text, encoded = None, base64.b64encode(body).decode("ascii")
        digest = hashlib.sha256(body).hexdigest()
        replies.append(
            ModelReply(path=path, status=status, text=text, base64=encoded, sha256=digest)
        )
        log.debug("model endpoint: GET %s gave %d (%d bytes)", path, status, len(body))
    return tuple(replies)
