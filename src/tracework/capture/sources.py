"""A capture registered as a source of a register (``kind: capture``), with the SHA-256
of every file it observed: the reviewed baseline a report cites."""

from __future__ import annotations

import re
from pathlib import Path

import tracework.register.edits as regy
import tracework.register.nodes as nodes
from tracework.capture.store import load_capture
from tracework.register.models import CaptureSource
from tracework.workspace import Workspace


def add_capture_source(ws: Workspace, register_path: Path, name: str, commit: str) -> str:
    """Register the capture of ``name`` at ``commit`` as a source (the next SRC-n), with
    the SHA-256 of every file its manifest lists — what it observed, not the manifest
    itself, whose provenance (the isolation used, the runs compared, the machine's
    interpreter) may differ between two runs that observed the same.  The same capture
    again keeps its id; one whose files changed (captured again) is registered anew
    under the same id.  Returns the source id."""
    capture = load_capture(ws, name, commit)  # verified against its manifest
    files = {f.path: f.sha256 for f in capture.manifest.files}
    source = CaptureSource(
        capture=name, subject=capture.manifest.subject, commit=capture.commit, files=files
    )
    with regy.edit(register_path) as doc:
        sources = regy.section(doc, "sources")
        for sid, node in sources.items():
            same = (node.get("kind"), node.get("capture"), node.get("commit"))
            if same == ("capture", name, capture.commit):
                sources[sid] = nodes.source_node(source)
                return str(sid)
        numbers = [int(k.split("-")[1]) for k in sources if re.fullmatch(r"SRC-[0-9]+", k)]
        sid = f"SRC-{max(numbers, default=0) + 1}"
        sources[sid] = nodes.source_node(source)
    return sid
