"""``tracework screen``: what a checkout would run on install, import or a tool's start."""

from __future__ import annotations

import click

from tracework.cli.common import find_workspace, print_json
from tracework.cli.output import print_screen


@click.command()
@click.argument("subject_name", metavar="SUBJECT")
@click.option("--commit", required=True, help="Commit to screen (hex id or unique prefix).")
@click.option(
    "--cooldown-days",
    type=click.IntRange(1, 3650),
    default=None,
    help="List locked packages published this many days before the commit "
    "(default: [screen] cooldown_days in tracework.toml, else 7).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def screen(subject_name: str, commit: str, cooldown_days: int | None, as_json: bool) -> None:
    """Screen a subject at a commit without running anything: what would run or instruct."""
    from tracework.git.subjects import open_mirror
    from tracework.screen import DEFAULT_DAYS
    from tracework.screen import screen as do_screen

    ws = find_workspace()
    days = cooldown_days or ws.cooldown_days or DEFAULT_DAYS
    mirror = open_mirror(ws, subject_name)
    result = do_screen(mirror, mirror.resolve_commit(commit), cooldown_days=days)
    if as_json:
        print_json({"subject": subject_name, **result.as_json()})
        return
    print_screen(subject_name, result)
