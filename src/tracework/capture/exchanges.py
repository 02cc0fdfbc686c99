"""The model relay's connections as exchanges: ``model-arm/exchanges.jsonl``.

Each connection the relay carried (:class:`tracework.capture.model.Carried`) is split
into HTTP/1.1 exchanges — a request as the sandbox sent it and the reply the endpoint
sent to it, in order, as a connection kept alive carries them — and each exchange is
one line of the file, with the model-driven case and trial its request was sent in
(the label current when the relay read the request's first byte).  The bytes are kept
exactly: a request's ``text`` (or ``base64``, when it is not UTF-8) is every byte of it,
and the requests of a connection, one after another, are all it sent; so with the
replies.  A chunked reply also gets its ``body`` with the chunks joined.  Nothing here is
normalised: it is what crossed the relay, kept apart from the scripted arm and exempt
from the byte-identical rule.

Bytes that do not parse as HTTP/1.1 (or are cut off) are still kept: the rest of the
connection becomes one last exchange with ``"http": false`` (or ``"complete": false``).
Parsing is linear in the bytes, which the relay bounded (``[limits] output_mib``).
"""

from __future__ import annotations

import base64
import bisect
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal, NotRequired, TypedDict, TypeVar

from tracework.capture.model import Carried, Label

#: The longest head (request or status line and headers) that is parsed.
MAX_HEAD = 64 << 10
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")


@dataclass(frozen=True)
class Exchange:
    """One request and its reply (None when none came), with where it was sent."""

    connection: int
    label: Label | None
    request: bytes
    reply: bytes | None
    method: str | None
    target: str | None
    status: int | None
    body: bytes | None  # a chunked reply's body, joined
    http: bool
    complete: bool
    error: str | None = None


@dataclass(frozen=True)
class _Message:
    end: int
    first: bytes  # the request line or the status line
    chunked_body: bytes | None


def _headers(lines: list[bytes]) -> dict[bytes, list[bytes]] | None:
    found: dict[bytes, list[bytes]] = {}
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon or _TOKEN.fullmatch(name) is None:
            return None  # a folded or malformed header: not parsed further
        found.setdefault(name.lower(), []).append(value.strip())
    return found


def _chunked(data: bytes, pos: int) -> tuple[int, bytes] | None:
    """The end of a chunked body starting at ``pos``, and the body; None when it is
    cut off or malformed."""
    body = bytearray()
    while True:
        line_end = data.find(b"\r\n", pos, pos + 1024)
        if line_end < 0:
            return None
        size_text = data[pos:line_end].split(b";", 1)[0].strip()
        if _HEX.fullmatch(size_text) is None:
            return None
        size = int(size_text, 16)
        pos = line_end + 2
        if size == 0:
            while True:  # trailers, then the empty line
                line_end = data.find(b"\r\n", pos, pos + MAX_HEAD)
                if line_end < 0:
                    return None
                if line_end == pos:
                    return pos + 2, bytes(body)
                pos = line_end + 2
        if data[pos + size : pos + size + 2] != b"\r\n":
            return None
        body += data[pos : pos + size]
        pos += size + 2


def _message(data: bytes, pos: int, *, no_body: bool, to_close: bool) -> _Message | str | None:
    """The HTTP/1.1 message at ``pos``: None when it is cut off, a string when it is not
    HTTP.  ``no_body``: a reply to HEAD, a 1xx, 204 or 304; ``to_close``: a reply with
    neither length nor chunks runs to the connection's end."""
    head_end = data.find(b"\r\n\r\n", pos, pos + MAX_HEAD)
    if head_end < 0:
        return "no head" if len(data) - pos >= MAX_HEAD else None
    lines = data[pos:head_end].split(b"\r\n")
    headers = _headers(lines[1:])
    if headers is None:
        return "malformed headers"
    start = head_end + 4
    codings = b",".join(headers.get(b"transfer-encoding", [])).lower()
    if no_body:
        return _Message(start, lines[0], None)
    if codings:
        if codings.rsplit(b",", 1)[-1].strip() != b"chunked":
            return _Message(len(data), lines[0], None) if to_close else "unknown coding"
        chunked = _chunked(data, start)
        if chunked is None:
            return None
        return _Message(chunked[0], lines[0], chunked[1])
    lengths = set(headers.get(b"content-length", []))
    if len(lengths) > 1 or any(not v.isdigit() for v in lengths):
        return "malformed Content-Length"
    if lengths:
        end = start + int(lengths.pop())
        return _Message(end, lines[0], None) if end <= len(data) else None
    return _Message(len(data) if to_close else start, lines[0], None)


def _request_line(line: bytes) -> tuple[str, str] | None:
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1.") or _TOKEN.fullmatch(parts[0]) is None:
        return None
    return parts[0].decode("ascii"), parts[1].decode("latin-1")


def _status(line: bytes) -> int | None:
    parts = line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        return None
    return int(parts[1]) if len(parts[1]) == 3 else None


def split(carried: Carried) -> list[Exchange]:
    """The exchanges of one connection, in order (see the module's docstring)."""
    sent = b"".join(data for _label, data in carried.sent)
    starts, labels, offset = [], [], 0
    for label, data in carried.sent:
        starts.append(offset)
        labels.append(label)
        offset += len(data)

    def label_at(pos: int) -> Label | None:
        return labels[bisect.bisect_right(starts, pos) - 1] if starts else None

    replies = bytes(carried.received)
    found: list[Exchange] = []
    pos = rpos = 0
    while pos < len(sent):
        request = _message(sent, pos, no_body=False, to_close=False)
        line = _request_line(request.first) if isinstance(request, _Message) else None
        if not isinstance(request, _Message) or line is None:
            break
        method, target = line
        reply, status, body, complete, rend = _reply(replies, rpos, method)
        found.append(
            Exchange(
                carried.number,
                label_at(pos),
                sent[pos : request.end],
                reply,
                method,
                target,
                status,
                body,
                http=True,
                complete=complete,
            )
        )
        pos, rpos = request.end, rend
        if not complete:
            break
    if pos < len(sent) or rpos < len(replies) or (not found and carried.error):
        found.append(
            Exchange(
                carried.number,
                label_at(pos) if pos < len(sent) else None,
                sent[pos:],
                replies[rpos:] or None,
                None,
                None,
                None,
                None,
                http=False,
                complete=False,
            )
        )
    if carried.error and found:
        found[-1] = replace(found[-1], error=carried.error)
    return found


def _reply(
    data: bytes, pos: int, method: str
) -> tuple[bytes | None, int | None, bytes | None, bool, int]:
    """The reply at ``pos`` to a ``method`` request, with any interim (1xx) replies
    before it: its bytes, status, joined chunked body, whether it is whole, its end."""
    start = pos
    while pos < len(data):
        head = data.find(b"\r\n", pos, pos + MAX_HEAD)
        status = _status(data[pos:head]) if head >= 0 else None
        if status is None:
            return data[start:] or None, None, None, False, len(data)
        interim = 100 <= status < 200 and status != 101
        no_body = method == "HEAD" or interim or status in (204, 304)
        message = _message(data, pos, no_body=no_body, to_close=True)
        if not isinstance(message, _Message):
            return data[start:], status, None, False, len(data)
        if status == 101:  # the connection is no longer HTTP: the rest is its reply
            return data[start:], status, None, True, len(data)
        pos = message.end
        if not interim:
            return data[start:pos], status, message.chunked_body, True, pos
    return (data[start:] or None), None, None, False, len(data)


def records(carried: Iterable[Carried]) -> tuple[list[bytes], dict[Label | None, list[int]]]:
    """The lines of ``model-arm/exchanges.jsonl`` (one canonical JSON object each,
    numbered from 1 in the order the connections were opened) and the ids of the
    exchanges sent under each label."""
    lines: list[bytes] = []
    by_label: dict[Label | None, list[int]] = {}
    for connection in carried:
        for exchange in split(connection):
            number = len(lines) + 1
            lines.append(_line(number, exchange))
            by_label.setdefault(exchange.label, []).append(number)
    return lines, by_label


class BytesJson(TypedDict, total=False):
    """Bytes in a line: ``text`` when they are UTF-8, else ``base64`` (one of the two)."""

    text: str
    base64: str


class RequestJson(BytesJson):
    """A request: its method and target (None when it did not parse), and its bytes."""

    method: str | None
    target: str | None


class ReplyJson(BytesJson):
    """A reply: its status (None when it did not parse), its bytes and, when it was
    chunked, its body with the chunks joined."""

    status: int | None
    body: NotRequired[BytesJson]


class ExchangeJson(TypedDict):
    """One line of ``exchanges.jsonl`` (written with its keys sorted)."""

    id: int
    arm: Literal["model-driven"]
    connection: int
    case: str | None
    condition: str | None
    trial: int | None
    http: bool
    complete: bool
    request: RequestJson
    reply: ReplyJson | None
    error: NotRequired[str]


_Holder = TypeVar("_Holder", bound=BytesJson)


def _with_bytes(into: _Holder, data: bytes) -> _Holder:
    """``into`` with ``data`` as its ``text``, or as its ``base64`` when not UTF-8."""
    try:
        into["text"] = data.decode("utf-8")
    except UnicodeDecodeError:
        into["base64"] = base64.b64encode(data).decode("ascii")
    return into


def _line(number: int, exchange: Exchange) -> bytes:
    case, condition, trial = exchange.label or (None, None, None)
    request: RequestJson = {"method": exchange.method, "target": exchange.target}
    entry: ExchangeJson = {
        "id": number,
        "arm": "model-driven",
        "connection": exchange.connection,
        "case": case,
        "condition": condition,
        "trial": trial,
        "http": exchange.http,
        "complete": exchange.complete,
        "request": _with_bytes(request, exchange.request),
        "reply": None,
    }
    if exchange.reply is not None:
        reply: ReplyJson = {"status": exchange.status}
        entry["reply"] = _with_bytes(reply, exchange.reply)
        if exchange.body is not None:
            reply["body"] = _with_bytes(BytesJson(), exchange.body)
    if exchange.error is not None:
        entry["error"] = exchange.error
    text = json.dumps(entry, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return (text + "\n").encode("utf-8")
