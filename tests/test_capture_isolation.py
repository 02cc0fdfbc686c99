"""The hostile harness: everything a harness may try is stopped or contained, under both
isolation backends, and the workspace never changes.

A capture is the only place tracework runs subject code.  These tests run harnesses that
try to reach the network, read the caller's environment and home, write into the
workspace, leave a process behind, start too many, loop forever, allocate far too much
and print a gigabyte; each must end contained (the attempt fails inside the sandbox) or
stopped (the run is killed, with one clear message, and the previous capture stays).
When no backend can isolate, the capture is refused and nothing runs.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from pathlib import Path

import pytest

from capture_setup import PLAIN_HARNESS, capture_workspace, one_error, snapshot

pytestmark = pytest.mark.slow  # kernels, browsers, sandboxes: not in `make test-fast`


BACKENDS = ["bwrap", "unshare"]


@pytest.fixture(params=BACKENDS)
def setup(request, pinned, tw, monkeypatch, tmp_path):
    """A toy workspace forced onto one isolation backend, with secrets in the caller's
    environment and home that no harness may see."""
    home = tmp_path / "caller-home"
    home.mkdir()
    (home / "secret.txt").write_text("caller's secret\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-should-never-be-seen")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_should_never_be_seen")
    made = capture_workspace(pinned, tw)
    made.isolation(request.param)
    made.backend = request.param
    made.home = home
    return made


def _hostile(ws_root: Path, home: Path, host_port: int, token: str) -> str:
    return f"""
import os, socket, subprocess, sys, time
from tracework_harness import capture

WORKSPACE = {str(ws_root)!r}
CALLER_HOME = {str(home)!r}


def attempt(action):
    try:
        return "succeeded: " + repr(action())
    except BaseException as exc:
        return "refused: " + type(exc).__name__


def write(path):
    with open(path, "w") as handle:
        handle.write("written by the harness")
    return path


with capture.case("H-net", "Can the harness reach anything but its own loopback?") as c:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    inside = attempt(lambda: socket.create_connection(server.getsockname(), timeout=5).close())
    host = attempt(lambda: socket.create_connection(("127.0.0.1", {host_port}), timeout=5))
    outside = attempt(lambda: socket.create_connection(("192.0.2.1", 443), timeout=5))
    named = attempt(lambda: socket.getaddrinfo("pypi.org", 443))
    interfaces = sorted(name for _, name in socket.if_nameindex())
    c.record("attempts", {{"own loopback": inside, "host's loopback port": host,
                          "outside address": outside, "name lookup": named,
                          "interfaces": interfaces}})
    c.check("its own loopback works", holds=inside.startswith("succeeded"), observed=inside)
    c.check("nothing outside is reachable",
            holds=not any(a.startswith("succeeded") for a in (host, outside, named)),
            observed=f"{{host}}; {{outside}}; {{named}}")

with capture.case("H-env", "What of the caller's environment and home can it read?") as c:
    c.record("environment", dict(os.environ))
    reads = {{
        "caller's home": attempt(lambda: open(os.path.join(CALLER_HOME, "secret.txt")).read()),
        "workspace register": attempt(
            lambda: open(os.path.join(WORKSPACE, "registers", "demo.yaml")).read()),
        "/etc/shadow": attempt(lambda: open("/etc/shadow").read()),
        "pid 1 environment": attempt(lambda: open("/proc/1/environ").read()),
    }}
    c.record("reads", reads)
    c.record("home", os.path.expanduser("~"))
    c.check("nothing of the caller is readable",
            holds=not any(r.startswith("succeeded") for r in reads.values()),
            observed=str(reads))

with capture.case("H-write", "Where can it write?") as c:
    writes = {{
        "registers/": attempt(lambda: write(os.path.join(WORKSPACE, "registers", "x.yaml"))),
        "captures/": attempt(lambda: write(os.path.join(WORKSPACE, "captures", "x.json"))),
        "the tree": attempt(lambda: write(os.path.join(os.getcwd(), "toy", "store.py"))),
        "the environment": attempt(lambda: write(os.path.join(sys.prefix, "x.py"))),
        "the root": attempt(lambda: os.mkdir("/planted")),
        "/etc/passwd": attempt(lambda: write("/etc/passwd")),
        "private /tmp": attempt(lambda: write("/tmp/scratch.txt")),
    }}
    c.record("writes", writes)
    c.check("only the private /tmp is writable",
            holds=[k for k, v in writes.items() if v.startswith("succeeded")] == ["private /tmp"],
            observed=str(writes))

with capture.case("H-fork", "Does a process it detaches outlive it?") as c:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", {token!r}],
                             start_new_session=True, stdout=subprocess.DEVNULL)
    c.record("detached", "started")
    c.status("UNKNOWN", criterion="the test looks for it after the capture",
             observed="a detached sleeper was left running")
"""


def _processes_with(token: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if token.encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def test_hostile_harness_is_contained(setup):
    listener = socket.create_server(("127.0.0.1", 0))  # on the caller's own loopback
    token = f"tracework-hostile-{uuid.uuid4()}"
    setup.write("hostile", _hostile(setup.ws.root, setup.home, listener.getsockname()[1], token))
    assert setup.tw("check", "demo").exit_code == 0  # the compiled register copy, made now
    before = snapshot(setup.ws.root, leave_out=setup.ws.root / "captures" / "hostile")
    try:
        result = setup.capture("hostile", "--json")
    finally:
        listener.close()
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["isolation"] == setup.backend
    results = json.loads((setup.folder("hostile") / "results.json").read_text())
    statuses = {case["id"]: case["status"] for case in results["cases"]}
    assert statuses == {"H-net": "PASS", "H-env": "PASS", "H-write": "PASS", "H-fork": "UNKNOWN"}

    net = json.loads((setup.folder("hostile") / "transcripts" / "H-net.json").read_text())
    attempts = net["records"][0]["value"]
    assert attempts["interfaces"] == ["lo"]
    assert attempts["own loopback"].startswith("succeeded")
    for key in ("host's loopback port", "outside address", "name lookup"):
        assert attempts[key].startswith("refused"), attempts

    env = json.loads((setup.folder("hostile") / "transcripts" / "H-env.json").read_text())
    seen = env["records"][0]["value"]
    text = json.dumps(env)
    assert "sk-ant" not in text and "ghp_" not in text and "secret" not in seen.get("HOME", "")
    assert not {"ANTHROPIC_API_KEY", "GITHUB_TOKEN", "XDG_CACHE_HOME"} & set(seen)
    assert seen["HOME"] == "<tmp>/home" and env["records"][2]["value"] == "<tmp>/home"
    assert str(setup.home) not in text

    assert _processes_with(token) == []  # the detached sleeper died with the sandbox
    after = snapshot(setup.ws.root, leave_out=setup.ws.root / "captures" / "hostile")
    assert after == before


def test_too_many_processes_are_refused(setup):
    setup.write(
        "procs",
        """
        import subprocess
        from tracework_harness import capture

        with capture.case("H-procs", "How many processes can it start?") as c:
            started, error = [], None
            try:
                for _ in range(100):
                    started.append(subprocess.Popen(["sleep", "30"]))
            except OSError as exc:
                error = type(exc).__name__
            for child in started:
                child.kill()
            c.record("started", {"count": len(started), "stopped by": error})
            c.check("the process limit stops it", holds=error is not None,
                    observed=f"{len(started)} started, then {error}")
        """,
        toml="[limits]\nprocesses = 16\n",
    )
    result = setup.capture("procs")
    assert result.exit_code == 0, result.output
    transcript = json.loads((setup.folder("procs") / "transcripts" / "H-procs.json").read_text())
    started = transcript["records"][0]["value"]
    assert started["stopped by"] == "BlockingIOError" and started["count"] < 16


def _good_then(setup, harness: str, toml: str = "", timeout: int = 60):
    """A good capture first, then ``harness`` in its place: returns the second result,
    having checked the first capture's files are untouched by it."""
    setup.write("cap", PLAIN_HARNESS)
    first = setup.capture("cap")
    assert first.exit_code == 0, first.output
    setup.write("cap", harness, toml=toml, timeout=timeout)
    assert setup.tw("capture", "env", "cap").exit_code == 0
    before = snapshot(setup.ws.root)
    result = setup.tw("capture", "cap")
    # the previous capture stays as it was, and so does everything else but the failed folder
    assert snapshot(setup.ws.root, leave_out=setup.failed("cap")) == before
    assert (setup.failed("cap") / "log.txt").is_file()
    assert (setup.failed("cap") / "error.txt").is_file()
    assert not list(setup.folder("cap").parent.glob(".*.staging"))
    return result


def test_a_harness_that_loops_forever_is_stopped(setup):
    result = _good_then(setup, "while True:\n    pass\n", timeout=2)
    assert result.exit_code == 1
    message = one_error(result)
    assert "ran past its timeout of 2 s" in message and "previous capture is untouched" in message


def test_a_harness_that_allocates_too_much_is_stopped(setup):
    harness = "blocks = [bytearray(64 << 20) for _ in range(64)]\n"
    result = _good_then(setup, harness, toml="[limits]\nmemory_mib = 256\n")
    assert result.exit_code == 1
    message = one_error(result)
    assert "raised MemoryError" in message and "memory_mib = 256" in message
    assert "captures/cap.py, line 1" in message


def test_a_harness_that_prints_a_gigabyte_is_stopped(setup):
    harness = (
        "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n"
    )
    result = _good_then(setup, harness, toml="[limits]\noutput_mib = 1\n")
    assert result.exit_code == 1
    assert "output (stdout and stderr) went over the limit of 1 MiB" in one_error(result)
    assert (setup.failed("cap") / "log.txt").stat().st_size <= 1 << 20


@pytest.mark.backend(*BACKENDS)
def test_both_backends_give_identical_files(pinned, tw):
    made = capture_workspace(pinned, tw)
    made.write("plain", PLAIN_HARNESS)
    files = {}
    for backend in BACKENDS:
        made.isolation(backend)
        assert made.capture("plain").exit_code == 0
        folder = made.folder("plain")
        files[backend] = {
            p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "manifest.json"
        }
    assert files["bwrap"] == files["unshare"]
    transcript = json.loads(files["bwrap"]["transcripts/T-01.json"])
    values = [r["value"] for r in transcript["records"]]
    assert values[0] == {"<uuid-1>": "hello"}
    assert values[1] == "<toy.store.Store object at <addr>>"
    assert values[2] == "<tree>"


def _fake_tools(folder: Path, words: str) -> None:
    """``bwrap`` and ``unshare`` that exist but fail, as on a machine that forbids
    user namespaces."""
    folder.mkdir()
    for tool in ("bwrap", "unshare"):
        script = folder / tool
        script.write_text(f"#!/bin/sh\necho '{tool}: {words}' >&2\nexit 1\n")
        script.chmod(0o755)


@pytest.mark.parametrize("how", ["refused", "absent"])
def test_no_isolation_means_no_capture(pinned, tw, tmp_path, monkeypatch, how):
    made = capture_workspace(pinned, tw)
    made.write("plain", PLAIN_HARNESS)
    assert tw("capture", "env", "plain").exit_code == 0
    tools = tmp_path / "tools"
    if how == "refused":
        _fake_tools(tools, "setting up uid map: Permission denied")
        monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    else:
        tools.mkdir()
        (tools / "git").symlink_to(__import__("shutil").which("git"))
        monkeypatch.setenv("PATH", str(tools))
    before = snapshot(made.ws.root)
    result = tw("capture", "plain")
    assert result.exit_code == 2
    message = one_error(result)
    assert "cannot isolate the harness, so the capture does not run" in message
    assert "bwrap:" in message and "unshare:" in message and "apt-get install bubblewrap" in message
    if how == "refused":
        assert "Permission denied" in message
    else:
        assert "`bwrap` is not installed" in message
    assert snapshot(made.ws.root) == before  # nothing ran, nothing was written


@pytest.mark.backend("bwrap")  # its environment is built under bwrap
def test_a_forced_backend_that_fails_is_not_replaced(pinned, tw, tmp_path, monkeypatch):
    """``isolation = "bwrap"`` means bwrap: when it fails, the capture is refused rather
    than run under the other backend."""
    made = capture_workspace(pinned, tw)
    made.write("plain", PLAIN_HARNESS)
    made.isolation("bwrap")
    assert tw("capture", "env", "plain").exit_code == 0
    tools = tmp_path / "tools"
    _fake_tools(tools, "No permissions to create new namespace")
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    result = tw("capture", "plain")
    assert result.exit_code == 2
    message = one_error(result)
    assert "bwrap: bwrap: No permissions" in message and "unshare:" not in message


PROBE = """\
import json, os, socket

def attempt(action):
    try:
        action()
        return "succeeded"
    except OSError as exc:
        return "refused: " + type(exc).__name__
status = open("/proc/self/status").read()
print(json.dumps({
    "uid": os.getuid(),
    "caps": status.split("CapEff:")[1].split()[0],
    "no_new_privs": status.split("NoNewPrivs:")[1].split()[0],
    "interfaces": sorted(name for _, name in socket.if_nameindex()),
    "outside": attempt(lambda: socket.create_connection(("192.0.2.1", 443), timeout=5)),
    "write root": attempt(lambda: open("/planted", "w")),
    "write lib": attempt(lambda: open("/capture/lib/x", "w")),
    "write tmp": attempt(lambda: open("/tmp/x", "w")),
    "root": sorted(os.listdir("/")),
}))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unprivileged_user_gets_the_same_sandbox(backend, monkeypatch):
    """The command lines for a user who is not root (a user namespace of the sandbox's
    own) build the same view: run here as uid 65534, with the system's Python."""
    import shutil
    import subprocess
    import sys
    import tempfile

    from tracework.capture import isolation

    python = "/usr/bin/python3"
    if os.geteuid() != 0 or not Path(python).is_file():
        pytest.skip("needs root (to become another user) and the system's /usr/bin/python3")
    folder = Path(tempfile.mkdtemp(prefix="tracework-unprivileged-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        lib = folder / "lib"
        lib.mkdir(mode=0o755)
        (lib / "probe.py").write_text(PROBE)
        (lib / "probe.py").chmod(0o644)
        scratch = folder / "scratch"
        scratch.mkdir(mode=0o755)
        # the unshare backend's init, where uid 65534 can read it: tracework's own copy
        # may be out of its reach (a checkout under /root, or a folder `mktemp -d` made)
        init = shutil.copy(Path(isolation.__file__).with_name("sandbox_init.py"), folder)
        Path(init).chmod(0o644)
        with monkeypatch.context() as patch:
            patch.setattr(os, "geteuid", lambda: 1000)
            patch.setattr(sys, "executable", python)  # the init runs without tracework's venv
            patch.setattr(isolation, "__file__", str(folder / "isolation.py"))  # and from here
            binds, links = isolation.system_view([isolation.Bind(lib, "/capture/lib")], scratch)
            view = isolation.View(
                binds, links, 1 << 20, {"PATH": "/usr/bin:/bin"}, (python, "/capture/lib/probe.py")
            )
            launch = isolation.command(backend, view, scratch)
        drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        try:
            proc = subprocess.run(
                [*drop, *launch.argv],
                env=launch.env,
                input=launch.stdin,
                capture_output=True,
                pass_fds=launch.fds,
            )
        finally:
            launch.close()
        assert proc.returncode == 0, proc.stderr.decode()
        seen = json.loads(proc.stdout)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert seen["uid"] == (65534 if backend == "bwrap" else 0)  # unshare: root of its own
    assert seen["caps"] == "0000000000000000" and seen["no_new_privs"] == "1"
    assert seen["interfaces"] == ["lo"] and seen["outside"].startswith("refused")
    assert seen["write root"].startswith("refused") and seen["write lib"].startswith("refused")
    assert seen["write tmp"] == "succeeded"
    fixed = {"capture", "dev", "etc", "proc", "tmp", "usr"}
    assert fixed <= set(seen["root"]) <= fixed | set(isolation.SYSTEM_DIRS)


def test_a_capture_killed_outright_takes_its_harness_with_it(setup):
    """SIGKILL to tracework mid-run (no chance to clean up): the sandbox dies with it,
    under either backend, instead of running on until a timeout nobody enforces."""
    import signal
    import subprocess
    import sys
    import time

    name = f"loop{uuid.uuid4().hex[:10]}"
    setup.write(name, "while True:\n    pass\n", timeout=600)
    assert setup.tw("capture", "env", name).exit_code == 0
    marker = f"/capture/harness/{name}.py"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracework", "capture", name],
        cwd=setup.ws.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):  # until the harness runs (a slow machine may take a while)
            if _processes_with(marker):
                break
            time.sleep(0.1)
        assert _processes_with(marker), "the harness never started"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    for _ in range(300):
        if not _processes_with(marker):
            break
        time.sleep(0.1)
    left = _processes_with(marker)
    for pid in left:  # never leave a spinning harness behind, even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert left == []
