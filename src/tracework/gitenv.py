"""Running git safely: a hardened environment and argument discipline.

Every git process tracework starts goes through :func:`run_git` (or, for clones and
fetches, through GitPython with :func:`hardened_env`).  The environment drops any
inherited ``GIT_*`` variable, ignores system and global config, turns hooks,
fsmonitor, replace refs, prompts and external diff/textconv drivers off, and allows
only the transport protocol a subject's URL needs.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from .errors import GitError

# Config forced on every git command.  It travels in the environment
# (GIT_CONFIG_COUNT/KEY/VALUE), which outranks any repository config and also reaches
# the git processes GitPython starts, without passing ``-c`` options to them.
SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.sshCommand", "ssh -o BatchMode=yes"),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("transfer.fsckObjects", "true"),
    ("fetch.fsckObjects", "true"),
    ("safe.bareRepository", "explicit"),
    # a pinned commit must stay readable after an upstream force-push: never prune
    ("gc.auto", "0"),
    ("gc.pruneExpire", "never"),
)


def hardened_env(protocols: Sequence[str] = ()) -> dict[str, str]:
    """The environment for every git process; ``protocols`` are the only ones allowed.

    Inherited ``GIT_*`` variables (``GIT_DIR``, ``GIT_CONFIG_PARAMETERS``…) are dropped
    so that a caller's environment cannot redirect or reconfigure git.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "/bin/false",
            "SSH_ASKPASS": "/bin/false",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_PROTOCOL_FROM_USER": "0",
            "GIT_ALLOW_PROTOCOL": ":".join(protocols) if protocols else "none",
            "LC_ALL": "C",
            # paths from a subject are never pathspec magic (":(glob)…", ":!x")
            "GIT_LITERAL_PATHSPECS": "1",
        }
    )
    pairs = [*SAFE_CONFIG, *((f"protocol.{p}.allow", "always") for p in protocols)]
    env["GIT_CONFIG_COUNT"] = str(len(pairs))
    for i, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def run_git(
    git_dir: Path | None,
    args: Sequence[str],
    *,
    input: bytes | None = None,
    protocols: Sequence[str] = (),
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run one git command and return its completed process (bytes in, bytes out).

    Callers put ``--end-of-options`` or ``--`` before any value that came from a user
    or a subject; this function adds nothing implicit but the hardened config.
    """
    cmd = ["git"]
    if git_dir is not None:
        cmd.append(f"--git-dir={git_dir}")
    cmd += list(args)
    proc = subprocess.run(
        cmd,
        input=input,
        capture_output=True,
        env=dict(env) if env is not None else hardened_env(protocols),
        check=False,
    )
    if check and proc.returncode != 0:
        raise GitError(f"git {_subcommand(args)} failed: {git_message(proc.stderr)}")
    return proc


def _subcommand(args: Sequence[str]) -> str:
    """The git subcommand in ``args`` (skipping ``-c key=value`` and other options)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "-c":
            skip = True
        elif not arg.startswith("-"):
            return arg
    return "command"


def git_message(stderr: bytes) -> str:
    """Git's stderr as one readable line (control characters made harmless).

    The first ``error:``/``fatal:`` lines carry the cause (fsck's ``hasDotdot: contains
    '..'`` comes before the ``fatal:`` lines that merely follow from it); progress and
    ``Cloning into…`` lines are left out when there are such lines.
    """
    text = stderr.decode("utf-8", errors="replace").strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith(("error:", "fatal:"))]
    msg = "; ".join(errors[:3] if errors else lines[-3:]) or "no message"
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in msg)
