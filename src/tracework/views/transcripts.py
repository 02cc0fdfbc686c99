"""A transcript's values as a reader reads them.

A chat request — a list of ``{"role": …, "content": …}`` messages, or a mapping holding
``messages`` (OpenAI's shape) or ``system`` and ``messages`` (Anthropic's), each content
a string or a list of text parts — shows as a conversation: each message's role, then
its content as a block of its real lines, wrapped at the column's edge, never cut.  Any
other value shows as JSON whose strings holding newlines are blocks of their lines too.
The canonical JSON a value is hashed as stays one click away (a fold), never the only
view.  Every piece of recorded text is escaped (:func:`~tracework.views.cards.esc`);
a role is a class name only when it is one of :data:`ROLES`.

Each message and block names its path in the transcript (``model requests[0].messages[1]
.content``), the path ``cap.transcript(CASE, PATH)`` takes, so an analyst cites what
they read.  Lines are what ``str.split("\\n")`` gives: the lines a comparison
(:mod:`tracework.capture.compare`) numbers, so its "line 12" is line 12 of the block.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from tracework.capture.store import canonical
from tracework.views.cards import esc

#: Roles a conversation styles by name; any other role is shown, escaped, unstyled.
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: How deep the JSON view nests; deeper values are shown as their canonical JSON lines.
DEPTH = 24
#: A key a path can name as ``.key`` (see :mod:`tracework.capture.evidence`); any other
#: as ``["key"]``.
_PLAIN_KEY = re.compile(r"[^.\[\]\"\\]+")


@dataclass(frozen=True)
class Part:
    """One part of a message's content: its text, or anything else (an image, a tool
    call), shown as JSON."""

    where: str  # its path, from the conversation's own
    text: str | None
    other: Any = None


@dataclass(frozen=True)
class Message:
    role: str
    where: str  # its path, from the conversation's own: ``[0]``, ``.messages[1]``, ``.system``
    parts: tuple[Part, ...]
    fields: tuple[tuple[str, Any], ...] = ()  # its other keys (``name``, ``tool_calls``…)


@dataclass(frozen=True)
class Conversation:
    """A chat request: its messages in order (a top-level ``system`` first) and the
    request's other keys (``model``, ``temperature``…)."""

    messages: tuple[Message, ...]
    fields: tuple[tuple[str, Any], ...] = ()


def conversation(value: Any) -> Conversation | None:
    """The value as a chat request, or None when it is not one (see the module's
    docstring for the shapes recognised)."""
    if isinstance(value, list):
        messages = _messages(value, "")
        return Conversation(messages) if messages else None
    if not isinstance(value, dict) or "messages" not in value:
        return None
    messages = _messages(value["messages"], ".messages")
    if not messages:
        return None
    rest = {k: v for k, v in value.items() if k != "messages"}
    if "system" in rest:
        parts = _content(rest["system"], ".system")
        if parts is not None:
            del rest["system"]
            messages = (Message("system", ".system", parts), *messages)
    return Conversation(messages, tuple(rest.items()))


def _messages(items: Any, where: str) -> tuple[Message, ...] | None:
    if not isinstance(items, list) or not items:
        return None
    out = []
    for n, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("role"), str):
            return None
        if "content" not in item:
            return None
        at = f"{where}[{n}]"
        parts = _content(item["content"], f"{at}.content")
        if parts is None:
            return None
        fields = tuple((k, v) for k, v in item.items() if k not in ("role", "content"))
        out.append(Message(item["role"], at, parts, fields))
    return tuple(out)


def _content(content: Any, where: str) -> tuple[Part, ...] | None:
    """A message's content as parts: a string, None (a message with no text, such as a
    tool call's), or a list of strings and parts (``{"type": "text", "text": …}``)."""
    if isinstance(content, str):
        return (Part(where, content),)
    if content is None:
        return ()
    if not isinstance(content, list):
        return None
    parts = []
    for n, part in enumerate(content):
        at = f"{where}[{n}]"
        if isinstance(part, str):
            parts.append(Part(at, part))
        elif isinstance(part, dict):
            text = part.get("text")
            if part.get("type") == "text" and isinstance(text, str):
                parts.append(Part(f"{at}.text", text))
            else:
                parts.append(Part(at, None, part))
        else:
            return None
    return tuple(parts)


def step(key: str) -> str:
    """The path step that names ``key`` of a mapping."""
    if _PLAIN_KEY.fullmatch(key):
        return f".{key}"
    return f"[{json.dumps(key)}]"


# -- HTML -------------------------------------------------------------------------------


def value_html(value: Any, path: str = "") -> str:
    """A recorded value as a reader reads it: a conversation, a block of lines (a
    string), or the JSON view; ``path`` is where the value is in its transcript."""
    return _node(value, path, 0, top=True)


def raw_html(text: str, what: str) -> str:
    """``text`` (a canonical JSON file or value) folded, one click away."""
    return (
        f'<details class="tw-raw"><summary>{esc(what)}</summary>'
        f"{lines_html(text.removesuffix(chr(10)))}</details>"
    )


def raw_value_html(value: Any) -> str:
    """A value's canonical JSON (what its SHA-256 is of), folded."""
    return raw_html(canonical(value).decode("utf-8"), "Raw value: its canonical JSON, as hashed")


def lines_html(text: str, first: int = 1) -> str:
    """``text`` as a block of numbered lines that wrap, never cut at the edge."""
    rows = "".join(line_html(first + n, line) for n, line in enumerate(text.split("\n")))
    return f'<div class="tw-text">{rows}</div>'


def line_html(number: int, text: str, kind: str = "") -> str:
    """One numbered line; ``kind`` ``"ins"`` or ``"del"`` marks it inserted or removed."""
    tag = kind if kind in ("ins", "del") else "span"
    cls = f"tw-line tw-{kind}" if kind else "tw-line"
    return f'<{tag} class="{cls}"><span class="tw-ln">{number}</span>{esc(text)}</{tag}>'


def conversation_html(chat: Conversation, path: str = "") -> str:
    """A chat request: the request's other keys, then each message, its role and path
    and its content's lines."""
    where = f'<div class="tw-where">{esc(_path(path))}</div>' if path else ""
    fields = _fields_html(chat.fields, path)
    messages = "".join(_message_html(m, path) for m in chat.messages)
    return f'<div class="tw-conversation">{where}{fields}{messages}</div>'


def _message_html(message: Message, path: str) -> str:
    where = _path(path + message.where)
    one = len(message.parts) == 1
    cls = f" tw-role-{message.role}" if message.role in ROLES else ""
    head = (
        f'<div class="tw-role"><span class="tw-role-name">{esc(message.role)}</span>'
        f'<span class="tw-where">{esc(_path(path + message.parts[0].where) if one else where)}'
        "</span></div>"
    )
    body = []
    for part in message.parts:
        if not one:
            body.append(f'<div class="tw-where">{esc(_path(path + part.where))}</div>')
        if part.text is not None:
            body.append(lines_html(part.text))
        else:
            body.append(_json(part.other, path + part.where, 1))
    if not message.parts:
        body.append('<p class="tw-note">no text</p>')
    fields = _fields_html(message.fields, path + message.where)
    return f'<div class="tw-message{cls}">{head}{"".join(body)}{fields}</div>'


def _fields_html(fields: tuple[tuple[str, Any], ...], path: str) -> str:
    if not fields:
        return ""
    rows = "".join(
        f"<dt>{esc(key)}</dt><dd>{_node(value, path + step(key), 1)}</dd>" for key, value in fields
    )
    return f'<dl class="tw-fields-compact">{rows}</dl>'


def _node(value: Any, path: str, depth: int, *, top: bool = False) -> str:
    chat = conversation(value)
    if chat is not None:
        return conversation_html(chat, path)
    if isinstance(value, str) and (top or "\n" in value):
        return lines_html(value)
    return _json(value, path, depth)


def _json(value: Any, path: str, depth: int) -> str:
    return f'<div class="tw-json">{_inline(value, path, depth)}</div>'


def _inline(value: Any, path: str, depth: int) -> str:
    """The JSON view of a value inside a ``tw-json`` block: a mapping's members and a
    list's items one a line, indented; a string holding newlines as a block of lines."""
    if depth >= DEPTH and isinstance(value, dict | list):
        return lines_html(canonical(value).decode("utf-8").removesuffix("\n"))
    if isinstance(value, dict) and value:
        members = "".join(
            f'<div class="tw-jm"><span class="tw-jk">{esc(json.dumps(k, ensure_ascii=False))}'
            f"</span>: {_member(v, path + step(k), depth + 1)}</div>"
            for k, v in value.items()
        )
        return _bracketed("{", members, "}")
    if isinstance(value, list) and value:
        items = "".join(
            f'<div class="tw-jm">{_member(v, f"{path}[{n}]", depth + 1)}</div>'
            for n, v in enumerate(value)
        )
        return _bracketed("[", items, "]")
    if isinstance(value, str) and "\n" in value:
        count = value.count("\n") + 1
        return f'<span class="tw-jnote">a string of {count} lines:</span>{lines_html(value)}'
    return f'<span class="tw-jv">{esc(json.dumps(value, ensure_ascii=False))}</span>'


def _bracketed(start: str, inside: str, end: str) -> str:
    return (
        f'<span class="tw-jp">{start}</span><div class="tw-jb">{inside}</div>'
        f'<span class="tw-jp">{end}</span>'
    )


def _member(value: Any, path: str, depth: int) -> str:
    chat = conversation(value)
    if chat is not None:
        return conversation_html(chat, path)
    return _inline(value, path, depth)


def _path(path: str) -> str:
    return path.removeprefix(".")
