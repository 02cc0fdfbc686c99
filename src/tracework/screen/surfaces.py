"""Surfaces a file is by its name, and the lines that make it one.

Agent-instruction files, git-hook managers, direnv and IDE run configurations,
build scripts (``setup.py``, a build backend, npm lifecycle scripts, ``build.rs``),
manifests and lock files, and the version ranges no lock file covers.  The
configurations whose commands are read one by one live in :mod:`.ci` and
:mod:`.platforms`.
"""

from __future__ import annotations

import json
import posixpath
import re

from tracework.screen.documents import clean
from tracework.screen.model import Command, Finding, Found, name_of, shown
from tracework.screen.pins import exact_requirement

AGENT_NAMES = frozenset(
    {
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
)
_HOOK_DIRS = (".husky/", ".githooks/")
_HOOK_FILES = frozenset(
    {".pre-commit-config.yaml", "lefthook.yml", "lefthook.yaml", ".lefthook.yml"}
)
MANIFESTS = frozenset(
    {
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
)
LOCKS = frozenset(
    {
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
        "bun.lock",
        "bun.lockb",
        "npm-shrinkwrap.json",
    }
)
# npm runs these itself on `npm install` in the package's folder (or when packing it)
_LIFECYCLE = re.compile(
    r'"(preinstall|install|postinstall|prepare|prepublish|prepublishOnly|prepack|postpack)"\s*:'
    r'\s*("(?:[^"\\\n]|\\.)*")?'
)
_ON_INSTALL = frozenset({"preinstall", "install", "postinstall", "prepare"})
_VSCODE_RUN = re.compile(
    r'"(python\.defaultInterpreterPath|python\.pythonPath|terminal\.integrated\.[^"]*|'
    r'task\.allowAutomaticTasks|runOn|command)"\s*:'
)
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(.*)$")
_BUILD_BACKEND = re.compile(r"^\s*build-backend\s*=")
_NPM_RANGE = re.compile(r'"[^"]+"\s*:\s*"(\^|~|>|\*|latest)')


def is_lock(name: str) -> bool:
    return name.lower() in LOCKS


def by_name(path: str) -> bool:
    """Whether ``path`` is a surface by its name alone (its content is then read)."""
    return bool(classify(path, [], True).findings) or name_of(path).lower() in (
        "settings.json",
        "package.json",
    )


def classify(path: str, lines: list[str], has_lock: bool, reason: str = "") -> Found:
    """What one file contributes by its name, at the lines that make it so; ``reason``
    says why no lock is beside it, when a ``.gitignore`` line says."""
    name = name_of(path)
    low = name.lower()
    head = (1, lines[0] if lines else "")
    found = Found()

    def add(category: str, kind: str, where: tuple[int, str]) -> None:
        found.findings.append(Finding(category, path, where[0], kind, shown(where[1])))

    # auto-run surfaces named by their place
    in_devcontainer = path.startswith(".devcontainer/") or "/.devcontainer/" in path
    if in_devcontainer and name != "devcontainer.json":
        add("auto-run", "file of a dev container configuration", head)
    if path.endswith(".vscode/settings.json"):
        for hit in _matching(lines, _VSCODE_RUN):
            add("auto-run", "editor setting that runs or picks an interpreter", hit)
    if low == ".envrc":
        add("auto-run", "direnv script, run on entering the folder", head)
    if "/.idea/runConfigurations/" in f"/{path}" or path.endswith(".idea/workspace.xml"):
        add("auto-run", "IDE run configuration", head)
    if path.startswith(_HOOK_DIRS) or low in _HOOK_FILES:
        add("auto-run", "git hook manager", head)

    # agent-directed instructions: data to read, never to follow
    if (
        low in AGENT_NAMES
        or "/.cursor/rules/" in f"/{path}"
        or (path.startswith(".github/instructions/") and low.endswith(".md"))
    ):
        add("agent-instructions", "agent-instruction file", head)

    # build-time execution points
    if low == "setup.py":
        add("build-time", "setup.py runs at install", head)
    if low == "pyproject.toml":
        for hit in _matching(lines, _BUILD_BACKEND):
            add("build-time", "build backend", hit)
    if low == "package.json":
        found += _lifecycle(path, lines)
    if low == "build.rs":
        add("build-time", "cargo build script", head)
    if low == "binding.gyp":
        add("build-time", "node-gyp native build", head)

    # dependency surfaces, and ranges no lock file covers
    if low in MANIFESTS or re.fullmatch(r"requirements[\w.-]*\.(txt|in)", low):
        add("dependencies", "manifest", head)
    if low in LOCKS:
        add("dependencies", "lock file", head)
    if not has_lock and re.fullmatch(r"requirements[\w.-]*\.txt", low):
        for n, text in enumerate(lines, start=1):
            requirement = text.split("#", 1)[0]
            if (
                _REQUIREMENT.match(requirement)
                and not text.lstrip().startswith("-")
                and not exact_requirement(requirement)
            ):
                add("unpinned", "requirement without an exact version", (n, text))
    if not has_lock and low == "package.json":
        kind = "npm range without a lock file" + (f" ({reason})" if reason else "")
        for hit in _matching(lines, _NPM_RANGE):
            add("unpinned", kind, hit)
    return found


def _matching(lines: list[str], pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    return [(n, text) for n, text in enumerate(lines, start=1) if pattern.search(text)]


def _lifecycle(path: str, lines: list[str]) -> Found:
    """npm lifecycle scripts: listed at their lines, and kept as the commands that
    ``npm install`` (or packing) runs, so the Makefile targets they call know it."""
    found = Found()
    for n, text in enumerate(lines, start=1):
        for match in _LIFECYCLE.finditer(text):
            script = match.group(1)
            found.findings.append(
                Finding("build-time", path, n, "npm lifecycle script", shown(text))
            )
            if match.group(2) is None:
                continue
            try:
                command = clean(json.loads(match.group(2)))
            except ValueError:
                continue
            on_install = script in _ON_INSTALL
            context = f"npm {'install' if on_install else 'pack or publish'} ({script} script)"
            found.commands.append(
                Command(path, n, command, context, posixpath.dirname(path), install=on_install)
            )
    return found
