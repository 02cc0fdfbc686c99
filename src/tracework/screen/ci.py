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
from dataclasses import dataclass, replace
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

# a configuration that holds uv to its lock everywhere (`env: UV_FROZEN: 1`, a key of its
# own: `UV_LOCKED=1 uv sync` holds that one command only)
_HELD = re2.compile(r"""(?i)\bUV_(?:LOCKED|FROZEN)['"]?\s*:\s*['"]?(?:1|true|yes|on)\b""")
#: How many levels above a command the screen looks for its job and step.
_LEVELS = 8
#: At most this many characters of a job's or step's name are shown.
LABEL_CAP = 80
# GitLab's top-level keys that are not jobs
_NOT_JOBS = frozenset({"default", "workflow", "variables", "include", "stages", "image"})

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
    held = any(_HELD.search(text) for text in doc.lines)
    for mapping, where in docs.mappings_at(doc.roots):
        folder = docs.scalar(docs.get(mapping, "working-directory")) or ("$" if defaults else "")
        step = ""
        for key, value in docs.pairs(mapping):
            if key in system.command_keys or key == "uses":
                step = step or step_label(mapping, where, system)
            if key in system.command_keys:
                for node in docs.items(value) or [value]:
                    if docs.scalar(node) is not None:
                        found += _command(path, node, doc.lines, folder, step, held)
            elif key == "uses" and system.name == "GitHub Actions" and docs.scalar(value):
                found.findings.append(replace(_uses(path, value, doc.lines), step=step))
    if not found.findings:
        found.findings.append(
            Finding("build-time", path, 1, f"{system.name} configuration", _first_line(doc.lines))
        )
    return found


def _command(path: str, node: Any, lines: list[str], folder: str, step: str, held: bool) -> Found:
    """One step's command; ``folder`` is where it runs (``$``: not known here, so no
    task file is said to be called by it)."""
    return command_findings(
        scalar_pieces(node, lines),
        path=path,
        category="build-time",
        what=WHAT,
        context=CONTEXT,
        folder=folder,
        step=step,
        held=held,
    )


def _cut(text: str) -> str:
    return " ".join(docs.clean(text).split())[:LABEL_CAP]


def _name(node: Any, *keys: str) -> str:
    for key in keys:
        text = docs.scalar(docs.get(node, key))
        if text:
            return _cut(text)
    return ""


def step_label(mapping: Any, where: docs.Where, system: System) -> str:
    """The job and step a command's mapping is in: ``job test, step 3 "tools"``.

    Read upward from the mapping, a few levels at most: an item of a ``steps:`` list
    is a step (named by its ``name:``, or Azure's ``displayName:``), a key of a
    ``jobs:`` mapping (or an item of a ``jobs:`` list, named by ``job:``) a job.  In a
    GitLab file a job is a top-level key.  Empty when neither is
    found; each name is cut at :data:`LABEL_CAP` characters.
    """
    chain = docs.upward(where, _LEVELS + 1)  # chain[0] is the mapping, at its key
    job = step = ""
    for i, (key, node) in enumerate(chain):
        parent = chain[i + 1][0] if i + 1 < len(chain) else None
        if not step and not job and isinstance(key, int) and parent == "steps":
            named = _name(node, "name", "displayName") or (_name(mapping, "name") if i else "")
            step = f"step {key + 1}" + (f' "{named}"' if named else "")
        elif not job and parent == "jobs":
            job = f"job {_name(node, 'job', 'name') or key + 1}" if isinstance(key, int) else ""
            job = job or f"job {_cut(str(key))}"
    if chain and not job and system.name == "GitLab CI" and len(chain) <= _LEVELS:
        top = chain[-1][0]
        if isinstance(top, str) and top not in _NOT_JOBS:
            job = f"job {_cut(top)}"
    return ", ".join(part for part in (job, step) if part)


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
        step = _JENKINS_STEP.search(text)
        if step:  # the command is the quoted string after `sh`
            found += command_findings(
                [Piece(n, text, text[step.end() :].rstrip(" \t)'\";"))],
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
