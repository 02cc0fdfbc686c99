"""What every command shares: one message and exit code 2 for a library error, the
workspace, JSON on stdout, and naming the register an error is about."""

from __future__ import annotations

import errno
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click

from tracework.errors import TraceworkError


class Cli(click.Group):
    """A group that turns library errors into one clear message and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except TraceworkError as exc:
            fail(exc)
        except OSError as exc:  # the file system said no: a file where a folder goes, no
            if exc.errno == errno.EPIPE:  # permission, a read-only or full disk; but a reader
                raise  # that closed our stdout early is click's to handle (quietly, exit 1)
            fail(os_error(exc))
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)


def fail(exc: TraceworkError) -> NoReturn:
    from tracework.text import visible

    click.echo(f"tracework: error: {visible(str(exc))}", err=True)
    sys.exit(exc.exit_code)


def os_error(exc: OSError) -> TraceworkError:
    """An operating-system refusal (no permission, a file where a folder goes, a full
    disk) as one message naming the file, never a traceback."""
    if exc.filename is None:
        return TraceworkError(str(exc.strerror or exc))
    where = f"{exc.filename}" + (f" → {exc.filename2}" if exc.filename2 is not None else "")
    return TraceworkError(
        f"{exc.strerror or exc}: {where}", hint="check that the path exists, and can be written"
    )


def print_json(data: Any) -> None:
    """One JSON object on stdout: indented for a person, compact for a pipe."""
    from tracework.jsonout import dumps

    click.echo(dumps(data, indent=sys.stdout.isatty()))


def print_streamed_json(data: Mapping[str, object]) -> None:
    """:func:`print_json` of an object whose iterators are drawn as they are written
    (see :func:`tracework.jsonout.write_json`)."""
    from tracework.jsonout import write_json

    sys.stdout.flush()  # anything printed as text goes first
    write_json(sys.stdout.buffer, data, indent=sys.stdout.isatty())
    sys.stdout.buffer.flush()


@contextmanager
def naming(ws: Any, register_path: Path, source_id: str | None = None) -> Iterator[None]:
    """Name the register (and the source) in an error that does not name it already, so
    every message says which file and item it is about."""
    try:
        yield
    except TraceworkError as exc:
        where = register_path.relative_to(ws.root).as_posix()
        named = (register_path.name, f"register {register_path.stem}")
        if not any(name in exc.message for name in named):
            source = f" {source_id}" if source_id and source_id not in exc.message else ""
            exc.message = f"{where}{source}: {exc.message}"
        raise


def find_workspace() -> Any:
    from tracework.workspace import Workspace

    return Workspace.find()


def rich_console() -> Any:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)
