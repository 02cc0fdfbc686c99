"""The hostile subject: what the subject ships is its code, and none of it reaches the host.

Here the attacker is the subject, not the harness: the harnesses are honest and import
the subject as an analyst would, and the subject's tree carries the attack (start-up
files that Python runs by name, a child process that writes to the results channel,
a probe of what the sandbox's first process shows).  Each test fails on a tracework
that lets the attack through; each runs under both isolation backends.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import pytest

from capture_setup import capture_workspace, one_error

BACKENDS = ["bwrap", "unshare"]

#: Start-up files at the tree's root: each marks that it ran and tries to lift the
#: limits before the runner could set them (the old runner set them itself, after
#: the interpreter had imported these from the tree on PYTHONPATH).
LIFTING = """\
import builtins, resource
builtins.__dict__.setdefault("ran_at_start_up", []).append({name!r})
for which in (resource.RLIMIT_NPROC, resource.RLIMIT_AS, resource.RLIMIT_CPU,
              resource.RLIMIT_FSIZE):
    try:
        resource.setrlimit(which, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except (ValueError, OSError):
        pass
resource.setrlimit = lambda *args: None
annotations = None  # what `from __future__ import annotations` asks of __future__
"""

START_UP_FILES = {
    f"{name}.py": LIFTING.format(name=name)
    for name in ("sitecustomize", "usercustomize", "__future__")
}

LIMITS_HARNESS = """\
import builtins, resource
from toy.store import Store
from tracework_harness import capture

with capture.case("S-01", "Did the tree's start-up files run, and which limits hold?") as c:
    names = {"processes": resource.RLIMIT_NPROC, "memory": resource.RLIMIT_AS,
             "cpu": resource.RLIMIT_CPU, "file size": resource.RLIMIT_FSIZE}
    limits = {key: list(resource.getrlimit(which)) for key, which in names.items()}
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (64, resource.RLIM_INFINITY))
        raised = "raised"
    except (ValueError, OSError) as exc:
        raised = "refused: " + type(exc).__name__
    ran = getattr(builtins, "ran_at_start_up", [])
    c.record("limits", limits)
    c.record("ran at start-up", ran)
    c.record("raising the hard limit", raised)
    c.record("the tree imports", Store().put("x") is not None)
    c.check("none of the tree's start-up files ran", holds=ran == [], observed=str(ran))
"""


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.slow
def test_start_up_files_in_the_tree_neither_run_nor_lift_limits(pinned, tw, backend):
    setup = capture_workspace(pinned, tw, START_UP_FILES)
    setup.isolation(backend)
    setup.write(
        "limits", LIMITS_HARNESS, timeout=30, toml="[limits]\nprocesses = 64\nmemory_mib = 1024\n"
    )
    result = setup.capture("limits")
    assert result.exit_code == 0, result.output
    transcript = json.loads((setup.folder("limits") / "transcripts" / "S-01.json").read_text())
    seen = {r["name"]: r["value"] for r in transcript["records"]}
    assert seen["ran at start-up"] == []
    assert seen["limits"] == {
        "processes": [64, 64],
        "memory": [1024 << 20, 1024 << 20],
        "cpu": [30, 30],
        "file size": [16 << 20, 16 << 20],
    }
    assert seen["raising the hard limit"].startswith("refused")
    assert seen["the tree imports"] is True  # the harness still imports the subject


#: A subject whose import forks a child that writes a forged case and table to the
#: results channel (the descriptor the runner was given, inherited by the child).
FORGER = """\
import os, sys


def forge():
    fd = int(sys.argv[1])
    lines = [
        {"t": "case", "id": "F-01", "question": "Forged?", "arm": "scripted"},
        {"t": "status", "case": "F-01", "status": "PASS", "criterion": "forged",
         "observed": "forged"},
        {"t": "end", "case": "F-01"},
        {"t": "table", "name": "forged", "columns": ["a"], "rows": [["b"]], "notes": None,
         "arm": "scripted"},
    ]
    import json
    pid = os.fork()
    if pid == 0:
        os.write(fd, "".join(json.dumps(m) + "\\n" for m in lines).encode())
        os._exit(0)
    os.waitpid(pid, 0)
"""

FORGED_HARNESS = """\
from toy.forger import forge
from tracework_harness import capture

forge()  # between cases: on a channel that took any writer, a well-formed forgery
with capture.case("R-01", "What did the subject do?") as c:
    c.check("the subject returned", holds=True, observed="it returned")
"""


@pytest.mark.slow
def test_a_child_process_cannot_forge_results(pinned, tw, backend):
    setup = capture_workspace(pinned, tw, {"toy/forger.py": FORGER})
    setup.isolation(backend)
    setup.write("forged", FORGED_HARNESS)
    result = setup.capture("forged")
    assert result.exit_code == 1, result.output
    message = one_error(result)
    assert "a process other than the harness" in message
    assert "wrote to the results channel" in message
    assert not setup.folder("forged").exists()  # nothing forged was written


@pytest.mark.slow
def test_threads_of_the_harness_still_send(pinned, tw, backend):
    """The channel accepts the harness's process, not only its main thread."""
    setup = capture_workspace(pinned, tw)
    setup.isolation(backend)
    setup.write(
        "threads",
        """
        import threading
        from tracework_harness import capture

        with capture.case("T-01", "Can a thread of the harness record?") as c:
            worker = threading.Thread(target=lambda: c.record("from a thread", 1))
            worker.start()
            worker.join()
            c.check("it recorded", holds=True, observed="one record from a thread")
        """,
    )
    result = setup.capture("threads")
    assert result.exit_code == 0, result.output
    transcript = json.loads((setup.folder("threads") / "transcripts" / "T-01.json").read_text())
    assert transcript["records"] == [{"name": "from a thread", "value": 1}]


PID1_HARNESS = """\
import os
from tracework_harness import capture


def read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().hex()  # hex: normalisation would hide a host path
    except OSError as exc:
        return "refused: " + type(exc).__name__


with capture.case("P-01", "What does the sandbox's first process show?") as c:
    seen = {"cmdline": read("/proc/1/cmdline"), "environ": read("/proc/1/environ")}
    try:
        seen["exe"] = os.readlink("/proc/1/exe").encode().hex()
    except OSError as exc:
        seen["exe"] = "refused: " + type(exc).__name__
    c.record("pid 1", seen)
    c.status("UNKNOWN", criterion="the test reads what it shows", observed="recorded")
"""


@pytest.mark.slow
def test_the_first_process_inside_shows_no_host_path(pinned, tw, backend, tmp_path):
    setup = capture_workspace(pinned, tw)
    setup.isolation(backend)
    setup.write("pid1", PID1_HARNESS)
    result = setup.capture("pid1")
    assert result.exit_code == 0, result.output
    transcript = json.loads((setup.folder("pid1") / "transcripts" / "P-01.json").read_text())
    seen = transcript["records"][0]["value"]
    shown = {
        key: bytes.fromhex(value).decode("utf-8", "replace")
        for key, value in seen.items()
        if not value.startswith("refused")
    }
    assert "cmdline" in shown  # a command line is always readable: it must say nothing
    cache = os.environ["XDG_CACHE_HOME"]
    host_paths = [str(setup.ws.root), cache, sys.prefix, str(tmp_path), "/tmp/tracework-run-"]
    for key, text in shown.items():
        for path in host_paths:
            assert path not in text, (key, path, text)


SECRET = "tw-secret-70ken"


@pytest.mark.slow
@pytest.mark.parametrize(
    "link",
    [
        ("pyproject.toml", "/proc/self/environ", "pyproject.toml is a symbolic link"),
        ("uv.lock", "HOME/.ssh/id_rsa", "uv.lock is a symbolic link"),
        (".python-version", "HOME/.ssh/id_rsa", ".python-version is a symbolic link"),
    ],
    ids=["pyproject-to-environ", "lock-to-a-key", "python-version-to-a-key"],
)
def test_a_lock_file_committed_as_a_link_is_refused_unread(pinned, tw, tmp_path, monkeypatch, link):
    """``capture env`` reads the lock on the host: a link there would make it read, and
    quote, the caller's secrets."""
    name, target, said = link
    home = tmp_path / "caller-home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN {SECRET} KEY-----\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TRACEWORK_PLANTED_TOKEN", SECRET)
    files = {
        "pyproject.toml": '[project]\nname = "toy"\nversion = "0.1.0"\n',
        "uv.lock": 'version = 1\nrevision = 3\nrequires-python = ">=3.8"\n',
    }
    files.pop(name, None)
    repo_files = dict(files)
    setup = capture_workspace(pinned, tw, repo_files)  # then the link, in a second commit
    setup.repo.symlink(name, target.replace("HOME", str(home)))
    linked = setup.repo.commit("a link")
    assert tw("fetch", "toy").exit_code == 0
    setup.write("linked", LIMITS_HARNESS, commit=linked, requirements=None, lock="uv")
    for args in (("capture", "env", "linked"), ("capture", "env", "linked", "--json")):
        result = setup.tw(*args)
        assert result.exit_code == 2
        assert SECRET not in result.output
        assert said in one_error(result)


@pytest.mark.slow
def test_a_registered_folder_turned_into_a_link_is_never_hashed_through(pinned, tw, tmp_path):
    """At another commit, a folder of registered files is a link to a host folder: the
    manifest's hashes must be of what the commit holds, never of the host's files."""
    host = tmp_path / "host-folder"
    host.mkdir()
    (host / "store.py").write_text(f"# {SECRET}: the host's own file\n")
    setup = capture_workspace(pinned, tw)
    setup.write("cap", PLAIN_HARNESS_AT_ROOT)
    setup.repo.remove("toy")
    setup.repo.symlink("toy", str(host))
    moved = setup.repo.commit("toy/ is now a link")
    assert tw("fetch", "toy").exit_code == 0
    assert setup.tw("capture", "env", "cap", "--commit", moved).exit_code == 0
    result = setup.tw("capture", "cap", "--commit", moved)
    assert result.exit_code == 0, result.output
    manifest = json.loads(
        (setup.ws.root / "captures" / "cap" / moved[:12] / "manifest.json").read_text()
    )
    host_hash = hashlib.sha256((host / "store.py").read_bytes()).hexdigest()
    assert host_hash not in json.dumps(manifest)
    assert "toy/store.py" not in manifest["verified_files"]
    assert "toy/store.py" in manifest["changed_since_pin"]


#: A harness that needs nothing of the tree (the tree's toy/ may be gone).
PLAIN_HARNESS_AT_ROOT = """\
from tracework_harness import capture

with capture.case("A-01", "Does the harness run?") as c:
    c.check("it runs", holds=True, observed="it ran")
"""


def _control_group_here() -> bool:
    from tracework.capture.cgroup import run_group

    with run_group(1 << 30, 64) as group:
        return group is not None


MEMORY_HARNESS = """\
import subprocess, sys
from tracework_harness import capture

HOLD = "import time; block = b'x' * (300 << 20); time.sleep(2)"
with capture.case("M-01", "Can three processes hold more than the limit together?") as c:
    children = [subprocess.Popen([sys.executable, "-c", HOLD]) for _ in range(3)]
    codes = [child.wait() for child in children]
    c.record("exit codes", codes)
    c.check("all three held 300 MiB", holds=codes == [0, 0, 0], observed=str(codes))
"""


@pytest.mark.slow
def test_the_sandbox_s_processes_share_one_memory_limit(pinned, tw, backend):
    """Three processes of 300 MiB each fit the per-process limit of 512 MiB; together
    they pass it, and where the machine delegates a control group, that stops them."""
    if not _control_group_here():
        pytest.skip("this machine delegates no control group to tracework")
    setup = capture_workspace(pinned, tw)
    setup.isolation(backend)
    setup.write("memory", MEMORY_HARNESS, toml="[limits]\nmemory_mib = 512\n")
    result = setup.capture("memory")
    assert result.exit_code == 1, result.output
    assert "went over their memory limit" in one_error(result)
    setup.write("small", PLAIN_HARNESS_AT_ROOT)
    assert setup.capture("small").exit_code == 0
    manifest = json.loads((setup.folder("small") / "manifest.json").read_text())
    assert manifest["limits"]["control_group"] in ("v1", "v2")
    assert manifest["limits"]["memory_mib"] == 2048


FILES_HARNESS = """\
import os
from tracework_harness import capture

with capture.case("F-01", "How many files does the private /tmp take?") as c:
    made, error = 0, None
    try:
        for number in range(5000):
            open("/tmp/f%d" % number, "w").close()
            made += 1
    except OSError as exc:
        error = type(exc).__name__ + " " + (exc.strerror or "")
    c.record("made", {"files": made, "stopped by": error})
    c.check("the cap stops it", holds=error is not None, observed=f"{made} files, {error}")
"""


@pytest.mark.slow
def test_the_private_tmp_holds_only_so_many_files(pinned, tw, backend):
    from tracework.capture.isolation import tmp_files_bounded

    if not tmp_files_bounded(backend):
        pytest.skip(f"{backend} run by this user cannot bound a tmpfs's files")
    setup = capture_workspace(pinned, tw)
    setup.isolation(backend)
    setup.write("files", FILES_HARNESS, toml="[limits]\ntmp_files = 1000\n")
    result = setup.capture("files")
    assert result.exit_code == 0, result.output
    transcript = json.loads((setup.folder("files") / "transcripts" / "F-01.json").read_text())
    made = transcript["records"][0]["value"]
    assert made["stopped by"] == "OSError No space left on device" and made["files"] < 1000
    manifest = json.loads((setup.folder("files") / "manifest.json").read_text())
    assert manifest["limits"]["tmp_files"] == 1000


NESTED_HARNESS = """\
import subprocess
from tracework_harness import capture

with capture.case("N-01", "Can the sandbox make a user namespace of its own?") as c:
    made = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True
    )
    c.record("exit status", made.returncode)
    c.check("it cannot", holds=made.returncode != 0, observed=f"exit {made.returncode}")
"""


@pytest.mark.slow
def test_no_user_namespace_of_its_own_inside(pinned, tw, backend):
    """As root of a user namespace it made, a process could mount a tmpfs past every
    cap of the private /tmp (bwrap as root has no user namespace to disable them in)."""
    setup = capture_workspace(pinned, tw)
    setup.isolation(backend)
    setup.write("nested", NESTED_HARNESS)
    result = setup.capture("nested")
    assert result.exit_code == 0, result.output
    results = json.loads((setup.folder("nested") / "results.json").read_text())
    assert results["cases"][0]["status"] == "PASS", results
