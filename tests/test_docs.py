"""The documentation: the tutorial runs as written, and the built site stands alone.

The tutorial (docs/tutorial.md) is executed block by block, in order, in an empty
folder: a fenced block titled with a path is a file to write, a block titled "a new
cell in notebooks/NAME.ipynb" is a cell added to that notebook before its
``wb.records()`` cell, and a ``console`` block is commands (``$ `` lines) each run
through bash with the output shown under it expected in what it prints (``…`` stands
for any text).  A command is expected to exit 0 unless its line ends with the comment
``# exit code N``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar

import nbformat
import pytest
from nbformat.v4 import new_code_cell

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(\w+)(?:[ \t]+title=\"([^\"]+)\")?[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
CELL_TITLE = re.compile(r"a new cell in (notebooks/[\w.-]+\.ipynb)")
EXIT = re.compile(r"#\s*exit code (\d+)\s*$")
# the subject's commits get fixed authors and dates, so the ids the page shows are stable
GIT_IDENTITY = {
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Quill Author",
    "GIT_AUTHOR_EMAIL": "author@quill.example",
    "GIT_COMMITTER_NAME": "Quill Author",
    "GIT_COMMITTER_EMAIL": "author@quill.example",
    "GIT_AUTHOR_DATE": "2026-03-02T09:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-03-02T09:00:00+00:00",
}


@dataclass
class Command:
    """One ``$`` line of a console block and the output the page shows for it."""

    line: str
    shown: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        found = EXIT.search(self.line)
        return int(found.group(1)) if found else 0


@dataclass
class Block:
    kind: str  # "file", "cell" or "console"
    title: str
    body: str
    commands: list[Command] = field(default_factory=list)


def tutorial_blocks(text: str) -> list[Block]:
    """The tutorial's executable blocks, in page order."""
    blocks = []
    for lang, title, body in FENCE.findall(text):
        if lang == "console":
            commands: list[Command] = []
            for line in body.splitlines():
                if line.startswith("$ "):
                    commands.append(Command(line[2:]))
                elif commands:
                    commands[-1].shown.append(line)
                else:
                    raise AssertionError(f"console block starts with output: {line!r}")
            blocks.append(Block("console", "", body, commands))
        elif title and CELL_TITLE.fullmatch(title):
            blocks.append(Block("cell", CELL_TITLE.fullmatch(title).group(1), body))  # type: ignore[union-attr]
        elif title and " " not in title:
            blocks.append(Block("file", title, body))
    return blocks


def shown_pattern(line: str) -> re.Pattern[str]:
    """A shown output line as a pattern over one printed line: ``…`` is any text."""
    return re.compile(".*".join(re.escape(part) for part in line.rstrip().split("…")))


def assert_shown(command: Command, printed: str) -> None:
    """Every line the page shows under a command is printed, in that order."""
    lines = [line.rstrip() for line in printed.splitlines()]
    at = 0
    for shown in command.shown:
        if shown.strip() == "…":
            continue
        pattern = shown_pattern(shown)
        for i in range(at, len(lines)):
            if pattern.fullmatch(lines[i]):
                at = i + 1
                break
        else:
            raise AssertionError(
                f"the tutorial shows {shown!r} under `$ {command.line}`, but it printed:\n{printed}"
            )


def add_cell(folder: Path, notebook: str, source: str) -> None:
    """Add a cell before the notebook's ``wb.records()`` cell, as the tutorial says."""
    path = folder / notebook
    nb = nbformat.read(path, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if c.source.strip() == "wb.records()")
    cell = new_code_cell(source.rstrip("\n"))
    cell["id"] = f"tutorial-{at}"
    nb.cells.insert(at, cell)
    nbformat.write(nb, path)


def test_tutorial_blocks_are_found() -> None:
    """The parser sees every kind of block the page has (a renamed title would make the
    tutorial test skip its cells silently)."""
    blocks = tutorial_blocks(TUTORIAL.read_text(encoding="utf-8"))
    kinds = [b.kind for b in blocks]
    assert kinds.count("file") == 3
    assert kinds.count("cell") == 3
    assert sum(len(b.commands) for b in blocks if b.kind == "console") >= 15
    assert all(b.commands for b in blocks if b.kind == "console")


@pytest.mark.slow
def test_tutorial_runs_as_written(tmp_path: Path) -> None:
    """Every command of the tutorial, in order, prints what the page shows; the cells
    render; the site is published."""
    folder = tmp_path / "tutorial"
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= GIT_IDENTITY | {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "COLUMNS": "100",
        "HOME": str(tmp_path / "home"),
    }
    cwd = folder
    notebook_for: dict[str, Path] = {}
    for block in tutorial_blocks(TUTORIAL.read_text(encoding="utf-8")):
        if block.kind == "file":
            target = folder / block.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.body, encoding="utf-8")
        elif block.kind == "cell":
            add_cell(cwd, block.title, block.body)
            notebook_for[block.title] = cwd
        for command in block.commands:
            script = f'cd "$1" || exit 99\n{command.line}\nstatus=$?\npwd > "$2"\nexit $status\n'
            state = tmp_path / "cwd"
            proc = subprocess.run(
                ["bash", "-c", script, "tutorial", str(cwd), str(state)],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            printed = proc.stdout + proc.stderr
            assert proc.returncode == command.exit_code, (
                f"`$ {command.line}` exited {proc.returncode}:\n{printed}"
            )
            assert_shown(command, printed)
            cwd = Path(state.read_text().strip())
    desk = folder / "desk"
    assert notebook_for == {"notebooks/pad.ipynb": desk}
    renders = sorted(p.name for p in (desk / "reports" / "pad").iterdir() if p.is_dir())
    assert renders == ["00634aa296a0", "b0855fcdc4ca"]
    newest = json.loads((desk / "reports/pad/b0855fcdc4ca/records.json").read_text())
    assert newest["drift"]["counts"]["changed"] == 1
    assert sorted(r["id"] for r in newest["records"]) == [
        "RT-ABS-disk",
        "RT-CMP-pad",
        "RT-RTE-note",
    ]
    assert newest["drift"]["broken_absences"] == ["RT-ABS-disk"]
    page = (desk / "reports/pad/b0855fcdc4ca/report.html").read_text(encoding="utf-8")
    assert "needs re-review" in page
    assert (desk / "reports/site/index.html").is_file()


def test_tutorial_check_fails_on_a_changed_output(tmp_path: Path) -> None:
    """A page that shows output a command does not print fails the comparison."""
    command = Command("tracework check pad", ["files: 2 verified; quotes: 2 verified", "ok"])
    assert_shown(command, "…table…\nfiles: 2 verified; quotes: 2 verified\nok\n")
    with pytest.raises(AssertionError, match="the tutorial shows"):
        assert_shown(command, "files: 1 changed, 1 verified; quotes: 2 verified\nNOT OK\n")
    with pytest.raises(AssertionError, match="the tutorial shows"):
        assert_shown(command, "ok\nfiles: 2 verified; quotes: 2 verified\n")


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation built as `make docs` builds it, with warnings as errors."""
    out = tmp_path_factory.mktemp("docs-site")
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    assert mkdocs, "mkdocs is in the docs dependency group"
    proc = subprocess.run(
        [mkdocs, "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=ROOT,
        env=os.environ | {"NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


class _References(HTMLParser):
    """Every URL a page loads (scripts, styles, images, frames, media) or links to."""

    LOADS: ClassVar[dict[str, str]] = {
        "script": "src",
        "img": "src",
        "iframe": "src",
        "source": "src",
        "embed": "src",
    }

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag in self.LOADS and values.get(self.LOADS[tag]):
            self.loads.append(values[self.LOADS[tag]])
        elif tag == "link" and values.get("href"):
            self.loads.append(values["href"])
        elif tag == "a" and values.get("href"):
            self.links.append(values["href"])


def _outside(url: str) -> bool:
    return bool(re.match(r"(?i)([a-z][a-z0-9+.-]*:|//)", url)) and not url.startswith("data:")


def test_site_requests_nothing_outside_itself(built_site: Path) -> None:
    """No page or style sheet loads anything from elsewhere (no CDN, font service or
    shim), and every local file a page loads or links to is in the site, so it works
    from file:// as from any static host."""
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) >= 20
    for page in pages:
        refs = _References()
        refs.feed(page.read_text(encoding="utf-8"))
        where = page.relative_to(built_site)
        assert not [u for u in refs.loads if _outside(u)], where
        assert 'class="mermaid"' not in page.read_text(encoding="utf-8"), where
        for url in refs.loads + [u for u in refs.links if not _outside(u)]:
            target = url.split("#")[0].split("?")[0]
            # only 404.html, served at any path by a static host, names files from the root
            base = built_site if target.startswith("/") else page.parent
            if target:
                assert (base / target.lstrip("/")).resolve().is_file(), f"{where}: {url}"
    for sheet in built_site.rglob("*.css"):
        text = sheet.read_text(encoding="utf-8")
        urls = re.findall(r"url\(\s*['\"]?([^'\")]+)", text) + re.findall(r"@import", text)
        assert not [u for u in urls if _outside(u) or u == "@import"], sheet


def test_reference_covers_the_code(built_site: Path) -> None:
    """The generated reference names every record kind, command, wb.* method, error class
    and JSON Schema the code has."""
    from tracework.cli import main
    from tracework.errors import TraceworkError
    from tracework.notebook.workbench import Workbench
    from tracework.records.kinds import KINDS

    def text(page: str) -> str:
        return (built_site / page).read_text(encoding="utf-8")

    assert not [p for p in built_site.rglob("*.html") if "<!-- generated:" in p.read_text()]
    records = text("reference/records.html")
    for kind in KINDS:
        assert kind.prefix in records, kind
        assert all(f"<code>{field}</code>" in records for field in kind.model_fields), kind
    cli = text("reference/cli.html")
    for name, command in main.commands.items():
        assert f"tracework {name}" in cli, name
        for sub in getattr(command, "commands", {}):
            assert f"tracework {name} {sub}" in cli, (name, sub)
    workbench = text("reference/workbench.html")
    public = [
        m for m in dir(Workbench) if not m.startswith("_") and callable(getattr(Workbench, m))
    ]
    assert public
    for method in public:
        assert f'id="tracework.notebook.workbench.Workbench.{method}"' in workbench, method
    errors = text("reference/exit-codes.html")
    import tracework.errors as error_module

    for name, cls in vars(error_module).items():
        if isinstance(cls, type) and issubclass(cls, TraceworkError):
            assert f"<code>{name}</code>" in errors, name
    schemas = text("reference/schemas.html")
    for schema in sorted((ROOT / "schemas").glob("*.json")):
        assert f'href="schemas/{schema.name}"' in schemas, schema.name
        published = built_site / "reference" / "schemas" / schema.name
        assert published.read_bytes() == schema.read_bytes()
