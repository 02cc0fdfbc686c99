"""The unshare backend's init: build the sandbox's view, start the harness, reap.

``unshare --mount --net --pid --ipc --uts --fork`` starts this file (with tracework's
own Python, ``-I -S``: standard library only) as the first process of the new PID
namespace, with the plan :mod:`tracework.capture.isolation` wrote.  It

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
Mounts are made with mount(2) through ctypes (one system call each, where a
``mount`` process per mount made the sandbox ten times slower to start).
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import socket
import struct
import sys

_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_LINKS = (
    ("/proc/self/fd", "fd"),
    ("/proc/self/fd/0", "stdin"),
    ("/proc/self/fd/1", "stdout"),
    ("/proc/self/fd/2", "stderr"),
)
# mount(2) flags (linux/mount.h)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME = 16384, 1 << 18, 1 << 21
#: statvfs flags a remount must repeat (a user namespace locks them), as mount flags.
_KEPT = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_libc = ctypes.CDLL(None, use_errno=True)


class SetupFailed(Exception):
    """A step of building the view failed; the harness does not start."""


def _mount(source: str | None, target: str, kind: str | None, flags: int, data: str = "") -> None:
    """mount(2), straight from libc: one system call, no mount(8) process per mount."""
    args = [None if v is None else os.fsencode(v) for v in (source, target, kind, data or None)]
    if _libc.mount(args[0], args[1], args[2], ctypes.c_ulong(flags), args[3]) != 0:
        errno = ctypes.get_errno()
        raise SetupFailed(f"mount {source or kind} on {target}: {os.strerror(errno)}")


def _mountpoint(path: str, folder: bool) -> None:
    if folder:
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a"):
            pass


def _bind_read_only(source: str, target: str) -> None:
    _mountpoint(target, os.path.isdir(source))
    _mount(source, target, None, MS_BIND)
    flags = os.statvfs(target).f_flag
    kept = sum(bit for stat_bit, bit in _KEPT if flags & stat_bit)
    _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | kept)


def _loopback_up() -> None:
    """``ip link set lo up`` without iproute2: one ioctl on a throwaway socket."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        (flags,) = struct.unpack_from("16xH", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | _IFF_UP))


def build(plan: dict[str, object]) -> str:
    """Build the view the plan describes; returns the new root."""
    root = str(plan["root"])
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    for source, target in plan["binds"]:  # type: ignore[attr-defined]
        _bind_read_only(source, root + target)
    for text, path in plan["symlinks"]:  # type: ignore[attr-defined]
        os.symlink(text, root + path)
    dev = root + "/dev"
    os.makedirs(dev)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for name in _DEVICES:
        _mountpoint(f"{dev}/{name}", folder=False)
        _mount(f"/dev/{name}", f"{dev}/{name}", None, MS_BIND)
    for text, name in _LINKS:
        os.symlink(text, f"{dev}/{name}")
    os.makedirs(root + "/proc")
    _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    size = f"size={int(plan['tmp_bytes'])}"  # type: ignore[call-overload]
    for private in (root + "/tmp", dev + "/shm"):  # both private, both bounded
        os.makedirs(private)
        _mount("tmpfs", private, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,{size}")
    _mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
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
