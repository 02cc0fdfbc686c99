"""What the screen counts as pinned: one exact version, never a range.

A requirement (``rich==13.7.1``) names one release; a range (``rich>=13``), a
wildcard (``rich==13.*``), a bare name and a direct reference to a branch each let
the release installed change without a commit of the subject.  The same judgment is
made of requirement files, ``pyproject.toml`` declarations and the packages an
install command names, each in its own syntax.  The patterns run on re2.
"""

from __future__ import annotations

import re2

# PEP 508: a name, extras, then a version specifier (maybe in parentheses) or `@ url`
_REQUIREMENT = re2.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")
_OPTIONS = re2.compile(r"\s+-.*$")
_EXACT_CLAUSE = re2.compile(r"^\s*===?\s*[A-Za-z0-9][A-Za-z0-9.+!_-]*\s*$")
# a bare release ("1.2.3", "2.0.0rc1"): exact in Poetry's syntax, and after `@` in npm's
_BARE_VERSION = re2.compile(r"^v?[0-9]+(?:\.[0-9]+)*(?:[A-Za-z0-9.+_-]*)$")


def exact_requirement(text: str) -> bool:
    """Whether a PEP 508 requirement pins one version: ``==V`` (not ``==V.*``) or
    ``===V``.  Markers (after ``;``) do not count; a direct reference does not pin."""
    match = _REQUIREMENT.match(text.split(";", 1)[0])
    if match is None:
        return False
    spec = _OPTIONS.sub("", match.group(3)).rstrip("\\ \t")  # a requirement file's `--hash`
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1]
    if spec.startswith("@"):
        return False
    return any(_EXACT_CLAUSE.match(clause) for clause in spec.split(","))


def exact_version(constraint: str) -> bool:
    """Whether a version constraint alone (Poetry's ``"1.2.3"``, ``"==1.2.3"``; npm's
    part after ``@``) names one release (``^1.2``, ``~1``, ``*``, ``>=1`` do not)."""
    text = constraint.strip()
    if text.startswith("=="):
        text = text.lstrip("=").strip()
    elif text.startswith("="):
        text = text[1:].strip()
    return bool(_BARE_VERSION.match(text)) and not any(
        part in ("x", "X", "*") for part in text.split(".")
    )


def exact_at(target: str) -> bool:
    """Whether ``name@version`` (npm, yarn, pnpm, bun, Poetry's ``add``, uv's tool
    syntax) names one release; ``@scope/name`` alone names none."""
    at = target.rfind("@")
    if at <= 0:
        return False
    return exact_version(target[at + 1 :])
