"""Before the harness runs: the register's evidence must hold in the exported tree.

A capture is cited beside quotes of the same code, so it must have run the code they
quote.  Every file the capture's register registers from this subject (every quote
lies in one: the register refuses a quote of a file it does not hold) is hashed in
the exported tree — a file's bytes, a link's target text, a submodule's commit id,
as the hash rule says — and compared with the register.  At the register's pin, one
mismatch stops the capture before anything runs; the message lists each file that
differs.  At another commit (``rerender --capture``: the same cases observed again
at a newer commit) the files are expected to have moved on: they are hashed and
recorded, and the report compares what the capture saw with the register's capture.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

import tracework.register.store as reg
from tracework.capture.config import CaptureConfig
from tracework.capture.errors import CaptureConfigError, EvidenceMismatch, NotRegular
from tracework.capture.hostfiles import opened_folder, sha256_regular
from tracework.git.mirror import Mirror, TreeEntry
from tracework.hashing import sha256_hex
from tracework.register.data import GitSourceData
from tracework.workspace import Workspace


class Preflight(NamedTuple):
    """The register's files of the subject as the export holds them, and those that
    differ from the register (none at its pin: there a difference stops the capture)."""

    hashes: dict[str, str]
    changed: tuple[str, ...]


def verify_registered(
    ws: Workspace, config: CaptureConfig, mirror: Mirror, commit: str, tree: Path
) -> Preflight:
    """The register's files of this subject with their SHA-256 in ``tree`` (the export of
    ``commit``); at the register's pin each must be identical, else
    :class:`EvidenceMismatch`."""
    path = ws.register_file(config.register_name)
    data = reg.load_data(path)
    wanted: dict[str, list[tuple[str, str]]] = {}  # path → (source, sha256)
    for sid, source in sorted(data.sources.items()):
        if isinstance(source, GitSourceData) and source.subject == config.subject:
            for file, entry in source.files.items():
                wanted.setdefault(file, []).append((sid, entry.sha256))
    rel = path.relative_to(ws.root).as_posix()
    if not wanted:
        raise CaptureConfigError(
            f"{rel} registers no file of subject {config.subject}, so there is nothing to "
            "hash-check before the harness runs",
            hint=f"register the files the harness exercises: `tracework register add-file "
            f"{config.register_name} SRC-N PATH...`",
        )
    pins = {
        source.commit
        for source in data.sources.values()
        if isinstance(source, GitSourceData) and source.subject == config.subject
    }
    entries = mirror.tree(commit)
    verified: dict[str, str] = {}
    problems = []
    changed = []
    for file, uses in sorted(wanted.items()):
        actual = _hash_in_tree(tree, file, entries.get(file))
        for sid, expected in uses:
            if actual != expected:
                now = "absent" if actual is None else f"{actual[:12]}…"
                problems.append(f"{file} ({sid}: registered {expected[:12]}…, here {now})")
                changed.append(file)
        if actual is not None:
            verified[file] = actual
    if problems and commit in pins:
        raise EvidenceMismatch(
            f"{rel}: {len(problems)} registered file{'s' if len(problems) > 1 else ''} of "
            f"{config.subject} differ at {commit[:12]}, so the harness does not run: "
            + "; ".join(problems[:5])
            + (f"; and {len(problems) - 5} more" if len(problems) > 5 else ""),
            hint=f"`tracework check {config.register_name} --at {commit[:12]}` shows the drift; "
            "capture at the register's pin, or re-register the files at this commit",
        )
    return Preflight(verified, tuple(sorted(set(changed))))


def _hash_in_tree(tree: Path, file: str, entry: TreeEntry | None) -> str | None:
    """SHA-256 of ``file`` as the export holds it, by the kind the commit's tree gives
    it (None when the commit has no such entry, as when a folder on its way became a
    link).  A link is its text; a file is read through folders alone, never through a
    link (:mod:`.hostfiles`), so no host file can stand in for a registered one."""
    if entry is None:
        return None
    if entry.kind == "submodule":
        return sha256_hex(entry.oid.encode())
    if entry.kind == "symlink":
        parent, name = os.path.split(file)
        with suppress(NotRegular, OSError), opened_folder(tree, parent) as folder:
            return sha256_hex(os.fsencode(os.readlink(name, dir_fd=folder)))
        return None
    with suppress(NotRegular):
        return sha256_regular(tree, file)
    return None
