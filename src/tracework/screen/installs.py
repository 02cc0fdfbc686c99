"""Installs that no lock fixes, found in one shell command without running it.

A CI step that runs ``pip install pkg`` gets whatever release of ``pkg`` is newest
when it runs, whatever the subject's lock says; so does ``pip install -U``, a
``pip install -e .`` (the project's dependencies resolved afresh from its ranges),
``uv pip install -r pyproject.toml``, ``poetry update``, and an ``npm install`` that
may rewrite ``package-lock.json`` where ``npm ci`` holds to it.  Each is found by
reading the command's words: it is split into simple commands at ``;``, ``&``,
``|``, parentheses and backquotes, leading variable assignments and ``sudo``/``env``
are skipped, and the tool's own options are told from its arguments.  Words holding
``$`` (a variable, which the screen cannot know) are not judged.

Known tools: ``pip`` (and ``python -m pip``), ``uv`` (``uv pip``, ``sync``, ``lock``,
``add``, ``tool install``), ``pipx``, ``poetry``, ``pdm``, ``npm``, ``yarn``, ``pnpm``,
``bun``, ``gem``, ``cargo install`` and ``go install``.  A run of ``uv run`` (which
syncs the same way ``uv sync`` does) or ``npx`` is not an install step and is not
listed.  Linear in the command: re2 splits it, and each word is looked at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import re2

from tracework.screen.pins import exact_at, exact_requirement, exact_version

#: What each kind of install does, as a finding says it ("CI step " + this).
NO_VERSION = "installs a package without an exact version"
UPGRADE = "upgrades packages past the lock"
PROJECT = "installs a project, resolving its dependencies afresh"
MANIFEST = "installs a manifest's ranges afresh, not its lock"
NOT_HELD = {
    "npm": "installs with npm install, which may rewrite the lock (npm ci holds to it)",
    "uv": "syncs without --locked or --frozen (a lock out of date is resolved afresh)",
    "yarn": "installs without --frozen-lockfile or --immutable (the lock may be rewritten)",
    "pnpm": "installs with --no-frozen-lockfile (the lock may be rewritten)",
}
MEANINGS = (NO_VERSION, UPGRADE, PROJECT, MANIFEST, *NOT_HELD.values())

_SEGMENT = re2.compile(r"[^;&|()`\n]+")
_WORD = re2.compile(r"\S+")
_ASSIGNMENT = re2.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re2.compile(r"^(?:python[0-9.]*|py)$")
_PIP = re2.compile(r"^pip[0-9.]*$")
_PREFIXES = frozenset(
    {
        "sudo",
        "env",
        "time",
        "exec",
        "nohup",
        "command",
        "if",
        "while",
        "until",
        "then",
        "do",
        "else",
        "!",
        "{",
    }
)
_LOCKED_ENV = frozenset({"UV_LOCKED", "UV_FROZEN"})
_ARCHIVES = (".whl", ".tar.gz", ".tgz", ".zip", ".tar.bz2", ".gem", ".crate")
_VCS = ("git+", "hg+", "svn+", "bzr+", "git:", "github:", "gitlab:", "bitbucket:", "file:")
_MANIFESTS = frozenset({"pyproject.toml", "setup.py", "setup.cfg"})

_PIP_VALUED = frozenset(
    [
        "-r",
        "--requirement",
        "-c",
        "--constraint",
        "-e",
        "--editable",
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "-t",
        "--target",
        "--prefix",
        "--root",
        "-p",
        "--python",
        "--src",
        "--platform",
        "--python-version",
        "--implementation",
        "--abi",
        "--only-binary",
        "--no-binary",
        "--progress-bar",
        "--log",
        "--cache-dir",
        "--trusted-host",
        "--upgrade-strategy",
        "-C",
        "--config-settings",
        "--global-option",
        "--index",
        "--default-index",
        "--index-strategy",
        "--keyring-provider",
        "--resolution",
        "--prerelease",
        "--exclude-newer",
        "--override",
        "-b",
        "--build-constraint",
        "--extra",
        "--group",
        "-P",
        "--upgrade-package",
        "--reinstall-package",
        "--no-build-package",
        "--no-binary-package",
        "--report",
        "--python-platform",
        "--torch-backend",
        "--link-mode",
        "--config-file",
        "--directory",
        "--project",
        "--proxy",
        "--cert",
        "--client-cert",
        "--timeout",
        "--retries",
        "--exists-action",
    ]
)
_UV_VALUED = frozenset(
    [
        "--directory",
        "--project",
        "-p",
        "--python",
        "--cache-dir",
        "--config-file",
        "--color",
        "--group",
        "--optional",
        "--extra",
        "--rev",
        "--tag",
        "--branch",
        "--bounds",
        "--index",
        "--default-index",
        "--package",
        "--script",
        "-P",
        "--upgrade-package",
        "--with",
        "--with-editable",
        "--from",
        "--python-platform",
        "--no-install-package",
        "--only-group",
        "--no-group",
        "--exclude-newer",
        "--resolution",
        "--prerelease",
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "--link-mode",
        "-m",
        "--marker",
        "-r",
        "--requirements",
        "-c",
        "--constraints",
        "--allow-insecure-host",
        "--keyring-provider",
        "--index-strategy",
    ]
)
_NPM_VALUED = frozenset(
    [
        "--prefix",
        "-w",
        "--workspace",
        "--omit",
        "--include",
        "--tag",
        "--registry",
        "--cache",
        "--userconfig",
        "--loglevel",
        "--install-strategy",
        "--before",
    ]
)
_YARN_VALUED = frozenset(
    ["--cwd", "--modules-folder", "--cache-folder", "--registry", "--network-timeout", "--mutex"]
)
_PNPM_VALUED = frozenset(
    ["-C", "--dir", "--filter", "-F", "--registry", "--store-dir", "--reporter"]
)
_BUN_VALUED = frozenset(["--cwd", "--registry", "--cache-dir", "--backend", "-c", "--config"])
_GEM_VALUED = frozenset(
    ["-v", "--version", "-i", "--install-dir", "-n", "--bindir", "--source", "-s", "--platform"]
)
_CARGO_VALUED = frozenset(
    [
        "--version",
        "--vers",
        "--git",
        "--branch",
        "--tag",
        "--rev",
        "--path",
        "--root",
        "--index",
        "--registry",
        "--target",
        "--features",
        "-F",
        "--profile",
        "--target-dir",
        "-j",
        "--jobs",
        "--bin",
        "--example",
    ]
)
_GO_VALUED = frozenset(["-o", "-tags", "-ldflags", "-gcflags", "-mod", "-modfile"])
_POETRY_VALUED = frozenset(
    [
        "-G",
        "--group",
        "-E",
        "--extras",
        "--source",
        "--python",
        "--platform",
        "-C",
        "--directory",
        "-P",
        "--project",
    ]
)
_PDM_VALUED = frozenset(["-G", "--group", "-p", "--project", "-L", "--lockfile"])
_PIPX_VALUED = frozenset(
    ["--spec", "--python", "--pip-args", "--index-url", "--suffix", "--preinstall"]
)

Hit = tuple[int, str]


@dataclass(frozen=True)
class Word:
    """A word of the command and where it starts in it; quotes around it dropped."""

    at: int
    text: str


@dataclass
class Args:
    """A tool's arguments: the options given (by name, each with its values, if it
    takes one) and the other words, in order."""

    options: dict[str, list[Word]] = field(default_factory=dict)
    positional: list[Word] = field(default_factory=list)

    def has(self, *names: str) -> bool:
        return any(name in self.options for name in names)


def _split(words: list[Word], valued: frozenset[str]) -> Args:
    """Options from arguments: ``--name=value``, ``--name value`` and ``-x value`` when
    the option takes a value, ``-xvalue``, and short flags run together (``-qU``)."""
    args = Args()
    k = 0
    while k < len(words):
        word = words[k]
        text = word.text
        k += 1
        if text.startswith("--") and len(text) > 2:
            name, eq, value = text.partition("=")
            values = args.options.setdefault(name, [])
            if eq:
                values.append(Word(word.at + len(name) + 1, value))
            elif name in valued and k < len(words):
                values.append(words[k])
                k += 1
        elif text.startswith("-") and len(text) > 1 and text != "--":
            name = text[:2]
            if name in valued:
                values = args.options.setdefault(name, [])
                if len(text) > 2:
                    values.append(Word(word.at + 2, text[2:]))
                elif k < len(words):
                    values.append(words[k])
                    k += 1
            else:
                for flag in text[1:]:
                    args.options.setdefault(f"-{flag}", [])
        elif text != "--":
            args.positional.append(word)
    return args


def _base(text: str) -> str:
    return text.rpartition("/")[2].lower()


def _unknown(text: str) -> bool:
    """A word the screen cannot judge: a variable, or something only the shell knows."""
    return not text or "$" in text or text[0] in "{<>~"


def _is_path(text: str) -> bool:
    return text in (".", "..") or text.startswith((".", "/")) or "/" in text


def _is_elsewhere(text: str) -> bool:
    """A URL, a VCS reference or an archive: not a version range (the screen's risky
    patterns name an install from a URL)."""
    low = text.lower()
    return "://" in low or low.startswith(_VCS) or low.endswith(_ARCHIVES)


def _python_targets(targets: list[Word], *, deps: bool, at: Callable[[str], bool]) -> list[Hit]:
    hits: list[Hit] = []
    for word in targets:
        text = word.text
        if _unknown(text) or _is_elsewhere(text):
            continue
        if _is_path(text):
            if deps:
                hits.append((word.at, PROJECT))
        elif not (exact_requirement(text) or at(text)):
            hits.append((word.at, NO_VERSION))
    return hits


def _never(text: str) -> bool:
    return False


def _pip_install(tool: Word, words: list[Word]) -> list[Hit]:
    args = _split(words, _PIP_VALUED)
    if args.has("-c", "--constraint", "--override", "--require-hashes"):
        return []  # held to a constraints file, or to hashes
    hits: list[Hit] = []
    upgrade = args.has("-U", "--upgrade", "-P", "--upgrade-package")
    if upgrade:
        hits.append((tool.at, UPGRADE))  # which says more than that no version is named
    for file in [*args.options.get("-r", []), *args.options.get("--requirement", [])]:
        name = _base(file.text)
        if name in _MANIFESTS or name.endswith(".in"):
            hits.append((file.at, MANIFEST))
    editable = [*args.options.get("-e", []), *args.options.get("--editable", [])]
    deps = not args.has("--no-deps")
    targets = _python_targets([*editable, *args.positional], deps=deps, at=_never)
    return hits + [hit for hit in targets if not (upgrade and hit[1] == NO_VERSION)]


def _npm_targets(targets: list[Word]) -> list[Hit]:
    """npm-style targets (``name``, ``name@range``, ``@scope/name@1.2.3``); a folder or
    tarball of the subject, a URL or a git reference is not judged here."""
    hits: list[Hit] = []
    for word in targets:
        text = word.text
        if _unknown(text) or _is_elsewhere(text):
            continue
        if not text.startswith("@") and _is_path(text):  # "@scope/name" is a package
            continue
        if not exact_at(text):
            hits.append((word.at, NO_VERSION))
    return hits


def _after(words: list[Word], sub: Word) -> list[Word]:
    return [w for w in words if w.at > sub.at]


def _judge(tool: Word, name: str, words: list[Word], held: bool) -> list[Hit]:
    """The installs one tool invocation makes that no lock fixes."""
    if _PIP.match(name):
        args = _split(words, _PIP_VALUED)
        if args.positional and args.positional[0].text == "install":
            return _pip_install(tool, _after(words, args.positional[0]))
        return []
    if name == "uv":
        return _uv(tool, words, held)
    table: dict[str, Callable[[Word, list[Word]], list[Hit]]] = {
        "pipx": _pipx,
        "poetry": _poetry,
        "pdm": _pdm,
        "npm": _npm,
        "yarn": _yarn,
        "pnpm": _pnpm,
        "bun": _bun,
        "gem": _gem,
        "cargo": _cargo,
        "go": _go,
    }
    judge = table.get(name)
    return judge(tool, words) if judge is not None else []


def _first(words: list[Word], valued: frozenset[str]) -> tuple[Word | None, list[Word]]:
    """The tool's subcommand (its first argument) and the words after it."""
    args = _split(words, valued)
    if not args.positional:
        return None, []
    sub = args.positional[0]
    return sub, _after(words, sub)


def _uv(tool: Word, words: list[Word], held: bool) -> list[Hit]:
    sub, rest = _first(words, _UV_VALUED)
    if sub is None:
        return []
    verb = sub.text.lower()
    if verb == "pip":
        install, after = _first(rest, _PIP_VALUED)
        return _pip_install(tool, after) if install and install.text == "install" else []
    args = _split(rest, _UV_VALUED)
    upgrade = args.has("-U", "--upgrade", "-P", "--upgrade-package")
    if verb == "sync":
        if upgrade:
            return [(tool.at, UPGRADE)]
        if held or args.has("--locked", "--frozen"):
            return []
        return [(tool.at, NOT_HELD["uv"])]
    if verb == "lock":
        return [(tool.at, UPGRADE)] if upgrade else []
    if verb == "add":
        return _python_targets(args.positional, deps=False, at=_never)
    if verb == "tool" and args.positional and args.positional[0].text == "install":
        return _python_targets(args.positional[1:2], deps=False, at=exact_at)
    return []


def _pipx(tool: Word, words: list[Word]) -> list[Hit]:
    sub, rest = _first(words, _PIPX_VALUED)
    verb = sub.text.lower() if sub else ""
    if verb in ("upgrade", "upgrade-all", "reinstall-all"):
        return [(tool.at, UPGRADE)]
    if verb != "install":
        return []
    args = _split(rest, _PIPX_VALUED)
    specs = args.options.get("--spec", [])
    return _python_targets(specs or args.positional, deps=False, at=_never)


def _poetry(tool: Word, words: list[Word]) -> list[Hit]:
    sub, rest = _first(words, _POETRY_VALUED)
    verb = sub.text.lower() if sub else ""
    if verb in ("update", "up"):
        return [(tool.at, UPGRADE)]
    if verb == "add":
        args = _split(rest, _POETRY_VALUED)
        return _python_targets(args.positional, deps=False, at=exact_at)
    return []


def _pdm(tool: Word, words: list[Word]) -> list[Hit]:
    sub, rest = _first(words, _PDM_VALUED)
    verb = sub.text.lower() if sub else ""
    if verb in ("update", "up"):
        return [(tool.at, UPGRADE)]
    if verb == "add":
        return _python_targets(_split(rest, _PDM_VALUED).positional, deps=False, at=_never)
    return []


_NPM_INSTALL = frozenset(
    [
        "install",
        "i",
        "in",
        "ins",
        "inst",
        "insta",
        "instal",
        "isnt",
        "isnta",
        "isntal",
        "isntall",
        "add",
    ]
)


def _npm(tool: Word, words: list[Word]) -> list[Hit]:
    sub, rest = _first(words, _NPM_VALUED)
    verb = sub.text.lower() if sub else ""
    if verb in ("update", "up", "upgrade", "udpate"):
        return [(tool.at, UPGRADE)]
    if verb not in _NPM_INSTALL:
        return []
    targets = _split(rest, _NPM_VALUED).positional
    return _npm_targets(targets) if targets else [(tool.at, NOT_HELD["npm"])]


def _yarn(tool: Word, words: list[Word]) -> list[Hit]:
    sub, rest = _first(words, _YARN_VALUED)
    if sub is not None and sub.text == "global":
        sub, rest = _first(rest, _YARN_VALUED)
    verb = sub.text.lower() if sub else ""
    args = _split(rest, _YARN_VALUED)
    if verb in ("upgrade", "up", "upgrade-interactive"):
        return [(tool.at, UPGRADE)]
    if verb == "add":
        return _npm_targets(args.positional)
    if verb == "install" and not args.has("--frozen-lockfile", "--immutable"):
        return [(tool.at, NOT_HELD["yarn"])]
    return []


def _pnpm(tool: Word, words: list[Word]) -> list[Hit]:
    sub, rest = _first(words, _PNPM_VALUED)
    verb = sub.text.lower() if sub else ""
    args = _split(rest, _PNPM_VALUED)
    if verb in ("update", "up", "upgrade"):
        return [(tool.at, UPGRADE)]
    if verb == "add":
        return _npm_targets(args.positional)
    if verb in ("install", "i") and args.has("--no-frozen-lockfile"):
        return [(tool.at, NOT_HELD["pnpm"])]
    return []


def _bun(tool: Word, words: list[Word]) -> list[Hit]:
    sub, rest = _first(words, _BUN_VALUED)
    verb = sub.text.lower() if sub else ""
    if verb == "update":
        return [(tool.at, UPGRADE)]
    if verb in ("add", "a", "install", "i"):
        return _npm_targets(_split(rest, _BUN_VALUED).positional)
    return []


def _gem(tool: Word, words: list[Word]) -> list[Hit]:
    sub, rest = _first(words, _GEM_VALUED)
    if sub is None or sub.text != "install":
        return []
    args = _split(rest, _GEM_VALUED)
    if args.has("-v", "--version"):
        return []
    return [
        (word.at, NO_VERSION)
        for word in args.positional
        if not (_unknown(word.text) or _is_elsewhere(word.text) or _is_path(word.text))
        and not exact_version(word.text.partition(":")[2])
    ]


def _cargo(tool: Word, words: list[Word]) -> list[Hit]:
    sub, rest = _first(words, _CARGO_VALUED)
    if sub is None or sub.text != "install":
        return []
    args = _split(rest, _CARGO_VALUED)
    if not args.has("--version", "--vers", "--git", "--path"):
        loose = [w for w in args.positional if not _unknown(w.text) and not exact_at(w.text)]
        if loose:
            return [(word.at, NO_VERSION) for word in loose]
    return [] if args.has("--locked") else [(tool.at, PROJECT)]


def _go(tool: Word, words: list[Word]) -> list[Hit]:
    sub, rest = _first(words, _GO_VALUED)
    if sub is None or sub.text != "install":
        return []
    return [
        (word.at, NO_VERSION)
        for word in _split(rest, _GO_VALUED).positional
        if "@" in word.text and not _unknown(word.text) and not exact_at(word.text)
    ]


def _segments(command: str) -> list[list[Word]]:
    """The command's simple commands, each as its words."""
    out = []
    for segment in _SEGMENT.finditer(command):
        base = segment.start()
        words = []
        for word in _WORD.finditer(segment.group(0)):
            text = word.group(0)
            stripped = text.strip("'\"")
            words.append(Word(base + word.start() + text.find(stripped[:1] or text), stripped))
        if words:
            out.append(words)
    return out


def unlocked(command: str, *, held: bool = False) -> list[Hit]:
    """Where in ``command`` each install that no lock fixes starts, and what it does.

    ``held``: the configuration holds uv to its lock (``UV_LOCKED`` or ``UV_FROZEN``
    set in it), so a plain ``uv sync`` is not listed.
    """
    hits: list[Hit] = []
    for words in _segments(command):
        i, env = 0, set()
        while i < len(words):
            text = words[i].text
            if _ASSIGNMENT.match(text):
                env.add(text.partition("=")[0])
            elif text in _PREFIXES:
                while i + 1 < len(words) and words[i + 1].text.startswith("-"):
                    i += 1
            else:
                break
            i += 1
        if i >= len(words):
            continue
        tool, rest = words[i], words[i + 1 :]
        name = _base(tool.text)
        if _PYTHON.match(name) and len(rest) >= 2 and rest[0].text == "-m":
            tool, name, rest = rest[1], _base(rest[1].text), rest[2:]
        hits += _judge(tool, name, rest, held or bool(env & _LOCKED_ENV))
    return sorted(set(hits))
