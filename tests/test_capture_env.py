"""The capture's environment: built once by ``capture env`` (the only step that may use
the network), reused without installing anything, keyed by what it is built from."""

from __future__ import annotations

import json
import socket
import subprocess

import pytest

from capture_setup import PLAIN_HARNESS, PYTHON, Setup, capture_workspace, one_error
from tracework.capture import environment, interpreter
from tracework.capture.config import load_config
from tracework.capture.registry import PYPI
from tracework.capture.tree import export_tree
from tracework.git.subjects import open_mirror
from tracework.workspace import Workspace

INICONFIG = (
    "iniconfig==2.0.0 "
    "--hash=sha256:b6a85871a79d2e3b22d2d1b94ac2824226a63c6b741c88f7ae975f18b6778374"
)


@pytest.fixture
def setup(pinned, tw):
    return capture_workspace(pinned, tw)


def test_a_capture_needs_its_environment_built_first(setup):
    setup.write("fresh", PLAIN_HARNESS, extra=[INICONFIG])  # a key no other test builds
    result = setup.tw("capture", "fresh")
    assert result.exit_code == 2
    message = one_error(result)
    assert "the environment of capture fresh is not built for this commit" in message
    assert "run `tracework capture env fresh` first" in message


@pytest.mark.slow
def test_the_cached_environment_installs_nothing(setup, monkeypatch):
    setup.write("cap", PLAIN_HARNESS)
    assert setup.tw("capture", "env", "cap").exit_code == 0

    def refuse(*args, **kwargs):
        raise AssertionError("nothing may be installed")

    monkeypatch.setattr(environment, "build", refuse)
    again = setup.tw("capture", "env", "cap", "--json")
    assert again.exit_code == 0, again.output
    out = json.loads(again.output)
    assert out["built"] is False and out["packages"] == []
    monkeypatch.setattr(interpreter, "_host_uv", refuse)  # and a capture never runs uv at all
    assert setup.tw("capture", "cap").exit_code == 0
    environment_txt = (setup.folder("cap") / "environment.txt").read_text()
    assert environment_txt == f"# python {out['python']}\n"


def test_the_key_follows_what_the_environment_is_built_from(setup):
    setup.write("a", PLAIN_HARNESS)
    setup.write("b", PLAIN_HARNESS, extra=[INICONFIG])
    mirror = open_mirror(setup.ws, "toy")
    tree = export_tree(mirror, setup.commit)
    found = interpreter.find_interpreter(PYTHON)
    keys = {}
    for name in ("a", "b"):
        config, _ = load_config(setup.ws, name)
        keys[name], inputs = environment.environment_key(config, tree, found, PYPI)
    assert keys["a"] != keys["b"]
    assert inputs["extra"] == [INICONFIG] and inputs["python"]["version"].startswith(PYTHON)


@pytest.mark.slow
def test_a_lock_the_subject_does_not_have_is_refused(setup):
    setup.write("cap", PLAIN_HARNESS, requirements=None, lock="uv")
    result = setup.tw("capture", "env", "cap")
    assert result.exit_code == 2
    assert 'lock = "uv", but the subject has no uv.lock at this commit' in one_error(result)


def _registry_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
        socket.create_connection(("files.pythonhosted.org", 443), timeout=5).close()
    except OSError:
        return False
    return True


@pytest.mark.slow
def test_a_locked_environment_from_the_registry(pinned, tw, tmp_path):
    """A subject with its own uv.lock (one small pure-Python package): ``capture env``
    installs exactly the lock, the harness imports it from the environment, and the
    frozen list says so."""
    if not _registry_reachable():
        pytest.skip("the package registry (pypi.org) is not reachable from here")
    project = tmp_path / "locking"
    project.mkdir()
    pyproject = (
        '[project]\nname = "toy"\nversion = "0.1.0"\n'
        f'requires-python = ">={PYTHON}"\ndependencies = ["iniconfig==2.0.0"]\n'
    )
    (project / "pyproject.toml").write_text(pyproject)
    subprocess.run(
        [interpreter.uv_bin(), "lock", "--no-config", "--quiet"], cwd=project, check=True
    )
    repo = pinned(
        {
            "toy/__init__.py": "",
            "pyproject.toml": pyproject,
            "uv.lock": (project / "uv.lock").read_text(),
        }
    )
    assert tw("register", "add-file", "demo", "SRC-1", "uv.lock", "pyproject.toml").exit_code == 0
    made = Setup(Workspace.find(), repo, tw)
    made.write(
        "locked",
        """
        import iniconfig
        from tracework_harness import capture

        with capture.case("L-01", "Which iniconfig does the harness import?") as c:
            c.record("module", iniconfig.__file__)
            c.check("it comes from the environment", holds=True, observed=iniconfig.__file__)
        """,
        requirements=None,
        lock="uv",
    )
    built = tw("capture", "env", "locked", "--json")
    assert built.exit_code == 0, built.output
    assert json.loads(built.output)["packages"] == ["iniconfig==2.0.0"]
    result = tw("capture", "locked")
    assert result.exit_code == 0, result.output
    transcript = json.loads((made.folder("locked") / "transcripts" / "L-01.json").read_text())
    assert transcript["records"][0]["value"].startswith("<env>/lib/python")
    assert "iniconfig==2.0.0" in (made.folder("locked") / "environment.txt").read_text()
    assert json.loads(tw("capture", "env", "locked", "--json").output)["built"] is False
