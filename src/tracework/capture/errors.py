"""The errors of captures: part of the one hierarchy under :class:`TraceworkError`.

Bad input (a malformed ``captures/NAME.toml``, a file that no longer hashes as the
register says, no way to isolate the harness, an environment not built yet) exits 2;
a harness that ran and failed, or two runs that differ, exit 1: the capture was
attempted and its failure is a result the analyst has to look at.
"""

from __future__ import annotations

from tracework.errors import TraceworkError


class CaptureError(TraceworkError):
    """A capture that cannot start: its files, its subject or its commit are wrong."""


class CaptureConfigError(CaptureError):
    """``captures/NAME.toml`` is missing, not TOML, or has a bad or unknown key."""


class IsolationUnavailable(CaptureError):
    """Neither backend can isolate the harness here, so nothing runs."""


class EnvironmentMissing(CaptureError):
    """The capture's environment has not been built (``tracework capture env NAME``)."""


class EnvironmentBuildFailed(CaptureError):
    """uv could not build the environment (no lock, a bad pin, the registry unreachable)."""


class InterpreterNotFound(EnvironmentBuildFailed):
    """No installed Python of the declared version runs here as a plain interpreter (a
    shim, a virtual environment's, none at all): the message lists what was found."""


class EvidenceMismatch(CaptureError):
    """A file the register holds does not hash the same in the exported tree."""


class CaptureMissing(CaptureError):
    """No capture of that name at that commit (never made, or not kept)."""


class CaptureDamaged(CaptureError):
    """A capture folder whose files do not match its manifest, or that cannot be read."""


class HarnessFailed(CaptureError):
    """The harness ran and failed: it raised, ran out of time or output, broke the
    protocol, or ended early.  Nothing of the run is kept but its log."""

    exit_code = 1


class HarnessOverLimit(HarnessFailed):
    """The harness sent more than a ``[limits]`` cap of its declaration allows: cases,
    tables, table rows or normalise rules.  tracework stops reading at the cap, so what
    it does after the run stays bounded by the declaration; the message names the cap and
    the setting that raises it."""


class TreeTooLarge(CaptureError):
    """The subject's tree at the commit holds more files, or more bytes, than ``[limits]
    tree_files`` or ``tree_mib`` allow; judged from the tree's listing, so nothing is
    exported."""


class NotDeterministic(CaptureError):
    """Two runs of a scripted capture gave different files after normalisation."""

    exit_code = 1


class NotRegular(CaptureError):
    """A file of the subject that tracework would read on the host is a link, or is
    reached through one, or is not a regular file: refused, its content never read."""


class ModelEndpointUnavailable(CaptureError):
    """The declared ``[model]`` endpoint did not answer an ``info`` request before the
    runs (nothing listens there, or it replied with more than tracework keeps)."""
