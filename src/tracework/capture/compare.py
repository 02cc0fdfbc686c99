"""A transcript value compared with a named reference, by lines, and the sentence that
says how they differ ("equals Q-template with only lines 12–18 inserted").

The reference is another case's value at a path, a quote of the register, or the same
case and path in the capture made at the commit before; the workbench resolves it
(:class:`Reference`) and :func:`compare` does the rest, so the sentence is computed,
never written by the analyst, and recomputed at every render: a reference that drifted
at the commit rendered is compared as it is there.

Both sides are split into lines with ``str.split("\\n")`` (exact: joined again they give
the text back, a final newline included) and compared with the standard library's
:class:`difflib.SequenceMatcher`, its junk heuristic off (``autojunk=False``: on texts
over 200 lines it would otherwise skip frequent lines, blank ones among them, and report
odd blocks).  Why lines: a prompt is assembled from lines and blocks — a template, a
memories block, the user's message — so what a reader asks is which lines were inserted
or changed, and each is found by its number in the block shown; a character diff names
fragments no reader can place.  Why difflib: deterministic (the same two texts give the
same blocks on every machine and Python), with no dependency, and its blocks are the
longest matching runs, as a person would pair the lines.  A value that is not a string is
compared as its canonical JSON, and the sentence says so.

A reference that is a template — a string with ``str.format`` fields (``{user_info}``), as
a prompt template is — is read as one before lines are paired: when the value is the
template with each field replaced by some text (the same text for a field named twice),
the verdict is ``filled`` and the sentence names each field and what filled it ("equals
Q-template with only its fields filled: {user_info} by lines 3–9, {time} by "<time>""),
since that, not a list of replaced lines, is what a reader asks of a prompt built from a
template.  The match is one RE2 pass (linear in the text, whatever it holds).
"""

from __future__ import annotations

import ast
import difflib
import string
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import re2

from tracework.capture.store import canonical
from tracework.hashing import sha256_hex
from tracework.register.quotes import PYTHON_SUFFIXES

Verdict = Literal["equal", "filled", "inserted", "removed", "changed", "missing"]
ReferenceKind = Literal["quote", "case", "previous"]
#: How a side's text was taken: a quote's lines (their last terminator off), the value of
#: the Python string literal a quote is, a recorded string, or canonical JSON.
Form = Literal["lines", "string literal", "string", "canonical JSON"]
Op = Literal["inserted", "removed", "replaced"]
_OPS: dict[str, Op] = {"insert": "inserted", "delete": "removed", "replace": "replaced"}
#: The places a sentence lists before it counts the rest.
PLACES = 6


@dataclass(frozen=True)
class Reference:
    """What a value is compared with, as resolved for this render."""

    kind: ReferenceKind
    label: str  # how the sentence names it: "Q-template", "F-01's value at …"
    text: str | None  # the text compared with; None when there is none here
    form: Form | None = None
    first_line: int = 1  # the number of its first line as a reader finds it (a quote's)
    missing: str | None = None  # why there is nothing to compare with
    quote: str | None = None
    case: str | None = None
    path: str | None = None
    commit: str | None = None  # where the text was read: the quote's commit, the capture's

    @property
    def key(self) -> str:
        """One comparison per reference and excerpt: asking again replaces it."""
        if self.kind == "quote":
            return f"quote {self.quote}"
        if self.kind == "case":
            return f"case {self.case} {self.path}"
        return "previous"

    @property
    def sha256(self) -> str | None:
        """SHA-256 of the text compared with (UTF-8), for a check to re-derive."""
        return None if self.text is None else sha256_hex(self.text.encode("utf-8"))


@dataclass(frozen=True)
class Change:
    """One block that differs: lines of the value, of the reference, or both."""

    op: Op
    lines: tuple[int, int] | None  # the value's, 1-based, inclusive
    reference_lines: tuple[int, int] | None  # the reference's, numbered as it is shown

    def phrase(self) -> str:
        if self.op == "inserted":
            assert self.lines is not None
            return f"{_span(self.lines)} inserted"
        assert self.reference_lines is not None
        if self.op == "removed":
            return f"its {_span(self.reference_lines)} removed"
        assert self.lines is not None
        verb = "replaces" if self.lines[0] == self.lines[1] else "replace"
        return f"{_span(self.lines)} {verb} its {_span(self.reference_lines)}"


@dataclass(frozen=True)
class Fill:
    """A field of a template reference, and the text of the value that fills it."""

    field: str  # as the template writes it: "{user_info}"
    lines: tuple[int, int]  # the value's lines the filling text spans, 1-based
    text: str

    def phrase(self) -> str:
        if not self.text:
            return f"{self.field} by nothing"
        if "\n" not in self.text and len(self.text) <= INLINE_FILL:
            return f'{self.field} by "{self.text}"'
        return f"{self.field} by {_span(self.lines)}"


#: The longest one-line filling a sentence quotes rather than points to by its line.
INLINE_FILL = 40
#: A field name as ``str.format`` reads one: a name or a number, then attributes and
#: indexes (so braces of JSON or code in a string are not taken for fields).
_FIELD = re2.compile(
    r"^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+)?(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[^\]]+\])*$"
)
#: The most fields a template may have for it to be read as one.
MAX_FIELDS = 32


@dataclass(frozen=True)
class Comparison:
    """A value compared with a reference: the verdict, its sentence and the blocks."""

    reference: Reference
    verdict: Verdict
    sentence: str  # a predicate of the value: "equals Q-template with only line 2 inserted"
    changes: tuple[Change, ...]
    form: Form  # how the value's text was taken
    value_lines: tuple[str, ...]
    reference_lines: tuple[str, ...]
    opcodes: tuple[tuple[str, int, int, int, int], ...]  # difflib's, every block
    fills: tuple[Fill, ...] = ()  # the template's fields and what fills them ("filled")


def compared_text(value: Any) -> tuple[str, Form]:
    """The text a value is compared as: a string as it is, anything else as its
    canonical JSON (without the final newline every capture file ends with)."""
    if isinstance(value, str):
        return value, "string"
    return canonical(value).decode("utf-8").removesuffix("\n"), "canonical JSON"


def quoted_text(text: str, path: str) -> tuple[str, Form]:
    """A quote's text as a reference: the value of the Python string literal the quote
    is, alone or assigned (``PROMPT = \"\"\"…\"\"\"``: a template, backslash line
    continuations and all, as the program holds it), else its lines, the last one's
    terminator off.  The quoted text is parsed, never run."""
    if path.endswith(PYTHON_SUFFIXES):
        literal = _string_literal(text)
        if literal is not None:
            return literal, "string literal"
    return text.removesuffix("\n"), "lines"


def _string_literal(text: str) -> str | None:
    indented = text[:1] in (" ", "\t")  # a class attribute: parsed as a block's body
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invalid escape's SyntaxWarning
            tree = ast.parse(f"if 1:\n{text}" if indented else text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    body = tree.body
    if indented and len(body) == 1 and isinstance(body[0], ast.If):
        body = body[0].body
    if len(body) != 1 or not isinstance(body[0], ast.Assign | ast.AnnAssign | ast.Expr):
        return None
    value = body[0].value
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    return None


def compare(value: Any, reference: Reference) -> Comparison:
    """``value`` compared with ``reference`` by lines (see the module docstring)."""
    text, form = compared_text(value)
    mine = tuple(text.split("\n"))
    if reference.text is None:
        sentence = f"cannot be compared with {reference.label}: {reference.missing}"
        return Comparison(reference, "missing", sentence, (), form, mine, (), ())
    theirs = tuple(reference.text.split("\n"))
    matcher = difflib.SequenceMatcher(None, theirs, mine, autojunk=False)
    opcodes = tuple(matcher.get_opcodes())
    first = reference.first_line
    changes = tuple(
        Change(
            _OPS[op],
            (j1 + 1, j2) if j2 > j1 else None,
            (first + i1, first + i2 - 1) if i2 > i1 else None,
        )
        for op, i1, i2, j1, j2 in opcodes
        if op != "equal"
    )
    verdict = _verdict(changes)
    template = verdict != "equal" and reference.form in ("string literal", "string")
    fills = _fills(reference.text, text) if template else None
    if fills is not None:
        listed = ", ".join(f.phrase() for f in fills)
        sentence = f"equals {reference.label} with only its fields filled: {listed}"
        return Comparison(
            reference, "filled", sentence, changes, form, mine, theirs, opcodes, fills
        )
    return Comparison(
        reference,
        verdict,
        _sentence(verdict, changes, reference, form),
        changes,
        form,
        mine,
        theirs,
        opcodes,
    )


def _fills(template: str, text: str) -> tuple[Fill, ...] | None:
    """Each ``str.format`` field of ``template`` and what fills it in ``text``, when
    ``text`` is the template with its fields filled; None otherwise (no field, a
    template ``str.format`` would refuse, or a text that is not such a filling)."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        return None
    fields = [
        "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
        for _, name, spec, conv in parsed
        if name is not None
    ]
    names = [name for _, name, _, _ in parsed if name is not None]
    if not fields or len(fields) > MAX_FIELDS or not all(_FIELD.match(n) for n in names):
        return None
    pattern = "(?s)" + "".join(
        re2.escape(literal) + ("(.*?)" if name is not None else "")
        for literal, name, _, _ in parsed
    )
    try:
        found = re2.fullmatch(pattern, text)
    except re2.error:
        return None
    if found is None:
        return None
    fills: list[Fill] = []
    seen: dict[str, str] = {}
    for number, field in enumerate(fields, 1):
        start, end = found.span(number)
        filled = text[start:end]
        if seen.setdefault(field, filled) != filled:
            return None  # a field named twice, filled two ways: not str.format's doing
        first = text.count("\n", 0, start) + 1
        fills.append(Fill(field, (first, first + filled.count("\n")), filled))
    return tuple(fills)


def _verdict(changes: tuple[Change, ...]) -> Verdict:
    ops = {c.op for c in changes}
    if not ops:
        return "equal"
    if ops == {"inserted"}:
        return "inserted"
    if ops == {"removed"}:
        return "removed"
    return "changed"


def _sentence(verdict: Verdict, changes: tuple[Change, ...], ref: Reference, form: Form) -> str:
    json_note = (
        " (compared as canonical JSON)"
        if "canonical JSON" in (form, ref.form) and verdict != "equal"
        else ""
    )
    if verdict == "equal":
        return f"equals {ref.label}"
    if verdict == "inserted":
        spans = [c.lines for c in changes if c.lines is not None]
        return f"equals {ref.label} with only {_spans(spans)} inserted{json_note}"
    if verdict == "removed":
        spans = [c.reference_lines for c in changes if c.reference_lines is not None]
        return f"equals {ref.label} with only its {_spans(spans)} removed{json_note}"
    places = "1 place" if len(changes) == 1 else f"{len(changes)} places"
    listed = [c.phrase() for c in changes[:PLACES]]
    if len(changes) > PLACES:
        listed.append(f"and {len(changes) - PLACES} more")
    return f"differs from {ref.label} in {places}{json_note}: " + "; ".join(listed)


def _span(span: tuple[int, int]) -> str:
    a, b = span
    return f"line {a}" if a == b else f"lines {a}–{b}"


def _spans(spans: list[tuple[int, int]]) -> str:
    """``line 2``, ``lines 2–4``, ``lines 2, 5–7 and 9``."""
    if len(spans) == 1:
        return _span(spans[0])
    each = [str(a) if a == b else f"{a}–{b}" for a, b in spans]
    return "lines " + ", ".join(each[:-1]) + " and " + each[-1]
