"""``tracework init``, ``subject add`` and ``fetch``: a workspace and the subjects it reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tracework.cli.common import find_workspace


@click.command()
@click.argument("directory", required=False, default=".", type=click.Path(file_okay=False))
@click.option(
    "--no-git", is_flag=True, help="Do not make a git repository of DIR when it is in none."
)
def init(directory: str, no_git: bool) -> None:
    """Make DIR (default: here) a workspace: tracework.toml and its four folders, in a git
    repository (made here when DIR is in none, unless --no-git)."""
    from tracework.workspace import Workspace, make_repository, strip_notebook_outputs

    ws = Workspace.init(Path(directory))
    click.echo(f"workspace ready at {ws.root}")
    made = "" if no_git else make_repository(ws.root)
    if made:
        click.echo(made)
    click.echo(strip_notebook_outputs(ws.root))


@click.group()
def subject() -> None:
    """Declare subjects: git repositories under analysis."""


@subject.command("add")
@click.argument("name")
@click.argument("url")
@click.option(
    "--track",
    default="HEAD",
    show_default=True,
    help="Branch to follow for new commits (a tag: refs/tags/NAME; HEAD: the default branch).",
)
@click.option(
    "--from",
    "source",
    default=None,
    metavar="PATH",
    help="Seed the mirror now from this local clone or bundle; URL stays the identity.",
)
def subject_add(name: str, url: str, track: str, source: str | None) -> None:
    """Write sources/NAME.toml for the repository at URL (https, ssh or a local path)."""
    from tracework.git.subjects import add_subject

    ws = find_workspace()
    subj = add_subject(ws, name, url, track)
    click.echo(f"subject {subj.name}: {subj.url} ({subj.kind}), tracking {subj.track}")
    if source is None:
        click.echo(f"next: tracework fetch {subj.name}")
    else:
        _fetched(ws, subj.name, source)


@click.command()
@click.argument("name")
@click.option(
    "--from",
    "source",
    default=None,
    metavar="PATH",
    help="Fetch from this local clone or bundle instead of the subject's URL.",
)
def fetch(name: str, source: str | None) -> None:
    """Create or update the bare mirror of subject NAME (the only command using the network)."""
    _fetched(find_workspace(), name, source)


def _fetched(ws: Any, name: str, source: str | None) -> None:
    """Fetch subject ``name`` (from ``source`` when given) and say what the mirror holds."""
    from tracework.git.subjects import fetch as do_fetch

    result = do_fetch(ws, name, source)
    verb = "created" if result.created else "updated"
    head = f", {result.head[:12]} at its tracked ref" if result.head else ""
    from tracework.text import visible_name

    origin = f" from {visible_name(source)}" if source is not None else ""
    click.echo(f"mirror {verb}{origin}: {result.mirror.relative_to(ws.root)}{head}")
    if result.removed_config:
        keys = ", ".join(visible_name(key) for key in result.removed_config)
        click.echo(f"mirror config rewritten; removed keys tracework never sets: {keys}")
