"""What a cited transcript excerpt is compared with: ``excerpt.against(...)``'s references.

A comparison is only as good as the text it compares with, and which text that is
depends on where the value was captured: a quote's text at the commit the capture was
made at (the register's at the pin; at the commit rendered, the quote's text there, so a
quote that changed is compared as it is now), another value of the capture shown, or the
same value in the capture made at the nearest commit before.  Each reference here is
read once and named, with why it is missing when it cannot be read; the comparing is
:func:`tracework.capture.compare.compare`'s.
"""

from __future__ import annotations

import logging

from tracework.capture.compare import Reference, compared_text, quoted_text
from tracework.capture.evidence import CapturedAt, ExcerptInfo, previous_capture, value_at
from tracework.errors import QuoteNotInRegister, TraceworkError
from tracework.git.subjects import open_mirror
from tracework.notebook.jupyter import QuoteView
from tracework.notebook.session import RegisterSession
from tracework.register.quotes import quotable_lines
from tracework.views.cards import QuoteInfo

log = logging.getLogger(__name__)


def quote_reference(
    session: RegisterSession,
    quotes: dict[str, QuoteInfo],
    at: CapturedAt,
    quote: QuoteView | str,
) -> Reference:
    """A quote as a reference: its text at the commit the compared value was captured
    at (the register's text at the pin; at the commit rendered, the quote's text
    there, so a quote that changed is compared as it is now)."""
    register = session.register
    qid = quote.id if isinstance(quote, QuoteView) else quote
    if not isinstance(qid, str) or qid not in register.quotes:
        raise QuoteNotInRegister(
            f"{qid!r} is not a quote of register {register.name}",
            hint="compare with a quote (q = src.quote(...)) or the id of one in the register",
        )
    info = quotes.get(qid) or session.quote_info(qid)
    q = info.quote
    pinned = info.commit == info.pin or at.shown.commit != session.commit
    commit = info.pin if pinned else info.commit
    text: str | None = q.text
    missing: str | None = None
    drift = None if pinned else info.drift
    if q.raw_b64 is not None:
        text, missing = None, f"the text {qid} quotes is not UTF-8"
    elif drift is not None and drift.state in ("missing", "ambiguous"):
        text, missing = None, f"{qid} is {drift.state} at {commit[:12]}"
    elif drift is not None and drift.state == "changed":
        text = _text_at(session, q.source, drift.new_path or q.path, drift.new_lines, commit)
        if text is None:
            missing = f"{qid} changed at {commit[:12]} and its lines there cannot be read"
    path = (drift.new_path or q.path) if drift is not None else q.path
    lines = (drift.new_lines or q.lines) if drift is not None else q.lines
    form, first = None, 1
    if text is not None:
        text, form = quoted_text(text, path)
        first = lines[0] if form == "lines" else 1
    label = f"the string {qid} quotes" if form == "string literal" else qid
    return Reference("quote", label, text, form, first, missing, quote=qid, commit=commit)


def _text_at(
    session: RegisterSession, sid: str, path: str, lines: tuple[int, int] | None, commit: str
) -> str | None:
    """The text of ``lines`` of ``path`` at ``commit``, or None when they cannot be
    read there (no lines, no such file, not a text file, not UTF-8)."""
    if lines is None:
        return None
    mirror = session.mirror(session.register.git_source(sid).subject)
    try:
        data = quotable_lines(mirror, mirror.entry(commit, path), path, "notebook")
        return data.span(*lines).decode("utf-8")
    except (TraceworkError, UnicodeDecodeError) as exc:
        log.debug("cannot read %s:%s at %s: %s", path, lines, commit[:12], exc)
        return None


def case_reference(
    session: RegisterSession, at: CapturedAt, info: ExcerptInfo, case: str, path: str
) -> Reference:
    """Another value of the capture shown.  In the register's capture a value not
    there is an error (a mistyped case or path); in a later one, a finding."""
    if (case, path) == (info.case, info.path):
        raise TraceworkError(
            f"{info.key} compared with itself",
            hint="name another case= or path= to compare it with",
        )
    label = f'{case}\'s value at "{path}"'
    commit = at.shown.commit
    try:
        value = value_at(session.ws.root, at.shown, case, path)
    except TraceworkError as exc:
        if at.current is None:
            raise
        return Reference("case", label, None, missing=str(exc), case=case, path=path,
                         commit=commit)  # fmt: skip
    text, form = compared_text(value)
    return Reference("case", label, text, form, case=case, path=path, commit=commit)


def previous_reference(session: RegisterSession, at: CapturedAt, info: ExcerptInfo) -> Reference:
    """The same case and path in the capture at the nearest commit before the one
    shown that has a capture of this name."""
    shown = at.shown
    ws = session.ws
    mirror = open_mirror(ws, shown.manifest.subject)
    before = previous_capture(ws, shown, mirror.ancestors(shown.commit))
    case, path = info.case, info.path
    if before is None:
        missing = f"no capture of {shown.name} at a commit before {shown.commit[:12]}"
        return Reference("previous", "the previous capture", None, missing=missing,
                         case=case, path=path)  # fmt: skip
    label = f"its value in the capture at {before.commit[:12]}"
    try:
        value = value_at(ws.root, before, case, path)
    except TraceworkError as exc:
        return Reference("previous", label, None, missing=str(exc), case=case, path=path,
                         commit=before.commit)  # fmt: skip
    text, form = compared_text(value)
    return Reference("previous", label, text, form, case=case, path=path, commit=before.commit)
