"""Building a capture's environment in isolation: no byte of it runs on the host.

Everything an environment holds is the subject's code: a ``.pth`` file of any wheel
runs whenever the environment's Python starts (and uv starts it to byte-compile and
to query it), a source package's build backend runs while it is built.  So uv itself
runs inside a sandbox built like a capture's (:mod:`.isolation`): new namespaces, a
read-only root of the system's ``/usr`` and a few files of ``/etc``, the exported
tree read-only, nothing of the caller's environment or home, a non-root uid, limits
set before it starts; writable are only the new environment (at ``/capture/env``,
the path every capture then mounts it at) and uv's cache for this build alone (so
one build cannot leave anything for another to install).  Its one way out is the
registry proxy (:mod:`.registry`): the registry's hosts, and no other.

Files are copied out of uv's cache, never linked, so no two environments share a
file.  Where the machine delegates a control group, the build runs in one bounding its
memory (``[capture] build_memory_mib``) and processes.  When the build ends, what it
wrote is made inert — no setuid or setgid bit, no write for others, no ACL, owned by
tracework (:func:`.envtree.settle`) — and sealed (:mod:`.seal`); a build that failed
leaves nothing behind but its log's last lines, in the error.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import tracework.capture.isolation as isolation
from tracework.capture.cgroup import run_group
from tracework.capture.envtree import remove, settle
from tracework.capture.errors import EnvironmentBuildFailed
from tracework.capture.interpreter import Interpreter, prefix_to_show, uv_bin
from tracework.capture.lock import LockPlan
from tracework.capture.process import Run, run_sandboxed
from tracework.capture.registry import Registry, RegistryProxy

#: Where the build's parts are, inside its sandbox.
UV = "/capture/uv"
CACHE = "/capture/cache"
INPUTS = "/capture/inputs"
SOCKET = "/capture/registry.sock"
#: The build's output limit (uv's log), its private /tmp, and its processes.
LOG_BYTES = 16 << 20
TMP_BYTES = 4 << 30
TMP_FILES = 1 << 20
PROCESSES = 1024
#: The largest file the build may write (a wheel's shared library can be a few GB).
FILE_BYTES = 16 << 30
#: /etc entries a build needs besides a capture's: the public certificate bundle.
BUILD_ETC = ("ssl/certs", "ca-certificates")


@dataclass(frozen=True)
class BuildPlan:
    """What to build: from which Python, which packages, reaching which registry."""

    interpreter: Interpreter
    tree: Path
    lock: LockPlan | None
    requirements: tuple[str, ...]
    extra: tuple[str, ...]
    registry: Registry
    timeout: int
    memory_mib: int = 8192


def build(plan: BuildPlan, folder: Path, backend: isolation.Backend) -> None:
    """Build the environment ``plan`` describes into ``folder/venv`` inside a sandbox of
    ``backend``; :class:`EnvironmentBuildFailed` with uv's own last words otherwise."""
    venv, cache, inputs = folder / "venv", folder / "uv-cache", folder / "inputs"
    for made in (venv, cache, inputs):
        made.mkdir(mode=0o755)
    for label, pins in (("requirements", plan.requirements), ("extra", plan.extra)):
        (inputs / f"{label}.txt").write_text("".join(f"{p}\n" for p in pins), encoding="utf-8")
    privileged = os.geteuid() == 0
    if privileged:  # the build runs as SANDBOX_UID: only these two are its to write
        for writable in (venv, cache):
            os.chown(writable, isolation.SANDBOX_UID, isolation.SANDBOX_UID)
    try:
        with tempfile.TemporaryDirectory(prefix="tracework-build-") as scratch_name:
            scratch = Path(scratch_name)
            os.chmod(scratch, 0o755)
            proxy_at = scratch / "registry.sock"
            with RegistryProxy(proxy_at, plan.registry.hosts(), _source_hosts(plan)) as proxy:
                run = _run(plan, folder, scratch, backend)
            problem = _outcome(run, proxy.refused, proxy.refused_count)
    finally:
        for scratch_folder in (cache, inputs):  # this build's alone: never reused
            remove(scratch_folder)
    if problem is not None:
        raise EnvironmentBuildFailed(problem)
    settle(venv, owner=os.geteuid() if privileged else None)


def _source_hosts(plan: BuildPlan) -> frozenset[tuple[str, int]]:
    return plan.lock.source_hosts if plan.lock is not None else frozenset()


def _steps(plan: BuildPlan) -> list[dict[str, object]]:
    """uv's commands, in order, as the build runs them inside."""
    python = f"{isolation.ENV}/bin/python"
    index = ["--default-index", plan.registry.index]
    steps: list[dict[str, object]] = [
        {
            "what": "uv venv",
            "argv": [
                UV,
                "venv",
                "--relocatable",
                "--allow-existing",
                "--no-config",
                "--quiet",
                "--python",
                plan.interpreter.path,
                isolation.ENV,
            ],
        }
    ]
    if plan.lock is not None:
        steps.append(
            {
                "what": "uv sync --frozen",
                "argv": [
                    UV,
                    "sync",
                    "--frozen",
                    "--no-install-workspace",
                    "--no-config",
                    "--compile-bytecode",
                    *index,
                    "--project",
                    isolation.TREE,
                    "--python",
                    python,
                ],
            }
        )
    for label, pins in (("requirements", plan.requirements), ("extra", plan.extra)):
        if pins:
            steps.append(
                {
                    "what": f"uv pip install of {label}",
                    "argv": [
                        UV,
                        "pip",
                        "install",
                        "--no-config",
                        "--require-hashes",
                        "--no-build",
                        "--compile-bytecode",
                        *index,
                        "--python",
                        python,
                        "-r",
                        f"{INPUTS}/{label}.txt",
                    ],
                }
            )
    return steps


def _run(plan: BuildPlan, folder: Path, scratch: Path, backend: isolation.Backend) -> Run:
    """One run of ``tracework_build.py`` in the build's sandbox."""
    extra = [
        isolation.Bind(plan.tree, isolation.TREE),
        isolation.Bind(folder / "venv", isolation.ENV, writable=True),
        isolation.Bind(folder / "uv-cache", CACHE, writable=True),
        isolation.Bind(folder / "inputs", INPUTS),
        isolation.Bind(Path(uv_bin()), UV),
        isolation.Bind(isolation.HARNESS_LIB, isolation.LIB),
        isolation.Bind(scratch / "registry.sock", SOCKET),
        *(
            isolation.Bind(Path("/etc") / name, f"/etc/{name}")
            for name in BUILD_ETC
            if (Path("/etc") / name).is_dir()
        ),
    ]
    prefix = prefix_to_show(plan.interpreter)
    if prefix is not None:
        extra.append(isolation.Bind(prefix, str(prefix)))
    certificates = _certificates()
    extra += [
        isolation.Bind(Path(path), path)
        for name, path in certificates.items()
        if name in CERTIFICATE_VARIABLES
        and not path.startswith(("/usr/", "/etc/ssl/certs/"))
        and path != "/etc/ssl/certs"
    ]
    binds, links = isolation.system_view(extra, scratch)
    env = _uv_env() | certificates
    instructions = json.dumps({"steps": _steps(plan), "env": env}, sort_keys=True)

    def launch_for(fd: int) -> isolation.Launch:
        view = isolation.View(
            binds=binds,
            symlinks=links,
            tmp_bytes=TMP_BYTES,
            tmp_files=TMP_FILES,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            argv=(
                plan.interpreter.path,
                "-I",
                "-S",
                f"{isolation.LIB}/tracework_build.py",
                str(fd),
                instructions,
            ),
            pass_fds=(fd,),
            limits=(
                ("core", 0),
                ("nproc", PROCESSES),
                ("fsize", FILE_BYTES),
                ("cpu", plan.timeout),
            ),
        )
        return isolation.command(backend, view, scratch)

    with run_group(plan.memory_mib << 20, PROCESSES) as group:
        return run_sandboxed(launch_for, timeout=plan.timeout, output_limit=LOG_BYTES, group=group)


def _uv_env() -> dict[str, str]:
    """uv's whole environment in the build: nothing of the caller's (the proxy is added
    inside), its cache this build's own, files copied, never a Python downloaded."""
    return {
        "PATH": f"{isolation.ENV}/bin:/usr/bin:/bin",
        "HOME": isolation.HOME,
        "TMPDIR": isolation.TMP,
        "LANG": "C.UTF-8",
        "UV_CACHE_DIR": CACHE,
        "UV_LINK_MODE": "copy",
        "UV_NO_CONFIG": "1",
        "UV_NO_PROGRESS": "1",
        "UV_PROJECT_ENVIRONMENT": isolation.ENV,
        "UV_PYTHON_DOWNLOADS": "never",
    }


#: The caller's settings of which certificates uv trusts: public, and needed where the
#: registry is reached through an inspecting proxy.  Each file or folder is shown to
#: the build at its own path.
CERTIFICATE_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")
CERTIFICATE_SWITCHES = ("UV_SYSTEM_CERTS", "UV_NATIVE_TLS")


def _certificates() -> dict[str, str]:
    """The caller's certificate settings that point at something that exists."""
    found = {
        name: os.path.realpath(os.environ[name])
        for name in CERTIFICATE_VARIABLES
        if os.environ.get(name) and os.path.exists(os.environ[name])
    }
    found |= {name: os.environ[name] for name in CERTIFICATE_SWITCHES if os.environ.get(name)}
    return found


def _outcome(run: Run, refused: list[str], count: int) -> str | None:
    """None for a build whose every step succeeded, else what went wrong, in uv's
    words (the last lines of its log) and naming any request the proxy refused."""
    steps: list[tuple[str, int]] = []
    done = False
    for line in run.lines[1:]:
        try:
            message = json.loads(line)
        except ValueError:
            return "the build's messages are not readable"
        if message.get("t") == "step":
            steps.append((str(message.get("what")), int(message.get("code", 1))))
        done = done or message.get("t") == "done"
    if done and all(code == 0 for _, code in steps) and run.stopped is None:
        return None
    words = run.log.decode("utf-8", errors="replace").strip().splitlines()
    tail = "; ".join(w.strip()[:300] for w in words[-4:] if w.strip() and not w.startswith("$ "))
    if run.stopped is not None:
        what = f"the environment's build was stopped: {run.stopped}"
    elif steps and steps[-1][1] != 0:
        what = f"{steps[-1][0]} failed (exit {steps[-1][1]})"
    else:
        what = f"the environment's build ended early (exit status {run.returncode})"
    if tail:
        what += f": {tail}"
    if refused:
        what += (
            f"; the build asked to reach {refused[0]!r}"
            + (f" and {count - 1} more" if count > 1 else "")
            + ", which is not the registry's, and was refused"
        )
    return what
