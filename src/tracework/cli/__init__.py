"""The ``tracework`` command: parse options, call the library, format the result.

Every :class:`~tracework.errors.TraceworkError` becomes one message on stderr and
exit code 2 here, in one place.  Check results exit 0 when everything holds and 1
otherwise.
"""

from __future__ import annotations

import click

from tracework.cli import captures, checks, quotes, registers, reports, screens, subjects
from tracework.cli.common import Cli
from tracework.version import __version__

__all__ = ["main"]


@click.group(cls=Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="tracework")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Show on stderr what tracework logs, debug included (the reasons behind fallbacks).",
)
@click.pass_context
def main(ctx: click.Context, verbose: bool) -> None:
    """Evidence-backed reports about other people's code."""
    from tracework.logs import show

    show(verbose)
    if verbose:  # for this command only: a process may run several (tests, notebooks)
        ctx.call_on_close(lambda: show(False))


for command in (
    subjects.init,
    subjects.subject,
    subjects.fetch,
    registers.register,
    quotes.quote,
    checks.check,
    checks.schema,
    reports.new,
    reports.author,
    reports.render,
    reports.preview,
    reports.rerender,
    reports.publish,
    screens.screen,
    captures.capture,
):
    main.add_command(command)
