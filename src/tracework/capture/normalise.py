"""Volatile values made stable, so a scripted capture run twice gives the same bytes.

The rules, applied to every string (and every mapping key) of a capture, in order:

1. UUIDs (``8-4-4-4-12`` hex, either case) → ``<uuid-1>``, ``<uuid-2>``…, numbered
   by first appearance: the same UUID always gets the same number within a capture,
   and two different UUIDs never share one;
2. ISO-8601 date-times (``2026-03-04T10:00:00.123+00:00``, also with a space for the
   ``T``, seconds, fractions and zone optional) → ``<time>``; a date alone is kept;
3. memory addresses: ``0x`` and 9 to 16 hex digits (a 64-bit address, as in
   ``<Store object at 0x7f3a1c2b4d90>``) → ``<addr>``; shorter hex numbers are kept;
4. paths: the exported tree → ``<tree>``, the environment → ``<env>``, the private
   temporary folder → ``<tmp>`` (at their fixed sandbox paths and their host paths);
5. then the harness's own rules (``capture.normalise(pattern, placeholder)``), all of
   them in ONE pass over the text: RE2 syntax (linear time: a pattern cannot hang
   tracework), the placeholder inserted as it is written.  Where rules compete, the
   leftmost match wins; of rules matching at the same place, the one the harness gave
   first wins (and replaces what it alone would match there); a placeholder is not
   matched again by any rule.  The rules used to run one after another, each over the
   last one's output, a pass of the whole capture per rule: only rules whose matches
   overlap, or a rule written to match another's placeholder, see a difference.  A
   rule may not name a group (``(?P<n>…)``): a placeholder is inserted as written, so a
   group has no use, and a captured group would make every match cost a pass over all
   the rules.  How many rules a run may give is ``[limits] rules``; together they may
   compile to :data:`RULES_SIZE` RE2 instructions.

Numbers are matched as their JSON text (a rule for ``0[.][0-9]+`` replaces a recorded
``random.random()``), and stay numbers when no rule changes them.  Text that is not
valid Unicode (a lone surrogate) is written as U+FFFD.  Numbering
follows the order tracework visits values: scripted messages first, in the order the
harness sent them, then the model-driven ones, then the log, so nothing a
model-driven arm does can shift the numbers of the scripted files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tracework.readers import Table

UUID = re.compile(
    r"(?<![0-9A-Fa-f-])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-"
    r"[0-9A-Fa-f]{12}(?![0-9A-Fa-f-])"
)
TIME = re.compile(
    r"(?<![0-9])[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}"
    r"(?::[0-9]{2}(?:[.,][0-9]+)?)?(?:Z|[+-][0-9]{2}(?::?[0-9]{2})?)?(?![0-9])"
)
ADDRESS = re.compile(r"(?<![0-9A-Za-z_])0x[0-9a-fA-F]{9,16}(?![0-9A-Za-z_])")
_SURROGATE = re.compile("[\ud800-\udfff]")

#: The built-in rules as results.json lists them.
BUILT_IN = (
    ("uuid", "<uuid-N>"),
    ("iso-8601 date-time", "<time>"),
    ("0x + 9-16 hex digits", "<addr>"),
    ("exported tree", "<tree>"),
    ("environment", "<env>"),
    ("private temporary folder", "<tmp>"),
)


class NormaliseProblem(ValueError):
    """A harness rule RE2 refuses, or two mapping keys that become one."""


@dataclass(frozen=True)
class HarnessRule:
    pattern: str
    placeholder: str


#: RE2's memory budget for one harness rule (RE2's default is 8 MiB: a rule as large
#: as that costs a tenth of a second to compile, and 2 MiB is some 100,000 instructions).
RULE_MEMORY = 2 << 20
#: The most RE2 instructions the harness's rules may compile to together, and the memory
#: budget of the one pattern they make (and of its halves): compiling and matching them
#: stays bounded whatever the number of rules.
RULES_SIZE = 400_000
RULES_MEMORY = 32 << 20


def _options(memory: int) -> Any:
    """RE2 options for the rules: no group is ever captured (a placeholder is inserted as
    written), so RE2 finds each match with its DFA alone; errors are ours to report."""
    import re2  # only a harness that gives rules needs it (and its start-up)

    options = re2.Options()
    options.never_capture = True
    options.log_errors = False
    options.max_mem = memory
    return options


def compile_rule(rule: HarnessRule) -> Any:
    """The rule's RE2 pattern (UTF-8 bytes, nothing captured), or a clear problem: bad
    syntax, a pattern that matches the empty string (which would put the placeholder
    between every two characters), one that names a group, or one that does not end
    where it seems to (``\\Q`` without ``\\E``), so it cannot be one alternative of many."""
    import re2

    pattern = rule.pattern.encode("utf-8", errors="surrogatepass")
    try:
        compiled = re2.compile(pattern, _options(RULE_MEMORY))
    except re2.error as exc:
        raise NormaliseProblem(
            f"normalise pattern {rule.pattern!r} is not valid RE2 ({_said(exc)}); RE2 has "
            "no back-references or look-arounds"
        ) from None
    if compiled.fullmatch(b"") is not None:
        raise NormaliseProblem(f"normalise pattern {rule.pattern!r} matches the empty string")
    if compiled.groups:
        raise NormaliseProblem(
            f"normalise pattern {rule.pattern!r} names a group: its placeholder is inserted "
            "as written, so write (?:…) instead"
        )
    if b"\\Q" in pattern:  # the one way a valid pattern can swallow what follows it
        try:
            re2.compile(b"(?:" + pattern + b")", _options(RULE_MEMORY))
        except re2.error:
            raise NormaliseProblem(
                f"normalise pattern {rule.pattern!r} does not end where it seems to (a \\Q "
                "without its \\E)"
            ) from None
    return compiled


def _said(exc: Exception) -> str:
    text = exc.args[0] if exc.args else exc
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)


class HarnessRules:
    """The harness's rules applied in one pass (see the module's docstring).

    One RE2 pattern, each rule an alternative in the harness's order, finds every match
    in one scan of the text, RE2's own leftmost-first choice giving the documented
    precedence.  Which rule matched is then found by halving: of the rules
    ``[lo, hi)``, those in the first half are one pattern, asked whether it matches the
    match's bytes exactly, in place (so ``^``, ``$`` and ``\\b`` see what is around
    it).  The rule that matched is the first rule that does: an earlier one matching
    there would have won.  That is at most log2(rules) questions, each as long as the
    match, so the pass costs the text once plus a little per match, however many rules
    there are; the patterns of the halves are compiled when first asked.
    """

    def __init__(self, rules: Sequence[HarnessRule]) -> None:
        import re2

        compiled: list[Any] = []
        size = 0
        for rule in rules:
            compiled.append(compile_rule(rule))
            size += compiled[-1].programsize
            if size > RULES_SIZE:
                raise NormaliseProblem(
                    f"the harness's normalise rules are too large together: the first "
                    f"{len(compiled):,} of {len(rules):,} compile to more than {RULES_SIZE:,} "
                    "RE2 instructions; give fewer or simpler rules"
                )
        self._alternatives = [b"(?:" + c.pattern + b")" for c in compiled]
        self._placeholders = [
            _SURROGATE.sub("\ufffd", rule.placeholder).encode("utf-8") for rule in rules
        ]
        self._unions: dict[tuple[int, int], Any] = {}
        for number, one in enumerate(compiled):
            self._unions[(number, number + 1)] = one
        self._all: Any = None
        if rules:
            try:
                self._all = self._union(0, len(rules))
            except re2.error as exc:
                raise NormaliseProblem(
                    f"the harness's {len(rules):,} normalise rules are too large together for "
                    f"RE2 ({_said(exc)}); give fewer or simpler rules"
                ) from None

    def _union(self, lo: int, hi: int) -> Any:
        """Rules ``lo`` to ``hi - 1`` as one pattern (a smaller part of one that compiled)."""
        key = (lo, hi)
        if key not in self._unions:
            import re2

            pattern = b"|".join(self._alternatives[lo:hi])
            self._unions[key] = re2.compile(pattern, _options(RULES_MEMORY))
        return self._unions[key]

    def _which(self, data: bytes, start: int, end: int) -> int:
        """The first rule that matches ``data[start:end]`` exactly, in place."""
        lo, hi = 0, len(self._placeholders)
        while hi - lo > 1:
            middle = (lo + hi) // 2
            if self._union(lo, middle).fullmatch(data, start, end) is not None:
                hi = middle
            else:
                lo = middle
        return lo

    def apply(self, text: str) -> str:
        """``text`` with every match of a rule replaced by that rule's placeholder."""
        if self._all is None:
            return text
        data = text.encode("utf-8", errors="surrogatepass")
        pieces: list[bytes] = []
        done = 0
        for match in self._all.finditer(data):
            start, end = match.span()
            pieces += (data[done:start], self._placeholders[self._which(data, start, end)])
            done = end
        if not pieces:
            return text
        pieces.append(data[done:])
        return b"".join(pieces).decode("utf-8", errors="replace")


def _path_pattern(path: str) -> re.Pattern[str]:
    """``path`` as a whole path or a path's prefix: not ``/tmpfoo``, not ``/var/tmp``."""
    return re.compile(r"(?<![\w.~-])" + re.escape(path) + r"(?![\w.~-])")


def _literal(placeholder: str) -> Callable[[Any], str]:
    """A replacement that inserts ``placeholder`` as written (no group references)."""
    return lambda _match: placeholder


class Normaliser:
    """The rules, with the UUID numbering of one capture."""

    def __init__(self, paths: Sequence[tuple[str, str]], rules: Sequence[HarnessRule]) -> None:
        # longest first: a host path may contain a shorter one
        ordered = sorted(paths, key=lambda pair: -len(pair[0]))
        self._paths = [(_path_pattern(path), placeholder) for path, placeholder in ordered]
        self._rules = HarnessRules(rules)
        self._uuids: dict[str, str] = {}

    def _uuid(self, match: re.Match[str]) -> str:
        key = match.group().lower()
        if key not in self._uuids:
            self._uuids[key] = f"<uuid-{len(self._uuids) + 1}>"
        return self._uuids[key]

    def text(self, value: str) -> str:
        value = _SURROGATE.sub("\ufffd", value)
        value = UUID.sub(self._uuid, value)
        value = TIME.sub("<time>", value)
        value = ADDRESS.sub("<addr>", value)
        for pattern, placeholder in self._paths:
            value = pattern.sub(_literal(placeholder), value)
        return self._rules.apply(value)

    def value(self, value: Any) -> Any:
        """``value`` (JSON data) with every string and key normalised; a number is
        matched as its JSON text, and becomes the normalised text if a rule changed it
        (``time.time()`` recorded as a float is as volatile as a timestamp)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            written = json.dumps(value)
            changed = self.text(written)
            return value if changed == written else changed
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            out: Table = {}
            for key, item in value.items():
                new = self.text(key)
                if new in out:
                    raise NormaliseProblem(
                        f"two keys of one mapping both become {new!r} after normalisation; "
                        "record such values as a list of pairs instead"
                    )
                out[new] = self.value(item)
            return out
        return value
