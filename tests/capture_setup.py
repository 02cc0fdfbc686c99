"""Building captures for the tests: a small stdlib-only subject, its register, a harness.

``capture_workspace`` makes a workspace (with conftest's ``pinned``) whose subject
``toy`` holds ``toy/store.py``, registers that file in register ``demo``, and returns a
:class:`Setup` that writes ``captures/NAME.toml`` and ``captures/NAME.py`` and runs
``tracework capture`` through the CLI in-process.  Environments are cached per test
session (conftest points ``XDG_CACHE_HOME`` at a session folder), so the empty one the
toy needs is made once.
"""

from __future__ import annotations

import hashlib
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from click.testing import Result

from conftest import Repo
from tracework.workspace import Workspace

PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"

STORE = '''\
"""A toy store: what a subject's boundary looks like to a harness."""

import uuid


class Store:
    def __init__(self):
        self.items = {}

    def put(self, text):
        key = str(uuid.uuid4())
        self.items[key] = text
        return key
'''

#: A harness with one scripted case, recording a UUID, an address and its tree path.
PLAIN_HARNESS = """\
import os

from toy.store import Store
from tracework_harness import capture

with capture.case("T-01", "What does the store keep?") as c:
    store = Store()
    key = store.put("hello")
    c.record("items", store.items)
    c.record("store", store)
    c.record("where", os.getcwd())
    c.check("the store keeps the text", holds=list(store.items.values()) == ["hello"],
            observed=f"{len(store.items)} item(s)")
"""


@dataclass
class Setup:
    """A workspace with subject ``toy`` pinned and registered, ready for captures."""

    ws: Workspace
    repo: Repo
    tw: Callable[..., Result]

    @property
    def commit(self) -> str:
        return self.repo.commits[0]

    def write(self, name: str, harness: str, *, toml: str = "", **keys: object) -> None:
        """``captures/NAME.py`` (dedented) and ``captures/NAME.toml`` with the toy's
        defaults, ``keys`` overriding them and ``toml`` appended (a ``[limits]`` table)."""
        values: dict[str, object] = {
            "subject": "toy",
            "commit": self.commit,
            "register": "demo",
            "python": PYTHON,
            "requirements": [],
            "timeout": 60,
        }
        values.update(keys)
        lines = [f"{key} = {_toml(value)}" for key, value in values.items() if value is not None]
        folder = self.ws.root / "captures"
        folder.mkdir(exist_ok=True)
        (folder / f"{name}.toml").write_text("\n".join(lines) + "\n" + toml, encoding="utf-8")
        (folder / f"{name}.py").write_text(textwrap.dedent(harness), encoding="utf-8")

    def isolation(self, backend: str) -> None:
        """Force an isolation backend through ``[capture] isolation`` in tracework.toml."""
        marker = self.ws.root / "tracework.toml"
        text = marker.read_text(encoding="utf-8").split("\n[capture]")[0]
        marker.write_text(text + f'\n[capture]\nisolation = "{backend}"\n', encoding="utf-8")

    def capture(self, name: str, *args: str) -> Result:
        """``tracework capture env NAME`` (cached after the first), then ``capture NAME``."""
        built = self.tw("capture", "env", name)
        assert built.exit_code == 0, built.output
        return self.tw("capture", name, *args)

    def folder(self, name: str) -> Path:
        return self.ws.root / "captures" / name / self.commit[:12]

    def failed(self, name: str) -> Path:
        return self.ws.root / "captures" / name / f"failed-{self.commit[:12]}"


def _toml(value: object) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


def capture_workspace(
    pinned: Callable[..., Repo],
    tw: Callable[..., Result],
    files: dict[str, str | bytes] | None = None,
) -> Setup:
    """The toy subject pinned as SRC-1 of register ``demo``, ``toy/store.py`` registered;
    ``files`` adds to (or replaces) the toy's own."""
    toy: dict[str, str | bytes] = {
        "toy/__init__.py": "",
        "toy/store.py": STORE,
        "README.md": "A toy.\n",
    }
    repo = pinned(toy | (files or {}))
    added = tw("register", "add-file", "demo", "SRC-1", "toy/store.py", "toy/__init__.py")
    assert added.exit_code == 0, added.output
    ws = Workspace.find()
    return Setup(ws, repo, tw)


def snapshot(root: Path, *, leave_out: Path | None = None) -> dict[str, str]:
    """Every file and folder under ``root`` (but ``leave_out``) with its SHA-256."""
    found = {}
    for path in sorted(root.rglob("*")):
        if leave_out is not None and (path == leave_out or leave_out in path.parents):
            continue
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = "link:" + str(path.readlink())
        elif path.is_dir():
            found[rel] = "folder"
        else:
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def one_error(result: Result) -> str:
    """The single ``tracework: error:`` message of a failed command (never a traceback)."""
    assert "Traceback" not in result.output, result.output
    lines = [ln for ln in result.output.splitlines() if ln.startswith("tracework: error:")]
    assert len(lines) == 1, result.output
    return result.output


def make_wheel(
    name: str, version: str, files: dict[str, str], requires: tuple[str, ...] = ()
) -> tuple[str, bytes]:
    """A pure-Python wheel of ``files`` (paths inside it, e.g. ``x/__init__.py`` or a
    ``x.pth`` at its root) with its metadata (``requires``: its Requires-Dist) and
    RECORD: its file name and bytes."""

    info = f"{name}-{version}.dist-info"
    members = dict(files)
    members[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires)
    )
    members[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: tracework-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    encoded = {path: text.encode("utf-8") for path, text in members.items()}
    return f"{name}-{version}-py3-none-any.whl", _zipped(encoded, info, stored=True)


def _zipped(members: dict[str, bytes], info: str, *, stored: bool) -> bytes:
    """A wheel's bytes: ``members`` in order, then a RECORD hashing each, every entry
    dated the same (so the same members give the same bytes)."""
    import base64
    import io
    import zipfile

    record = []
    buffer = io.BytesIO()
    how = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(buffer, "w", how) as wheel:
        for path, data in sorted(members.items()):
            wheel.writestr(zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0)), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{path},sha256={digest.decode()},{len(data)}")
        record.append(f"{info}/RECORD,,")
        wheel.writestr(
            zipfile.ZipInfo(f"{info}/RECORD", date_time=(2026, 1, 1, 0, 0, 0)),
            "\n".join(record) + "\n",
        )
    return buffer.getvalue()


def uv_lock(project: str, packages: list[str]) -> str:
    """A uv.lock (format 1) for a virtual project ``project`` depending on the
    ``[[package]]`` tables in ``packages`` (TOML text, each naming ``name``)."""
    import re

    names = [re.search(r'^name = "([^"]+)"', p, re.M).group(1) for p in packages]  # type: ignore[union-attr]
    root = (
        f'[[package]]\nname = "{project}"\nversion = "0.1.0"\nsource = {{ virtual = "." }}\n'
        "dependencies = [\n" + "".join(f'    {{ name = "{n}" }},\n' for n in names) + "]\n"
    )
    head = 'version = 1\nrevision = 3\nrequires-python = ">=3.8"\n\n'
    return head + "\n".join([*packages, root])


def wheel_of(name: str) -> tuple[str, bytes]:
    """A wheel of the distribution ``name`` installed in this test environment, rebuilt
    from its files (its RECORD, less the scripts and the byte code): a pure-Python
    package the capture environment can install from a loopback index, offline."""
    import importlib.metadata

    dist = importlib.metadata.distribution(name)
    wheel_file = dist.read_text("WHEEL") or ""
    if "Tag: py3-none-any" not in wheel_file:
        raise ValueError(f"{name} is not a pure-Python wheel here")
    info = next(f.parent.as_posix() for f in dist.files or () if f.name == "METADATA")
    left_out = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json", "uv_cache.json"}
    members: dict[str, bytes] = {}
    for file in dist.files or ():
        path = file.as_posix()
        if path.startswith("..") or "__pycache__" in path or path.endswith(".pyc"):
            continue
        if path.startswith(info + "/") and path.split("/", 1)[1] in left_out:
            continue
        members[path] = file.locate().read_bytes()
    filename = f"{info.removesuffix('.dist-info')}-py3-none-any.whl"
    return filename, _zipped(members, info, stored=False)


#: The build backend of :func:`make_sdist`, inside the sdist itself: it needs nothing
#: from the registry to build (``requires = []``), so an offline index can serve it.
_IN_TREE_BACKEND = """\
import base64, hashlib, os, zipfile

NAME, VERSION, FILES = {name!r}, {version!r}, {files!r}
META = "Metadata-Version: 2.1\\nName: %s\\nVersion: %s\\n" % (NAME, VERSION)
INFO = "%s-%s.dist-info" % (NAME, VERSION)


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(directory, config_settings=None):
    os.makedirs(os.path.join(directory, INFO))
    with open(os.path.join(directory, INFO, "METADATA"), "w") as handle:
        handle.write(META)
    return INFO


def build_wheel(directory, config_settings=None, metadata_directory=None):
    name = "%s-%s-py3-none-any.whl" % (NAME, VERSION)
    members = dict(FILES)
    members[INFO + "/METADATA"] = META
    members[INFO + "/WHEEL"] = (
        "Wheel-Version: 1.0\\nGenerator: in-tree\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    )
    record = []
    with zipfile.ZipFile(os.path.join(directory, name), "w") as wheel:
        for path, text in sorted(members.items()):
            data = text.encode()
            wheel.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append("%s,sha256=%s,%d" % (path, digest.decode(), len(data)))
        record.append(INFO + "/RECORD,,")
        wheel.writestr(INFO + "/RECORD", "\\n".join(record) + "\\n")
    return name
"""


def make_sdist(name: str, version: str, files: dict[str, str]) -> tuple[str, bytes]:
    """A source distribution (``.tar.gz``) with no wheel: its own build backend, in
    the sdist (``backend-path``), builds a pure-Python wheel of ``files``."""
    import io
    import tarfile

    root = f"{name}-{version}"
    members = {
        "pyproject.toml": (
            '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n\n'
            f'[project]\nname = "{name}"\nversion = "{version}"\n'
        ),
        "backend.py": _IN_TREE_BACKEND.format(name=name, version=version, files=files),
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for path, text in sorted(members.items()):
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"{root}/{path}")
            info.size, info.mtime, info.mode = len(data), 1767225600, 0o644
            tar.addfile(info, io.BytesIO(data))
    return f"{root}.tar.gz", buffer.getvalue()


class LocalIndex:
    """A simple package index served on the test's loopback (``/simple/NAME/`` and the
    files under ``/files/``): what a build reaches through its registry proxy, offline.
    ``wheels`` are served at once, and ``pins`` holds ``name==version --hash=sha256:…``
    for each; :meth:`add` serves more."""

    def __init__(self, root: Path, wheels: Sequence[tuple[str, bytes]] = ()) -> None:
        import http.server
        import threading

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

        self.root = root
        self.pins: list[str] = []
        (root / "files").mkdir(parents=True)
        for filename, data in wheels:
            project, version = filename.split("-")[:2]
            normal = project.lower().replace("_", "-")
            digest = self.add(normal, filename, data)
            self.pins.append(f"{normal}=={version} --hash=sha256:{digest}")
        self.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), lambda *a: Quiet(*a, directory=str(root))
        )
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def add(self, project: str, filename: str, data: bytes) -> str:
        """Serve ``data`` as ``filename`` of ``project``; its SHA-256."""
        digest = hashlib.sha256(data).hexdigest()
        (self.root / "files" / filename).write_bytes(data)
        page = self.root / "simple" / project / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        before = page.read_text() if page.exists() else ""
        page.write_text(before + f'<a href="/files/{filename}#sha256={digest}">{filename}</a>\n')
        return digest

    def use_in(self, ws: Workspace) -> None:
        """``[capture] index`` of the workspace's tracework.toml names this index."""
        marker = ws.root / "tracework.toml"
        text = marker.read_text()
        if "\n[capture]\n" not in text:
            text += "\n[capture]\n"
        marker.write_text(
            text.replace("\n[capture]\n", f'\n[capture]\nindex = "{self.url}/simple"\n')
        )

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
