"""The unshare backend's init: build the sandbox's view, start the harness, reap.

``unshare --mount --net --pid --ipc --uts --fork`` starts this file (with tracework's
own Python, ``-I -S``: standard library only) as the first process of the new PID
namespace, with the plan :mod:`tracework.capture.isolation` gives it on stdin.  It

1. makes every mount private, so nothing done here reaches the host;
2. mounts a tmpfs as the new root and binds each planned host path into it
   read-only, or writable where the plan says so (the ``nosuid``/``nodev``/
   ``noexec``/atime flags a user namespace locks are kept), adds the planned links, a
   minimal ``/dev``, ``/proc`` of the new PID namespace and a private ``/tmp`` and
   ``/dev/shm`` bounded in bytes and in files, then makes the root read-only;
3. brings the loopback interface of the new network namespace up (it starts down);
4. forks the harness, which waits until step 5 is done, then enters the new root
   with ``chroot`` and execs ``setpriv`` (no capabilities, ``no_new_privs``; as root,
   uid 65534), ``prlimit`` and then the runner;
5. replaces itself with a small reaper (:data:`REAPER`), not dumpable, whose command
   line names no host path, so the harness finds nothing of the host in
   ``/proc/1``; it reaps every process until the harness ends, and exits with its
   status.  When it ends, the kernel kills whatever is left in the namespace.

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


def _bind(source: str, target: str, writable: bool) -> None:
    _mountpoint(target, os.path.isdir(source))
    _mount(source, target, None, MS_BIND)
    flags = os.statvfs(target).f_flag
    kept = sum(bit for stat_bit, bit in _KEPT if flags & stat_bit)
    read_only = 0 if writable else MS_RDONLY
    _mount(None, target, None, MS_REMOUNT | MS_BIND | read_only | MS_NOSUID | MS_NODEV | kept)


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
    for source, target, writable in plan["binds"]:  # type: ignore[attr-defined]
        _bind(source, root + target, writable)
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
    options = str(plan["tmp_options"])  # mode, size and nr_inodes
    for private in (root + "/tmp", dev + "/shm"):  # both private, both bounded
        os.makedirs(private)
        _mount("tmpfs", private, "tmpfs", MS_NOSUID | MS_NODEV, options)
    _mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _loopback_up()
    return root


#: What the first process becomes once the harness is forked: reap every process until
#: the harness (``argv[1]``) ends, and exit with its status (a signal N as 128 + N).
#: Not dumpable, so a process inside cannot read its /proc entries beyond the command
#: line, which is this text.
REAPER = """
import ctypes, os, sys
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
child = int(sys.argv[1])
while True:
    try:
        pid, status = os.wait()
    except ChildProcessError:
        os._exit(125)
    if pid == child:
        code = os.waitstatus_to_exitcode(status)
        os._exit(code if code >= 0 else 128 - code)
"""


def main() -> int:
    plan = json.loads(sys.stdin.buffer.read())
    try:
        root = build(plan)
    except (SetupFailed, OSError) as exc:
        sys.stderr.write(f"tracework sandbox: {exc}\n")
        return 125
    argv, env = list(plan["argv"]), dict(plan["env"])
    wait_r, wait_w = os.pipe()  # the harness starts once this end closes (on exec below)
    child = os.fork()
    if child == 0:
        os.close(wait_w)
        os.read(wait_r, 1)
        os.close(wait_r)
        try:
            os.chroot(root)
            os.chdir(plan["cwd"])
            for fd in plan["fds"]:
                os.set_inheritable(fd, True)
            os.execve(argv[0], argv, env)
        except OSError as exc:
            sys.stderr.write(f"tracework sandbox: cannot start {argv[0]}: {exc}\n")
        os._exit(126)
    os.close(wait_r)  # wait_w is close-on-exec: the exec below lets the harness start
    os.execve(sys.executable, ["tracework-sandbox", "-I", "-S", "-c", REAPER, str(child)], {})
    return 126  # not reached


if __name__ == "__main__":
    sys.exit(main())
