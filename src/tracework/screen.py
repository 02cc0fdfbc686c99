"""Screening a subject without running it: what in the checkout would run, or instruct.

Reads the tree and blobs at one commit and nothing else.  Each finding names its
path and the line that makes it one: auto-run surfaces (editor, container and hook
configurations, committed git repositories whose config git would obey),
agent-instruction files (shown as data, never followed), build-time execution
points, and dependency surfaces with unpinned ranges.  The result is deterministic:
findings are sorted by category, path and line.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath
from typing import Any

from .blobs import Mirror
from .hashing import display_text, is_binary

CATEGORIES = ("auto-run", "agent-instructions", "build-time", "dependencies", "unpinned")


@dataclass(frozen=True, order=True)
class Finding:
    """One thing the screen found: where, and the line that makes it one."""

    category: str
    path: str
    line: int
    kind: str
    text: str


_AGENT_NAMES = {
    "agents.md",
    "claude.md",
    "gemini.md",
    ".cursorrules",
    ".windsurfrules",
    ".clinerules",
    "copilot-instructions.md",
    "agent.md",
    "codex.md",
}
_MCP_NAMES = {".mcp.json", "mcp.json", "mcp_config.json"}
_HOOK_DIRS = (".husky/", ".githooks/")
_HOOK_FILES = {".pre-commit-config.yaml", "lefthook.yml", "lefthook.yaml", ".lefthook.yml"}
_CI = re.compile(
    r"(^|/)(\.github/workflows/[^/]+\.ya?ml|\.gitlab-ci\.yml|\.circleci/config\.yml|"
    r"azure-pipelines\.yml|Jenkinsfile|\.travis\.yml|bitbucket-pipelines\.yml)$"
)
_MANIFESTS = {
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "pipfile",
    "package.json",
    "cargo.toml",
    "go.mod",
    "gemfile",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "composer.json",
    "environment.yml",
}
_LOCKS = {
    "uv.lock",
    "poetry.lock",
    "pipfile.lock",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "cargo.lock",
    "go.sum",
    "gemfile.lock",
    "composer.lock",
    "pdm.lock",
    "bun.lockb",
    "npm-shrinkwrap.json",
}
_LIFECYCLE = re.compile(
    r'"(preinstall|install|postinstall|prepare|prepublish|prepublishOnly|prepack|postpack)"\s*:'
)
_VSCODE_RUN = re.compile(
    r'"(python\.defaultInterpreterPath|python\.pythonPath|terminal\.integrated\.[^"]*|'
    r'task\.allowAutomaticTasks|runOn|command)"\s*:'
)
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(.*)$")
# keys of a git config that make git run a command (or point it at a work tree)
_GIT_CONFIG_RUNS = re.compile(
    r"^\s*(fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy|worktree|"
    r"clean|smudge|process|textconv|command|driver)\s*=",
    re.IGNORECASE,
)


def _lines(data: bytes) -> list[str]:
    return display_text(data).split("\n")


def _first(lines: list[str], pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    return [(n, ln) for n, ln in enumerate(lines, start=1) if pattern.search(ln)]


def classify(path: str, data: bytes | None, has_lock: bool) -> list[Finding]:
    """Everything one file contributes to the screen."""
    name = PurePosixPath(path).name
    low = name.lower()
    lines = _lines(data) if data is not None and not is_binary(data[:8000]) else []
    head = (1, lines[0] if lines else "")
    found: list[Finding] = []

    def add(category: str, kind: str, where: tuple[int, str]) -> None:
        found.append(Finding(category, path, where[0], kind, where[1].strip()[:240]))

    # auto-run surfaces
    if path.startswith(".devcontainer/") or "/.devcontainer/" in path:
        add("auto-run", "dev container configuration", head)
    if path.endswith(".vscode/tasks.json"):
        hits = _first(lines, re.compile(r'"(command|runOn)"\s*:'))
        for hit in hits or [head]:
            add("auto-run", "editor task", hit)
    if path.endswith(".vscode/settings.json"):
        for hit in _first(lines, _VSCODE_RUN):
            add("auto-run", "editor setting that runs or picks an interpreter", hit)
    if low in _MCP_NAMES or path.endswith((".cursor/mcp.json", ".vscode/mcp.json")):
        hits = _first(lines, re.compile(r'"(command|url|args)"\s*:'))
        for hit in hits or [head]:
            add("auto-run", "MCP server configuration", hit)
    if low == ".envrc":
        add("auto-run", "direnv script, run on entering the folder", head)
    if "/.idea/runConfigurations/" in f"/{path}" or path.endswith(".idea/workspace.xml"):
        add("auto-run", "IDE run configuration", head)
    if path.startswith(_HOOK_DIRS) or low in _HOOK_FILES:
        add("auto-run", "git hook manager", head)

    # agent-directed instructions: data to read, never to follow
    if (
        low in _AGENT_NAMES
        or "/.cursor/rules/" in f"/{path}"
        or (path.startswith(".github/instructions/") and low.endswith(".md"))
    ):
        add("agent-instructions", "agent-instruction file", head)

    # build-time execution points
    if low == "setup.py":
        add("build-time", "setup.py runs at install", head)
    if low == "pyproject.toml":
        for hit in _first(lines, re.compile(r"^\s*build-backend\s*=")):
            add("build-time", "build backend", hit)
    if low == "package.json":
        for hit in _first(lines, _LIFECYCLE):
            add("build-time", "npm lifecycle script", hit)
    if low == "build.rs":
        add("build-time", "cargo build script", head)
    if low == "binding.gyp":
        add("build-time", "node-gyp native build", head)
    if low in ("makefile", "gnumakefile"):
        for hit in _first(lines, re.compile(r"^(install|all|build)\s*:")):
            add("build-time", "Makefile target run by install steps", hit)
    if _CI.search(path):
        add("build-time", "CI workflow", head)

    # dependency surfaces, and ranges no lock file covers
    if low in _MANIFESTS or re.fullmatch(r"requirements[\w.-]*\.(txt|in)", low):
        add("dependencies", "manifest", head)
    if low in _LOCKS:
        add("dependencies", "lock file", head)
    if not has_lock and re.fullmatch(r"requirements[\w.-]*\.txt", low):
        for n, ln in enumerate(lines, start=1):
            m = _REQUIREMENT.match(ln.split("#", 1)[0])
            if m and not ln.lstrip().startswith("-") and "==" not in m.group(3):
                add("unpinned", "requirement without an exact version", (n, ln))
    if not has_lock and low == "package.json":
        for hit in _first(lines, re.compile(r'"[^"]+"\s*:\s*"(\^|~|>|\*|latest)')):
            add("unpinned", "npm range without a lock file", hit)
    return found


@dataclass(frozen=True)
class Screen:
    """The screen of one commit."""

    commit: str
    findings: tuple[Finding, ...]
    files: int

    def counts(self) -> dict[str, int]:
        counted = Counter(f.category for f in self.findings)
        return {c: counted.get(c, 0) for c in CATEGORIES}

    def as_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "files": self.files,
            "counts": self.counts(),
            "items": [asdict(f) for f in self.findings],
        }


def embedded_repositories(paths: Iterable[str]) -> list[str]:
    """Folders of a tree that git would take for a repository of their own.

    A committed bare repository (``HEAD``, ``config``, ``objects/``, ``refs/``) is
    entered by any git command run inside it in a checkout — a shell prompt showing
    ``git status`` is enough — and its ``config`` can then run commands
    (``core.fsmonitor``, ``core.pager``, filters…).  Found from names only.
    """
    listed = set(paths)
    heads = sorted(p for p in listed if p == "HEAD" or p.endswith("/HEAD"))
    return [
        folder
        for folder in (head[: -len("HEAD")] for head in heads)
        if f"{folder}config" in listed
        and any(p.startswith(f"{folder}objects/") for p in listed)
        and any(p.startswith(f"{folder}refs/") for p in listed)
    ]


def _embedded_findings(folder: str, data: bytes | None) -> list[Finding]:
    kind = "embedded git repository: git run inside it obeys this config"
    lines = _lines(data) if data is not None and not is_binary(data[:8000]) else []
    hits = _first(lines, _GIT_CONFIG_RUNS) or [(1, lines[0] if lines else "")]
    return [Finding("auto-run", f"{folder}config", n, kind, ln.strip()[:240]) for n, ln in hits]


def screen(mirror: Mirror, commit: str) -> Screen:
    """Screen every path of the tree at ``commit``, reading only the blobs that matter."""
    tree = mirror.tree(commit)
    folders_with_lock = {
        str(PurePosixPath(p).parent) for p in tree if PurePosixPath(p).name.lower() in _LOCKS
    }
    # files whose findings depend on their content are read whatever classify says of an
    # empty body; the rest are read only when their name alone makes them a finding
    by_content = {"settings.json", "tasks.json", "makefile", "gnumakefile"}
    candidates = [
        p
        for p in tree
        if tree[p].kind == "file"
        and (PurePosixPath(p).name.lower() in by_content or classify(p, b"", True))
    ]
    wanted = sorted(set(candidates))
    embedded = [f for f in embedded_repositories(tree) if tree[f"{f}config"].kind == "file"]
    blobs = mirror.read_blobs(
        [*(tree[p].oid for p in wanted), *(tree[f"{f}config"].oid for f in embedded)]
    )
    findings: list[Finding] = []
    for path in wanted:
        blob = blobs[tree[path].oid]
        has_lock = str(PurePosixPath(path).parent) in folders_with_lock
        findings += classify(path, blob.data if blob.data is not None else blob.head, has_lock)
    for folder in embedded:
        blob = blobs[tree[f"{folder}config"].oid]
        findings += _embedded_findings(folder, blob.data if blob.data is not None else blob.head)
    order = {c: i for i, c in enumerate(CATEGORIES)}
    findings.sort(key=lambda f: (order[f.category], f.path, f.line, f.kind))
    return Screen(commit, tuple(findings), len(tree))


def screen_json(result: Screen) -> str:
    return json.dumps(result.as_json(), indent=2, sort_keys=True)
