"""The ``tracework`` command: parse options, call the library, format the result.

Every :class:`~tracework.errors.TraceworkError` becomes one message on stderr and
exit code 2 here, in one place.  Check results exit 0 when everything holds and 1
otherwise.  The program itself is :func:`run`: :data:`main`, then out at once.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

import click

from tracework.cli import captures, checks, quotes, registers, reports, screens, subjects
from tracework.cli.common import Cli
from tracework.version import __version__

__all__ = ["main", "run"]


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


def run() -> NoReturn:
    """The ``tracework`` program (and ``python -m tracework``): :data:`main`, then the
    process ends without tearing the interpreter down.

    A render leaves over a thousand modules loaded (nbconvert, Jinja, the Jupyter stack);
    unloading them and collecting their objects took a fifth of a second after the work
    was done.  Nothing needs it once the exit handlers have run (they flush the logs,
    stop the kernels and pools) and the standard streams are flushed.  While a thread of
    the command still runs, the exit is the interpreter's own: it waits for that thread.
    """
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    else:  # pragma: no cover - click's main always exits
        code = 0
    if threading.active_count() > 1:
        sys.exit(code)
    status = code if isinstance(code, int) else 0 if code is None else 1
    if not isinstance(code, int | None):
        print(code, file=sys.stderr)  # what sys.exit does with a message
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a reader that closed our stdout: the interpreter's own exit says so
        sys.exit(status)
    os._exit(status)
