"""The capture's environment: built once by ``capture env`` (the only step that may use
the network), reused without installing anything, keyed by what it is built from."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path

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


# -- choosing the interpreter ------------------------------------------------------------

#: What a pyenv shim says when the version it stands for is not pyenv's global one.
PYENV_SHIM = """#!/bin/sh
name=${0##*/}
echo "pyenv: $name: command not found" >&2
echo >&2
echo "The \\`$name' command exists in these Python versions:" >&2
echo "  3.13.0" >&2
echo >&2
echo "Note: See 'pyenv help global' for tips on allowing multiple" >&2
echo "      Python versions to be found at the same time." >&2
exit 1
"""


@pytest.fixture
def searching(tmp_path, monkeypatch):
    """Nothing recorded: each find searches the machine (the session's record is kept)."""
    monkeypatch.setattr(interpreter, "_record_path", lambda v: tmp_path / "found" / f"{v}.json")


@pytest.fixture
def shim_first(tmp_path, monkeypatch) -> Path:
    """A fake pyenv shim for every name a Python goes by, first on PATH."""
    shims = tmp_path / "shims"
    shims.mkdir()
    for name in (f"python{PYTHON}", "python3", "python"):
        (shims / name).write_text(PYENV_SHIM)
        (shims / name).chmod(0o755)
    said = subprocess.run([shims / "python3", "-V"], capture_output=True, text=True, env={})
    assert said.returncode == 1 and "pyenv help global" in said.stderr
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")
    return shims


@pytest.fixture
def pyenv_only(shim_first, tmp_path, monkeypatch) -> Path:
    """As the issue met it: on PATH only the shims, the real Python only among pyenv's
    versions (``$(pyenv root)/versions/X.Y.Z/bin/python3``, here this test's own base
    interpreter).  Returns that version's python3."""
    version = platform.python_version()
    bin_folder = tmp_path / "pyenv" / "versions" / version / "bin"
    bin_folder.mkdir(parents=True)
    (bin_folder / "python3").symlink_to(os.path.realpath(sys._base_executable))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    monkeypatch.setenv("PATH", str(shim_first))
    return bin_folder / "python3"


def test_a_pyenv_shim_first_on_path_is_skipped_for_a_real_interpreter(
    pyenv_only, shim_first, searching
):
    found = interpreter.find_interpreter(PYTHON)  # uv alone stops at the shim
    assert shim_first not in Path(found.path).parents
    assert found.version.startswith(PYTHON + ".") and found.version.count(".") == 2  # exact
    real = Path(os.path.realpath(found.path))
    assert found.sha256 == hashlib.sha256(real.read_bytes()).hexdigest()
    probe = "import sys; print(sys.version.split()[0], sys.prefix == sys.base_prefix)"
    said = subprocess.run([found.path, "-I", "-S", "-c", probe], capture_output=True, text=True)
    assert said.stdout.split() == [found.version, "True"]  # a base interpreter, as recorded

    def refuse(*args, **kwargs):
        raise AssertionError("a recorded interpreter is not searched for again")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(interpreter, "_host_uv", refuse)
        assert interpreter.recorded_interpreter(PYTHON) == found


def test_a_version_not_installed_lists_every_candidate_found(
    pyenv_only, shim_first, searching, tmp_path, monkeypatch
):
    venv = tmp_path / "venv"  # a virtual environment's interpreter: never a base
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {pyenv_only.parent}\n")
    (venv / "bin" / "python3").symlink_to(pyenv_only)
    monkeypatch.setenv("PATH", f"{shim_first}{os.pathsep}{venv / 'bin'}")
    with pytest.raises(interpreter.InterpreterNotFound) as caught:
        interpreter.find_interpreter("3.99")
    assert caught.value.exit_code == 2
    message = str(caught.value)
    lines = message.splitlines()
    assert lines[0] == "no installed Python 3.99 runs here as a plain interpreter; found:"
    assert f"    {platform.python_version():<10} {pyenv_only}" in lines, message
    for name in (f"python{PYTHON}", "python3", "python"):
        shim = f"    skipped    {shim_first / name}: a script (a shim or a wrapper), not an "
        assert any(line.startswith(shim) for line in lines), message
    assert (
        f"    skipped    {venv / 'bin' / 'python3'}: a virtual environment's interpreter" in lines
    )
    assert "uv python install 3.99" in message and "pyenv install 3.99" in message


@pytest.mark.slow
def test_capture_env_as_a_new_user_with_a_pyenv_shim_first(setup, shim_first, searching):
    setup.write("cap", PLAIN_HARNESS, python="3.99")
    refused = setup.tw("capture", "env", "cap")
    assert refused.exit_code == 2
    message = one_error(refused)
    assert "no installed Python 3.99 runs here as a plain interpreter; found:" in message
    assert f"skipped    {shim_first / f'python{PYTHON}'}: a script" in message
    assert "pyenv help global" not in message  # pyenv's words are not tracework's
    assert "hint: install one (`uv python install 3.99`" in message
    setup.write("cap", PLAIN_HARNESS)  # python = the version this machine has
    built = setup.tw("capture", "env", "cap", "--json")
    assert built.exit_code == 0, built.output
    out = json.loads(built.stdout)
    assert shim_first not in Path(out["python_path"]).parents
    assert out["python"].startswith(PYTHON + ".")
    binary = Path(os.path.realpath(out["python_path"])).read_bytes()
    assert out["python_sha256"] == hashlib.sha256(binary).hexdigest()
