"""``tracework quote``: a span of a registered file, hashed into the register."""

from __future__ import annotations

import sys

import click

from tracework.cli.common import find_workspace, naming


def _line_range(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    first, sep, last = value.partition("-")
    try:
        a = int(first)
        b = int(last) if sep else a
    except ValueError:
        raise click.BadParameter("expected A-B, e.g. 10-14", param_hint="--lines") from None
    return a, b


@click.command()
@click.argument("register_name", metavar="REGISTER")
@click.argument("source_id", metavar="SRC-ID", required=False)
@click.argument("path", required=False)
@click.option("--lines", "lines", default=None, metavar="A-B", help="Line range, 1-based.")
@click.option("--symbol", default=None, metavar="QUALNAME", help="Python Class.method etc.")
@click.option("--match", default=None, metavar="TEXT", help="Substring on exactly one line.")
@click.option("--context", default=0, type=click.IntRange(0, 200), help="Lines around --match.")
@click.option("--id", "quote_id", default=None, help="Quote id (default derived from the span).")
@click.option("--replace", is_flag=True, help="Point the existing --id at this span instead.")
@click.option(
    "--remove", "remove_id", default=None, metavar="QUOTE-ID", help="Remove this quote instead."
)
def quote(
    register_name: str,
    source_id: str | None,
    path: str | None,
    lines: str | None,
    symbol: str | None,
    match: str | None,
    context: int,
    quote_id: str | None,
    replace: bool,
    remove_id: str | None,
) -> None:
    """Quote a span of PATH at the source's pin and add it to the register.

    The same span is always the same quote. --replace points an existing --id at a new
    span; --remove ID takes a quote out of the register unless a notebook cites it.
    """
    import tracework.register.store as reg
    from tracework.register.citations import remove_quote
    from tracework.register.quotes import QuoteRequest, add_quote
    from tracework.text import terminal_lines, visible_name

    ws = find_workspace()
    register_path = ws.register_file(register_name)
    if remove_id is not None:
        if source_id or path or lines or symbol or match or quote_id or replace:
            raise click.UsageError("--remove takes the register and the quote id alone")
        with naming(ws, register_path, None):
            gone = remove_quote(ws, register_path, remove_id)
        click.echo(
            f"removed {remove_id}  {visible_name(gone.path)}:{gone.lines[0]}-{gone.lines[1]}"
            f"  sha256 {gone.sha256}"
        )
        return
    if source_id is None or path is None:
        raise click.UsageError("give SRC-ID and PATH (or --remove QUOTE-ID)")
    if sum(x is not None for x in (lines, symbol, match)) != 1:
        raise click.UsageError("give exactly one of --lines, --symbol or --match")
    if context and match is None:
        raise click.UsageError("--context goes with --match (widen a --lines range instead)")
    request = QuoteRequest(_line_range(lines), symbol, match, context)
    with naming(ws, register_path, source_id):
        qid, q, replaced = add_quote(
            ws, register_path, source_id, path, request, quote_id, replace=replace
        )
    color = sys.stdout.isatty()
    if replaced is not None:
        click.echo(
            f"replaced {qid}: was {visible_name(replaced.path)}:{replaced.lines[0]}-"
            f"{replaced.lines[1]}  sha256 {replaced.sha256}"
        )
    click.echo(f"{qid}  {visible_name(q.path)}:{q.lines[0]}-{q.lines[1]}  sha256 {q.sha256}")
    if reg.load(register_path).git_source(source_id).files[q.path].kind == "lfs-pointer":
        click.echo("(a Git LFS pointer: the content it names is not in the repository)")
    click.echo(terminal_lines(q.text, q.lines[0], q.path, color=color))
