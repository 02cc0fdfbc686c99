"""Reading and writing source registers (``registers/NAME.yaml``).

This module is the read side.  Parsing YAML in pure Python is slow for large
registers (seconds for 10,000 quotes), so every successful load or write also leaves
a compiled copy, ``registers/.NAME.yaml.compiled.json`` (ignored by git): a header
line, then the validated register as JSON rows (each model an array of its field
values in field order; see :mod:`tracework.register.data`).  The header names what
the copy was made from: the SHA-256 of the YAML bytes, the tracework version and the
SHA-256 of the models' source; and its seal, an HMAC-SHA256 of the header and the rows
under a key of this user's (``~/.cache/tracework/seal.key``, mode 0600).  Any change
to the YAML, an upgrade, a change to the models, an edit of the copy, or a copy sealed
by anyone else (committed by mistake, or forged) makes the copy stale, and the
register is parsed and validated afresh.

Two ways to read: :func:`load` validates the copy with the pydantic models on every
load; :func:`load_data`, the check's way, trusts a copy whose header matches (we wrote
it, atomically, after validating exactly those YAML bytes) and reads it into the
named tuples of :mod:`tracework.register.data`, so the check never imports pydantic.
The write side, with its comment-preserving edits, is :mod:`tracework.register.edits`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
from contextlib import suppress
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from tracework.errors import RegisterError, validation_problem
from tracework.fsio import write_atomic
from tracework.hashing import sha256_file, sha256_hex
from tracework.readers import DataError, load_json, load_yaml
from tracework.register.data import RegisterData
from tracework.version import __version__

if TYPE_CHECKING:
    from tracework.register.models import Register

__all__ = ["data_of", "load", "load_data"]

#: Bump when the compiled copy's layout changes.
COMPILED_FORMAT = 3


def validate(data: Any, path: Path) -> Register:
    """The register the data describes, validated by the models, or one clear message."""
    from pydantic import ValidationError

    from tracework.register.models import Register

    if not isinstance(data, dict):
        raise RegisterError(
            f"{path}: not a register (expected a mapping at the top level)",
            hint="create one with `tracework register new NAME`",
        )
    try:
        return Register.model_validate(data)
    except ValidationError as exc:
        raise RegisterError(
            f"{path}: malformed register at {validation_problem(exc)}",
            hint="fix the entry by hand or restore the file from version control",
        ) from None


def parse(text: str, path: Path, *, round_trip: bool = False) -> Any:
    """YAML text to data, or one clear message naming the file (and, for a syntax error,
    the line and column); nesting is bounded (see :mod:`tracework.readers`).  The
    round-trip loader keeps comments, for edits."""
    try:
        return load_yaml(text, round_trip=round_trip)
    except DataError as exc:
        raise RegisterError(
            f"{path}: {exc}", hint="fix it or restore the file from version control"
        ) from None


def load(path: Path, raw: bytes | None = None) -> Register:
    """Load and validate a register (read-only): the file at ``path``, or its bytes
    ``raw`` when the caller has read them already (so both describe one version)."""
    from pydantic import ValidationError

    from tracework.register.models import Register

    raw = _read_yaml(path) if raw is None else raw
    digest = sha256_hex(raw)
    content = _read_compiled(path, digest)
    if content is not None:
        with suppress(ValidationError, *_SHAPE_ERRORS):
            return Register.model_validate(_as_data(RegisterData.from_row(orjson.loads(content))))
    return _load_yaml(path, raw, digest)


def load_data(path: Path) -> RegisterData:
    """The register's data, read-only, for the check: fast, and never imports pydantic.

    A compiled copy whose header matches the YAML bytes, this tracework and these
    models was validated by us before it was written, so it is read without
    validating it again.  Anything else (no copy, a stale or edited one, one of a
    shape :mod:`tracework.register.data` refuses) is parsed and validated afresh.
    """
    _must_exist(path)
    parts = _compiled_parts(path)
    if parts is not None:
        header, content = parts
        trusted: list[bool] = []

        def judge() -> None:  # hashlib lets go of the GIL: this runs beside the parse
            try:  # the YAML streamed: read whole only to parse it
                trusted.append(_made_from(header, sha256_file(path), content))
            except OSError:
                trusted.append(False)

        judging = threading.Thread(target=judge, name="compiled-copy-seal")
        judging.start()
        try:  # parsed while it is judged, and used only once it is trusted
            rows = orjson.loads(content)  # 3× json's speed here
        except orjson.JSONDecodeError:
            rows = None
        finally:
            judging.join()
        if rows is not None and trusted == [True]:
            with suppress(*_SHAPE_ERRORS):
                return RegisterData.from_row(rows)
    raw = _read_yaml(path)
    return data_of(_load_yaml(path, raw, sha256_hex(raw)))


def data_of(register: Register) -> RegisterData:
    """The read-only data of a validated register."""
    return RegisterData.from_row(_row(register))


#: What reading rows of another shape raises (JSON errors are ValueErrors).
_SHAPE_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError)


def _row(value: Any) -> Any:
    """A validated model as JSON data in rows: each model the list of its field values."""
    fields = getattr(type(value), "model_fields", None)
    if fields is not None:
        items = [getattr(value, name) for name in fields]
        return [item if isinstance(item, _LEAVES) else _row(item) for item in items]
    if isinstance(value, dict):
        return {
            key: item if isinstance(item, _LEAVES) else _row(item) for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_row(item) for item in value]
    return value


def _as_data(value: Any) -> Any:
    """Named tuples back to mappings, for the models to validate."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {
            name: item if isinstance(item, _LEAVES) else _as_data(item)
            for name, item in zip(value._fields, value, strict=True)
        }
    if isinstance(value, dict):
        return {
            key: item if isinstance(item, _LEAVES) else _as_data(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_as_data(item) for item in value]
    return value


_LEAVES = (str, int, type(None))  # most values, so most need no call (bool is an int)


def _must_exist(path: Path) -> None:
    if not path.is_file():
        raise RegisterError(
            f"no register at {path}", hint="create it with `tracework register new NAME`"
        )


def _read_yaml(path: Path) -> bytes:
    _must_exist(path)
    return path.read_bytes()


def _load_yaml(path: Path, raw: bytes, digest: str) -> Register:
    """Parse and validate the YAML, then leave the compiled copy for the next load."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise RegisterError(f"{path}: not UTF-8 text") from None
    register = validate(parse(text, path), path)
    write_compiled(path, digest, register)
    return register


class _Header(NamedTuple):
    """The compiled copy's first line: what the JSON after it was made from."""

    format: int
    tracework: str
    models: str
    yaml_sha256: str
    seal: str


@cache
def models_sha256() -> str:
    """SHA-256 of the models' source: a copy validated by other models is stale.

    Versions do not change between releases, models may; empty when the source is
    not there to read (then the version alone keys the copy).
    """
    try:
        return sha256_hex(Path(__file__).with_name("models.py").read_bytes())
    except OSError:
        return ""


def _seal(digest: str, content: bytes | memoryview) -> str | None:
    """HMAC-SHA256, under this user's key, of what the copy was made from and its rows;
    None when there is no key (the copy is then neither written nor trusted)."""
    key = seal_key()
    if key is None:
        return None
    made_from = f"{COMPILED_FORMAT}\n{__version__}\n{models_sha256()}\n{digest}\n".encode()
    mac = hmac.new(key, made_from, hashlib.sha256)
    mac.update(content)  # not joined to the header first: no copy of the rows
    return mac.hexdigest()


@cache
def seal_key() -> bytes | None:
    """This user's sealing key: 32 random bytes in ``$XDG_CACHE_HOME/tracework/seal.key``
    (default ``~/.cache``), created on first use with mode 0600; None when the cache
    folder cannot be written or the key read."""
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tracework"
    path = folder / "seal.key"
    with suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with suppress(FileExistsError):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(secrets.token_bytes(32))
        key = path.read_bytes()
        return key if len(key) == 32 else None
    return None


def _compiled_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.compiled.json")


def _read_compiled(path: Path, digest: str) -> memoryview | None:
    """The compiled copy's JSON if its header matches everything it was made from, the
    YAML whose hash is ``digest`` included."""
    parts = _compiled_parts(path)
    if parts is None:
        return None
    header, content = parts
    return content if _made_from(header, digest, content) else None


def _compiled_parts(path: Path) -> tuple[_Header, memoryview] | None:
    """The compiled copy's header and rows, not yet trusted (a view of the bytes read:
    the rows of a large register are tens of megabytes); None if it has no header."""
    try:
        data = _compiled_path(path).read_bytes()
        end = data.find(b"\n", 0, 1025)
        if end == -1:  # not a header: another layout, or damage
            return None
        return _Header(**load_json(data[:end])), memoryview(data)[end + 1 :]
    except (OSError, ValueError, TypeError):  # DataError is a ValueError
        return None


def _made_from(header: _Header, digest: str, content: bytes | memoryview) -> bool:
    """Whether a copy's header and seal say it was made from the YAML whose hash is
    ``digest``, by this tracework and these models, and its rows are as written."""
    seal = _seal(digest, content)
    expected = _Header(COMPILED_FORMAT, __version__, models_sha256(), digest, seal or "")
    return seal is not None and header == expected


def write_compiled(path: Path, digest: str, register: Register) -> None:
    """Leave the compiled copy of a register just validated (best effort)."""
    # a read-only workspace, or text UTF-8 cannot encode (a lone surrogate), only
    # leaves the next load slower
    with suppress(OSError, ValueError):
        rows = json.dumps(_row(register), ensure_ascii=False, separators=(",", ":"))
        write_compiled_rows(path, digest, rows.encode("utf-8") + b"\n")


def write_compiled_rows(path: Path, digest: str, content: bytes) -> None:
    """Seal and write compiled rows already made (a quote appended to a copy we read)."""
    with suppress(OSError):
        seal = _seal(digest, content)
        if seal is None:
            return  # no key to seal it with: a copy nobody may trust is not worth writing
        header = _Header(COMPILED_FORMAT, __version__, models_sha256(), digest, seal)
        write_atomic(
            _compiled_path(path), json.dumps(header._asdict()).encode("utf-8") + b"\n" + content
        )
