"""``tracework capture NAME`` and ``capture env NAME``: the subject's own code, run isolated."""

from __future__ import annotations

import atexit
import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import click

from tracework.cli.common import find_workspace, print_json
from tracework.cli.output import (
    prepare_capture,
    print_capture,
    print_environment,
)


class _CaptureGroup(click.Group):
    """``capture env NAME`` is a subcommand; ``capture NAME …`` means ``capture run NAME …``."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().resolve_command(ctx, args)


@click.group(cls=_CaptureGroup)
def capture() -> None:
    """Run a harness against the subject's own code, isolated: `capture NAME`, `capture env NAME`.

    A capture is captures/NAME.toml (subject, commit, environment, limits) with the
    harness captures/NAME.py; its results go to captures/NAME/<commit12>/."""


@contextmanager
def _start_up() -> Iterator[None]:
    """Import a capture's modules without collecting garbage meanwhile, and leave what
    outlives the command to the end of the process: the objects pydantic builds for the
    models (most of what the command makes) are never garbage, and each full collection
    of them, at start-up or when the interpreter ends, is tens of milliseconds."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
    _freeze_at_exit()


@cache
def _freeze_at_exit() -> None:
    """At exit, no collection of what exists then: atexit handlers run before the
    interpreter's last collections, and ``gc.freeze`` keeps every object alive then out
    of them (the process's memory goes with it; nothing of a capture waits on a
    collection: its files, locks and folders are closed and removed by their blocks)."""
    atexit.register(gc.freeze)


@capture.command("run")
@click.argument("name")
@click.option("--commit", default=None, help="Capture at this commit (default: the declared one).")
@click.option(
    "--repeat",
    type=click.IntRange(1, 10),
    default=1,
    show_default=True,
    help="Run N times; the scripted files must be byte-identical.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def capture_run(name: str, commit: str | None, repeat: int, as_json: bool) -> None:
    """Run capture NAME in isolation and write captures/NAME/<commit12>/ (exit 0 whatever
    its statuses; 1 when the harness failed or two runs differ)."""
    with _start_up():
        from tracework.capture.errors import HarnessFailed, NotDeterministic
        from tracework.capture.pipeline import capture as do_capture

    ws = find_workspace()
    try:
        outcome = do_capture(
            ws, name, commit, repeat, meanwhile=None if as_json else prepare_capture
        )
    except (HarnessFailed, NotDeterministic) as exc:
        if not as_json:
            raise
        print_json({"ok": False, "capture": name, "error": exc.message, "hint": exc.hint})
        sys.exit(exc.exit_code)
    cap = outcome.capture
    if as_json:
        print_json(
            {
                "ok": True,
                "capture": cap.name,
                "subject": cap.manifest.subject,
                "commit": cap.commit,
                "directory": cap.folder,
                "runs": outcome.runs,
                "identical": True,
                "isolation": outcome.isolation,
                "counts": cap.results.counts,
                "cases": [
                    {
                        "id": c.id,
                        "arm": c.arm,
                        "status": c.status,
                        "question": c.question,
                        "transcript": c.transcript,
                    }
                    for arm in (cap.results, cap.model_arm)
                    if arm is not None
                    for c in arm.cases
                ],
                "tables": [t.name for t in cap.results.tables],
                "files": {f.path: f.sha256 for f in cap.manifest.files},
            }
        )
        return
    print_capture(outcome)


@capture.command("env")
@click.argument("name")
@click.option("--commit", default=None, help="The commit whose lock to install.")
@click.option("--rebuild", is_flag=True, help="Build it again, whatever the cache holds.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def capture_env(name: str, commit: str | None, rebuild: bool, as_json: bool) -> None:
    """Build (or find built) the environment of capture NAME, isolated like the harness:
    the only step of a capture that may use the network, and only to the package
    registry."""
    from tracework.capture.pipeline import environment

    ws = find_workspace()
    if not as_json:
        click.echo(
            "capture env: uv may download packages from the package registry "
            "(the only step of a capture that uses the network), in isolation",
            err=True,
        )
    outcome = environment(ws, name, commit, rebuild=rebuild)
    env = outcome.environment
    made = env.provenance
    if as_json:
        print_json(
            {
                "ok": True,
                "capture": name,
                "commit": outcome.commit,
                "built": env.built_now,
                "isolation": outcome.isolation,
                "key": env.key,
                "python": env.interpreter.version,
                "python_path": env.interpreter.path,
                "python_sha256": env.interpreter.sha256,
                "packages": env.packages,
                "environment_sha256": env.sha256,
                "extra_lock": env.extra_note,
                "provenance": made.model_dump(mode="json"),
            }
        )
        return
    print_environment(name, outcome)
