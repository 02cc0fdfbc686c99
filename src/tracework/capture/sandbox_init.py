"""The unshare backend's init: build the sandbox's view, start the harness, reap.

``unshare --mount --net --pid --ipc --uts --fork`` starts this file (with tracework's
own Python, ``-I -S``: standard library only) as the first process of the new PID
namespace, with the plan :func:`tracework.capture.isolation.write_plan` wrote.  It

1. makes every mount private, so nothing done here reaches the host;
2. mounts a tmpfs as the new root and binds each planned host path into it
   read-only (the ``nosuid``/``nodev``/``noexec``/atime flags a user namespace locks
   are kept), adds the planned links, a minimal ``/dev``, ``/proc`` of the new PID
   namespace and a private ``/tmp`` of the planned size, then makes the root read-only;
3. brings the loopback interface of the new network namespace up (it starts down);
4. forks the harness, which enters the new root with ``chroot`` and execs ``setpriv``
   (no capabilities, ``no_new_privs``; as root, uid 65534) and then the runner;
5. reaps every process until the harness ends, and exits with its status.  When this
   process ends, the kernel kills whatever is left in the namespace.

It is the same view bubblewrap builds; see :mod:`tracework.capture.isolation`.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import struct
import subprocess
import sys

_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_LINKS = (
    ("/proc/self/fd", "fd"),
    ("/proc/self/fd/0", "stdin"),
    ("/proc/self/fd/1", "stdout"),
    ("/proc/self/fd/2", "stderr"),
)
#: statvfs flags a remount must repeat (a user namespace locks them) as mount options.
_KEPT = (
    (os.ST_NOSUID, "nosuid"),
    (os.ST_NODEV, "nodev"),
    (os.ST_NOEXEC, "noexec"),
    (os.ST_NOATIME, "noatime"),
    (os.ST_NODIRATIME, "nodiratime"),
    (os.ST_RELATIME, "relatime"),
)
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


class SetupFailed(Exception):
    """A step of building the view failed; the harness does not start."""


def _mount(tool: str, *args: str) -> None:
    proc = subprocess.run([tool, *args], capture_output=True, check=False)
    if proc.returncode != 0:
        words = proc.stderr.decode("utf-8", errors="replace").strip()
        raise SetupFailed(f"mount {' '.join(args)}: {words or proc.returncode}")


def _mountpoint(path: str, folder: bool) -> None:
    if folder:
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a"):
            pass


def _bind_read_only(tool: str, source: str, target: str) -> None:
    _mountpoint(target, os.path.isdir(source))
    _mount(tool, "--bind", source, target)
    flags = os.statvfs(target).f_flag
    kept = [name for bit, name in _KEPT if flags & bit]
    options = ["remount", "bind", "ro", *sorted({"nosuid", "nodev", *kept})]
    _mount(tool, "-o", ",".join(options), target)


def _loopback_up() -> None:
    """``ip link set lo up`` without iproute2: one ioctl on a throwaway socket."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        (flags,) = struct.unpack_from("16xH", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | _IFF_UP))


def build(plan: dict[str, object]) -> str:
    """Build the view the plan describes; returns the new root."""
    tool = str(plan["mount"])
    root = str(plan["root"])
    _mount(tool, "--make-rprivate", "/")
    _mount(tool, "-t", "tmpfs", "-o", "mode=0755,nosuid,nodev", "tmpfs", root)
    for source, target in plan["binds"]:  # type: ignore[attr-defined]
        _bind_read_only(tool, source, root + target)
    for text, path in plan["symlinks"]:  # type: ignore[attr-defined]
        os.symlink(text, root + path)
    dev = root + "/dev"
    os.makedirs(dev)
    _mount(tool, "-t", "tmpfs", "-o", "mode=0755,nosuid,noexec,size=64k", "tmpfs", dev)
    for name in _DEVICES:
        _mountpoint(f"{dev}/{name}", folder=False)
        _mount(tool, "--bind", f"/dev/{name}", f"{dev}/{name}")
    for text, name in _LINKS:
        os.symlink(text, f"{dev}/{name}")
    os.makedirs(root + "/proc")
    _mount(tool, "-t", "proc", "-o", "nosuid,nodev,noexec", "proc", root + "/proc")
    size = f"size={int(plan['tmp_bytes'])}"  # type: ignore[call-overload]
    for private in (root + "/tmp", dev + "/shm"):  # both private, both bounded
        os.makedirs(private)
        _mount(tool, "-t", "tmpfs", "-o", f"mode=1777,nosuid,nodev,{size}", "tmpfs", private)
    _mount(tool, "-o", "remount,ro,nosuid,nodev", root)
    _loopback_up()
    return root


def main(plan_path: str) -> int:
    with open(plan_path, encoding="utf-8") as handle:
        plan = json.load(handle)
    try:
        root = build(plan)
    except (SetupFailed, OSError) as exc:
        sys.stderr.write(f"tracework sandbox: {exc}\n")
        return 125
    argv, env = list(plan["argv"]), dict(plan["env"])
    child = os.fork()
    if child == 0:
        try:
            os.chroot(root)
            os.chdir(plan["cwd"])
            for fd in plan["fds"]:
                os.set_inheritable(fd, True)
            os.execve(argv[0], argv, env)
        except OSError as exc:
            sys.stderr.write(f"tracework sandbox: cannot start {argv[0]}: {exc}\n")
        os._exit(126)
    while True:  # the first process of the namespace reaps every orphan
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 125
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code  # killed by signal N: 128 + N


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
