"""An installed tracework, not a source checkout: the wheel carries what renders need (the
pinned Mermaid, the templates), and works in any folder, offline.

The wheel is built from this checkout and installed into a fresh venv outside it, from uv's
package cache only (``--offline``); then a new workspace elsewhere goes from ``init`` to a
published site, with no network but loopback when ``unshare`` can give that."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import NamedTuple

import pytest

from conftest import USER_CACHE_HOME, Repo, git

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
STORE = "class Store:\n    def put(self, key, value):\n        self.items[key] = value\n"
CELL = (
    'q = src.quote("pkg/store.py", symbol="Store.put")\n'
    'wb.component("RT-CMP-store", label="Store", identity="`Store`", evidence=[q])\n'
    'wb.diagram("parts", "flowchart LR\\n  RT-CMP-store[Store]", caption="The store.")'
)


def uv() -> str:
    import uv as uv_package

    return str(uv_package.find_uv_bin())


def uv_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "VIRTUAL_ENV"))}
    env["XDG_CACHE_HOME"] = USER_CACHE_HOME  # uv's cache, filled by `uv sync`
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return env


class Installed(NamedTuple):
    wheel: Path
    venv: Path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel, built offline and installed into a venv outside the checkout."""
    if not (REPO / "node_modules" / ".package-lock.json").is_file():
        pytest.skip("building the wheel needs `npm ci` (make does it)")
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [uv(), "build", "--wheel", "--offline", "-o", str(out)],
        cwd=REPO, env=uv_env(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = out.glob("tracework-*.whl")
    venv = tmp_path_factory.mktemp("venv") / "env"
    # the locked dependencies (no dev tools, not tracework itself) into the new venv, from
    # uv's cache by the lock's own URLs; then the wheel, alone
    locked = [
        "sync",
        "--frozen",
        "--offline",
        "--no-dev",
        "--no-default-groups",
        "--no-install-project",
    ]
    for args, env in (
        (locked, {**uv_env(), "UV_PROJECT_ENVIRONMENT": str(venv)}),
        (["pip", "install", "--offline", "--no-deps", "--python", str(venv / "bin" / "python"),
          str(wheel)], uv_env()),
    ):  # fmt: skip
        done = subprocess.run([uv(), *args], cwd=REPO, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    return Installed(wheel, venv)


def test_the_wheel_carries_the_pinned_mermaid_and_the_templates(installed):
    wheel = installed.wheel
    names = zipfile.ZipFile(wheel).namelist()
    assert "tracework/assets/mermaid.min.js" in names
    assert any(n.startswith("tracework/templates/tracework/") for n in names)
    facts = json.loads(zipfile.ZipFile(wheel).read("tracework/assets/mermaid.json"))
    lock = json.loads((REPO / "package-lock.json").read_text())["packages"]["node_modules/mermaid"]
    assert (facts["version"], facts["integrity"]) == (lock["version"], lock["integrity"])
    shipped = zipfile.ZipFile(wheel).read("tracework/assets/mermaid.min.js")
    assert hashlib.sha256(shipped).hexdigest() == facts["sha256"]


def test_an_installed_tracework_renders_and_publishes_anywhere_offline(installed, tmp_path):
    toy = tmp_path / "toy"
    (toy / "pkg").mkdir(parents=True)
    git(toy, "init", "-q", "-b", "main")
    first = Repo(toy).write("pkg/store.py", STORE).commit("first")
    ws = tmp_path / "elsewhere" / "ws"
    tw = str(installed.venv / "bin" / "tracework")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # a network namespace of its own with only loopback up (kernels talk over 127.0.0.1)
    can_isolate = shutil.which("unshare") and shutil.which("ip") and os.geteuid() == 0
    offline = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
    offline = offline if can_isolate else []

    def run(*args: str, cwd: Path = ws, net: bool = False) -> str:
        done = subprocess.run(
            [*([] if net else offline), tw, *args],
            cwd=cwd, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"tracework {' '.join(args)}: {done.stderr}"
        return done.stdout

    ws.parent.mkdir(parents=True)
    run("init", "ws", cwd=ws.parent)
    run("subject", "add", "toy", str(toy))
    run("fetch", "toy")  # a local path: no network either
    run("new", "demo", "--subject", "toy", "--commit", first)
    notebook = ws / "notebooks" / "demo.ipynb"
    nb = json.loads(notebook.read_text())
    nb["cells"].insert(4, {"cell_type": "code", "execution_count": None, "id": "added",
                           "metadata": {}, "outputs": [], "source": CELL})  # fmt: skip
    notebook.write_text(json.dumps(nb))
    run("quote", "demo", "SRC-1", "pkg/store.py", "--symbol", "Store.put")
    rendered = json.loads(run("render", "demo", "--json"))
    folder = ws / rendered["directory"]
    assert (folder / "assets" / "mermaid.min.js").read_bytes() == (
        installed.venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
        / "site-packages" / "tracework" / "assets" / "mermaid.min.js"
    ).read_bytes()  # fmt: skip
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["lock_sha256"] is None and len(manifest["distribution_sha256"]) == 64
    published = json.loads(run("publish", "--json"))
    assert published["ok"] and published["reports"] == 1
    # the commands ran the installed package, not this checkout's sources
    where = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", "import tracework as t; print(t.__file__)"],
        cwd=ws, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert Path(where).is_relative_to(installed.venv) and not Path(where).is_relative_to(REPO)
