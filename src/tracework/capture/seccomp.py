"""A seccomp filter that keeps a sandbox from making user namespaces of its own.

Inside a sandbox, a process that creates a user namespace becomes root of it, with
every capability over the new namespaces it makes there: it can mount a tmpfs of any
size (the private ``/tmp``'s caps, in bytes and in files, no longer bind it), and it
reaches far more of the kernel than a process without capabilities does.  bubblewrap
run by a user refuses nested user namespaces itself (``--disable-userns``), and the
unshare backend's chroot makes the kernel refuse them; bubblewrap run as root has no
user namespace to disable them in.  So both backends' bwrap runs get this filter
(``--seccomp FD``): ``unshare`` and ``clone`` with ``CLONE_NEWUSER`` fail with EPERM,
``clone3`` (whose flags a filter cannot read) fails with ENOSYS, so that the C library
falls back to ``clone``, and system calls of another architecture (a 32-bit binary
on a 64-bit kernel, x32) fail with ENOSYS, so none can go around it.  Everything else
is allowed.

The program is classic BPF, written out here (libseccomp is not a dependency), for
x86_64 and aarch64; elsewhere :func:`program` returns None and the filter is not used.
"""

from __future__ import annotations

import platform
import struct

#: ``struct seccomp_data``: the syscall number, the architecture, then six arguments.
_NR, _ARCH, _ARG0 = 0, 4, 16
_CLONE_NEWUSER = 0x10000000
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38
#: x32 system calls on x86_64 carry this bit.
_X32 = 0x40000000

#: arch → (AUDIT_ARCH value, unshare, clone, clone3).
_ARCHES = {
    "x86_64": (0xC000003E, 272, 56, 435),
    "aarch64": (0xC00000B7, 97, 220, 435),
}

_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one), as bwrap's ``--seccomp`` reads it,
    or None where it is not written."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit, unshare, clone, clone3 = arch
    # indices: each jump counts the instructions it skips
    return b"".join(
        [
            _op(_LD_ABS, _ARCH),  # 0
            _op(_JEQ, audit, 1, 0),  # 1: our architecture? on to 3, else 2
            _op(_RET, _ERRNO | _ENOSYS),  # 2: another architecture's call
            _op(_LD_ABS, _NR),  # 3
            _op(_JGE, _X32, 8, 0),  # 4: an x32 call → 13
            _op(_JEQ, unshare, 3, 0),  # 5 → 9
            _op(_JEQ, clone, 2, 0),  # 6 → 9
            _op(_JEQ, clone3, 5, 0),  # 7 → 13
            _op(_RET, _ALLOW),  # 8
            _op(_LD_ABS, _ARG0),  # 9: the flags (their low 32 bits)
            _op(_JSET, _CLONE_NEWUSER, 1, 0),  # 10 → 12
            _op(_RET, _ALLOW),  # 11
            _op(_RET, _ERRNO | _EPERM),  # 12: a new user namespace
            _op(_RET, _ERRNO | _ENOSYS),  # 13
        ]
    )
