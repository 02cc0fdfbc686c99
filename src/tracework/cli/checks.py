"""``tracework check`` (every file and quote at a commit) and ``tracework schema``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click

from tracework.cli.common import find_workspace, naming, print_streamed_json
from tracework.cli.output import print_check


@click.command()
@click.argument("register_name", metavar="REGISTER")
@click.option("--at", "at", default=None, metavar="COMMIT", help="Report drift at this commit.")
@click.option("--source", "only", default=None, metavar="SRC-ID", help="Check one source only.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--record", is_flag=True, help="Append this check to the register's history.")
@click.option(
    "--date", default=None, metavar="YYYY-MM-DD", help="Date for --record (default today)."
)
def check(
    register_name: str,
    at: str | None,
    only: str | None,
    as_json: bool,
    record: bool,
    date: str | None,
) -> None:
    """Verify every registered file and quote (exit 0 all hold, 1 otherwise)."""
    if date is not None and not record:
        raise click.UsageError("--date goes with --record (the date of the recorded check)")
    with _collector_paused():
        import tracework.register.store as reg
        from tracework.drift.check import check_register, record_check

        ws = find_workspace()
        path = ws.register_file(register_name)
        with naming(ws, path, only):
            report = check_register(ws, reg.load_data(path), at=at, only=only)
            if record:
                record_check(path, report, date)
        if as_json:
            print_streamed_json(report.streamed_json())
        else:
            print_check(report)
    sys.exit(0 if report.ok else 1)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector for one command.

    A check builds tens of thousands of objects that all live until it ends, and
    forms no cycles among them; the collector would only re-scan them, again and
    again (about 5% of a large check's time).  They are frozen before it is enabled
    again, or its first pass would scan every one of them once more (a quarter of a
    second at 100,000 files).  Reference counting still frees them.
    """
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.enable()


@click.command()
@click.option(
    "--write",
    is_flag=True,
    help="Write every schema (register, records, history entry, manifest, batch outcome, "
    "check summary) as schemas/NAME.schema.json in the workspace.",
)
def schema(write: bool) -> None:
    """Print the register's JSON Schema (or write every schema), generated from the models."""
    from tracework.records.schemas import register_schema_text, schema_texts

    if write:
        from tracework.fsio import write_atomic

        folder = find_workspace().root / "schemas"
        for name, text in schema_texts().items():
            target = folder / f"{name}.schema.json"
            write_atomic(target, text)
            click.echo(f"wrote {target}")
    else:
        click.echo(register_schema_text(), nl=False)
