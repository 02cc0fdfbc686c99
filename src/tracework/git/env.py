"""Running git safely: a hardened environment and argument discipline.

Every git process tracework starts goes through :func:`run_git` (clones and fetches
through :func:`run_git_supervised`) with :func:`hardened_env`.  The environment drops
any inherited ``GIT_*`` variable, ignores system and global config, turns hooks,
fsmonitor, replace refs, grafts, the commit-graph, prompts and external
diff/textconv drivers off, and allows only the transport protocol a subject's URL
needs.  A mirror's own config is still read by git (no variable turns the repository
config off); what keeps it from running or redirecting anything during a fetch is
that fetch rewrites it first (see :func:`tracework.git.subjects.fetch`).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path

from tracework.errors import GitError

# Config forced on every git command.  It travels in the environment
# (GIT_CONFIG_COUNT/KEY/VALUE), which outranks the repository's config for the same
# key and reaches every git that git itself starts (upload-pack, index-pack, a lazy
# fetch), without passing ``-c`` options to them.  It cannot remove keys it does not
# name (``url.<anything>.insteadOf``, ``http.<url>.proxy``), nor beat the few keys of
# which git keeps the first value it reads (``remote.<name>.uploadpack`` and
# ``receivepack``), which is why fetch does not rely on it alone.
SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.sshCommand", "ssh -o BatchMode=yes"),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    # a commit-graph file is trusted for parents without being checked against the
    # commits: one copied in with a mirror could rewrite the history a bisection walks
    ("core.commitGraph", "false"),
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
            # info/grafts (deprecated, still honoured) would rewrite parents, as replace
            # refs would; a path that cannot exist means no grafts and no warning
            "GIT_GRAFT_FILE": "/dev/null/no-grafts",
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


# The supervisor of a transfer: git runs in the background, and a watcher blocks on
# the read end of a pipe whose only write end tracework holds ("$1").  However
# tracework ends (SIGKILL and the OOM killer included) the kernel closes that end,
# the read returns, and the watcher kills the whole process group.  When git ends
# first, the watcher is stopped and git's exit status is the supervisor's.
_SUPERVISOR = """\
lifeline=$1; shift
"$@" </dev/null & git=$!
{ read -r _ <&"$lifeline"; kill -KILL 0; } </dev/null & watcher=$!
wait "$git"; status=$?
kill "$watcher" 2>/dev/null
exit "$status"
"""


def run_git_supervised(
    git_dir: Path | None, args: Sequence[str], *, protocols: Sequence[str]
) -> subprocess.CompletedProcess[bytes]:
    """Run a transfer (clone, fetch) so that no git it starts outlives tracework.

    A clone starts ``upload-pack`` (for a local path), ``ssh``, ``index-pack`` and
    ``pack-objects``; killed with SIGKILL, tracework could not stop them, and they
    went on writing into a folder nobody would use.  So git runs in a process group
    of its own, under a POSIX ``sh`` supervisor (a few lines, no dependency) that
    kills the group when tracework's end of a pipe closes: the kernel closes it when
    tracework dies, however it dies.  Ctrl-C (the group is not in the terminal's
    foreground, so it gets no SIGINT) or any exception here kills the group at once.
    The result is run_git's: the completed process, stdout and stderr as bytes.
    """
    env = hardened_env(protocols)
    if shutil.which("git", path=env.get("PATH")) is None:
        raise GitError(
            "git is not on PATH", hint="install git: fetch runs the `git` it finds on PATH"
        )
    cmd = ["git", *([f"--git-dir={git_dir}"] if git_dir is not None else []), *args]
    lifeline, held_end = os.pipe()
    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", _SUPERVISOR, "sh", str(lifeline), *cmd],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            pass_fds=(lifeline,),
            start_new_session=True,
        )
    except BaseException:
        os.close(held_end)
        raise
    finally:
        os.close(lifeline)
    try:
        out, err = proc.communicate()
    except BaseException:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        os.close(held_end)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


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
