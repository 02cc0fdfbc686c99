"""``tracework capture`` and ``tracework capture env``: the stages, in order.

1. read ``captures/NAME.toml`` and the harness ``captures/NAME.py``; resolve the
   commit in the subject's mirror;
2. export the tree at that commit (``git archive``, cached per commit);
3. hash-check the register's files of this subject in the export (nothing runs when
   one differs);
4. find the built environment (``capture env`` builds it: the only step that may
   use the network);
5. choose the isolation, or refuse;
6. with ``[model]``: ask the endpoint its ``info`` once; run the harness in the
   sandbox, ``--repeat`` times, each run from scratch (and its model relay with it);
7. turn each run's messages into the capture's files, normalised; the scripted
   files of every run must be byte-identical to the first's;
8. write ``captures/NAME/<commit12>/`` in a staging folder and swap it in.  A run
   that fails keeps nothing but ``captures/NAME/failed-<commit12>/`` (its log, the
   error, and for two runs that differ, both runs' files); the previous capture stays.
"""

from __future__ import annotations

import json
import posixpath
import re
import tempfile
import threading
from collections.abc import Callable
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Literal, TypeVar

import tracework.capture.isolation as isolation
from tracework.capture.cgroup import run_group
from tracework.capture.config import CaptureConfig, capture_name, load_config
from tracework.capture.environment import Environment, build_environment, cached_environment
from tracework.capture.errors import CaptureConfigError, HarnessFailed, NotDeterministic
from tracework.capture.extralock import lock_path
from tracework.capture.interpreter import prefix_to_show
from tracework.capture.preflight import verify_registered
from tracework.capture.process import Run, run_sandboxed
from tracework.capture.registry import registry_setting
from tracework.capture.store import (
    Capture,
    CaptureManifest,
    CaptureResults,
    CaseCheck,
    CaseResult,
    EnvironmentInfo,
    EnvironmentProvenance,
    LimitsInForce,
    ModelArm,
    ResultTable,
    Rule,
    TrialResult,
    canonical,
    load_capture,
    manifest_files,
)
from tracework.capture.tree import export_tree
from tracework.fsio import write_atomic
from tracework.git.subjects import open_mirror
from tracework.hashing import sha256_hex
from tracework.staging import Staging
from tracework.version import __version__
from tracework.workspace import Workspace

if TYPE_CHECKING:  # imported while the first run is waited on: see _after_the_run
    from tracework.capture.model import Carried, Label
    from tracework.capture.normalise import Normaliser
    from tracework.capture.protocol import RawCapture, RawCase

T = TypeVar("T")

#: The most runs one capture makes (each is a whole run of the harness).
MAX_REPEAT = 10

#: With [model]: every request to the endpoint and its reply, as they crossed the relay.
EXCHANGES = "model-arm/exchanges.jsonl"
#: Files whose bytes may differ between runs: the log, and the model-driven arm.
NOT_COMPARED = ("log.txt", "model-arm.json", EXCHANGES)


@dataclass(frozen=True)
class EnvOutcome:
    """``capture env``: the environment, and whether it was built now."""

    name: str
    commit: str
    environment: Environment
    isolation: isolation.Backend


@dataclass(frozen=True)
class CaptureOutcome:
    """A capture written: the loaded capture, how many runs agreed, how it was isolated."""

    folder: Path
    capture: Capture
    runs: int
    isolation: isolation.Backend
    environment: Environment


def environment(
    ws: Workspace, name: str, commit: str | None = None, *, rebuild: bool = False
) -> EnvOutcome:
    """Build (or find built, and checked against its seal) the environment of capture
    ``name`` at ``commit``, in a sandbox like the harness's; ``rebuild`` builds it again."""
    config, _ = load_config(ws, name)
    mirror = open_mirror(ws, config.subject)
    full = mirror.resolve_commit(commit or config.commit)
    tree = export_tree(mirror, full, config.limits)
    settings = ws.settings()
    backend = isolation.choose(isolation_setting(ws))
    env = build_environment(
        config,
        tree,
        name,
        registry_setting(settings),
        backend,
        timeout=build_timeout(settings),
        memory_mib=build_memory(settings),
        rebuild=rebuild,
        extra_lock_at=ws.root / lock_path(name),
        commit=full,
    )
    return EnvOutcome(name, full, env, backend)


def build_timeout(settings: dict[str, object]) -> int:
    """``[capture] build_timeout`` in tracework.toml: seconds an environment's build may
    take (wall clock, and CPU), 1800 by default."""
    return _setting(settings, "build_timeout", 1800, 10, 86400, "a number of seconds")


def build_memory(settings: dict[str, object]) -> int:
    """``[capture] build_memory_mib`` in tracework.toml: the memory of a build's processes
    together, where the machine delegates a control group; 8192 by default."""
    return _setting(settings, "build_memory_mib", 8192, 256, 1 << 20, "a number of MiB")


def _setting(
    settings: dict[str, object], key: str, default: int, low: int, high: int, what: str
) -> int:
    section = settings.get("capture", {})
    value = section.get(key, default) if isinstance(section, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise CaptureConfigError(
            f"tracework.toml: [capture] {key} must be {what}, {low:,} to {high:,}"
        )
    return value


def isolation_setting(ws: Workspace) -> str:
    """``[capture] isolation`` in tracework.toml: auto (the default), bwrap or unshare."""
    section = ws.settings().get("capture", {})
    value = section.get("isolation", "auto") if isinstance(section, dict) else None
    if value not in isolation.SETTINGS:
        raise CaptureConfigError(
            f"tracework.toml: [capture] isolation must be one of {', '.join(isolation.SETTINGS)}"
        )
    return str(value)


def capture(
    ws: Workspace,
    name: str,
    commit: str | None = None,
    repeat: int = 1,
    *,
    meanwhile: Callable[[], object] | None = None,
) -> CaptureOutcome:
    """Run capture ``name`` at ``commit`` (default: its declared one) ``repeat`` times and
    write it; see the module's docstring for the stages.  ``meanwhile``: what the caller
    will need once the capture is written (importing what prints it, say), done while
    the first run's harness is waited on.

    Two things are done in a thread of their own, so that start-up costs less than it
    would in turn, and neither decides anything on its own: the isolation is probed
    (a sandbox running ``true``) while the tree is exported and checked, and is used
    only once everything before it passed, as in turn; and what turns a run into files
    is imported while the first run's harness runs (:func:`_after_the_run`)."""
    # 1. what runs, against what
    if not 1 <= repeat <= MAX_REPEAT:
        raise CaptureConfigError(f"--repeat must be 1 to {MAX_REPEAT}, not {repeat}")
    chooser = _Background(lambda: isolation.choose(isolation_setting(ws)))
    try:
        config, config_raw = load_config(ws, capture_name(name))
        harness_path = ws.captures / f"{name}.py"
        if not harness_path.is_file():
            raise CaptureConfigError(
                f"capture {name} has no harness: captures/{name}.py does not exist",
                hint="write the harness beside its .toml (see docs/manual/captures.md)",
            )
        harness = harness_path.read_bytes()
        mirror = open_mirror(ws, config.subject)
        full = mirror.resolve_commit(commit or config.commit)
        # 2.-5. the tree, the evidence, the environment, the isolation
        tree = export_tree(mirror, full, config.limits)
        preflight = verify_registered(ws, config, mirror, full, tree)
        env = cached_environment(
            config,
            tree,
            name,
            registry_setting(ws.settings()),
            extra_lock_at=ws.root / lock_path(name),
        )
    except Exception:
        chooser.join()  # its outcome is not used: what failed first is the error
        raise
    backend = chooser.result()
    info = None
    if config.model is not None:
        from tracework.capture.model import fetch_info

        info = fetch_info(config.model, name)

    out_root = ws.captures / name
    out_root.mkdir(parents=True, exist_ok=True)
    final = out_root / full[:12]
    stage = Staging(out_root, full[:12], CAPTURE_FILES)
    with stage.locked():
        stage.sweep()  # what a capture killed outright left
        with stage.hold() as staging:  # removed unless swapped in or kept
            try:
                # 6.-7. run, and turn each run into files
                runs: list[dict[str, bytes]] = []
                group_used = None
                after: list[_Background[None]] = []

                def begin_after() -> None:  # once the first run's sandbox is started
                    if not after:
                        after.append(_Background(lambda: _after_the_run(config, meanwhile)))

                for number in range(1, repeat + 1):
                    run, carried = _run_once(
                        config, name, harness, tree, env, backend, started=begin_after
                    )
                    for imports in after:
                        imports.result()  # done while the first run's harness ran
                    group_used = run.group
                    runs.append(
                        _files(run, config, name, full, harness, tree, env, number, carried)
                    )
                _require_identical(runs, name)
                files = runs[0]
                model = None
                if config.model is not None and info is not None:
                    model = ModelArm(
                        endpoint=config.model.endpoint,
                        trials=config.model.trials,
                        connections=config.model.connections,
                        info=info,
                        exchanges=files[EXCHANGES].count(b"\n"),
                    )
                # 8. write and swap in
                manifest = CaptureManifest(
                    capture=name,
                    subject=config.subject,
                    commit=full,
                    commit_date=mirror.commit_info(full).date,
                    register=config.register_name,
                    verified_files=preflight.hashes,
                    changed_since_pin=preflight.changed,
                    harness_sha256=sha256_hex(harness),
                    config_sha256=sha256_hex(config_raw),
                    environment=EnvironmentInfo(
                        key=env.key,
                        sha256=env.sha256,
                        python=env.interpreter.version,
                        lock=config.lock,
                        provenance=_provenance(env, name),
                    ),
                    isolation=backend,
                    limits=_limits_in_force(config, backend, group_used),
                    identical_runs=repeat,
                    model=model,
                    tracework=__version__,
                    files=manifest_files(files),
                )
                for path, data in files.items():
                    write_atomic(staging / path, data)
                write_atomic(
                    staging / "manifest.json",
                    canonical(manifest.model_dump(mode="json", by_alias=True)),
                )
                stage.swap()
                stage.drop_failed()
            except _RunFailed as exc:
                raise _keep_failed(stage, exc, ws.root) from None
    loaded = load_capture(ws, name, full)
    return CaptureOutcome(final, loaded, repeat, backend, env)


class _Background(threading.Thread, Generic[T]):
    """``work()`` in a thread of its own, started at once; :meth:`result` waits for it
    and returns what it returned, or raises what it raised."""

    def __init__(self, work: Callable[[], T]) -> None:
        super().__init__(name="tracework-capture", daemon=True)
        self._work = work
        self._value: T | None = None
        self._error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # raised in the caller's thread, by result()
            self._error = exc

    def result(self) -> T:
        self.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def _after_the_run(config: CaptureConfig, meanwhile: Callable[[], object] | None) -> None:
    """Import what turns a run's messages into the capture's files (and the caller's
    ``meanwhile``), while the first run is waited on: the main thread then waits in
    ``epoll`` for the harness, so the imports cost a capture no time of its own.  A
    module that fails to import here is imported again where it is used, and fails
    there with its own error."""
    import importlib

    modules = ["tracework.capture.protocol", "tracework.capture.normalise"]
    if config.model is not None:
        modules.append("tracework.capture.exchanges")
    for module in modules:
        with suppress(Exception):  # raised again where it is used
            importlib.import_module(module)
    if meanwhile is not None:
        with suppress(Exception):  # the caller does it again, and sees why
            meanwhile()


class _RunFailed(Exception):
    """A run that failed, with what to keep of it in ``failed-<commit12>/``."""

    def __init__(self, error: HarnessFailed | NotDeterministic, keep: dict[str, bytes]) -> None:
        super().__init__(error.message)
        self.error = error
        self.keep = keep


#: What a capture writes into its folder, and a failed one into ``failed-<commit12>/``
#: (the log, error.txt, and each differing run's files in run-N/): a failed folder holding
#: anything else is not one tracework kept, and is never replaced or removed.
CAPTURE_FILES = frozenset(
    {"results.json", "model-arm.json", "model-arm", "transcripts", "environment.txt"}
    | {"extra.lock"}
    | {"harness.py"}
    | {"log.txt", "manifest.json", "error.txt"}
    | {f"run-{n}" for n in range(1, MAX_REPEAT + 1)}
)


def _keep_failed(stage: Staging, exc: _RunFailed, root: Path) -> HarnessFailed | NotDeterministic:
    """The run's own error, its hint saying where its log is kept (``failed-<commit12>/``)
    or why it could not be (what is in the way there: see :meth:`Staging.keep_failed`)."""
    try:
        for path, data in {**exc.keep, "error.txt": f"{exc.error.message}\n".encode()}.items():
            write_atomic(stage.folder / path, data)
    except OSError as problem:  # a full disk, say: the harness's error is still the message
        stage.discard()
        why = f"its log could not be written ({problem.strerror or problem})"
    else:
        kept = stage.keep_failed()
        shown = kept.folder.relative_to(root).as_posix()
        why = (
            f"its log is in {shown}/"
            if kept.in_the_way is None
            else f"its log could not be kept: {shown} is {kept.in_the_way}; "
            "move it away to keep the next failure's log"
        )
    where = "the previous capture is untouched" if stage.final.exists() else "nothing written"
    said = f"{why}; {where}"
    exc.error.hint = f"{exc.error.hint}; {said}" if exc.error.hint else said
    return exc.error


def _run_once(
    config: CaptureConfig,
    name: str,
    harness: bytes,
    tree: Path,
    env: Environment,
    backend: isolation.Backend,
    *,
    started: Callable[[], object] | None = None,
) -> tuple[Run, list[Carried] | None]:
    """One run of the harness in a fresh sandbox (its own scratch folder, /tmp, home),
    and with ``[model]`` every connection its model relay carried; ``started``: called
    once the sandbox is started (:func:`tracework.capture.process.run_sandboxed`)."""
    with tempfile.TemporaryDirectory(prefix="tracework-run-") as folder, ExitStack() as stack:
        scratch = Path(folder)
        copy = scratch / "harness.py"
        copy.write_bytes(harness)
        copy.chmod(0o644)
        inside = f"{isolation.HARNESS_DIR}/{name}.py"
        extra = [
            isolation.Bind(tree, isolation.TREE),
            isolation.Bind(env.venv, isolation.ENV),
            isolation.Bind(isolation.HARNESS_LIB, isolation.LIB),
            isolation.Bind(copy, inside),
        ]
        prefix = prefix_to_show(env.interpreter)
        if prefix is not None:
            extra.append(isolation.Bind(prefix, str(prefix)))
        relay, model = None, None
        if config.model is not None:  # the one way out: see tracework.capture.model
            from tracework.capture.model import Relay

            relay = Relay(config.model, scratch / "model", config.limits.output_mib << 20)
            extra.append(isolation.Bind(relay.socket_path.parent, isolation.MODEL))
            model = {
                "listen": [list(address) for address in config.model.inside],
                "socket": f"{isolation.MODEL}/{relay.socket_path.name}",
                "trials": config.model.trials,
            }
        binds, links = isolation.system_view(extra, scratch)
        python_path = [posixpath.normpath(f"{isolation.TREE}/{p}") for p in config.paths]

        def launch_for(fd: int) -> isolation.Launch:
            view = isolation.View(
                binds=binds,
                symlinks=links,
                tmp_bytes=config.limits.tmp_mib << 20,
                tmp_files=config.limits.tmp_files,
                env=_sandbox_env(),
                argv=(
                    f"{isolation.ENV}/bin/python",
                    "-s",
                    "-B",
                    f"{isolation.LIB}/tracework_run.py",
                    str(fd),
                    inside,
                    isolation.TREE,
                    isolation.HOME,
                    json.dumps(harness_limits(config), sort_keys=True),
                    json.dumps(python_path),
                    json.dumps(model, sort_keys=True),
                ),
                cwd=isolation.TREE,
                pass_fds=(fd,),
                limits=rlimits(config),
            )
            return isolation.command(backend, view, scratch)

        if relay is not None:
            stack.enter_context(relay)
        with run_group(config.limits.memory_mib << 20, config.limits.processes) as group:
            run = run_sandboxed(
                launch_for,
                timeout=config.timeout,
                output_limit=config.limits.output_mib << 20,
                group=group,
                watch=relay.stopped if relay is not None else None,
                started=started,
            )
        if relay is None:
            return run, None
        relay.close()
        return run, relay.carried


def _limits_in_force(
    config: CaptureConfig, backend: isolation.Backend, group: Literal["v1", "v2"] | None
) -> LimitsInForce:
    limits = config.limits
    return LimitsInForce(
        memory_mib=limits.memory_mib,
        processes=limits.processes,
        cpu_seconds=config.timeout,
        output_mib=limits.output_mib,
        tmp_mib=limits.tmp_mib,
        tmp_files=limits.tmp_files if isolation.tmp_files_bounded(backend) else None,
        control_group=group,
    )


def harness_limits(config: CaptureConfig) -> dict[str, int]:
    """The limits the runner checks are in force (the names of ``[limits]``)."""
    limits = config.limits
    return {
        "memory_mib": limits.memory_mib,
        "processes": limits.processes,
        "output_mib": limits.output_mib,
        "cpu_seconds": config.timeout,
    }


def rlimits(config: CaptureConfig) -> tuple[tuple[str, int], ...]:
    """The same limits as ``prlimit`` sets them, before the runner's Python starts."""
    mib = 1 << 20
    limits = harness_limits(config)
    return (
        ("core", 0),
        ("as", limits["memory_mib"] * mib),
        ("nproc", limits["processes"]),
        ("fsize", limits["output_mib"] * mib),
        ("cpu", limits["cpu_seconds"]),
    )


def _sandbox_env() -> dict[str, str]:
    """The harness's whole environment: an allow-list, nothing of the caller's, and
    no ``PYTHONPATH`` (the runner puts the tree on the path once it runs)."""
    return {
        "PATH": f"{isolation.ENV}/bin:/usr/bin:/bin",
        "HOME": isolation.HOME,
        "PWD": isolation.TREE,
        "TMPDIR": isolation.TMP,
        "USER": "capture",
        "LOGNAME": "capture",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUTF8": "1",
        "PYTHONUNBUFFERED": "1",
        "VIRTUAL_ENV": isolation.ENV,
    }


def _files(
    run: Run,
    config: CaptureConfig,
    name: str,
    commit: str,
    harness: bytes,
    tree: Path,
    env: Environment,
    number: int,
    carried: list[Carried] | None = None,
) -> dict[str, bytes]:
    """The capture's files from one run, normalised; a failed run is :class:`_RunFailed`.
    Reading stops at the first message past a ``[limits]`` cap, and every step after it
    is linear in what the harness sent.  ``carried``: the model relay's connections,
    kept as they crossed it (``model-arm/exchanges.jsonl``, never normalised)."""
    from tracework.capture.config import limit_maximum
    from tracework.capture.errors import HarnessOverLimit
    from tracework.capture.normalise import HarnessRule, NormaliseProblem, Normaliser
    from tracework.capture.protocol import OverLimit, ProtocolProblem, parse

    keep = {"log.txt": run.log}
    which = f"run {number}: " if number > 1 else ""

    def failed(what: str) -> _RunFailed:
        return _RunFailed(HarnessFailed(f"capture {name}: {which}{what}"), keep)

    if run.stopped:
        raise failed(f"the harness was stopped: {run.stopped}")
    try:
        raw = parse(run.lines, config.limits, config.model.trials if config.model else None)
    except ProtocolProblem as exc:
        raise failed(f"the harness broke the protocol: {exc}") from None
    except OverLimit as exc:
        error = HarnessOverLimit(
            f"capture {name}: {which}the harness sent more than its limits allow: {exc}",
            hint=f"if it is meant to, raise [limits] {exc.setting} in captures/{name}.toml "
            f"(at most {limit_maximum(exc.setting):,})",
        )
        raise _RunFailed(error, keep) from None
    if raw.failure is not None:
        raise failed(_raised(raw, name, config))
    if not raw.done:
        raise failed(
            f"the harness ended without finishing (exit status {run.returncode}, "
            f"{len(run.lines)} protocol messages)"
        )
    if not raw.cases:
        raise failed("the harness ran no case")
    paths = [
        (isolation.TREE, "<tree>"),
        (str(tree), "<tree>"),
        (isolation.ENV, "<env>"),
        (str(env.venv), "<env>"),
        (isolation.TMP, "<tmp>"),
    ]
    lines: list[bytes] = []
    by_label: dict[Label | None, list[int]] = {}
    if carried is not None:
        from tracework.capture.exchanges import records

        lines, by_label = records(carried)
    try:
        normaliser = Normaliser(paths, [HarnessRule(r.pattern, r.placeholder) for r in raw.rules])
        files = _results(raw, normaliser, config, name, commit, by_label)
        log = normaliser.text(run.log.decode("utf-8", errors="replace"))
    except NormaliseProblem as exc:
        raise failed(str(exc)) from None
    files["log.txt"] = log.encode("utf-8")
    if carried is not None:
        files[EXCHANGES] = b"".join(lines)
    files["environment.txt"] = env.frozen.encode("utf-8")
    if env.extra_lock is not None:
        files["extra.lock"] = env.extra_lock.data
    files["harness.py"] = harness
    return files


def _provenance(env: Environment, name: str) -> EnvironmentProvenance:
    """The environment's provenance as this capture states it: ``captures/NAME.lock``
    named as this capture's (an environment may be shared by captures whose locks are
    the same bytes)."""
    recorded = env.provenance.extra_lock
    if recorded is None:
        return env.provenance
    return env.provenance.model_copy(
        update={"extra_lock": recorded.model_copy(update={"path": lock_path(name)})}
    )


def _raised(raw: RawCapture, name: str, config: CaptureConfig) -> str:
    """'the harness raised X: message (captures/NAME.py, line N)', with the limit that
    explains a MemoryError."""
    failure = raw.failure
    assert failure is not None
    if failure.type == "SystemExit" or failure.type == "HarnessError":
        return failure.message
    lines = re.findall(
        rf'File "{isolation.HARNESS_DIR}/{re.escape(name)}\.py", line (\d+)', failure.traceback
    )
    where = f" (captures/{name}.py, line {lines[-1]})" if lines else ""
    text = f"the harness raised {failure.type}: {failure.message}"[:500] + where
    if failure.type == "MemoryError":
        limit = config.limits.memory_mib
        text += f"; it went over its memory limit ([limits] memory_mib = {limit})"
    return text


def _results(
    raw: RawCapture,
    norm: Normaliser,
    config: CaptureConfig,
    name: str,
    commit: str,
    exchanges: dict[Label | None, list[int]] | None = None,
) -> dict[str, bytes]:
    """results.json, model-arm.json and the transcripts, normalised: scripted first,
    then model-driven (see :mod:`tracework.capture.normalise` on numbering)."""
    from tracework.capture.normalise import BUILT_IN

    files: dict[str, bytes] = {}
    arms: dict[str, tuple[list[CaseResult], list[ResultTable]]] = {}
    rules = [
        Rule(rule=rule, placeholder=placeholder, origin="built-in")
        for rule, placeholder in BUILT_IN
    ]
    rules += [Rule(rule=r.pattern, placeholder=r.placeholder, origin="harness") for r in raw.rules]
    for arm in ("scripted", "model-driven"):
        cases = [_case(c, norm, files, exchanges or {}) for c in raw.cases if c.opened.arm == arm]
        tables = [
            ResultTable(
                name=t.name,
                columns=tuple(norm.text(c) for c in t.columns),
                rows=tuple(tuple(norm.value(cell) for cell in row) for row in t.rows),
                notes=None if t.notes is None else norm.text(t.notes),
            )
            for t in raw.tables
            if t.arm == arm
        ]
        arms[arm] = (cases, tables)
    for arm, filename in (("scripted", "results.json"), ("model-driven", "model-arm.json")):
        cases, tables = arms[arm]
        if arm == "model-driven" and not cases and not tables:
            continue
        counts = {s: sum(c.status == s for c in cases) for s in ("PASS", "FAIL", "UNKNOWN")}
        results = CaptureResults(
            capture=name,
            subject=config.subject,
            commit=commit,
            arm=arm,
            cases=tuple(cases),
            tables=tuple(tables),
            counts=counts if arm == "scripted" else {},
            normalisation=tuple(rules),
        )
        files[filename] = canonical(results.model_dump(mode="json"))
    return files


def _case(
    case: RawCase,
    norm: Normaliser,
    files: dict[str, bytes],
    exchanges: dict[Label | None, list[int]],
) -> CaseResult:
    """One case, normalised; its transcript goes into ``files``.  A model-driven case
    gets the ids of the model exchanges sent in it (``exchanges``, by label)."""
    opened = case.opened
    question = norm.text(opened.question)
    transcript = None
    trials = tuple(
        TrialResult(
            condition=None if t.opened.condition is None else norm.text(t.opened.condition),
            number=t.opened.number,
            observed=norm.text(t.observed.observed) if t.observed else "",
            criterion=(
                norm.text(t.observed.criterion)
                if t.observed is not None and t.observed.criterion is not None
                else None
            ),
            exchanges=tuple(exchanges.get((opened.id, t.opened.condition, t.opened.number), ())),
        )
        for t in case.trials
    )
    if case.records or trials:
        transcript = f"transcripts/{opened.id}.json"
        body: dict[str, object] = {
            "case": opened.id,
            "arm": opened.arm,
            "records": [{"name": r.name, "value": norm.value(r.value)} for r in case.records],
        }
        if trials:
            body["trials"] = [
                {
                    "condition": result.condition,
                    "number": result.number,
                    "exchanges": list(result.exchanges),
                    "records": [
                        {"name": r.name, "value": norm.value(r.value)} for r in raw.records
                    ],
                }
                for result, raw in zip(trials, case.trials, strict=True)
            ]
        files[transcript] = canonical(body)
    checks = tuple(
        CaseCheck(criterion=norm.text(c.criterion), holds=c.holds, observed=norm.text(c.observed))
        for c in case.checks
    )
    status = criterion = observed = None
    if case.stated is not None:
        status = case.stated.status
        criterion, observed = norm.text(case.stated.criterion), norm.text(case.stated.observed)
    elif checks:
        held_ = [c.holds for c in checks]
        status = "FAIL" if False in held_ else "PASS" if all(held_) else "UNKNOWN"
    elif case.observed is not None:
        observed = norm.text(case.observed.observed)
        if case.observed.criterion is not None:
            criterion = norm.text(case.observed.criterion)
    elif trials:
        conditions = len(case.conditions)
        observed = f"{len(trials)} trials" + (
            f": {len(trials) // conditions} of each of {conditions} conditions"
            if conditions > 1
            else ""
        )
        said = {t.criterion for t in trials}
        criterion = said.pop() if len(said) == 1 else None
    return CaseResult(
        id=opened.id,
        question=question,
        arm=opened.arm,
        status=status,
        criterion=criterion,
        observed=observed,
        checks=checks,
        transcript=transcript,
        trials=trials,
        exchanges=tuple(exchanges.get((opened.id, None, None), ()))
        if opened.arm == "model-driven"
        else (),
    )


def _require_identical(runs: list[dict[str, bytes]], name: str) -> None:
    """Every run's scripted files equal the first's, byte for byte; otherwise the first
    file and line that differ."""
    first = runs[0]
    model_transcripts = _model_transcripts(first)
    for number, other in enumerate(runs[1:], 2):
        exempt = model_transcripts | _model_transcripts(other) | set(NOT_COMPARED)
        compared = sorted((first.keys() | other.keys()) - exempt)
        for path in compared:
            a, b = first.get(path), other.get(path)
            if a == b:
                continue
            if a is None or b is None:
                where = f"{path} exists in run {1 if b is None else number} only"
            else:
                where = _first_line(path, a, b, number)
            keep = {f"run-1/{p}": d for p, d in first.items()}
            keep |= {f"run-{number}/{p}": d for p, d in other.items()}
            keep["log.txt"] = other.get("log.txt", b"")
            error = NotDeterministic(
                f"capture {name}: run {number} differs from run 1: {where}",
            )
            error.hint = (
                "a value changes from run to run: make the harness deterministic (a scripted "
                "clock, a seeded random) or normalise it with capture.normalise(pattern, "
                "placeholder)"
            )
            raise _RunFailed(error, keep)


def _model_transcripts(files: dict[str, bytes]) -> set[str]:
    """The transcripts of model-driven cases: exempt from the byte-identical rule."""
    arm = files.get("model-arm.json")
    if arm is None:
        return set()
    return {c["transcript"] for c in json.loads(arm)["cases"] if c["transcript"]}


def _first_line(path: str, a: bytes, b: bytes, number: int) -> str:
    left, right = a.decode("utf-8", "replace").split("\n"), b.decode("utf-8", "replace").split("\n")
    for line, (x, y) in enumerate(zip(left, right, strict=False), 1):
        if x != y:
            shown = f"run 1 has {x.strip()[:100]!r}, run {number} has {y.strip()[:100]!r}"
            return f"{path} line {line}: {shown}"
    line = min(len(left), len(right)) + 1
    return f"{path} line {line}: one run's file is longer"
