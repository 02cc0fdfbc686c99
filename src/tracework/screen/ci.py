"""CI configurations: each step's command at its own line, and the actions it uses.

A workflow is parsed (see :mod:`.documents`) and every mapping in it is looked at
for the keys its CI system runs as shell commands — ``run:`` for GitHub Actions
and CircleCI, ``script:`` and friends for GitLab, Bitbucket, Azure and Travis.
Each is reported at its first command line, or at the line of a risky command in
it (:mod:`.commands`).  A GitHub ``uses:`` runs someone else's code: pinned to a
full commit id it is a build-time point; at a tag or branch (which its owner can
move) it is ``unpinned``.  A file that cannot be parsed is said to be so, and its
lines are still searched for risky commands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import re2

import tracework.screen.documents as docs
from tracework.screen.commands import Piece, command_findings, risky_lines, scalar_pieces
from tracework.screen.model import Finding, Found, shown


@dataclass(frozen=True)
class System:
    """A CI system: what its files are called and which keys it runs as commands.

    Paths are matched with Python's ``re`` (re2 cannot take the surrogates that stand
    for the bytes of a name that is not UTF-8); the patterns are anchored and short.
    """

    name: str
    pattern: Any
    command_keys: frozenset[str]


SYSTEMS = (
    System(
        "GitHub Actions",
        re.compile(r"(?:^|/)(?:\.github/workflows/[^/]+\.ya?ml|action\.ya?ml)$"),
        frozenset({"run"}),
    ),
    System(
        "GitLab CI",
        re.compile(r"(?:^|/)\.gitlab-ci\.ya?ml$|^\.gitlab/ci/[^/]+\.ya?ml$"),
        frozenset({"script", "before_script", "after_script"}),
    ),
    System("CircleCI", re.compile(r"^\.circleci/config\.ya?ml$"), frozenset({"run", "command"})),
    System(
        "Azure Pipelines",
        re.compile(r"(?:^|/)azure-pipelines\.ya?ml$"),
        frozenset({"script", "bash", "pwsh", "powershell"}),
    ),
    System(
        "Bitbucket Pipelines",
        re.compile(r"^bitbucket-pipelines\.ya?ml$"),
        frozenset({"script", "after-script"}),
    ),
    System(
        "Travis CI",
        re.compile(r"^\.travis\.ya?ml$"),
        frozenset(
            {
                "before_install",
                "install",
                "before_script",
                "script",
                "after_success",
                "after_failure",
                "after_script",
                "before_deploy",
                "after_deploy",
            }
        ),
    ),
)
_JENKINS = re.compile(r"(?:^|/)Jenkinsfile$")
_JENKINS_STEP = re2.compile(r"^\s*(?:sh|bat|powershell|pwsh)\b\s*\(?\s*(?:script\s*:\s*)?['\"]")
_FULL_SHA = re2.compile(r"^[0-9a-f]{40}$")
_DIGEST = re2.compile(r"@sha256:[0-9a-f]{64}$")

WHAT = "CI step"
CONTEXT = "a CI step"


def system_of(path: str) -> System | None:
    return next((s for s in SYSTEMS if s.pattern.search(path)), None)


def is_ci(path: str) -> bool:
    """Whether the screen reads ``path`` as a CI configuration."""
    return system_of(path) is not None or bool(_JENKINS.search(path))


def read(path: str, data: bytes | None, size: int, budget: docs.Budget) -> Found:
    """Everything a CI file contributes: its commands, its actions, or why it was not
    parsed."""
    if _JENKINS.search(path):
        return _jenkins(path, docs.lines_of(data))
    system = system_of(path)
    assert system is not None
    doc = docs.read(data, size, budget)
    if doc.problem is not None:
        return _unparsed(path, doc)
    found = Found()
    # a `defaults: run: working-directory:` moves every step without one of its own;
    # which steps it covers is not worked out, so their folder is left unknown
    defaults = any(
        docs.get(docs.get(docs.get(m, "defaults"), "run"), "working-directory") is not None
        for m in docs.mappings(doc.roots)
    )
    for mapping in docs.mappings(doc.roots):
        folder = docs.scalar(docs.get(mapping, "working-directory")) or ("$" if defaults else "")
        for key, value in docs.pairs(mapping):
            if key in system.command_keys:
                for node in docs.items(value) or [value]:
                    if docs.scalar(node) is not None:
                        found += _command(path, node, doc.lines, folder)
            elif key == "uses" and system.name == "GitHub Actions" and docs.scalar(value):
                found.findings.append(_uses(path, value, doc.lines))
    if not found.findings:
        found.findings.append(
            Finding("build-time", path, 1, f"{system.name} configuration", _first_line(doc.lines))
        )
    return found


def _command(path: str, node: Any, lines: list[str], folder: str) -> Found:
    """One step's command; ``folder`` is where it runs (``$``: not known here, so no
    task file is said to be called by it)."""
    return command_findings(
        scalar_pieces(node, lines),
        path=path,
        category="build-time",
        what=WHAT,
        context=CONTEXT,
        folder=folder,
    )


def _uses(path: str, node: Any, lines: list[str]) -> Finding:
    """A ``uses:`` entry: a local action, or someone else's, pinned to a commit or not."""
    target = (docs.scalar(node) or "").strip()
    n = docs.line(node)
    text = shown(lines[n - 1]) if n - 1 < len(lines) else target
    if target.startswith("./"):
        return Finding("build-time", path, n, "CI step runs an action of this repository", text)
    if target.startswith("docker://"):
        if _DIGEST.search(target):
            return Finding("build-time", path, n, "CI step runs a container pinned by digest", text)
        return Finding(
            "unpinned", path, n, "CI container image not pinned by digest (a tag can move)", text
        )
    ref = target.rpartition("@")[2] if "@" in target else ""
    if _FULL_SHA.fullmatch(ref):
        return Finding("build-time", path, n, "CI action pinned to a full commit id", text)
    return Finding(
        "unpinned",
        path,
        n,
        "CI action not pinned to a full commit id (a tag or branch can move)",
        text,
    )


def _unparsed(path: str, doc: docs.Document) -> Found:
    """A file the screen could not parse: said so, and its risky lines still found."""
    head = shown(doc.lines[doc.problem_line - 1]) if doc.problem_line - 1 < len(doc.lines) else ""
    found = Found(
        [Finding("build-time", path, doc.problem_line, f"CI configuration, {doc.problem}", head)]
    )
    found.findings += risky_lines(path, doc.lines, category="build-time", what=WHAT)
    return found


def _jenkins(path: str, lines: list[str]) -> Found:
    """A Jenkinsfile is Groovy, not parsed: its ``sh``/``bat`` steps found line by line."""
    found = Found()
    for n, text in enumerate(lines, start=1):
        if _JENKINS_STEP.search(text):
            found += command_findings(
                [Piece(n, text, text)],
                path=path,
                category="build-time",
                what="Jenkins step",
                context="a Jenkins step",
                folder="",
            )
    if not found.findings:
        found.findings.append(
            Finding("build-time", path, 1, "Jenkins pipeline", _first_line(lines))
        )
    return found


def _first_line(lines: list[str]) -> str:
    return shown(lines[0]) if lines else ""
