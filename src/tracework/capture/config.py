"""``captures/NAME.toml``: what a capture runs against, in what environment, within what limits.

    subject = "fennel"
    commit = "dd568b5e136babf453dc85aad6a4b0f5624afa9a"   # full 40-hex, like a pin
    register = "fennel"       # its registered files are hash-checked before the harness runs
    python = "3.11"
    requirements = []         # or: lock = "uv" (the subject's own uv.lock)
    # allow_sources = ["x"]   # with the lock: x may come from its path, git or URL source
    # groups = ["lint"]       # with the lock: groups besides its default ones (dev)
    # extras = ["cli"]        # with the lock: the project's optional dependencies
    # extra = ["pytest==8.3.3"]  # the harness's own packages: capture env locks them
    timeout = 120             # seconds, wall clock (and CPU time)

    [limits]
    memory_mib = 2048
    processes = 256
    output_mib = 16
    tmp_mib = 256
    cases = 1000              # and tables, rows, rules: what one run may send
    tree_files = 50000        # and tree_mib: the tree exported at the commit

    [model]                   # optional: the model-driven arm's one local endpoint
    endpoint = "http://127.0.0.1:11434"
    info = ["/v1/models"]     # GET before the runs; the replies go in the manifest
    trials = 3                # per condition (capture.trials)
    connections = 8           # at once

The file is written by hand, so every key is checked and an unknown one is refused
(a misspelt ``timout`` must not silently mean 120 s).
"""

# No ``from __future__ import annotations`` here: pydantic would evaluate each field's
# annotation from its string (a compile and an eval apiece), and building these models
# is most of what a capture imports before its harness runs.

import re
import tomllib
from typing import Annotated, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from tracework.capture.errors import CaptureConfigError
from tracework.errors import TraceworkError, validation_problem
from tracework.workspace import Workspace, check_name

#: A requirement pinned exactly and with at least one hash, as ``uv pip install
#: --require-hashes`` takes it: ``name==1.2.3 --hash=sha256:<64 hex>``.
PINNED = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[A-Za-z0-9._,-]+\])?"
    r"==[A-Za-z0-9.+!_-]+(?:\s+--hash=sha256:[0-9a-f]{64})+"
)
#: ``captures/env.toml`` would be shadowed by the ``capture env`` command.
RESERVED = ("env", "run")

#: An exact version without a hash: ``name==1.2.3`` (``capture env`` finds the hashes).
EXACT = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[A-Za-z0-9._,-]+\])?==[A-Za-z0-9.+!_-]+"
)
NAME = r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$"

Requirement = Annotated[str, Field(pattern=PINNED.pattern)]
ExtraRequirement = Annotated[str, Field(pattern=f"^(?:{EXACT.pattern}|{PINNED.pattern})$")]
PackageName = Annotated[str, Field(pattern=NAME)]
#: A dependency group (PEP 735) or an extra (PEP 685): compared normalised.
GroupName = Annotated[str, Field(pattern=NAME)]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Limits(Frozen):
    """Resource limits of the harness's processes (each process, except ``processes``)."""

    memory_mib: int = Field(2048, ge=64, le=1 << 20, description="address space, MiB")
    processes: int = Field(
        256, ge=8, le=1 << 16, description="processes and threads the harness may run at once"
    )
    output_mib: int = Field(
        16,
        ge=1,
        le=4096,
        description="the log (stdout and stderr) and the results, each; also the largest "
        "file a process may write",
    )
    tmp_mib: int = Field(256, ge=1, le=1 << 20, description="the private /tmp and /dev/shm, each")
    tmp_files: int = Field(
        65_536,
        ge=64,
        le=1 << 24,
        description="files and folders the private /tmp and /dev/shm may hold, each (every "
        "one costs kernel memory that tmp_mib does not count)",
    )
    # what tracework does with a run and a tree is bounded too: the caps below are
    # checked as the messages are read (reading stops at the first one passed) and from
    # the tree's listing before anything is exported
    cases: int = Field(1000, ge=1, le=100_000, description="cases one run may open, both arms")
    tables: int = Field(100, ge=0, le=10_000, description="results tables one run may send")
    rows: int = Field(
        10_000, ge=0, le=1_000_000, description="rows of all the run's results tables together"
    )
    rules: int = Field(
        100, ge=0, le=10_000, description="normalise rules one run may give (capture.normalise)"
    )
    tree_files: int = Field(
        50_000,
        ge=1,
        le=10_000_000,
        description="files, links and submodules in the subject's tree at the commit; a "
        "larger tree is not exported",
    )
    tree_mib: int = Field(
        1024,
        ge=1,
        le=1 << 20,
        description="the exported tree's bytes, MiB: every file counted at its own path, "
        "however many share one blob; a larger tree is not exported",
    )


#: ``[model] endpoint``: http, a loopback host, an explicit port, nothing after it.
ENDPOINT = re.compile(r"http://(127\.0\.0\.1|\[::1\]|localhost):([0-9]{1,5})/?")
#: ``[model] info``: a path (and query) of the endpoint, printable ASCII, no space.
INFO_PATH = re.compile(r"/[\x21-\x7e]{0,999}")


class ModelConfig(Frozen):
    """``[model]``: the one local endpoint the model-driven arm may reach, and its trials."""

    endpoint: str = Field(
        description="http://HOST:PORT with HOST 127.0.0.1, [::1] or localhost (the host "
        "connects to 127.0.0.1 for it) and PORT 1024 to 65535; reachable inside the sandbox "
        "at the same address, and nothing else is"
    )
    info: tuple[str, ...] = Field(
        (),
        max_length=20,
        description="paths tracework GETs from the endpoint before the runs (e.g. "
        '"/v1/models"); the replies are recorded in the manifest',
    )
    trials: int = Field(3, ge=1, le=100, description="trials of each condition (capture.trials)")
    connections: int = Field(
        8, ge=1, le=64, description="connections to the endpoint open at once; more are refused"
    )

    @field_validator("endpoint")
    @classmethod
    def _loopback(cls, value: str) -> str:
        match = ENDPOINT.fullmatch(value)
        if match is None:
            raise ValueError(
                f"{value!r} is not a local endpoint: give http://127.0.0.1:PORT, "
                "http://[::1]:PORT or http://localhost:PORT (loopback, http, an explicit port, "
                "no path: the subject names its own paths)"
            )
        if not 1024 <= int(match.group(2)) <= 65535:
            raise ValueError(
                f"{value!r}: the port must be 1024 to 65535 (inside the sandbox nothing may "
                "listen on a lower one)"
            )
        return value

    @field_validator("info")
    @classmethod
    def _paths(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for path in value:
            if INFO_PATH.fullmatch(path) is None:
                raise ValueError(f"{path!r} must be a path of the endpoint, like '/v1/models'")
        return value

    @property
    def host(self) -> str:
        """The host as declared (for the requests' ``Host`` header): ``[::1]`` with brackets."""
        match = ENDPOINT.fullmatch(self.endpoint)
        assert match is not None
        return match.group(1)

    @property
    def port(self) -> int:
        match = ENDPOINT.fullmatch(self.endpoint)
        assert match is not None
        return int(match.group(2))

    @property
    def address(self) -> tuple[str, int]:
        """Where the host side connects: an address literal, never a name to resolve."""
        return ("::1" if self.host == "[::1]" else "127.0.0.1", self.port)

    @property
    def inside(self) -> tuple[tuple[str, int], ...]:
        """Where the relay listens inside the sandbox: the declared address (``localhost``
        both 127.0.0.1 and ::1, as the sandbox's ``/etc/hosts`` may name either)."""
        if self.host == "localhost":
            return (("127.0.0.1", self.port), ("::1", self.port))
        return (self.address,)


def limit_maximum(setting: str) -> int:
    """The largest value ``[limits] setting`` accepts (for a hint that says how far)."""
    for rule in Limits.model_fields[setting].metadata:
        if isinstance(getattr(rule, "le", None), int):
            return int(rule.le)
    raise KeyError(setting)


class CaptureConfig(Frozen):
    """A capture's declaration: subject and commit, environment, limits."""

    subject: str = Field(description="subject name (sources/NAME.toml)")
    commit: str = Field(pattern=r"^[0-9a-f]{40}$", description="default commit, full 40-hex")
    register_name: str = Field(
        alias="register",
        description="register whose files of this subject are hash-checked before the harness runs",
    )
    python: str = Field(pattern=r"^3\.[0-9]{1,2}(\.[0-9]{1,2})?$", description="e.g. 3.11")
    lock: Literal["uv"] | None = Field(
        None, description="install the subject's own uv.lock with `uv sync --frozen`"
    )
    requirements: tuple[Requirement, ...] | None = Field(
        None, description="for a subject without a lock: exact pins with hashes"
    )
    extra: tuple[ExtraRequirement, ...] = Field(
        (),
        description="packages the harness adds: exact versions ('name==1.2.3'), which "
        "`capture env` resolves against the environment and locks in captures/NAME.lock; or "
        "every one pinned with its hashes ('name==1.2.3 --hash=sha256:…'), installed as given",
    )
    groups: tuple[GroupName, ...] = Field(
        (),
        description='with lock = "uv": dependency groups to install besides the default '
        "ones (uv sync --group)",
    )
    no_default_groups: bool = Field(
        False,
        description='with lock = "uv": leave out the project\'s default groups '
        "(uv sync --no-default-groups; by default, uv installs them, dev among them)",
    )
    all_groups: bool = Field(
        False, description='with lock = "uv": install every dependency group (--all-groups)'
    )
    extras: tuple[GroupName, ...] = Field(
        (),
        description='with lock = "uv": optional dependencies of the project to install '
        "(uv sync --extra)",
    )
    all_extras: bool = Field(
        False, description='with lock = "uv": install every extra of the project (--all-extras)'
    )
    allow_sources: tuple[PackageName, ...] = Field(
        (),
        description='with lock = "uv": packages the lock takes from a path, folder, git '
        "repository or URL instead of the registry, each opted in by name once read (they "
        "are built and installed in the build's isolation); any other is refused",
    )
    paths: tuple[str, ...] = Field(
        (".",), description="folders of the tree put on the harness's import path"
    )
    timeout: int = Field(120, ge=1, le=86400, description="seconds of wall clock, and of CPU")
    limits: Limits = Limits()
    model: ModelConfig | None = Field(
        None, description="the model-driven arm's one local endpoint; none without it"
    )

    @property
    def extra_resolved(self) -> bool:
        """Whether ``extra`` lists exact versions that ``capture env`` resolves and locks
        in ``captures/NAME.lock`` (rather than pins given with their hashes)."""
        return bool(self.extra) and not PINNED.fullmatch(self.extra[0])

    @model_validator(mode="after")
    def _one_environment(self) -> Self:
        if self.allow_sources and self.lock is None:
            raise ValueError('allow_sources names packages of a lock: it needs lock = "uv"')
        chosen = [
            key
            for key in ("groups", "no_default_groups", "all_groups", "extras", "all_extras")
            if getattr(self, key)
        ]
        if chosen and self.lock is None:
            raise ValueError(f'{chosen[0]} chooses what a lock installs: it needs lock = "uv"')
        if self.all_groups and (self.groups or self.no_default_groups):
            raise ValueError(
                "all_groups installs every group: give it without groups or no_default_groups"
            )
        if self.all_extras and self.extras:
            raise ValueError("all_extras installs every extra: give it without extras")
        hashed = [bool(PINNED.fullmatch(entry)) for entry in self.extra]
        if any(hashed) and not all(hashed):
            raise ValueError(
                "extra: give every entry with its hashes, or none (capture env then resolves "
                "them all and writes the hashes into captures/NAME.lock)"
            )
        names = [_package_name(entry) for entry in self.extra]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"extra: {twice[0]} is listed twice")
        if (self.lock is None) == (self.requirements is None):
            raise ValueError(
                'give exactly one of lock = "uv" (the subject\'s uv.lock) or '
                "requirements = [...] (pins with hashes)"
            )
        for path in self.paths:
            parts = path.split("/")
            if path.startswith("/") or ".." in parts or "" in parts[:-1] or "\\" in path:
                raise ValueError(f"paths: {path!r} must be a folder inside the tree, like 'src'")
        return self


def _package_name(requirement: str) -> str:
    """The package a requirement names, normalised (PEP 503)."""
    name = re.split(r"[\[=\s]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def config_path(name: str) -> str:
    """``captures/NAME.toml`` relative to the workspace root (for messages)."""
    return f"captures/{capture_name(name)}.toml"


def capture_name(name: str) -> str:
    """``name`` if it can name a capture (a file name, and not a subcommand's)."""
    check_name(name, "capture")
    if name in RESERVED:
        raise CaptureConfigError(
            f"'{name}' cannot name a capture: `tracework capture {name}` is a command",
            hint="choose another name for captures/NAME.py and captures/NAME.toml",
        )
    return name


def load_config(ws: Workspace, name: str) -> tuple[CaptureConfig, bytes]:
    """The capture's declaration and the file's bytes (their hash goes in the manifest);
    one clear message, naming the file and the key, when it is absent or malformed."""
    rel = config_path(name)
    path = ws.root / rel
    if not path.is_file():
        known = sorted(p.stem for p in ws.captures.glob("*.toml"))
        raise CaptureConfigError(
            f"no capture {name}: {rel} does not exist",
            hint=f"captures here: {', '.join(known) or 'none'}; a capture is "
            "captures/NAME.toml (what it runs against) beside captures/NAME.py (the harness)",
        )
    raw = path.read_bytes()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CaptureConfigError(f"{rel}: not valid TOML ({exc})") from None
    try:
        config = CaptureConfig.model_validate(data)
    except ValidationError as exc:
        raise CaptureConfigError(
            f"{rel}: {_explained(validation_problem(exc))}",
            hint="every key is in the manual's 'Runtime captures' (docs/manual/captures.md)",
        ) from None
    for value, what in ((config.subject, "subject"), (config.register_name, "register")):
        try:
            check_name(value, what)
        except TraceworkError as exc:
            raise CaptureConfigError(f"{rel}: {exc.message}", hint=exc.hint) from None
    return config, raw


def _explained(problem: str) -> str:
    """pydantic's words, with what a pin must look like when a pattern failed."""
    if "should match pattern" not in problem:
        return problem.replace("Extra inputs are not permitted", "unknown key")
    where = problem.split(":", 1)[0]
    if where.startswith("requirements"):
        return f"{where}: pin exactly, with a hash: 'name==1.2.3 --hash=sha256:<64 hex>'"
    if where.startswith("extra."):
        return (
            f"{where}: give an exact version, 'name==1.2.3' (capture env resolves it), or "
            "'name==1.2.3 --hash=sha256:<64 hex>'"
        )
    if where.startswith(("groups", "extras")):
        return f"{where}: give the name of a group or extra, such as 'dev'"
    if where == "commit":
        return "commit: give the full 40-hex commit id"
    if where == "python":
        return "python: give a version such as '3.11'"
    return problem
