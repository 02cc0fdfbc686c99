"""Where exported trees and environments are kept: the user's cache, shared by workspaces.

``$XDG_CACHE_HOME/tracework/captures/`` (default ``~/.cache``), beside the register
seal key: environments are large and the same lock gives the same environment in any
workspace, so they are kept once per user, keyed by what they were built from.  Any
of it can be deleted; it is made again on the next ``tracework capture env``.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_folder(kind: str) -> Path:
    """``captures/<kind>`` in the user's tracework cache, created (mode 0755: the
    harness, which may run as another uid, reads what is in it)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "tracework" / "captures" / kind
    folder.mkdir(parents=True, exist_ok=True)
    return folder
