"""The capture's environment: the subject's own locked dependencies, installed by uv.

``tracework capture env NAME`` builds it (or finds it built) and is the only step of a
capture that may use the network, to download packages from the registry the lock
names.  It is kept in the user's cache, keyed by the SHA-256 of what it is built
from — the lock and the project file (or the requirement pins), the extra packages,
the interpreter's version and path, and uv's version — so a second capture, in any
workspace, installs nothing.

- ``lock = "uv"``: ``uv sync --frozen`` of the exported tree, the field's convention;
- ``requirements = [...]``: ``uv pip install --require-hashes`` of exact pins;
- ``extra = [...]``: then ``uv pip install --require-hashes`` of the harness's own
  packages (a fake model library, say).

Wheels only (``--no-build``): no package's build code, and none of the subject's (the
project itself is never installed, ``--no-install-workspace``; the harness imports it
from the exported tree), runs while the environment is built.  uv runs without any
configuration file (``--no-config``), so neither the subject's ``uv.toml`` nor the
analyst's changes what is installed, and never downloads a Python.  The venv is
relocatable, because the sandbox shows it at ``/capture/env``.

The frozen list (``environment.txt``) is read from the installed distributions'
metadata, without starting the environment's Python.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from contextlib import suppress
from dataclasses import dataclass
from email.parser import HeaderParser
from functools import cache
from pathlib import Path

from tracework.capture.cache import cache_folder
from tracework.capture.config import CaptureConfig
from tracework.capture.errors import CaptureConfigError, EnvironmentBuildFailed, EnvironmentMissing
from tracework.fsio import locked, write_atomic
from tracework.hashing import sha256_hex

#: Bump when the way environments are built changes: every key changes with it.
FORMAT = 1


@dataclass(frozen=True)
class Interpreter:
    """The base Python an environment is made from."""

    path: str
    version: str
    prefix: str


@dataclass(frozen=True)
class Environment:
    """A built environment: where it is, what is in it, and whether it was built now."""

    key: str
    folder: Path
    frozen: str
    interpreter: Interpreter
    built_now: bool

    @property
    def venv(self) -> Path:
        return self.folder / "venv"

    @property
    def sha256(self) -> str:
        """SHA-256 of ``environment.txt``."""
        return sha256_hex(self.frozen.encode("utf-8"))

    @property
    def packages(self) -> list[str]:
        return [line for line in self.frozen.splitlines() if not line.startswith("#")]


@cache
def uv_bin() -> str:
    """The uv that came with tracework (a dependency, so the same version everywhere)."""
    import uv

    return str(uv.find_uv_bin())


@cache
def uv_version() -> str:
    from importlib.metadata import version

    return version("uv")


def _uv_env(**extra: str) -> dict[str, str]:
    """The caller's environment (proxies, certificates) for uv, minus what would point
    it at another environment, and never downloading a Python."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "CONDA_PREFIX", "PYTHONPATH")
    }
    env.update(UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1", **extra)
    return env


def _uv(args: list[str], what: str, **env: str) -> str:
    proc = subprocess.run(
        [uv_bin(), *args],
        capture_output=True,
        env=_uv_env(**env),
        stdin=subprocess.DEVNULL,
        check=False,
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
    found = _uv(
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


def _record_path(version: str) -> Path:
    return cache_folder("interpreters") / f"{version}.json"


def _identity(path: str) -> list[int]:
    """What changes when an interpreter is replaced: its real file's device, inode,
    size and modification time."""
    info = os.stat(path)
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns]


def _inputs(config: CaptureConfig, tree: Path, interpreter: Interpreter) -> dict[str, object]:
    """Everything the environment is built from; its canonical JSON's SHA-256 is the key."""
    lock: dict[str, str] | None = None
    if config.lock == "uv":
        lock = {}
        for name in ("uv.lock", "pyproject.toml"):
            path = tree / name
            if not path.is_file():
                raise CaptureConfigError(
                    f'lock = "uv", but the subject has no {name} at this commit',
                    hint="give requirements = [...] (exact pins with hashes) instead",
                )
            lock[name] = sha256_hex(path.read_bytes())
    return {
        "format": FORMAT,
        "lock": lock,
        "requirements": list(config.requirements) if config.requirements is not None else None,
        "extra": list(config.extra),
        "python": {"version": interpreter.version, "path": interpreter.path},
        "uv": uv_version(),
    }


def environment_key(
    config: CaptureConfig, tree: Path, interpreter: Interpreter
) -> tuple[str, dict[str, object]]:
    inputs = _inputs(config, tree, interpreter)
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    return sha256_hex(text.encode("utf-8")), inputs


def cached_environment(config: CaptureConfig, tree: Path, name: str) -> Environment:
    """The built environment for ``config`` at ``tree``; never builds one."""
    interpreter = recorded_interpreter(config.python)
    key, _ = environment_key(config, tree, interpreter)
    folder = cache_folder("envs") / key
    if not (folder / "complete").is_file():
        raise EnvironmentMissing(
            f"the environment of capture {name} is not built for this commit",
            hint=f"run `tracework capture env {name}` first (it may download packages from "
            "the package registry; the capture itself never uses the network)",
        )
    return _read(folder, key, built_now=False, interpreter=interpreter)


def build_environment(config: CaptureConfig, tree: Path) -> Environment:
    """The environment for ``config`` at ``tree``: found in the cache, or built now.

    The interpreter recorded the last time is tried first (an environment built with it
    is reused as it is); only to build is uv asked to find one again."""
    interpreter = recorded_interpreter(config.python)
    key, inputs = environment_key(config, tree, interpreter)
    folder = cache_folder("envs") / key
    if (folder / "complete").is_file():
        return _read(folder, key, built_now=False, interpreter=interpreter)
    interpreter = find_interpreter(config.python)
    key, inputs = environment_key(config, tree, interpreter)
    folder = cache_folder("envs") / key
    with locked(folder):
        if (folder / "complete").is_file():  # built meanwhile by another process
            return _read(folder, key, built_now=False, interpreter=interpreter)
        shutil.rmtree(folder, ignore_errors=True)  # what an interrupted build left
        folder.mkdir()
        _install(config, tree, folder, interpreter)
        frozen = f"# python {interpreter.version}\n" + "".join(
            f"{line}\n" for line in freeze(folder / "venv")
        )
        write_atomic(folder / "environment.txt", frozen)
        write_atomic(folder / "inputs.json", json.dumps(inputs, indent=2, sort_keys=True) + "\n")
        _readable(folder)
        write_atomic(folder / "complete", f"{key}\n")
    return _read(folder, key, built_now=True, interpreter=interpreter)


def _install(config: CaptureConfig, tree: Path, folder: Path, interpreter: Interpreter) -> None:
    venv = folder / "venv"
    python = str(venv / "bin" / "python")
    _uv(
        [
            "venv",
            "--relocatable",
            "--no-config",
            "--quiet",
            "--python",
            interpreter.path,
            str(venv),
        ],
        "uv venv",
    )
    if config.lock == "uv":
        _uv(
            [
                "sync",
                "--frozen",
                "--no-install-workspace",
                "--no-build",
                "--no-config",
                "--compile-bytecode",
                "--project",
                str(tree),
                "--python",
                python,
            ],
            "uv sync --frozen",
            UV_PROJECT_ENVIRONMENT=str(venv),
        )
    for label, pins in (("requirements", config.requirements or ()), ("extra", config.extra)):
        if not pins:
            continue
        listing = folder / f"{label}.txt"
        listing.write_text("".join(f"{pin}\n" for pin in pins), encoding="utf-8")
        _uv(
            [
                "pip",
                "install",
                "--no-config",
                "--require-hashes",
                "--no-build",
                "--compile-bytecode",
                "--python",
                python,
                "-r",
                str(listing),
            ],
            f"uv pip install of {label}",
        )


def freeze(venv: Path) -> list[str]:
    """``name==version`` of every installed distribution, sorted, names normalised
    (PEP 503), from the ``.dist-info`` metadata alone."""
    found = set()
    for metadata in venv.glob("lib/python*/site-packages/*.dist-info/METADATA"):
        headers = HeaderParser().parsestr(metadata.read_text(encoding="utf-8", errors="replace"))
        name, version = headers.get("Name"), headers.get("Version")
        if name and version:
            found.add(f"{re.sub(r'[-_.]+', '-', name).lower()}=={version.strip()}")
    return sorted(found)


def _readable(folder: Path) -> None:
    """Let everyone read the environment: the harness may run as another uid (65534)."""
    for base, _dirs, files in os.walk(folder):
        os.chmod(base, os.stat(base).st_mode | 0o555)
        for name in files:
            path = os.path.join(base, name)
            if not os.path.islink(path):
                mode = os.stat(path).st_mode
                os.chmod(path, mode | 0o444 | (0o111 if mode & 0o100 else 0))


def _read(folder: Path, key: str, *, built_now: bool, interpreter: Interpreter) -> Environment:
    frozen = (folder / "environment.txt").read_text(encoding="utf-8")
    return Environment(key, folder, frozen, interpreter, built_now)
