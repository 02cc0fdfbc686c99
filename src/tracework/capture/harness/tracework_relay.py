"""The model relay's inside half: the declared endpoint's address, inside the sandbox.

With a ``[model]`` table in the declaration, tracework's runner starts this before the
harness runs.  It listens on the endpoint's loopback address and port in the sandbox's
own network namespace — so a subject configured for ``http://127.0.0.1:11434`` finds
its server where it expects it — and carries each connection, byte for byte, to the
Unix socket tracework binds into the sandbox; tracework, outside, connects to the
declared endpoint and to nothing else.  Nothing else is reachable: the namespace has no
other way out.

Towards tracework the bytes travel in frames (one byte of kind, four of length): ``L``
frames say which model-driven case and trial is running (tracework keeps each request
with the trial it was sent in, even on a connection kept alive across trials), ``D``
frames carry the client's bytes.  The replies come back as they are.  Bytes are carried
only while a model-driven case is open: sent anywhere else (a scripted case, between
cases), the connection is closed, and the log says why.  The counts, sizes and bytes
are bounded by tracework's side, not this one.

Standard library only, Python 3.8 syntax: it runs in the subject's environment.
"""

from __future__ import annotations

import json
import selectors
import socket
import struct
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for the type checker only: it runs on Python 3.8 too
    from collections.abc import Callable, Mapping

    #: What the harness labels the bytes with now (its ``Label``: the case and trial),
    #: or None: compared with the last one sent and passed on as JSON, never read here.
    LabelNow = Callable[[], Mapping[str, object] | None]

#: The largest data frame (what one read of the client gives).
CHUNK = 1 << 16


def _frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack(">I", len(payload)) + payload


def _say(text: str) -> None:
    sys.stderr.write(f"tracework model relay: {text}\n")
    sys.stderr.flush()


def start(listen: list[list[Any]], path: str, label: LabelNow) -> list[str]:
    """Listen on each ``[host, port]`` of ``listen`` and carry every connection to the
    Unix socket at ``path``, tagged with ``label()``; returns the problems of the
    addresses it could not listen on (a second one, ``::1``, is optional)."""
    problems = []
    for host, port in listen:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        server = socket.socket(family, socket.SOCK_STREAM)
        try:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            server.bind((host, port))
            server.listen(64)
        except OSError as exc:
            server.close()
            problems.append(f"[{host}]:{port}: {exc.strerror or exc}")
            continue
        threading.Thread(target=_serve, args=(server, path, label), daemon=True).start()
    return problems


def _serve(server: socket.socket, path: str, label: LabelNow) -> None:
    while True:
        try:
            client, _ = server.accept()
        except OSError:
            continue  # a connection reset before it was accepted
        try:
            threading.Thread(target=_carry, args=(client, path, label), daemon=True).start()
        except RuntimeError:  # no thread to spare (the process limit): refused
            client.close()


def _carry(client: socket.socket, path: str, label: LabelNow) -> None:
    relay = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        relay.connect(path)
    except OSError as exc:
        _say(f"cannot reach tracework's side ({exc.strerror or exc}); connection closed")
        relay.close()
        client.close()
        return
    sent: Mapping[str, object] | None = None
    open_ends = {client: True, relay: True}
    with selectors.DefaultSelector() as selector:
        selector.register(client, selectors.EVENT_READ)
        selector.register(relay, selectors.EVENT_READ)
        try:
            while any(open_ends.values()):
                for key, _ in selector.select():
                    sock = key.fileobj
                    data = sock.recv(CHUNK)  # type: ignore[union-attr]
                    if not data:
                        selector.unregister(sock)
                        open_ends[sock] = False  # type: ignore[index]
                        other = relay if sock is client else client
                        other.shutdown(socket.SHUT_WR)
                        continue
                    if sock is relay:
                        client.sendall(data)
                        continue
                    now = label()
                    if now is None:
                        _say(
                            "a request outside a model-driven case: the model endpoint "
                            "answers only inside one (capture.trials, or a case with "
                            "arm='model-driven'); connection closed"
                        )
                        return
                    if now != sent:
                        tag = json.dumps(now, sort_keys=True).encode("ascii")
                        relay.sendall(_frame(b"L", tag))
                        sent = now
                    relay.sendall(_frame(b"D", data))
        except OSError:
            pass  # either side went away: both are closed below
        finally:
            client.close()
            relay.close()
