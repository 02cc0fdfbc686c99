"""The hostile lock: the environment's build is the subject's code too, and stays in its box.

A subject's ``uv.lock`` names a wheel shipped in its own repository whose ``.pth`` file
runs whenever the environment's Python starts (uv starts it to byte-compile).  Today's
rule: such a source is refused until the declaration opts it in; opted in, it is built
in a sandbox where it sees none of the caller's environment or home, cannot write the
host or another cached environment, and reaches nothing but the registry; and a cached
environment changed after its build refuses every capture, naming the path.  The
registry itself is a small index served on the test's loopback, so nothing here
touches the network.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import socket
import threading
from pathlib import Path

import pytest

from capture_setup import (
    PLAIN_HARNESS,
    PYTHON,
    Setup,
    capture_workspace,
    make_wheel,
    one_error,
    uv_lock,
)

BACKENDS = ["bwrap", "unshare"]
SECRET = "tw-secret-4c0ffee"

#: What the subject's wheel runs at every start of the environment's Python.
PTH_MODULE = """\
import json, os, socket, sys


def _attempt(action):
    try:
        return "succeeded: " + repr(action())[:200]
    except BaseException as exc:
        return "refused: " + type(exc).__name__


def _write(path):
    with open(path, "a") as handle:
        handle.write("written by the subject's .pth file")
    return path


def _through_proxy(port):
    proxy = os.environ.get("https_proxy")
    if not proxy:
        raise LookupError("no proxy")
    host, number = proxy.rsplit("/", 1)[1].rsplit(":", 1)
    sock = socket.create_connection((host, int(number)), timeout=5)
    sock.sendall(("CONNECT 127.0.0.1:%d HTTP/1.1\\r\\n\\r\\n" % port).encode())
    reply = sock.recv(100)
    sock.close()
    if b" 200 " not in reply:
        raise PermissionError(reply)
    return reply


seen = {
    "secret": os.environ.get("TRACEWORK_TEST_SECRET"),
    "environment": sorted(os.environ),
    "host file": _attempt(lambda: _write(HOST_MARKER)),
    "other environment": _attempt(lambda: _write(OTHER_ENVIRONMENT)),
    "caller's home": _attempt(lambda: open(CALLER_SECRET).read()),
    "host loopback": _attempt(lambda: socket.create_connection(("127.0.0.1", PORT), 5).close()),
    "through the proxy": _attempt(lambda: _through_proxy(PORT)),
}
try:
    with open(os.path.join(sys.prefix, "subject-saw.json"), "a") as handle:
        handle.write(json.dumps(seen) + "\\n")
except OSError:
    pass
"""


def _lock_subject(pth: str) -> dict[str, str | bytes]:
    """A subject whose uv.lock takes package ``evil`` from a wheel in its own tree."""
    name, wheel = make_wheel(
        "evil",
        "1.0",
        {"evil/__init__.py": "", "evil_start.py": pth, "evil.pth": "import evil_start\n"},
    )
    digest = hashlib.sha256(wheel).hexdigest()
    package = (
        '[[package]]\nname = "evil"\nversion = "1.0"\n'
        f'source = {{ path = "wheels/{name}" }}\n'
        f'wheels = [\n    {{ filename = "{name}", hash = "sha256:{digest}" }},\n]\n'
    )
    project = (
        f'[project]\nname = "toy"\nversion = "0.1.0"\nrequires-python = ">={PYTHON}"\n'
        f'dependencies = ["evil"]\n\n[tool.uv.sources]\nevil = {{ path = "wheels/{name}" }}\n'
    )
    return {
        "pyproject.toml": project,
        "uv.lock": uv_lock("toy", [package]),
        f"wheels/{name}": wheel,
    }


@pytest.fixture
def caller(tmp_path, monkeypatch):
    """A caller with a secret in its environment and its home."""
    home = tmp_path / "caller-home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN {SECRET}-----\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TRACEWORK_TEST_SECRET", SECRET)
    return home


def _env_folder(setup: Setup, name: str) -> Path:
    built = setup.tw("capture", "env", name, "--json")
    assert built.exit_code == 0, built.output
    key = json.loads(built.output)["key"]
    return Path(os.environ["XDG_CACHE_HOME"]) / "tracework" / "captures" / "envs" / key


@pytest.mark.slow
def test_a_lock_source_from_the_subject_s_tree_is_refused_by_default(pinned, tw, caller, tmp_path):
    marker = tmp_path / "ran-on-the-host"
    pth = f"HOST_MARKER = {str(marker)!r}\nopen(HOST_MARKER, 'w').close()\n"
    setup = capture_workspace(pinned, tw, _lock_subject(pth))
    setup.write("locked", PLAIN_HARNESS, requirements=None, lock="uv")
    result = setup.tw("capture", "env", "locked")
    assert result.exit_code == 2
    message = one_error(result)
    assert "evil (path wheels/evil-1.0-py3-none-any.whl)" in message
    assert 'allow_sources = ["NAME"]' in message
    assert not marker.exists()  # nothing of it ran, or was built


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_an_opted_in_wheel_runs_only_inside_the_build_s_isolation(
    pinned, tw, caller, tmp_path, backend
):
    listener = socket.create_server(("127.0.0.1", 0))  # on the caller's own loopback
    listener.settimeout(0.1)
    marker = tmp_path / "ran-on-the-host"
    plain = capture_workspace(pinned, tw)
    plain.isolation(backend)
    plain.write("plain", PLAIN_HARNESS, extra=[])  # another environment, built first
    other = _env_folder(plain, "plain") / "venv" / "pyvenv.cfg"
    other_before = other.read_bytes()
    pth = PTH_MODULE.replace(
        "seen = {",
        f"HOST_MARKER = {str(marker)!r}\nOTHER_ENVIRONMENT = {str(other)!r}\n"
        f"CALLER_SECRET = {str(caller / '.ssh' / 'id_rsa')!r}\n"
        f"PORT = {listener.getsockname()[1]}\n\nseen = {{",
    )
    # a second commit ships the lock and its wheel, which knows where the other is
    for rel, content in _lock_subject(pth).items():
        plain.repo.write(rel, content)
    locked_commit = plain.repo.commit("a lock with a wheel of its own")
    assert tw("fetch", "toy").exit_code == 0
    setup = plain
    setup.write(
        "locked",
        PLAIN_HARNESS.replace("from toy.store", "import evil\nfrom toy.store"),
        commit=locked_commit,
        requirements=None,
        lock="uv",
        allow_sources=["evil"],
    )
    try:
        folder = _env_folder(setup, "locked")
        with pytest.raises(TimeoutError):
            listener.accept()  # nothing inside reached the caller's loopback
    finally:
        listener.close()
    assert not marker.exists()
    assert other.read_bytes() == other_before
    saw = [
        json.loads(line) for line in (folder / "venv" / "subject-saw.json").read_text().splitlines()
    ]
    assert saw, "the .pth file ran during the build (it byte-compiles), inside the sandbox"
    for seen in saw:
        assert seen["secret"] is None
        assert "TRACEWORK_TEST_SECRET" not in seen["environment"]
        for attempt in ("host file", "other environment", "caller's home", "host loopback"):
            assert seen[attempt].startswith("refused"), (attempt, seen)
        assert seen["through the proxy"].startswith("refused: PermissionError"), seen
    # the other environment is still as built: its capture runs
    assert plain.capture("plain").exit_code == 0


@pytest.mark.slow
def test_a_cached_environment_changed_after_its_build_refuses_the_capture(pinned, tw):
    setup = capture_workspace(pinned, tw)
    setup.write("sealed", PLAIN_HARNESS, extra=[])
    venv = _env_folder(setup, "sealed") / "venv"
    assert setup.tw("capture", "sealed").exit_code == 0
    config = venv / "pyvenv.cfg"
    original = config.read_bytes()
    for change in ("changed", "added"):
        if change == "changed":  # same size, same modification time: the content differs
            stamp = config.stat()
            config.write_bytes(original.replace(b"=", b":", 1))
            os.utime(config, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
            named = "pyvenv.cfg changed"
        else:
            config.write_bytes(original)
            (venv / "bin" / "planted").write_text("x")
            named = "bin/planted was added"
        result = setup.tw("capture", "sealed")
        assert result.exit_code == 2
        message = one_error(result)
        assert "the cached environment of capture sealed is not as it was built" in message
        assert named in message and "--rebuild" in message
        assert setup.tw("capture", "env", "sealed").exit_code == 2  # nor is it reused
    rebuilt = setup.tw("capture", "env", "sealed", "--rebuild", "--json")
    assert rebuilt.exit_code == 0 and json.loads(rebuilt.output)["built"] is True
    assert not (venv / "bin" / "planted").exists()
    assert setup.tw("capture", "sealed").exit_code == 0


class _Index(http.server.SimpleHTTPRequestHandler):
    """A package index on the test's loopback: /simple/NAME/ and the wheels."""

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def registry(tmp_path):
    """A simple index serving one wheel, ``tinypkg``, on loopback; returns its URL and
    the pin of the wheel."""
    root = tmp_path / "index"
    name, wheel = make_wheel("tinypkg", "1.0", {"tinypkg/__init__.py": "VALUE = 42\n"})
    (root / "files").mkdir(parents=True)
    (root / "files" / name).write_bytes(wheel)
    digest = hashlib.sha256(wheel).hexdigest()
    (root / "simple" / "tinypkg").mkdir(parents=True)
    (root / "simple" / "tinypkg" / "index.html").write_text(
        f'<html><body><a href="/files/{name}#sha256={digest}">{name}</a></body></html>\n'
    )
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: _Index(*a, directory=str(root))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        yield url, f"tinypkg==1.0 --hash=sha256:{digest}", name, digest
    finally:
        server.shutdown()


def _use_registry(setup: Setup, url: str) -> None:
    marker = setup.ws.root / "tracework.toml"
    text = marker.read_text()
    if "\n[capture]\n" not in text:
        text += "\n[capture]\n"
    marker.write_text(text.replace("\n[capture]\n", f'\n[capture]\nindex = "{url}/simple"\n'))


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_build_reaches_the_registry_through_its_proxy(pinned, tw, registry, backend):
    url, pin, _name, _digest = registry
    setup = capture_workspace(pinned, tw)
    setup.isolation(backend)
    _use_registry(setup, url)
    setup.write(
        "indexed",
        """
        import tinypkg
        from tracework_harness import capture

        with capture.case("I-01", "Is the registry's package installed?") as c:
            c.check("it imports", holds=tinypkg.VALUE == 42, observed=str(tinypkg.VALUE))
        """,
        extra=[pin],
    )
    built = setup.tw("capture", "env", "indexed", "--json")
    assert built.exit_code == 0, built.output
    assert json.loads(built.output)["packages"] == ["tinypkg==1.0"]
    result = setup.tw("capture", "indexed", "--json")
    assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_a_lock_naming_a_file_off_the_registry_is_refused(pinned, tw, registry):
    url, _pin, name, digest = registry
    stray = socket.create_server(("127.0.0.1", 0))
    elsewhere = f"http://127.0.0.1:{stray.getsockname()[1]}/{name}"
    package = (
        '[[package]]\nname = "tinypkg"\nversion = "1.0"\n'
        f'source = {{ registry = "{url}/simple" }}\n'
        f'wheels = [\n    {{ url = "{elsewhere}", hash = "sha256:{digest}" }},\n]\n'
    )
    project = '[project]\nname = "toy"\nversion = "0.1.0"\ndependencies = ["tinypkg"]\n'
    setup = capture_workspace(
        pinned, tw, {"pyproject.toml": project, "uv.lock": uv_lock("toy", [package])}
    )
    _use_registry(setup, url)
    setup.write("stray", PLAIN_HARNESS, requirements=None, lock="uv")
    stray.settimeout(0.1)
    try:
        result = setup.tw("capture", "env", "stray")
        with pytest.raises(TimeoutError):
            stray.accept()  # nothing asked for the file
    finally:
        stray.close()
    assert result.exit_code == 2
    message = one_error(result)
    assert f"tinypkg (a file at {elsewhere}, not on the registry's hosts)" in message


@pytest.mark.slow
def test_the_build_s_processes_share_one_memory_limit(pinned, tw, caller):
    """The build has no address-space limit (uv reserves much it never uses), so where
    the machine delegates a control group, one bounds the build's memory as a whole."""
    from tracework.capture.cgroup import run_group

    with run_group(1 << 30, 64) as group:
        if group is None:
            pytest.skip("this machine delegates no control group to tracework")
    hog = "block = b'x' * (2048 << 20)\n"  # every start of the environment's Python
    setup = capture_workspace(pinned, tw, _lock_subject(hog))
    marker = setup.ws.root / "tracework.toml"
    limits = "\n[capture]\nbuild_memory_mib = 256\nbuild_timeout = 10\n"  # uv waits long
    marker.write_text(marker.read_text() + limits)
    setup.write("hog", PLAIN_HARNESS, requirements=None, lock="uv", allow_sources=["evil"])
    result = setup.tw("capture", "env", "hog")
    assert result.exit_code == 2
    assert "went over their memory limit" in one_error(result)
