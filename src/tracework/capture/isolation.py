"""The sandbox a harness runs in, and the two ways of building it.

A capture is the only place tracework runs subject code, so it never runs it without
isolation.  The sandbox is described once, as a :class:`View` — what the harness can
see (read-only), at which fixed paths, with which environment — and built by one of
two backends:

- ``bwrap``: Debian's bubblewrap, when installed;
- ``unshare``: util-linux ``unshare`` and ``setpriv``, with
  :mod:`tracework.capture.sandbox_init` as the namespace's first process, building
  the same view with mount(2) and ``chroot``.

Both give: new network (loopback only), PID, IPC, UTS and mount namespaces; a root
holding only the system's ``/usr``, a few files of ``/etc`` and the capture's own
folders, read-only but for the folders a view names writable (an environment being
built); a private ``/tmp`` and ``/dev/shm``, bounded in bytes and in files; no
capabilities and ``no_new_privs``; resource limits set by ``prlimit`` before the
sandboxed program starts, soft and hard; and, when tracework runs as root, uid
65534, so that the process limit binds (the kernel exempts root from it).  The
sandbox's arguments travel on its stdin, never on a command line: the first process
inside (bwrap's, or the unshare backend's init once it has built the view) shows no
host path to a process that reads ``/proc/1/cmdline``, and its environment holds
only a ``PATH`` of system folders.  When the PID namespace's first process
ends, the kernel kills every process left in it, so nothing the harness forked
survives.  ``[capture] isolation`` in ``tracework.toml`` chooses the backend
(``auto``, the default, takes the first of bwrap and unshare that works here); each
is probed by running ``true`` in such a sandbox, and when none works the capture is
refused, never run without isolation.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from tracework.capture import seccomp
from tracework.capture.errors import IsolationUnavailable

log = logging.getLogger(__name__)

Backend = Literal["bwrap", "unshare"]
BACKENDS: tuple[Backend, ...] = ("bwrap", "unshare")
SETTINGS = ("auto", *BACKENDS)

#: The uid (and gid) the harness runs as when tracework runs as root.
SANDBOX_UID = 65534
#: setpriv and prlimit inside the sandbox (/usr is the host's, read-only).
SETPRIV = "/usr/bin/setpriv"
PRLIMIT = "/usr/bin/prlimit"
#: mount(8) and a shell: bwrap cannot bound a tmpfs's files, so the sandbox's first
#: command mounts /tmp and /dev/shm itself, before every capability is dropped.
MOUNT = "/usr/bin/mount"
SHELL = "/bin/sh"
#: The environment every sandbox starter runs with (never the caller's PATH).
STARTER_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}

#: The harness API, its runner and the build's script (package data), bound at LIB.
HARNESS_LIB = Path(__file__).with_name("harness")

#: Fixed paths inside the sandbox: the same on every machine, and so are captures.
TREE = "/capture/tree"
ENV = "/capture/env"
LIB = "/capture/lib"
HARNESS_DIR = "/capture/harness"
#: With [model]: the folder of the model relay's Unix socket (see capture.model).
MODEL = "/capture/model"
TMP = "/tmp"
HOME = "/tmp/home"

#: What of /etc the sandbox sees: the dynamic linker's cache, name-service basics,
#: the alternatives links and Python's own configuration (Debian's sitecustomize);
#: never the machine's secrets (shadow, ssh host keys, credentials), and not its
#: account list: ``passwd`` and ``group`` are the sandbox's own.
ETC_ENTRIES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "nsswitch.conf",
    "host.conf",
    "hosts",
    "localtime",
    "mime.types",
    "os-release",
    "alternatives",
    *(f"python3.{minor}" for minor in range(8, 15)),
)

#: Top-level system folders: links into /usr on merged-/usr systems.
SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")

#: The sandbox's accounts: the harness is ``capture``, at home in the private /tmp.
PASSWD = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    f"capture:x:{SANDBOX_UID}:{SANDBOX_UID}:capture:{HOME}:/usr/sbin/nologin\n"
)
GROUP = f"root:x:0:\ncapture:x:{SANDBOX_UID}:\n"


@dataclass(frozen=True)
class Bind:
    """A host path shown at ``target`` inside the sandbox: read-only, unless
    ``writable`` (only ever a folder tracework made for this sandbox alone)."""

    source: Path
    target: str
    writable: bool = False


@dataclass(frozen=True)
class View:
    """Everything the sandboxed process sees and gets, for either backend.

    ``limits`` are ``prlimit`` resources (``as``, ``nproc``, ``fsize``, ``cpu``,
    ``core``…) set, soft and hard, on the sandboxed program before it starts."""

    binds: tuple[Bind, ...]
    symlinks: tuple[tuple[str, str], ...]  # (link text, path inside)
    tmp_bytes: int
    env: dict[str, str]
    argv: tuple[str, ...]
    cwd: str = "/"
    pass_fds: tuple[int, ...] = ()
    tmp_files: int = 1 << 16
    limits: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Launch:
    """How to start a sandbox: the starter's command line (no host path in what a
    process inside can read) and the bytes to give it on stdin."""

    argv: list[str]
    stdin: bytes
    env: dict[str, str]
    fds: tuple[int, ...] = ()  # more descriptors the starter reads (closed once started)

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)


def system_view(
    extra: Sequence[Bind], scratch: Path
) -> tuple[tuple[Bind, ...], tuple[tuple[str, str], ...]]:
    """The system part of every view: /usr, the top-level system folders (links
    where the host has links), the allowed entries of /etc, the sandbox's own
    ``passwd`` and ``group`` (written into ``scratch``), then ``extra``."""
    binds = [Bind(Path("/usr"), "/usr")]
    links: list[tuple[str, str]] = []
    for name in SYSTEM_DIRS:
        host = Path("/") / name
        if host.is_symlink():
            links.append((os.readlink(host), f"/{name}"))
        elif host.is_dir():
            binds.append(Bind(host, f"/{name}"))
    for name in ETC_ENTRIES:
        host = Path("/etc") / name
        if host.exists():
            binds.append(Bind(host, f"/etc/{name}"))
    for name, text in (("passwd", PASSWD), ("group", GROUP)):
        (scratch / name).write_text(text, encoding="utf-8")
        (scratch / name).chmod(0o644)
        binds.append(Bind(scratch / name, f"/etc/{name}"))
    return (*binds, *extra), tuple(links)


def _dropped(privileged: bool) -> list[str]:
    """``setpriv`` leaving no capability and no way to regain one; as real root,
    also the switch to SANDBOX_UID."""
    if privileged:
        uid = str(SANDBOX_UID)
        return [
            SETPRIV,
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]
    return [  # root of a user namespace of its own: stays uid 0 there, without powers
        SETPRIV,
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--securebits=+noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked,"
        "+keep_caps_locked",
        "--",
    ]


def tmp_files_bounded(backend: Backend) -> bool:
    """Whether the private /tmp's file count is bounded (``tmp_files``): always under
    unshare; under bwrap only as root, since bwrap's own tmpfs takes a size alone and
    a user's bwrap cannot mount one itself without giving up ``--disable-userns``."""
    return backend == "unshare" or os.geteuid() == 0


def _limited(view: View) -> list[str]:
    """``prlimit`` setting the view's limits, soft and hard, on what it starts."""
    if not view.limits:
        return []
    return [PRLIMIT, *(f"--{name}={value}:{value}" for name, value in view.limits), "--"]


def _tmp_options(view: View) -> str:
    return f"mode=1777,size={view.tmp_bytes},nr_inodes={view.tmp_files}"


def _bwrap(tool: str, view: View, privileged: bool) -> Launch:
    args = [
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "capture",
    ]
    if privileged:  # real root: the first command mounts the bounded /tmp and /dev/shm,
        # then setpriv drops to SANDBOX_UID and every capability
        for cap in ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"):
            args += ["--cap-add", cap]
    else:  # a user: a user namespace of its own, where no capability survives exec
        uid = str(SANDBOX_UID)
        args += ["--unshare-user", "--disable-userns", "--uid", uid, "--gid", uid]
    # folders bwrap would make for the mount points on its own come out 0700, which
    # the harness (SANDBOX_UID) could not enter
    parents = {str(p) for b in view.binds for p in Path(b.target).parents if str(p) != "/"}
    for folder in sorted(parents, key=lambda p: (p.count("/"), p)):
        args += ["--perms", "0755", "--dir", folder]
    for bind in view.binds:
        args += ["--bind" if bind.writable else "--ro-bind", str(bind.source), bind.target]
    for text, path in view.symlinks:
        args += ["--symlink", text, path]
    args += ["--dev", "/dev", "--proc", "/proc"]
    for folder in (TMP, "/dev/shm"):  # both private, both bounded
        if privileged:  # a mount point: the first command mounts it, files bounded too
            args += ["--perms", "1777", "--dir", folder]
        else:  # bwrap's tmpfs: bounded in bytes only (see tmp_files_bounded)
            args += ["--perms", "1777", "--size", str(view.tmp_bytes), "--tmpfs", folder]
    args += ["--remount-ro", "/", "--chdir", view.cwd, "--clearenv"]
    for key, value in sorted(view.env.items()):
        args += ["--setenv", key, value]
    fds: tuple[int, ...] = ()
    filtered = seccomp.program()
    if filtered is not None:  # no user namespace of its own inside (see seccomp.py)
        fds = (_readable_fd(filtered),)
        args += ["--seccomp", str(fds[0])]
    command = [*_limited(view), *view.argv]
    if privileged:
        options = _tmp_options(view) + ",nosuid,nodev"
        mounts = " && ".join(
            f"{MOUNT} -n -t tmpfs -o {options} tmpfs {f}" for f in (TMP, "/dev/shm")
        )
        command = [SHELL, "-c", f'{mounts} && exec "$@"', "sh", *_dropped(True), *command]
    # the options, which name host paths, on stdin (NUL-separated); the command names
    # only paths inside, so /proc/1/cmdline shows nothing of the host
    payload = b"".join(os.fsencode(a) + b"\0" for a in args)
    return Launch([tool, "--args", "0", "--", *command], payload, dict(STARTER_ENV), fds)


def _readable_fd(data: bytes) -> int:
    """A descriptor to read ``data`` from (a pipe, written and closed at once)."""
    read, write = os.pipe()
    try:
        os.write(write, data)  # a few hundred bytes: well inside a pipe's buffer
    finally:
        os.close(write)
    os.set_inheritable(read, True)
    return read


def _unshare(tool: str, view: View, scratch: Path, privileged: bool) -> Launch:
    """unshare's command line; :mod:`sandbox_init` (this Python, isolated from
    site-packages) then builds the view from the plan it reads on stdin."""
    root = scratch / "root"
    root.mkdir(exist_ok=True)
    plan = {
        "root": str(root),
        "binds": [[str(b.source), b.target, b.writable] for b in view.binds],
        "symlinks": [list(pair) for pair in view.symlinks],
        "tmp_options": _tmp_options(view),
        "cwd": view.cwd,
        "argv": [*_dropped(privileged), *_limited(view), *view.argv],
        "env": view.env,
        "fds": list(view.pass_fds),
    }
    # unshare dies with tracework (a parent-death signal, as bwrap's --die-with-parent),
    # and --kill-child takes the namespace's first process, and so everything, with it
    args = [SETPRIV, "--pdeathsig", "KILL", "--", tool, "--mount", "--net", "--pid", "--ipc"]
    args += ["--uts", "--fork", "--kill-child"]
    if not privileged:
        args += ["--user", "--map-root-user"]
    init = Path(__file__).with_name("sandbox_init.py")
    argv = [*args, "--", sys.executable, "-I", "-S", str(init)]
    return Launch(argv, json.dumps(plan).encode("utf-8"), dict(STARTER_ENV))


def command(backend: Backend, view: View, scratch: Path) -> Launch:
    """The command line that starts ``view`` with ``backend`` (tools found on PATH);
    ``scratch`` is this run's own folder, for the files the view needs."""
    path = os.environ.get("PATH", "")
    tool = shutil.which(backend, path=path)
    if tool is None:
        raise IsolationUnavailable(f"`{backend}` is not installed (not on PATH)")
    privileged = os.geteuid() == 0
    if backend == "bwrap":
        return _bwrap(tool, view, privileged)
    return _unshare(tool, view, scratch, privileged)


def choose(setting: str) -> Backend:
    """The backend ``setting`` names, or (``auto``) the first of bwrap and unshare
    that works here.  Refuses, naming each backend's own words, when none works."""
    candidates: Sequence[Backend] = BACKENDS if setting == "auto" else _named(setting)
    problems = []
    for backend in candidates:
        problem = probe(backend)
        if problem is None:
            return backend
        problems.append(f"{backend}: {problem}")
    raise IsolationUnavailable(
        "cannot isolate the harness, so the capture does not run: " + "; ".join(problems),
        hint="install Debian's bubblewrap (apt-get install bubblewrap), or util-linux's "
        "unshare and setpriv with user namespaces allowed; tracework never runs subject "
        "code without isolation",
    )


def _named(setting: str) -> tuple[Backend, ...]:
    for backend in BACKENDS:
        if setting == backend:
            return (backend,)
    raise IsolationUnavailable(
        f"[capture] isolation = {setting!r} in tracework.toml is not one of {', '.join(SETTINGS)}"
    )


def probe(backend: Backend) -> str | None:
    """None when ``backend`` can build a sandbox here, else what went wrong."""
    return _probe(backend, os.environ.get("PATH", ""), os.geteuid())


@cache
def _probe(backend: Backend, path: str, euid: int) -> str | None:
    """:func:`probe`, once per backend, PATH and user in a process."""
    import tempfile

    for tool in (SETPRIV, PRLIMIT, MOUNT if backend == "bwrap" else SETPRIV):
        if not Path(tool).is_file():
            return f"{tool} (util-linux) is not installed"
    with tempfile.TemporaryDirectory(prefix="tracework-probe-") as folder:
        scratch = Path(folder)
        binds, links = system_view((), scratch)
        view = View(
            binds,
            links,
            1 << 20,
            {"PATH": "/usr/bin:/bin"},
            ("/usr/bin/true",),
            limits=(("core", 0),),
        )
        try:
            launch = command(backend, view, scratch)
            try:
                proc = subprocess.run(
                    launch.argv,
                    env=launch.env,
                    input=launch.stdin,
                    capture_output=True,
                    timeout=30,
                    check=False,
                    pass_fds=launch.fds,
                )
            finally:
                launch.close()
        except IsolationUnavailable as exc:
            return exc.message
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"could not start it ({exc})"
    if proc.returncode != 0:
        words = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()
        return (words[-1] if words else f"exit status {proc.returncode}")[:300]
    log.debug("isolation backend %s works", backend)
    return None
