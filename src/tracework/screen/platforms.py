"""Editor, container, agent-platform and deploy configurations: what each would run.

Each reader below knows one configuration format and the keys in it that run a
command, install something, or load code — a dev container's ``postCreateCommand``,
an editor task that runs when the folder opens, an MCP server's ``command``, a
Claude Code or Cursor hook, LangGraph's ``dockerfile_lines``, ``env`` and
``graphs``, a Dockerfile's ``RUN``, a compose service's ``command``, a Procfile, a
Vercel or Netlify build command — and reports each at its line.  What runs as
soon as a tool opens the folder is ``auto-run``; what a build or deploy runs is
``build-time``.  Commands go through :mod:`.commands`, so a ``curl … | sh`` in any
of them is named, and the task-file targets they call learn who calls them.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import Any

import re2

import tracework.screen.documents as docs
from tracework.screen.commands import (
    Piece,
    argv_pieces,
    command_findings,
    risky_lines,
    scalar_pieces,
)
from tracework.screen.model import Finding, Found, name_of, shown

Reader = Callable[[str, bytes | None, int, docs.Budget], Found]


def _at(lines: list[str], n: int) -> str:
    return shown(lines[n - 1]) if 0 < n <= len(lines) else ""


def _note(category: str, path: str, lines: list[str], node: Any, kind: str) -> Finding:
    n = docs.line(node)
    return Finding(category, path, n, kind, _at(lines, n))


def _unparsed(category: str, what: str, path: str, doc: docs.Document) -> Found:
    """A configuration the screen could not parse: said so, its risky lines still found."""
    found = Found(
        [
            Finding(
                category,
                path,
                doc.problem_line,
                f"{what}, {doc.problem}",
                _at(doc.lines, doc.problem_line),
            )
        ]
    )
    found.findings += risky_lines(path, doc.lines, category=category, what=what)
    return found


def _run(
    path: str,
    node: Any,
    lines: list[str],
    *,
    category: str,
    what: str,
    context: str,
    folder: str,
    plain: str | None = "runs a command",
) -> Found:
    """A command value in any of the shapes configurations use: a shell string, an
    argument list, or (dev containers) a mapping of named commands run in parallel —
    one level deep, so a mapping that is its own alias cannot loop."""
    values = [v for _, v in docs.pairs(node)] if docs.kind(node) == "mapping" else [node]
    found = Found()
    for value in values:
        if docs.kind(value) == "sequence":
            args = [
                (docs.line(i), _at(lines, docs.line(i)), docs.scalar(i) or "")
                for i in docs.items(value)
            ]
            pieces = argv_pieces(args)
        elif docs.scalar(value) is not None:
            pieces = scalar_pieces(value, lines)
        else:
            continue
        found += command_findings(
            pieces,
            path=path,
            category=category,
            what=what,
            context=context,
            folder=folder,
            plain=plain,
        )
    return found


# ---- dev containers, editors, agents' own tools (auto-run) ------------------------------

_DEVCONTAINER_COMMANDS = (
    "initializeCommand",
    "onCreateCommand",
    "updateContentCommand",
    "postCreateCommand",
    "postStartCommand",
    "postAttachCommand",
)


def _devcontainer(path: str, data: bytes | None, size: int, budget: docs.Budget) -> Found:
    doc = docs.read(data, size, budget, jsonc=True)
    what = "dev container configuration"
    if doc.problem is not None:
        return _unparsed("auto-run", what, path, doc)
    found = Found()
    root = doc.roots[0] if doc.roots else None
    for key, value in docs.pairs(root):
        if key in _DEVCONTAINER_COMMANDS:
            where = " on the host" if key == "initializeCommand" else ""
            found += _run(
                path,
                value,
                doc.lines,
                category="auto-run",
                what=f"dev container {key}{where}",
                context=f"the dev container's {key}",
                folder="",
            )
        elif key in ("dockerFile", "dockerfile", "dockerComposeFile", "image"):
            found.findings.append(
                _note("auto-run", path, doc.lines, value, f"dev container built from this {key}")
            )
        elif key == "build":
            for sub, node in docs.pairs(value):
                if sub == "dockerfile":
                    found.findings.append(
                        _note(
                            "auto-run",
                            path,
                            doc.lines,
                            node,
                            "dev container built from this Dockerfile",
                        )
                    )
        elif key == "features":
            for _, node in docs.pairs(value):
                found.findings.append(
                    _note(
                        "auto-run",
                        path,
                        doc.lines,
                        node,
                        "dev container feature: installs into the container",
                    )
                )
    if not found.findings:
        found.findings.append(Finding("auto-run", path, 1, what, _at(doc.lines, 1)))
    return found


def _vscode_tasks(path: str, data: bytes | None, size: int, budget: docs.Budget) -> Found:
    """Editor tasks: only those that run when the folder opens run by themselves."""
    doc = docs.read(data, size, budget, jsonc=True)
    if doc.problem is not None:
        return _unparsed("auto-run", "editor tasks", path, doc)
    found = Found()
    root = doc.roots[0] if doc.roots else None
    for task in docs.items(docs.get(root, "tasks")):
        run_on = docs.scalar(docs.get(docs.get(task, "runOptions"), "runOn"))
        command = docs.get(task, "command")
        if run_on != "folderOpen" or command is None:
            continue
        args = docs.items(docs.get(task, "args"))
        nodes = [command, *args]
        pieces = argv_pieces(
            [(docs.line(n), _at(doc.lines, docs.line(n)), docs.scalar(n) or "") for n in nodes]
        )
        found += command_findings(
            pieces,
            path=path,
            category="auto-run",
            what="editor task run when the folder opens",
            context="an editor task run when the folder opens",
            folder="",
        )
    return found


def _mcp_servers(root: Any) -> list[tuple[str, Any]]:
    servers = docs.get(root, "mcpServers") or docs.get(root, "servers")
    return docs.pairs(servers)


def _mcp(path: str, data: bytes | None, size: int, budget: docs.Budget) -> Found:
    """MCP client configurations: each server a client would start, or connect to."""
    doc = docs.read(data, size, budget, jsonc=True)
    what = "MCP server configuration"
    if doc.problem is not None:
        return _unparsed("auto-run", what, path, doc)
    found = Found()
    for root in doc.roots:
        found += _servers(path, root, doc.lines)
    if not found.findings:
        found.findings.append(Finding("auto-run", path, 1, what, _at(doc.lines, 1)))
    return found


def _servers(path: str, root: Any, lines: list[str]) -> Found:
    found = Found()
    for _, server in _mcp_servers(root):
        command = docs.get(server, "command")
        url = docs.get(server, "url") or docs.get(server, "serverUrl")
        if command is not None:
            nodes = [command, *docs.items(docs.get(server, "args"))]
            pieces = argv_pieces(
                [(docs.line(n), _at(lines, docs.line(n)), docs.scalar(n) or "") for n in nodes]
            )
            found += command_findings(
                pieces,
                path=path,
                category="auto-run",
                what="MCP server",
                context="an MCP client starting its server",
                folder="",
                plain="starts a program",
            )
        elif url is not None:
            found.findings.append(_note("auto-run", path, lines, url, "MCP server at a URL"))
        if docs.get(server, "env") is not None:
            found.findings.append(
                _note(
                    "auto-run",
                    path,
                    lines,
                    docs.get(server, "env"),
                    "MCP server environment variables",
                )
            )
    return found


def _agent_hooks(tool: str) -> Reader:
    """Claude Code's and Cursor's settings: hooks run commands on the agent's events."""

    def read(path: str, data: bytes | None, size: int, budget: docs.Budget) -> Found:
        doc = docs.read(data, size, budget, jsonc=True)
        if doc.problem is not None:
            return _unparsed("auto-run", f"{tool} settings", path, doc)
        found = Found()
        for root in doc.roots:
            for mapping in docs.mappings(
                (docs.get(root, "hooks"),) if docs.get(root, "hooks") else ()
            ):
                command = docs.get(mapping, "command")
                if docs.scalar(command) is not None:
                    found += _run(
                        path,
                        command,
                        doc.lines,
                        category="auto-run",
                        what=f"{tool} hook",
                        context=f"a {tool} hook",
                        folder="",
                    )
            status = docs.get(docs.get(root, "statusLine"), "command")
            if docs.scalar(status) is not None:
                found += _run(
                    path,
                    status,
                    doc.lines,
                    category="auto-run",
                    what=f"{tool} status line",
                    context=f"{tool}'s status line",
                    folder="",
                )
            for key in ("apiKeyHelper", "awsAuthRefresh", "awsCredentialExport"):
                if docs.scalar(docs.get(root, key)) is not None:
                    found += _run(
                        path,
                        docs.get(root, key),
                        doc.lines,
                        category="auto-run",
                        what=f"{tool} {key}",
                        context=f"{tool}'s {key}",
                        folder="",
                    )
            found += _servers(path, root, doc.lines)
        return found

    return read


def _gitpod(path: str, data: bytes | None, size: int, budget: docs.Budget) -> Found:
    """Gitpod runs each task's ``before``, ``init`` and ``command`` when a workspace starts."""
    doc = docs.read(data, size, budget)
    if doc.problem is not None:
        return _unparsed("auto-run", "Gitpod configuration", path, doc)
    found = Found()
    for root in doc.roots:
        for task in docs.items(docs.get(root, "tasks")):
            for key, value in docs.pairs(task):
                if key in ("before", "init", "command"):
                    found += _run(
                        path,
                        value,
                        doc.lines,
                        category="auto-run",
                        what=f"Gitpod task {key}",
                        context="a Gitpod workspace start",
                        folder="",
                    )
    return found


# ---- agent platforms, containers, deploys (build-time) ----------------------------------

_LANGGRAPH_NOTES = {
    "env": "LangGraph environment: a file or variables given to the graphs",
    "python_version": "LangGraph runtime version",
    "node_version": "LangGraph runtime version",
    "pip_config_file": "LangGraph pip configuration (it can name another package index)",
    "image_distro": "LangGraph base image",
    "base_image": "LangGraph base image",
}


def _langgraph(path: str, data: bytes | None, size: int, budget: docs.Budget) -> Found:
    """LangGraph's ``langgraph.json``: what its image build adds and installs, the
    environment it gives, and the code it loads (graphs, auth, HTTP app)."""
    doc = docs.read(data, size, budget, jsonc=True)
    if doc.problem is not None:
        return _unparsed("build-time", "LangGraph configuration", path, doc)
    found = Found()
    root = doc.roots[0] if doc.roots else None
    folder = posixpath.dirname(path)
    for key, value in docs.pairs(root):
        if key == "dockerfile_lines":
            for item in docs.items(value):
                found += _run(
                    path,
                    item,
                    doc.lines,
                    category="build-time",
                    what="LangGraph Dockerfile line",
                    context="LangGraph's image build",
                    folder=folder,
                    plain="added to the image build",
                )
        elif key == "dependencies":
            for item in docs.items(value) or [value]:
                found.findings.append(
                    _note(
                        "build-time",
                        path,
                        doc.lines,
                        item,
                        "LangGraph installs this dependency into its image",
                    )
                )
        elif key == "graphs":
            for _, graph in docs.pairs(value):
                found.findings.append(
                    _note("build-time", path, doc.lines, graph, "LangGraph loads this graph's code")
                )
        elif key in ("auth", "http", "store", "checkpointer", "webhooks"):
            for mapping in docs.mappings((value,)):
                for sub, node in docs.pairs(mapping):
                    if sub in ("path", "app") and docs.scalar(node):
                        found.findings.append(
                            _note(
                                "build-time",
                                path,
                                doc.lines,
                                node,
                                f"LangGraph loads this code ({key})",
                            )
                        )
        elif key in _LANGGRAPH_NOTES:
            found.findings.append(
                _note("build-time", path, doc.lines, value, _LANGGRAPH_NOTES[key])
            )
    if not found.findings:
        found.findings.append(
            Finding("build-time", path, 1, "LangGraph configuration", _at(doc.lines, 1))
        )
    return found


def _compose(path: str, data: bytes | None, size: int, budget: docs.Budget) -> Found:
    """docker compose: each service's ``command`` and ``entrypoint``, and its build."""
    doc = docs.read(data, size, budget)
    if doc.problem is not None:
        return _unparsed("build-time", "docker compose file", path, doc)
    found = Found()
    for root in doc.roots:
        for _, service in docs.pairs(docs.get(root, "services")):
            for key, value in docs.pairs(service):
                if key in ("command", "entrypoint"):
                    found += _run(
                        path,
                        value,
                        doc.lines,
                        category="build-time",
                        what=f"docker compose service {key}",
                        context="docker compose up",
                        folder=posixpath.dirname(path),
                    )
                elif key == "build":
                    found.findings.append(
                        _note(
                            "build-time", path, doc.lines, value, "docker compose builds this image"
                        )
                    )
    return found


def _vercel(path: str, data: bytes | None, size: int, budget: docs.Budget) -> Found:
    doc = docs.read(data, size, budget, jsonc=True)
    if doc.problem is not None:
        return _unparsed("build-time", "Vercel configuration", path, doc)
    found = Found()
    root = doc.roots[0] if doc.roots else None
    for key, value in docs.pairs(root):
        if key in ("buildCommand", "installCommand", "devCommand", "ignoreCommand"):
            found += _run(
                path,
                value,
                doc.lines,
                category="build-time",
                what=f"Vercel {key}",
                context=f"a Vercel deploy ({key})",
                folder=posixpath.dirname(path),
            )
    return found


def _smithery(path: str, data: bytes | None, size: int, budget: docs.Budget) -> Found:
    """Smithery's ``smithery.yaml``: how it builds and starts an MCP server."""
    doc = docs.read(data, size, budget)
    if doc.problem is not None:
        return _unparsed("build-time", "Smithery configuration", path, doc)
    found = Found()
    for mapping in docs.mappings(doc.roots):
        for key, value in docs.pairs(mapping):
            if key in ("dockerfile", "dockerBuildPath"):
                found.findings.append(
                    _note("build-time", path, doc.lines, value, "Smithery builds this image")
                )
            elif key in ("commandFunction", "command"):
                found.findings.append(
                    _note(
                        "build-time", path, doc.lines, value, "Smithery starts the server with this"
                    )
                )
    return found


_TOML_KEYS = {
    "netlify.toml": {"command": ("build-time", "Netlify build command", "a Netlify build")},
    ".replit": {
        "run": ("build-time", "Replit run command", "Replit's run button"),
        "onBoot": ("auto-run", "Replit command run when the workspace boots", "Replit's boot"),
        "build": ("build-time", "Replit build command", "a Replit deploy"),
    },
}
_TOML_LINE = re2.compile(r"""^\s*([A-Za-z]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)')\s*$""")


def _toml_commands(path: str, data: bytes | None, size: int, budget: docs.Budget) -> Found:
    """Netlify's and Replit's TOML: the command keys, read line by line (a one-line
    string is what these files hold; tomllib would not say at which line)."""
    keys = _TOML_KEYS[name_of(path)]
    found = Found()
    for n, text in enumerate(docs.lines_of(data), start=1):
        match = _TOML_LINE.match(text)
        if match is None or match.group(1) not in keys:
            continue
        category, what, context = keys[match.group(1)]
        command = match.group(2) if match.group(2) is not None else match.group(3)
        found += command_findings(
            [Piece(n, text, command)],
            path=path,
            category=category,
            what=what,
            context=context,
            folder=posixpath.dirname(path),
        )
    return found


_PROCFILE = re2.compile(r"^([A-Za-z0-9_-]+)\s*:\s*(.+)$")


def _procfile(path: str, data: bytes | None, size: int, budget: docs.Budget) -> Found:
    found = Found()
    for n, text in enumerate(docs.lines_of(data), start=1):
        match = _PROCFILE.match(text)
        if match:
            when = "run at every deploy" if match.group(1) == "release" else "run on deploy"
            found += command_findings(
                [Piece(n, text, match.group(2))],
                path=path,
                category="build-time",
                what=f"Procfile process ({when})",
                context="a Procfile process",
                folder=posixpath.dirname(path),
            )
    return found


_RUN = re2.compile(r"(?i)^\s*RUN\b(.*)$")
_FROM = re2.compile(r"(?i)^\s*FROM\s")


def _dockerfile(path: str, data: bytes | None, size: int, budget: docs.Budget) -> Found:
    """A Dockerfile: built from its ``FROM`` line; each ``RUN`` (with its continued
    lines) runs at build, and a risky one is named."""
    lines = docs.lines_of(data)
    found = Found()
    first = next((n for n, text in enumerate(lines, start=1) if _FROM.match(text)), 1)
    found.findings.append(
        Finding("build-time", path, first, "container image build", _at(lines, first))
    )
    n = 0
    while n < len(lines):
        match = _RUN.match(lines[n])
        if match is None:
            n += 1
            continue
        pieces = [Piece(n + 1, lines[n], match.group(1))]
        while pieces[-1].text.rstrip().endswith("\\") and n + 1 < len(lines):
            n += 1
            pieces.append(Piece(n + 1, lines[n], lines[n]))
        found += command_findings(
            pieces,
            path=path,
            category="build-time",
            what="Dockerfile RUN",
            context="a container image build",
            folder=posixpath.dirname(path),
            plain=None,
        )
        n += 1
    return found


# ---- which reader reads a path ----------------------------------------------------------
# (Python's re: a path may hold surrogates for bytes that are not UTF-8, which re2 refuses)

_DOCKERFILE = re.compile(r"(?i)(?:^|/)(?:dockerfile|containerfile)(?:\.[^/]*)?$|\.dockerfile$")
_COMPOSE = re.compile(r"(?:^|/)(?:docker-)?compose(?:\.[\w-]+)?\.ya?ml$")
_MCP_FILES = re.compile(
    r"(?:^|/)(?:\.?mcp\.json|mcp_config\.json|claude_desktop_config\.json)$"
    r"|(?:^|/)\.(?:cursor|vscode|gemini|roo|kiro/settings)/mcp\.json$|(?:^|/)\.gemini/settings\.json$"
)


def reader_for(path: str) -> Reader | None:
    """The reader of a configuration the screen knows, by its path."""
    name = name_of(path)
    if (
        name == "devcontainer.json" and ".devcontainer/" in f"/{path}"
    ) or name == ".devcontainer.json":
        return _devcontainer
    if path.endswith(".vscode/tasks.json") and (
        path == ".vscode/tasks.json" or "/.vscode/" in path
    ):
        return _vscode_tasks
    if path.endswith((".claude/settings.json", ".claude/settings.local.json")):
        return _agent_hooks("Claude Code")
    if path.endswith(".cursor/hooks.json"):
        return _agent_hooks("Cursor")
    if _MCP_FILES.search(path):
        return _mcp
    if name in (".gitpod.yml", ".gitpod.yaml"):
        return _gitpod
    if name == "langgraph.json":
        return _langgraph
    if name == "vercel.json":
        return _vercel
    if name in ("smithery.yaml", "smithery.yml"):
        return _smithery
    if name in _TOML_KEYS:
        return _toml_commands
    if name == "Procfile":
        return _procfile
    if _COMPOSE.search(path):
        return _compose
    if _DOCKERFILE.search(path):
        return _dockerfile
    return None
