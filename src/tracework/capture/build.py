"""Building a capture's environment in isolation: no byte of it runs on the host.

Everything an environment holds is the subject's code: a ``.pth`` file of any wheel
runs whenever the environment's Python starts (and uv starts it to byte-compile and
to query it), a source package's build backend runs while it is built.  So uv itself
runs inside a sandbox built like a capture's (:mod:`.isolation`): new namespaces, a
read-only root of the system's ``/usr`` and a few files of ``/etc``, the exported
tree read-only, nothing of the caller's environment or home, a non-root uid, limits
set before it starts; writable are only the new environment (at ``/capture/env``,
the path every capture then mounts it at), uv's cache for this build alone (so
one build cannot leave anything for another to install) and a folder for what uv
hands back (a resolution of the harness's extra).  Its one way out is the registry
proxy (:mod:`.registry`): the registry's hosts, and no other.  A build is one such
sandbox, or three when the harness's extra is resolved into ``captures/NAME.lock``
(install the lock; resolve the extra against what it installed; install that).

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
import shlex
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tracework.capture.isolation as isolation
from tracework.capture.cgroup import run_group
from tracework.capture.envtree import remove, settle
from tracework.capture.errors import EnvironmentBuildFailed, NotRegular
from tracework.capture.hostfiles import read_regular
from tracework.capture.interpreter import Interpreter, prefix_to_show, uv_bin
from tracework.capture.lock import LockPlan, Selection
from tracework.capture.process import Run, run_sandboxed
from tracework.capture.provenance import installed
from tracework.capture.registry import Registry, RegistryProxy
from tracework.fsio import write_atomic

#: Where the build's parts are, inside its sandbox.
UV = "/capture/uv"
CACHE = "/capture/cache"
INPUTS = "/capture/inputs"
OUT = "/capture/out"
SOCKET = "/capture/registry.sock"
#: The build's output limit (uv's log), its private /tmp, and its processes.
LOG_BYTES = 16 << 20
TMP_BYTES = 4 << 30
TMP_FILES = 1 << 20
PROCESSES = 1024
#: The largest file the build may write (a wheel's shared library can be a few GB).
FILE_BYTES = 16 << 30
#: The largest resolution read back from ``uv pip compile``.
MAX_RESOLUTION = 8 << 20
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
    #: what ``uv sync`` installs of the lock beyond its packages: groups and extras
    selection: Selection | None = None


#: What a build does once the lock (or the pins) is installed, when the harness's extra
#: is resolved into ``captures/NAME.lock``: given what the environment holds (``name →
#: version``) and a way to resolve requirements against it, the lock text to install.
ExtraStep = Callable[[dict[str, str], Callable[[tuple[str, ...]], str]], str]


def build(
    plan: BuildPlan, folder: Path, backend: isolation.Backend, extra: ExtraStep | None = None
) -> None:
    """Build the environment ``plan`` describes into ``folder/venv`` inside sandboxes of
    ``backend``; :class:`EnvironmentBuildFailed` with uv's own last words otherwise.

    One sandbox installs the lock (or the pins) and any extra pinned with hashes; with
    ``extra``, what it installed is read on the host, ``extra`` may have uv resolve the
    harness's packages against it in another (``uv pip compile``), and a third installs
    the lock text ``extra`` returns.  Every run shares the new environment and this
    build's uv cache, and reaches nothing but the registry."""
    venv, cache, inputs, out = (folder / n for n in ("venv", "uv-cache", "inputs", "out"))
    for made in (venv, cache, inputs, out):
        made.mkdir(mode=0o755)
    for label, pins in (("requirements", plan.requirements), ("extra", plan.extra)):
        (inputs / f"{label}.txt").write_text("".join(f"{p}\n" for p in pins), encoding="utf-8")
    privileged = os.geteuid() == 0
    if privileged:  # the build runs as SANDBOX_UID: only these are its to write
        for writable in (venv, cache, out):
            os.chown(writable, isolation.SANDBOX_UID, isolation.SANDBOX_UID)
    try:
        _run_steps(plan, folder, backend, _steps(plan))
        if extra is not None:
            held = {d.name: d.version for d in installed(venv)}

            def resolve(entries: tuple[str, ...]) -> str:
                return _resolve(plan, folder, backend, entries, held)

            text = extra(held, resolve)
            if any(line.split("#", 1)[0].strip() for line in text.splitlines()):
                write_atomic(inputs / "extra.lock", text)
                _run_steps(plan, folder, backend, _extra_lock_steps(plan))
    finally:
        for scratch_folder in (cache, inputs, out):  # this build's alone: never reused
            remove(scratch_folder)
    settle(venv, owner=os.geteuid() if privileged else None)


def _run_steps(
    plan: BuildPlan, folder: Path, backend: isolation.Backend, steps: list[dict[str, object]]
) -> None:
    """One sandbox running ``steps`` in order; :class:`EnvironmentBuildFailed` naming the
    step that failed."""
    with tempfile.TemporaryDirectory(prefix="tracework-build-") as scratch_name:
        scratch = Path(scratch_name)
        os.chmod(scratch, 0o755)
        proxy_at = scratch / "registry.sock"
        with RegistryProxy(proxy_at, plan.registry.hosts(), _source_hosts(plan)) as proxy:
            run = _run(plan, folder, scratch, backend, steps)
        problem = _outcome(run, proxy.refused, proxy.refused_count)
    if problem is not None:
        raise EnvironmentBuildFailed(problem)


def _resolve(
    plan: BuildPlan,
    folder: Path,
    backend: isolation.Backend,
    entries: tuple[str, ...],
    held: dict[str, str],
) -> str:
    """uv's resolution of ``entries`` for the environment's Python, every package the
    environment holds constrained to its version (``uv pip compile``, in the build's
    isolation): the text of the ``pylock.toml`` it writes (PEP 751: each package's files
    with their hashes)."""
    inputs = folder / "inputs"
    write_atomic(inputs / "extra.in", "".join(f"{e}\n" for e in entries))
    write_atomic(inputs / "installed.txt", "".join(f"{n}=={v}\n" for n, v in sorted(held.items())))
    _run_steps(plan, folder, backend, _compile_steps(plan))
    try:
        raw = read_regular(folder / "out", "pylock.toml", MAX_RESOLUTION)
    except NotRegular as exc:
        raise EnvironmentBuildFailed(f"uv pip compile left no resolution ({exc.message})") from None
    return raw.decode("utf-8", errors="replace")


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
                    *(plan.selection.flags if plan.selection is not None else ()),
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


def sync_command(plan: BuildPlan) -> str:
    """The ``uv sync`` a lock is installed with, as a reader would type it (the paths
    those of the build's sandbox)."""
    for step in _steps(plan):
        if step["what"] == "uv sync --frozen":
            argv = [str(a) for a in step["argv"]]  # type: ignore[attr-defined]
            return shlex.join(["uv", *argv[1:]])
    return ""


def _compile_steps(plan: BuildPlan) -> list[dict[str, object]]:
    """uv's resolution of the harness's extra against what the environment holds."""
    return [
        {
            "what": "uv pip compile of extra",
            "argv": [
                UV,
                "pip",
                "compile",
                "--no-config",
                "--format",
                "pylock.toml",
                "--no-header",
                "--quiet",
                "--default-index",
                plan.registry.index,
                "--python",
                plan.interpreter.path,
                "--constraints",
                f"{INPUTS}/installed.txt",
                "--output-file",
                f"{OUT}/pylock.toml",
                f"{INPUTS}/extra.in",
            ],
        }
    ]


def _extra_lock_steps(plan: BuildPlan) -> list[dict[str, object]]:
    """``captures/NAME.lock`` installed as written: every file checked against its
    hashes, nothing else resolved (what it relies on is already there)."""
    return [
        {
            "what": "uv pip install of the extra lock",
            "argv": [
                UV,
                "pip",
                "install",
                "--no-config",
                "--require-hashes",
                "--no-deps",
                "--compile-bytecode",
                "--default-index",
                plan.registry.index,
                "--python",
                f"{isolation.ENV}/bin/python",
                "-r",
                f"{INPUTS}/extra.lock",
            ],
        }
    ]


def _run(
    plan: BuildPlan,
    folder: Path,
    scratch: Path,
    backend: isolation.Backend,
    steps: list[dict[str, object]],
) -> Run:
    """One run of ``tracework_build.py`` in the build's sandbox."""
    extra = [
        isolation.Bind(plan.tree, isolation.TREE),
        isolation.Bind(folder / "venv", isolation.ENV, writable=True),
        isolation.Bind(folder / "uv-cache", CACHE, writable=True),
        isolation.Bind(folder / "inputs", INPUTS),
        isolation.Bind(folder / "out", OUT, writable=True),
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
    instructions = json.dumps({"steps": steps, "env": env}, sort_keys=True)

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
