"""Where tracework's log records go when a person runs it: stderr.

The library only logs, one logger per module (``logging.getLogger(__name__)``); a
fallback that swallows an exception says why at debug level.  The command line decides
where the records go (``tracework -v``), and a batch's worker processes follow the same
choice (:func:`level_shown`).  Without ``-v`` nothing is configured: Python prints
warnings (a batch's "waited out") to stderr as they are, as it always did.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: The logger every module's logger is a child of.
ROOT = "tracework"

_FORMAT = "%(levelname)s %(name)s: %(message)s"


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """tracework's own handler, so that configuring again replaces it."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)  # the stderr of this run (a test swaps it per run)
        self.setFormatter(logging.Formatter(_FORMAT))


def show(verbose: bool) -> None:
    """With ``verbose``, print every tracework record, debug included, to stderr; else
    undo that, so each command in a process decides for itself."""
    logger = logging.getLogger(ROOT)
    for handler in [h for h in logger.handlers if isinstance(h, _Stderr)]:
        logger.removeHandler(handler)
    if verbose:
        logger.addHandler(_Stderr())
        logger.setLevel(logging.DEBUG)
    else:
        logger.setLevel(logging.NOTSET)


def shown() -> bool:
    """Whether this process shows tracework's debug records (a worker asks its parent's)."""
    return any(isinstance(h, _Stderr) for h in logging.getLogger(ROOT).handlers)


@contextmanager
def swallowed(log: logging.Logger, what: str) -> Iterator[None]:
    """``suppress(Exception)`` for a fallback that must not fail its caller, saying at
    debug level what failed and why (``tracework -v`` shows it)."""
    try:
        yield
    except Exception:
        log.debug("%s failed", what, exc_info=True)
