"""The wheel's build hook: ship the pinned Mermaid as package data, proven to be the one
``package-lock.json`` pins.

A report with diagrams vendors ``mermaid.min.js`` (it never loads it from a CDN), so an
installed tracework must carry it.  The file is not committed: it is taken, at build
time, from the npm tarball that ``package-lock.json`` pins, and only after checking that
tarball against the lock's ``integrity`` (SHA-512) — from npm's content-addressed cache,
where ``npm ci`` left it.  When the cache has been cleaned, ``node_modules`` is used
instead, but only if npm recorded installing that same tarball (its ``integrity`` in
``node_modules/.package-lock.json``: ``npm ci`` checks the tarball before it extracts).
The wheel also carries ``mermaid.json``: the version, the integrity and the SHA-256 of
the file, so anyone can tell which Mermaid an installed tracework vendors into reports.

Editable installs (a source checkout) are left alone: there tracework finds
``node_modules`` itself.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MEMBER = "package/dist/mermaid.min.js"


class MermaidHook(BuildHookInterface):  # type: ignore[misc]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        root = Path(self.root)
        pinned = _locked(root / "package-lock.json")
        bundle = _from_npm_cache(pinned) or _from_node_modules(root, pinned)
        out = self._out = Path(tempfile.mkdtemp(prefix="tracework-build-"))
        (out / "mermaid.min.js").write_bytes(bundle)
        facts = {
            "version": pinned["version"],
            "integrity": pinned["integrity"],
            "sha256": hashlib.sha256(bundle).hexdigest(),
        }
        (out / "mermaid.json").write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n")
        build_data["force_include"][str(out / "mermaid.min.js")] = "tracework/assets/mermaid.min.js"
        build_data["force_include"][str(out / "mermaid.json")] = "tracework/assets/mermaid.json"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        """The two files are in the wheel now: their scratch folder goes."""
        if getattr(self, "_out", None) is not None:
            shutil.rmtree(self._out, ignore_errors=True)


def _locked(lock: Path) -> dict[str, str]:
    try:
        entry = json.loads(lock.read_text(encoding="utf-8"))["packages"]["node_modules/mermaid"]
        return {"version": entry["version"], "integrity": entry["integrity"]}
    except (OSError, ValueError, KeyError) as exc:
        raise RuntimeError(f"package-lock.json pins no Mermaid ({exc})") from None


def _sha512(integrity: str) -> bytes:
    algorithm, _, digest = integrity.partition("-")
    if algorithm != "sha512":
        raise RuntimeError(f"Mermaid's integrity is {algorithm}, not sha512")
    return base64.b64decode(digest)


def _from_npm_cache(pinned: dict[str, str]) -> bytes | None:
    """The file from the pinned tarball in npm's cache, the tarball checked; None when
    the cache does not hold it."""
    digest = _sha512(pinned["integrity"]).hex()
    # npm reads its settings from npm_config_* in any case; lower case is what it sets itself
    configured = os.environ.get("npm_config_cache") or os.environ.get("NPM_CONFIG_CACHE")  # noqa: SIM112
    cache = Path(configured or Path.home() / ".npm") / "_cacache"
    tarball = cache / "content-v2" / "sha512" / digest[:2] / digest[2:4] / digest[4:]
    if not tarball.is_file():
        return None
    data = tarball.read_bytes()
    if hashlib.sha512(data).hexdigest() != digest:
        raise RuntimeError(f"npm's cached Mermaid tarball {tarball} does not match the lock")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        member = archive.extractfile(MEMBER)
        if member is None:
            raise RuntimeError(f"the Mermaid tarball holds no {MEMBER}")
        return member.read()


def _from_node_modules(root: Path, pinned: dict[str, str]) -> bytes:
    """The file ``npm ci`` extracted, when npm recorded installing the pinned tarball."""
    installed = root / "node_modules" / ".package-lock.json"
    try:
        packages = json.loads(installed.read_text(encoding="utf-8"))["packages"]
        entry = packages["node_modules/mermaid"]
    except (OSError, ValueError, KeyError):
        raise RuntimeError(
            "building a wheel needs the pinned Mermaid: run `npm ci` first (make does)"
        ) from None
    if entry.get("integrity") != pinned["integrity"]:
        raise RuntimeError("node_modules holds another Mermaid than package-lock.json pins")
    return (root / "node_modules" / "mermaid" / "dist" / "mermaid.min.js").read_bytes()
