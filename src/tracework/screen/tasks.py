"""Task files (Makefiles, justfiles): which targets something found here runs.

A Makefile runs nothing by itself, so the screen says what would run a target:
every command the other readers found (a CI step, a dev container's
``postCreateCommand``, an npm ``postinstall``, a Dockerfile ``RUN``) and every build
script (``setup.py``, ``build.rs``, a hatch build hook) is searched for ``make`` and
``just`` calls; each call names a task file (by ``-C``/``-f``, a ``cd`` before it,
or where the command runs) and targets (or the default one).  A target is
reported with its callers, and so are the prerequisites it pulls in; "run by
install steps" is said only when a caller is one (``setup.py``, a build hook, an
npm install script).  A task file nothing calls keeps its default and install-like
targets, said to be run by hand.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass, field

import re2

from tracework.screen.model import Command, Finding, name_of, shown

MAKEFILES = ("GNUmakefile", "makefile", "Makefile")  # the order GNU make looks in
JUSTFILES = ("justfile", "Justfile", ".justfile")
_BY_HAND = frozenset({"install", "all", "build", "setup", "bootstrap", "deps", "dev", "init"})

_CALL = re2.compile(r"(?:^|[\s;&|(`'\"])(g?make|just)(?:$|[\s;&|)`'\"])")
_CD = re2.compile(r"(?:^|[\s;&|(])cd\s+([^\s;&|)]+)\s*(?:&&|;)")
_MAKE_RULE = re2.compile(r"^([^\s:=#][^:=#]*?)\s*::?(.*)$")  # `x := 1` is no rule: see parse
_MAKE_GOAL = re2.compile(r"^\s*\.DEFAULT_GOAL\s*:?=\s*(\S+)")
_JUST_RECIPE = re2.compile(r"^@?([A-Za-z_][A-Za-z0-9_-]*)(?:\s+[^:]*)?:(.*)$")
_JUST_KEYWORDS = frozenset({"set", "alias", "export", "import", "mod"})
# a build script calling make: "make install" or ["make", "install"] in its source
_SCRIPT_CALL = re2.compile(
    r"""(["'])(g?make(?:\s[^"'\n]*)?)["']|\[\s*["'](g?make)["']((?:\s*,\s*["'][^"'\n]*["'])*)"""
)
_BUILD_SCRIPTS = {
    "setup.py": "setup.py at install",
    "build.rs": "cargo's build script",
    "hatch_build.py": "the hatch build hook at install",
}


@dataclass
class TaskFile:
    """A task file's targets, each with its line, prerequisites and callers."""

    path: str
    runner: str
    lines: list[str]
    targets: dict[str, tuple[int, tuple[str, ...]]] = field(default_factory=dict)
    default: str | None = None


@dataclass(frozen=True)
class Call:
    """A task-runner call in a command: the task file it names and its targets."""

    file: str
    targets: tuple[str, ...]


def is_task_file(name: str) -> bool:
    return name in MAKEFILES or name in JUSTFILES


def is_build_script(name: str) -> bool:
    """Whether installing or building runs a file of this name (searched for ``make``)."""
    return name in _BUILD_SCRIPTS


def parse(path: str, lines: list[str]) -> TaskFile:
    """Targets (or recipes) by name: their line and prerequisites, and the default."""
    name = name_of(path)
    task = TaskFile(path, "make" if name in MAKEFILES else "just", lines)
    for n, text in enumerate(lines, start=1):
        if task.runner == "make":
            goal = _MAKE_GOAL.match(text)
            if goal:
                task.default = goal.group(1)
                continue
            rule = _MAKE_RULE.match(text)
            if rule is None or "$" in rule.group(1) or rule.group(2).startswith("="):
                continue
            prerequisites = tuple(p for p in rule.group(2).split(";")[0].split() if "$" not in p)
            for target in rule.group(1).split():
                if target.startswith(".") or "%" in target:
                    continue
                task.targets.setdefault(target, (n, prerequisites))
                if task.default is None:
                    task.default = target
        else:
            recipe = _JUST_RECIPE.match(text)
            if (
                recipe is None
                or recipe.group(1) in _JUST_KEYWORDS
                or recipe.group(2).startswith("=")
            ):
                continue
            prerequisites = tuple(p for p in recipe.group(2).split() if p.isidentifier())
            task.targets.setdefault(recipe.group(1), (n, prerequisites))
            task.default = task.default or recipe.group(1)
    return task


def _inside(folder: str, *parts: str) -> str | None:
    """``folder``/``parts`` relative to the root, or None when it leaves the tree or
    depends on a variable the screen cannot know (``$HOME``, ``${{ matrix.dir }}``)."""
    if any(p.startswith("/") or "$" in p or "~" in p for p in (folder, *parts)):
        return None
    joined = posixpath.normpath(posixpath.join(folder or ".", *parts))
    if joined == ".." or joined.startswith("../"):
        return None
    return "" if joined == "." else joined


def _tokens(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:  # an unbalanced quote: the call sits inside a quoted string
        return [t.strip("'\"") for t in text.split()]


def calls(command: Command, files: set[str]) -> list[Call]:
    """Every ``make``/``just`` call in ``command`` whose task file is in ``files``."""
    found: list[Call] = []
    text = command.command
    for match in _CALL.finditer(text):
        runner = "just" if match.group(1) == "just" else "make"
        cds = [m.group(1) for m in _CD.finditer(text[: match.start(1)])]
        folder = _inside(command.folder, *cds)
        args = _tokens(text[match.end(1) :].split("&&")[0].split(";")[0].split("|")[0])
        if folder is None:
            continue
        directory, named, targets = _arguments(runner, args)
        base = _inside(folder, directory) if directory else folder
        if base is None:
            continue
        candidates = [named] if named else list(MAKEFILES if runner == "make" else JUSTFILES)
        for candidate in candidates:
            where = _inside(base, candidate)
            if where is not None and where in files:
                found.append(Call(where, tuple(targets)))
                break
    return found


def _arguments(runner: str, args: list[str]) -> tuple[str, str, list[str]]:
    """The folder (``-C``), the file (``-f``) and the targets of a call's arguments."""
    directory, named, targets = "", "", []
    with_value = {"-C", "--directory", "-f", "--file", "--makefile", "-I", "-o", "-W", "-l"}
    if runner == "just":
        with_value = {"-f", "--justfile", "-d", "--working-directory", "--set", "--shell"}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith((">", "<", "2>", "1>", "&")):
            break
        value = None
        if arg in with_value and i + 1 < len(args):
            value, i = args[i + 1], i + 1
        elif arg.startswith("--") and "=" in arg:
            arg, value = arg.split("=", 1)
        elif runner == "make" and len(arg) > 2 and arg[:2] in ("-C", "-f"):
            arg, value = arg[:2], arg[2:]
        if value is not None:
            if arg in ("-C", "--directory", "-d", "--working-directory"):
                directory = value
            elif arg in ("-f", "--file", "--makefile", "--justfile"):
                named = value
        elif arg == "-j" and i + 1 < len(args) and args[i + 1].isdigit():
            i += 1
        elif not arg.startswith("-") and "=" not in arg:
            targets.append(arg)
            if runner == "just":
                break  # what follows a recipe are its arguments
        i += 1
    return directory, named, targets


def build_script_commands(path: str, lines: list[str]) -> list[Command]:
    """``make`` calls in a build script's source, as the commands installing runs."""
    name = name_of(path)
    context = _BUILD_SCRIPTS.get(name)
    if context is None:
        return []
    found = []
    for n, text in enumerate(lines, start=1):
        for match in _SCRIPT_CALL.finditer(text):
            if match.group(2):
                command = match.group(2)
            else:
                rest = [a.strip().strip("\"'") for a in match.group(4).split(",") if a.strip()]
                command = " ".join([match.group(3), *rest])
            found.append(Command(path, n, command, context, posixpath.dirname(path), install=True))
    return found


def findings(task_files: list[TaskFile], commands: list[Command]) -> list[Finding]:
    """Each task file's targets that something runs, with what runs them; for a file
    nothing calls, its default and install-like targets, run by hand."""
    by_path = {t.path: t for t in task_files}
    callers: dict[tuple[str, str], list[tuple[Command, str | None]]] = {}
    for command in commands:
        for call in calls(command, set(by_path)):
            task = by_path[call.file]
            for target in call.targets or ((task.default,) if task.default else ()):
                for reached, via in _closure(task, target):
                    callers.setdefault((task.path, reached), []).append((command, via))
    out: list[Finding] = []
    for task in task_files:
        label = "Makefile target" if task.runner == "make" else "just recipe"
        called = {t: c for (p, t), c in callers.items() if p == task.path}
        for target, found_by in sorted(called.items()):
            n = task.targets[target][0]
            out.append(_called(task, label, target, n, found_by))
        if called:
            continue
        for target, (n, _) in sorted(task.targets.items()):
            if target == task.default or target in _BY_HAND:
                out.append(
                    Finding(
                        "build-time",
                        task.path,
                        n,
                        f"{label} run by hand: nothing found here calls it",
                        shown(task.lines[n - 1]),
                    )
                )
    return out


def _closure(task: TaskFile, target: str) -> list[tuple[str, str | None]]:
    """``target`` and the prerequisites it pulls in, each with the target that pulled it."""
    if target not in task.targets:
        return []
    reached: dict[str, str | None] = {target: None}
    stack = [target]
    while stack:
        current = stack.pop()
        for prerequisite in task.targets[current][1]:
            if prerequisite in task.targets and prerequisite not in reached:
                reached[prerequisite] = current
                stack.append(prerequisite)
    return sorted(reached.items())


def _called(
    task: TaskFile, label: str, target: str, n: int, found_by: list[tuple[Command, str | None]]
) -> Finding:
    install = sorted({c.context for c, _ in found_by if c.install})
    other = sorted({c.context for c, _ in found_by if not c.install})
    parts = ["install steps: " + " and ".join(install)] if install else []
    parts += [" and ".join(other)] if other else []
    via = sorted({v for _, v in found_by if v is not None})
    kind = f"{label} run by " + "; and by ".join(parts)
    if via and all(v is not None for _, v in found_by):
        kind += " (as a prerequisite of " + ", ".join(via) + ")"
    run_by = tuple(sorted({f"{c.path}:{c.line}" for c, _ in found_by}))
    return Finding("build-time", task.path, n, kind, shown(task.lines[n - 1]), run_by)
