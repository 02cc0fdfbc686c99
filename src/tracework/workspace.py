"""Workspaces: the folder holding ``tracework.toml`` and its four subfolders."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tracework.errors import RegisterError, TraceworkError, WorkspaceNotFound
from tracework.fsio import write_atomic
from tracework.readers import DataError, load_toml

MARKER = "tracework.toml"
FOLDERS = ("sources", "registers", "notebooks", "reports")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

_MARKER_TEXT = """\
# tracework workspace: notebooks/, sources/, registers/ and reports/ beside this file.
[workspace]
version = 1

[limits]
# files larger than this (bytes) are registered by hash, streamed, but not quoted
quote_size_cap = 4194304

[render]
# seconds one notebook cell may run, and a whole render, before it is stopped
cell_timeout = 600
timeout = 1800
# bytes one cell output keeps in a report (its head and tail; the middle is cut, and said so)
output_cap = 1048576
"""

#: ``[render]`` settings when tracework.toml does not give them: a cell stuck in a loop
#: (or a pathological regular expression) fails its render in ten minutes instead of
#: running for good; an output of a megabyte is already more than a reader scrolls.
RENDER_DEFAULTS = {"cell_timeout": 600, "timeout": 1800, "output_cap": 1 << 20}

_GITIGNORE = """\
/sources/.mirrors/
/registers/.*.lock
/registers/.*.compiled.json
/reports/*
/captures/*/.*.lock
/captures/*/.*.staging/
/captures/*/failed-*/
.ipynb_checkpoints/
"""

#: Notebooks go into git without outputs: nbstripout, the field's filter, cleans them as
#: they are staged (and ``git diff`` compares them clean), whatever JupyterLab saved.
_GITATTRIBUTES = """\
/notebooks/*.ipynb filter=nbstripout
/notebooks/*.ipynb diff=ipynb
"""


def _ignore_outputs(path: Path) -> None:
    """Make git ignore mirrors, locks, compiled copies, reports and JupyterLab's
    checkpoints: a new ``.gitignore``, or the lines an existing one lacks appended (a
    workspace inside an analyst's repo)."""
    _complete(path, _GITIGNORE)


def in_repository(root: Path) -> bool:
    """Whether ``root`` is inside a git work tree (the analyst's own, not a subject's)."""
    try:
        inside = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
        )
    except OSError as exc:
        raise TraceworkError(
            f"cannot run git: {exc.strerror or exc}",
            hint="install git, then run `tracework init` again",
        ) from None
    return inside.returncode == 0 and inside.stdout.strip() == "true"


def make_repository(root: Path) -> str:
    """``git init`` a workspace that is in no repository, as ``uv init`` and ``cargo
    new`` do: registers, notebooks and their history belong under version control, and
    the nbstripout filter is set in a repository's config.  Says what was done."""
    if in_repository(root):
        return ""
    done = subprocess.run(["git", "init", "-q", str(root)], capture_output=True, text=True)
    if done.returncode != 0:
        raise TraceworkError(
            f"git init {root} failed: " + (done.stderr.strip().splitlines() or ["git failed"])[-1],
            hint="run `git init` there yourself, then `tracework init` again",
        )
    return f"git repository created: {root} (commit the workspace to keep its history)"


def strip_notebook_outputs(root: Path) -> str:
    """Set up nbstripout for the workspace's notebooks, and say what was done.

    ``.gitattributes`` names the filter (its missing lines appended); the filter itself
    is git configuration, which no committed file may set, so it is written into the
    local config of the repository holding the workspace — as ``nbstripout --install``
    would, with this Python.  Outside a repository (``init --no-git``), the message
    says exactly what to run."""
    _complete(root / ".gitattributes", _GITATTRIBUTES)
    git = ["git", "-C", str(root)]
    if not in_repository(root):
        return (
            "notebook outputs: .gitattributes names the nbstripout filter; to set it up, run "
            f"`git init {shlex.quote(str(root))}` and then `tracework init` there again"
        )
    clean = f"{shlex.quote(sys.executable)} -m nbstripout"
    for key, value in (
        ("filter.nbstripout.clean", clean),
        ("filter.nbstripout.smudge", "cat"),
        ("filter.nbstripout.required", "true"),
        ("diff.ipynb.textconv", f"{clean} -t"),
    ):
        done = subprocess.run(
            [*git, "config", "--local", key, value], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise TraceworkError(
                f"cannot set {key} in the git repository holding {root}: "
                + (done.stderr.strip().splitlines() or ["git failed"])[-1],
                hint="run `nbstripout --install` there once git can write its config",
            )
    return "notebook outputs: git strips them as notebooks are committed (nbstripout filter)"


def _complete(path: Path, lines: str) -> None:
    """Write ``lines`` to a new file, or append those an existing one lacks under
    ``# tracework``, its own line endings kept."""
    if not path.exists():
        write_atomic(path, lines)
        return
    raw = path.read_bytes()  # bytes: the file's own line endings stay as they are
    present = {line.strip() for line in raw.split(b"\n")}
    missing = [line for line in lines.encode().splitlines() if line not in present]
    if missing:
        eol = b"\r\n" if b"\r\n" in raw else b"\n"
        lead = b"" if not raw or raw.endswith(b"\n") else eol
        added = b"".join(line + eol for line in [b"# tracework", *missing])
        write_atomic(path, raw + lead + added)


def check_name(name: str, what: str) -> str:
    """Refuse names that could escape a folder or look like options."""
    if not NAME.fullmatch(name) or name.endswith((".yaml", ".toml", ".lock")):
        raise TraceworkError(
            f"'{name}' is not a valid {what} name",
            hint="use letters, digits, '.', '_' and '-', starting with a letter or digit",
        )
    return name


@dataclass(frozen=True)
class Workspace:
    """Paths of one workspace."""

    root: Path

    @property
    def quote_size_cap(self) -> int | None:
        """``[limits] quote_size_cap`` from tracework.toml: bytes above which files are
        hashed by streaming but not quoted (None: the default, 4 MiB)."""
        limits = self.settings().get("limits", {})
        cap = limits.get("quote_size_cap") if isinstance(limits, dict) else None
        if cap is None:
            return None
        if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
            raise TraceworkError(
                f"{self.root / MARKER}: limits.quote_size_cap must be a positive integer"
            )
        return cap

    @property
    def cooldown_days(self) -> int | None:
        """``[screen] cooldown_days`` from tracework.toml: the screen lists locked
        packages published this many days before the commit (None: the default, 7)."""
        section = self.settings().get("screen", {})
        days = section.get("cooldown_days") if isinstance(section, dict) else None
        if days is None:
            return None
        if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= 3650:
            raise TraceworkError(
                f"{self.root / MARKER}: screen.cooldown_days must be a whole number of days "
                f"from 1 to 3650, not {days!r}",
                hint="write e.g. cooldown_days = 7 under [screen], or remove it",
            )
        return days

    @property
    def cell_timeout(self) -> int:
        """``[render] cell_timeout``: seconds a notebook cell may run in a render."""
        return self._render_setting("cell_timeout", "seconds")

    @property
    def render_timeout(self) -> int:
        """``[render] timeout``: seconds a whole render may run its notebook."""
        return self._render_setting("timeout", "seconds")

    @property
    def output_cap(self) -> int:
        """``[render] output_cap``: bytes of one cell output a report keeps."""
        return self._render_setting("output_cap", "bytes")

    def _render_setting(self, key: str, unit: str) -> int:
        section = self.settings().get("render", {})
        if not isinstance(section, dict):
            raise TraceworkError(
                f"{self.root / MARKER}: [render] must be a table",
                hint=f"write it as a [render] section with {key} = <{unit}>",
            )
        value = section.get(key, RENDER_DEFAULTS[key])
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise TraceworkError(
                f"{self.root / MARKER}: render.{key} must be a positive whole number of {unit}",
                hint=f"the default is {key} = {RENDER_DEFAULTS[key]}",
            )
        return value

    def settings(self) -> dict[str, object]:
        """The parsed tracework.toml (a clear error when it is malformed)."""
        where = self.root / MARKER
        try:
            text = where.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError) as exc:
            raise TraceworkError(f"{where}: not valid TOML ({exc})") from None
        try:
            return load_toml(text)
        except DataError as exc:
            raise TraceworkError(f"{where}: {exc}") from None

    @property
    def sources(self) -> Path:
        return self.root / "sources"

    @property
    def mirrors(self) -> Path:
        return self.root / "sources" / ".mirrors"

    @property
    def registers(self) -> Path:
        return self.root / "registers"

    @property
    def notebooks(self) -> Path:
        return self.root / "notebooks"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def captures(self) -> Path:
        """``captures/``: each capture's ``NAME.toml`` and harness ``NAME.py``, and its
        results in ``NAME/<commit12>/`` (committed: they are evidence)."""
        return self.root / "captures"

    def subject_file(self, name: str) -> Path:
        return self.sources / f"{check_name(name, 'subject')}.toml"

    def mirror_dir(self, name: str) -> Path:
        return self.mirrors / f"{check_name(name, 'subject')}.git"

    def register_file(self, name_or_path: str) -> Path:
        """A register by name (``demo``) or by path (``registers/demo.yaml``, relative to
        the workspace root).  A path must name a ``.yaml`` file in this workspace's
        ``registers/``: reports, renders and the site find registers there, and a name
        like ``../x`` must never write outside it."""
        if "/" not in name_or_path and not name_or_path.endswith(".yml"):
            name = name_or_path.removesuffix(".yaml")  # demo, or demo.yaml
            return self.registers / f"{check_name(name, 'register')}.yaml"
        path = Path(name_or_path)
        path = path if path.is_absolute() else self.root / path
        if (
            path.suffix != ".yaml"
            or path.parent.resolve() != self.registers.resolve()
            or not NAME.fullmatch(path.stem)
        ):
            raise RegisterError(
                f"'{name_or_path}' is not a register of this workspace",
                hint="give its name (demo) or its path registers/NAME.yaml",
            )
        return self.registers / path.name

    @classmethod
    def find(cls, start: Path | None = None) -> Workspace:
        """The nearest workspace walking up from ``start`` (default: the current folder)."""
        here = (start or Path.cwd()).resolve()
        for folder in (here, *here.parents):
            if (folder / MARKER).is_file():
                return cls(folder)
        raise WorkspaceNotFound(
            f"no {MARKER} in {here} or any folder above it",
            hint="run `tracework init DIR` to make a workspace, then work inside it",
        )

    @classmethod
    def init(cls, root: Path) -> Workspace:
        """Create (or complete) a workspace at ``root``; existing files are kept."""
        root.mkdir(parents=True, exist_ok=True)
        if not (root / MARKER).exists():
            write_atomic(root / MARKER, _MARKER_TEXT)
        for folder in FOLDERS:
            (root / folder).mkdir(exist_ok=True)
        _ignore_outputs(root / ".gitignore")
        return cls(root.resolve())
