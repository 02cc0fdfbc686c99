"""The base Python a capture's environment is made from, and the uv that makes it.

Both are the host's own, never the subject's: uv is the one that came with tracework,
and the interpreter is one installed on this machine, found the way uv finds them —
``uv python find --no-config --system`` first (no download, never a virtual
environment), and when that finds nothing that fits (a pyenv shim first on ``PATH``
makes it fail outright), every interpreter uv lists as installed, pyenv's own
versions (``$(pyenv root)/versions/*``) and the Pythons on ``PATH``, newest first.

A candidate is run on the host, so only a plain base interpreter is: a script (a
pyenv or asdf shim, a wrapper) is skipped unread, as is anything inside a virtual
environment (a ``pyvenv.cfg`` beside it, or above its ``bin``) — a capture
environment's interpreter above all, which never starts on the host.  What is left is
queried once with ``-I -S`` and an empty environment (its own site-packages stay out
of it) and must say it is CPython, not a virtual environment's and not a free-threaded
build.  None that fits is one message listing what was found, each with its version
and path, and how to install one.

What was chosen is recorded — its exact version, path, prefix and the SHA-256 of its
binary (the real file the path names) — so the next capture does not search the
machine again while that file is unchanged.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tracework.capture.cache import cache_folder
from tracework.capture.errors import EnvironmentBuildFailed, InterpreterNotFound
from tracework.capture.provenance import interpreter_sha256
from tracework.fsio import write_atomic

log = logging.getLogger(__name__)

#: Seconds a candidate may take to say what it is.
PROBE_TIMEOUT = 20
#: What a candidate is asked: its version, prefixes, implementation and whether it is
#: free-threaded (``t`` in its ABI flags).
_PROBE = (
    "import json, sys; print(json.dumps([sys.version.split()[0], sys.prefix, sys.base_prefix, "
    "sys.implementation.name, 't' in getattr(sys, 'abiflags', '')]))"
)
_NAMES = re.compile(r"python(3(\.[0-9]{1,2})?)?\Z")


@dataclass(frozen=True)
class Interpreter:
    """The base Python an environment is made from."""

    path: str
    version: str  #: exact, e.g. 3.13.1
    prefix: str
    sha256: str = ""  #: of the binary ``path`` names (its real file); "" only if built by hand


@dataclass(frozen=True)
class Candidate:
    """An interpreter found on the machine, and whether it may be used."""

    path: str
    version: str | None  #: exact, when it ran and said
    skipped: str | None = None  #: why it is not used, in words
    prefix: str = ""


@cache
def uv_bin() -> str:
    """The uv that came with tracework (a dependency, so the same version everywhere)."""
    import uv

    return str(uv.find_uv_bin())


@cache
def uv_version() -> str:
    from importlib.metadata import version

    return version("uv")


def _uv_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "CONDA_PREFIX", "PYTHONPATH")
    }
    env.update(UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
    return env


def _host_uv(args: list[str], what: str) -> str:
    """uv on the host, for what reads no subject file: finding an interpreter."""
    proc = subprocess.run(
        [uv_bin(), *args], capture_output=True, env=_uv_env(), stdin=subprocess.DEVNULL, check=False
    )
    if proc.returncode != 0:
        words = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()
        detail = "; ".join(w.strip() for w in words[-4:] if w.strip()) or f"exit {proc.returncode}"
        raise EnvironmentBuildFailed(f"{what} failed: {detail}")
    return proc.stdout.decode("utf-8", errors="replace")


def find_interpreter(version: str) -> Interpreter:
    """The installed Python for ``version`` (``3.13``: the newest 3.13.x; ``3.13.1``:
    exactly that), found as the module docstring says; recorded for
    :func:`recorded_interpreter`.

    Raises:
        InterpreterNotFound: none fits; the message lists every candidate found.
    """
    chosen = _uv_choice(version)
    if chosen is None:
        found = candidates()
        fitting = [c for c in found if c.skipped is None and _fits(c.version, version)]
        if not fitting:
            raise _not_found(version, found)
        chosen = max(fitting, key=lambda c: _version_key(c.version))  # the first of the newest
    assert chosen.version is not None
    interpreter = Interpreter(
        chosen.path, chosen.version, chosen.prefix, interpreter_sha256(chosen.path)
    )
    record = {
        "interpreter": [
            interpreter.path,
            interpreter.version,
            interpreter.prefix,
            interpreter.sha256,
        ],
        "identity": _identity(interpreter.path),
    }
    write_atomic(_record_path(version), json.dumps(record, sort_keys=True) + "\n")
    return interpreter


def recorded_interpreter(version: str) -> Interpreter:
    """The Python ``capture env`` found for ``version``, while its binary is unchanged
    (finding one again asks uv, which searches the whole machine: most of a second)."""
    with suppress(OSError, ValueError, TypeError, KeyError):
        record = json.loads(_record_path(version).read_text(encoding="utf-8"))
        path, full, prefix, sha256 = record["interpreter"]
        if record["identity"] == _identity(path):
            return Interpreter(path, full, prefix, sha256)
    return find_interpreter(version)


def _uv_choice(version: str) -> Candidate | None:
    """What ``uv python find`` gives for ``version``, when it is a plain interpreter of
    that version; None when uv finds none, or a pyenv shim it cannot run stops it."""
    try:
        found = _host_uv(
            ["python", "find", "--no-config", "--system", version], f"finding Python {version}"
        ).strip()
    except EnvironmentBuildFailed as exc:
        log.debug("uv python find %s: %s", version, exc.message)
        return None
    chosen = _judge(found)
    return chosen if chosen.skipped is None and _fits(chosen.version, version) else None


def candidates() -> list[Candidate]:
    """Every interpreter found on the machine, in the order found (uv's list, pyenv's
    versions newest first, then ``PATH``), each judged (:func:`_judge`); an interpreter
    by several names is run, and listed, once."""
    paths: list[str] = []
    with suppress(EnvironmentBuildFailed, ValueError, TypeError):
        listed = json.loads(
            _host_uv(
                ["python", "list", "--only-installed", "--no-config", "--output-format", "json"],
                "listing the installed Pythons",
            )
        )
        paths += [str(e["path"]) for e in listed if isinstance(e, dict) and e.get("path")]
    paths += _pyenv_versions()
    paths += _on_path()
    judged: list[Candidate] = []
    ran: set[str] = set()
    for path in dict.fromkeys(paths):
        why = _not_plain(path)
        if why:
            judged.append(Candidate(path, None, why))
            continue
        real = os.path.realpath(path)
        if real not in ran:  # not a second name for an interpreter already asked
            ran.add(real)
            judged.append(_judge(path))
    return judged


def pyenv_root() -> Path:
    """What ``pyenv root`` prints, found as pyenv finds it (``PYENV_ROOT``, else
    ``~/.pyenv``), without running pyenv."""
    return Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")


def _pyenv_versions() -> list[str]:
    """pyenv's installed versions' interpreters (real ones: its shims are scripts),
    newest first."""
    versions = pyenv_root() / "versions"
    found = []
    with suppress(OSError):
        for folder in versions.iterdir():
            python = folder / "bin" / "python3"
            if python.is_file():
                found.append((_version_key(folder.name), str(python)))
    return [path for _, path in sorted(found, key=lambda f: f[0], reverse=True)]


def _on_path() -> list[str]:
    """``python3.N``, ``python3`` and ``python`` in each folder of ``PATH``, in order."""
    found = []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        with suppress(OSError):
            names = sorted(n for n in os.listdir(folder or ".") if _NAMES.match(n))
            found += [os.path.join(folder, n) for n in names]
    return [p for p in found if os.path.isfile(p) and os.access(p, os.X_OK)]


def _judge(path: str) -> Candidate:
    """Whether ``path`` is a plain base interpreter: judged from the file first (a script
    or a virtual environment's interpreter is never run), then from what it says."""
    why = _not_plain(path)
    if why:
        return Candidate(path, None, why)
    try:
        proc = subprocess.run(
            [path, "-I", "-S", "-c", _PROBE],
            capture_output=True,
            env={},
            stdin=subprocess.DEVNULL,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Candidate(path, None, f"does not run ({type(exc).__name__})")
    if proc.returncode != 0:
        words = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()
        said = f": {words[-1].strip()[:120]}" if words else ""
        return Candidate(
            path,
            None,
            f"does not run as a plain Python 3 interpreter (exit {proc.returncode}{said})",
        )
    try:
        full, prefix, base, implementation, free_threaded = json.loads(proc.stdout)
        full, prefix, base = str(full), str(prefix), str(base)
    except (ValueError, TypeError):
        return Candidate(path, None, "does not run as a plain interpreter (it said something else)")
    if implementation != "cpython":
        return Candidate(path, full, f"{implementation}, not CPython")
    if prefix != base:
        return Candidate(path, full, "a virtual environment's interpreter")
    if free_threaded:
        return Candidate(path, full, "a free-threaded build")
    return Candidate(path, full, None, prefix)


def _not_plain(path: str) -> str | None:
    """Why ``path`` may not be run at all, judged from its file; None if it may."""
    real = Path(os.path.realpath(path))
    envs = cache_folder("envs").resolve()
    if envs in real.parents or envs in Path(os.path.abspath(path)).parents:
        return "a capture environment's interpreter: never run on the host"
    where = Path(os.path.abspath(path)).parent
    if (where / "pyvenv.cfg").exists() or (where.parent / "pyvenv.cfg").exists():
        return "a virtual environment's interpreter"
    if Path(os.path.abspath(path)).parent == (pyenv_root() / "shims").resolve():
        return "a pyenv shim, not an interpreter"
    try:
        with real.open("rb") as handle:
            head = handle.read(2)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if head == b"#!":
        return "a script (a shim or a wrapper), not an interpreter"
    return None


def _fits(found: str | None, wanted: str) -> bool:
    """Whether exact version ``found`` is what ``wanted`` asks for: ``3.13`` any 3.13.x,
    ``3.13.1`` only itself."""
    return found is not None and (found == wanted or found.startswith(wanted + "."))


def _version_key(text: str | None) -> tuple[int, ...]:
    """A version's numbers, for ordering (``3.13.0rc1`` → 3, 13, 0)."""
    return tuple(int(n) for n in re.findall(r"[0-9]+", (text or "").split("rc")[0])[:3])


def _not_found(version: str, found: list[Candidate]) -> InterpreterNotFound:
    usable = [c for c in found if c.skipped is None]
    listed = [f"    {c.version:<10} {c.path}" for c in usable]
    listed += [f"    skipped    {c.path}: {c.skipped}" for c in found if c.skipped is not None]
    what = (
        "\n".join(listed)
        if listed
        else "    nothing (no Python on PATH, none uv or pyenv installed)"
    )
    return InterpreterNotFound(
        f"no installed Python {version} runs here as a plain interpreter; found:\n{what}",
        hint=f"install one (`uv python install {version}` or `pyenv install {version}`), or "
        "put one first on PATH, or set python in captures/NAME.toml to a version found "
        "(tracework never downloads an interpreter itself)",
    )


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
