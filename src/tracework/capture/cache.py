"""Where exported trees and environments are kept: the user's cache, shared by workspaces.

Beside them, ``interpreters/`` records the Python each version asked for was found
as, and ``files/`` what was read of the host files every capture names (the
interpreter's SHA-256, its libpython's), each while that file's full ``stat`` is
unchanged.

``$XDG_CACHE_HOME/tracework/captures/`` (default ``~/.cache``), beside the register
seal key: environments are large and the same lock gives the same environment in any
workspace, so they are kept once per user, keyed by what they were built from.  Any
of it can be deleted; it is made again on the next ``tracework capture env``.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_folder(kind: str) -> Path:
    """``captures/<kind>`` in the user's tracework cache, created.  The cache's own folder
    is the user's alone (0700), so no other user can reach an environment while it is
    built or settled; below it folders are 0755, since a sandbox's uid reads what is
    mounted from them."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tracework"
    base.mkdir(parents=True, exist_ok=True)
    if base.stat().st_mode & 0o077:  # the user's alone: nobody else reaches an environment
        base.chmod(0o700)
    folder = base / "captures" / kind
    folder.mkdir(parents=True, exist_ok=True)
    return folder
