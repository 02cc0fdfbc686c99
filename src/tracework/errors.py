"""One error hierarchy for the whole workbench.

Every problem caused by input (a bad argument, a malformed file, a commit that is
not in the mirror) is a :class:`TraceworkError`.  The CLI maps them to one message
and exit code 2 in a single place; the library never calls ``sys.exit``.
"""

from __future__ import annotations

from typing import Any, Literal

#: Where the user is: on the command line, or in a notebook cell.
Interface = Literal["cli", "notebook"]


def option(name: str, interface: Interface) -> str:
    """How the user names option ``name`` where they are: ``--name`` on the command
    line, ``name=`` in a notebook (hints speak the user's idiom)."""
    return f"--{name}" if interface == "cli" else f"{name}="


class TraceworkError(Exception):
    """Base class: a clear, user-facing problem with a remedy."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class WorkspaceNotFound(TraceworkError):
    """No ``tracework.toml`` in the current directory or any parent."""


class SubjectError(TraceworkError):
    """A subject definition or URL that cannot be used."""


class UnsafeInput(TraceworkError):
    """A value shaped like an option, a transport or a revision expression."""


class GitError(TraceworkError):
    """Git refused or failed; carries the command's own words."""


class UnsupportedRepository(TraceworkError):
    """The repository uses a format tracework cannot read (e.g. SHA-256 objects)."""


class CommitNotFound(TraceworkError):
    """A commit id or prefix that does not name exactly one commit in the mirror."""


class CommitAbsent(CommitNotFound):
    """A commit id or prefix that names no object of the mirror at all (not a tree or a
    blob given by mistake, not an ambiguous prefix): a commit this mirror lacks."""


class PathNotFound(TraceworkError):
    """A path that is not in the tree at the commit."""


class NotQuotable(TraceworkError):
    """A file that can be registered and hashed but not quoted (binary, link, too big)."""


class SpanError(TraceworkError):
    """Lines out of range, an absent or ambiguous match, or a symbol not found."""


class RegisterError(TraceworkError):
    """A malformed register, an unknown source, or a duplicate id."""


class RecordError(TraceworkError):
    """A record that cannot be declared: bad id, duplicate, bad status, dangling reference."""


class QuoteNotInRegister(TraceworkError):
    """In render mode, a quote the register does not hold (render never writes to it)."""


class ChecksFailed(TraceworkError):
    """The report's checks do not hold at the register's pin, so it must not render."""

    exit_code = 1


class ReadOnlyRepository(TraceworkError):
    """A write, or a git command that does not only read, asked of ``src.repo`` (the
    read-only GitPython view of a subject's mirror)."""


class RenderError(TraceworkError):
    """A render that could not run or finish (its previous good output is kept)."""


def validation_problem(exc: Any) -> str:
    """The first problem of a pydantic ``ValidationError`` as "where: what" (and how many
    more), for one-line messages that name the field."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "top level"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    what = str(first["msg"]).removeprefix("Value error, ")  # a validator's own words
    return f"{where}: {what}{more}"


def check_iso_date(value: str, what: str) -> str:
    """``value`` if it is a real calendar date written YYYY-MM-DD, else a clear error:
    a date goes into reports, histories and the site, so 2026-13-45 must stop here.
    The one date rule: analysis dates, ``--date``, review stamps and a register's
    check history all go through :func:`is_calendar_date`."""
    if is_calendar_date(value):
        return value
    raise TraceworkError(
        f"{what} {value!r} is not a date", hint="write a real calendar date as YYYY-MM-DD"
    )


def is_calendar_date(value: object) -> bool:
    """Whether ``value`` is a real calendar date written YYYY-MM-DD (not 2026-13-45, not
    2026-02-30, not the week date 2026-W10-1 that ``date.fromisoformat`` accepts)."""
    import datetime as dt
    import re

    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return False
    try:
        dt.date.fromisoformat(value)
    except ValueError:  # a month 13 or a February 30
        return False
    return True
