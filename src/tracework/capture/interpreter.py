"""The base Python a capture's environment is made from, and the uv that makes it.

Both are the host's own, never the subject's: the interpreter is found by uv among
the machine's installed Pythons (never a virtual environment, never a download) and
queried once with ``-I -S`` (its own site-packages stay out of it); uv is the one
that came with tracework.  What was found is recorded, so the next capture does not
search the machine again while the binary is unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tracework.capture.cache import cache_folder
from tracework.capture.errors import EnvironmentBuildFailed
from tracework.fsio import write_atomic


@dataclass(frozen=True)
class Interpreter:
    """The base Python an environment is made from."""

    path: str
    version: str
    prefix: str


@cache
def uv_bin() -> str:
    """The uv that came with tracework (a dependency, so the same version everywhere)."""
    import uv

    return str(uv.find_uv_bin())


@cache
def uv_version() -> str:
    from importlib.metadata import version

    return version("uv")


def _host_uv(args: list[str], what: str) -> str:
    """uv on the host, for what reads no subject file: finding an interpreter."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "CONDA_PREFIX", "PYTHONPATH")
    }
    env.update(UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
    proc = subprocess.run(
        [uv_bin(), *args], capture_output=True, env=env, stdin=subprocess.DEVNULL, check=False
    )
    if proc.returncode != 0:
        words = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()
        detail = "; ".join(w.strip() for w in words[-4:] if w.strip()) or f"exit {proc.returncode}"
        raise EnvironmentBuildFailed(f"{what} failed: {detail}")
    return proc.stdout.decode("utf-8", errors="replace")


def find_interpreter(version: str) -> Interpreter:
    """The installed Python for ``version`` that uv finds (never a virtual environment,
    never a download), with its full version and prefix; recorded for
    :func:`recorded_interpreter`."""
    found = _host_uv(
        ["python", "find", "--no-config", "--system", version], f"finding Python {version}"
    ).strip()
    probe = "import json, sys; print(json.dumps([sys.version.split()[0], sys.prefix]))"
    proc = subprocess.run(
        [found, "-I", "-S", "-c", probe], capture_output=True, check=False, env={}
    )
    if proc.returncode != 0:
        raise EnvironmentBuildFailed(f"the Python uv found for {version} ({found}) does not run")
    full, prefix = json.loads(proc.stdout)
    interpreter = Interpreter(found, full, prefix)
    record = {"interpreter": [found, full, prefix], "identity": _identity(found)}
    write_atomic(_record_path(version), json.dumps(record, sort_keys=True) + "\n")
    return interpreter


def recorded_interpreter(version: str) -> Interpreter:
    """The Python ``capture env`` found for ``version``, while its binary is unchanged
    (finding one again asks uv, which searches the whole machine: most of a second)."""
    with suppress(OSError, ValueError, TypeError, KeyError):
        record = json.loads(_record_path(version).read_text(encoding="utf-8"))
        path, full, prefix = record["interpreter"]
        if record["identity"] == _identity(path):
            return Interpreter(path, full, prefix)
    return find_interpreter(version)


def prefix_to_show(interpreter: Interpreter) -> Path | None:
    """The interpreter's own folder, which a sandbox must show (None: it lives under
    ``/usr``, shown anyway).  A prefix that holds more than an interpreter — ``/``, the
    user's home or a folder above it, the folder holding tracework's cache — would show
    the sandbox the user's files, so it is refused."""
    prefix = Path(interpreter.prefix).resolve()
    if prefix == Path("/usr") or Path("/usr") in prefix.parents:
        return None
    home = Path.home().resolve()
    cache = cache_folder("envs").resolve()
    if prefix == Path("/") or prefix == home or prefix in home.parents or prefix in cache.parents:
        raise EnvironmentBuildFailed(
            f"the Python found for {interpreter.version} lives in {prefix}, which holds more "
            "than an interpreter: a sandbox showing it would show the user's files",
            hint="install that Python in a folder of its own (as pyenv or uv do), or set "
            "python to a version installed so",
        )
    return Path(interpreter.prefix)  # as the environment's links name it


def _record_path(version: str) -> Path:
    return cache_folder("interpreters") / f"{version}.json"


def _identity(path: str) -> list[int]:
    """What changes when an interpreter is replaced: its real file's device, inode,
    size and modification time."""
    info = os.stat(path)
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns]
