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
5. then the harness's own rules (``capture.normalise(pattern, placeholder)``) in the
   order it gave them: RE2 syntax (linear time: a pattern cannot hang tracework), the
   placeholder inserted as it is written.

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


def compile_rule(rule: HarnessRule) -> Any:
    """The rule's RE2 pattern, or a clear problem (bad syntax, or one that matches the
    empty string, which would put the placeholder between every two characters)."""
    import re2  # only a harness that gives rules needs it (and its start-up)

    try:
        compiled = re2.compile(rule.pattern)
    except re2.error as exc:
        raise NormaliseProblem(
            f"normalise pattern {rule.pattern!r} is not valid RE2 ({exc}); RE2 has no "
            "back-references or look-arounds"
        ) from None
    if compiled.fullmatch("") is not None:
        raise NormaliseProblem(f"normalise pattern {rule.pattern!r} matches the empty string")
    return compiled


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
        self._rules = [(compile_rule(rule), rule.placeholder) for rule in rules]
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
        for compiled, placeholder in self._rules:
            value = compiled.sub(_literal(placeholder), value)
        return value

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
            out: dict[str, Any] = {}
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
