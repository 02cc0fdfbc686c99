"""The ``tracework`` command: parse options, call the library, format the result.

Every :class:`~tracework.errors.TraceworkError` becomes one message on stderr and
exit code 2 here, in one place.  Check results exit 0 when everything holds and 1
otherwise.
"""

from __future__ import annotations

import errno
import re
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from tracework.errors import TraceworkError
from tracework.version import __version__

if TYPE_CHECKING:  # the command imports what it runs: `tracework --help` stays instant
    from tracework.records.artefacts import BatchOutcome


class Cli(click.Group):
    """A group that turns library errors into one clear message and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except TraceworkError as exc:
            _fail(exc)
        except OSError as exc:  # the file system said no: a file where a folder goes, no
            if exc.errno == errno.EPIPE:  # permission, a read-only or full disk; but a reader
                raise  # that closed our stdout early is click's to handle (quietly, exit 1)
            _fail(_os_error(exc))
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)


def _fail(exc: TraceworkError) -> NoReturn:
    from tracework.text import visible

    click.echo(f"tracework: error: {visible(str(exc))}", err=True)
    sys.exit(exc.exit_code)


def _os_error(exc: OSError) -> TraceworkError:
    """An operating-system refusal (no permission, a file where a folder goes, a full
    disk) as one message naming the file, never a traceback."""
    if exc.filename is None:
        return TraceworkError(str(exc.strerror or exc))
    where = f"{exc.filename}" + (f" → {exc.filename2}" if exc.filename2 is not None else "")
    return TraceworkError(
        f"{exc.strerror or exc}: {where}", hint="check that the path exists, and can be written"
    )


def _json(data: Any) -> None:
    """One JSON object on stdout: indented for a person, compact for a pipe."""
    from tracework.jsonout import dumps

    click.echo(dumps(data, indent=sys.stdout.isatty()))


@contextmanager
def _naming(ws: Any, register_path: Path, source_id: str | None = None) -> Iterator[None]:
    """Name the register (and the source) in an error that does not name it already, so
    every message says which file and item it is about."""
    try:
        yield
    except TraceworkError as exc:
        where = register_path.relative_to(ws.root).as_posix()
        named = (register_path.name, f"register {register_path.stem}")
        if not any(name in exc.message for name in named):
            source = f" {source_id}" if source_id and source_id not in exc.message else ""
            exc.message = f"{where}{source}: {exc.message}"
        raise


def _workspace() -> Any:
    from tracework.workspace import Workspace

    return Workspace.find()


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


@click.group(cls=Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="tracework")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Show on stderr what tracework logs, debug included (the reasons behind fallbacks).",
)
@click.pass_context
def main(ctx: click.Context, verbose: bool) -> None:
    """Evidence-backed reports about other people's code."""
    from tracework.logs import show

    show(verbose)
    if verbose:  # for this command only: a process may run several (tests, notebooks)
        ctx.call_on_close(lambda: show(False))


@main.command()
@click.argument("directory", required=False, default=".", type=click.Path(file_okay=False))
def init(directory: str) -> None:
    """Make DIR (default: here) a workspace: tracework.toml and its four folders."""
    from tracework.workspace import Workspace, strip_notebook_outputs

    ws = Workspace.init(Path(directory))
    click.echo(f"workspace ready at {ws.root}")
    click.echo(strip_notebook_outputs(ws.root))


# -- subjects ---------------------------------------------------------------------------


@main.group()
def subject() -> None:
    """Declare subjects: git repositories under analysis."""


@subject.command("add")
@click.argument("name")
@click.argument("url")
@click.option(
    "--track",
    default="HEAD",
    show_default=True,
    help="Branch to follow for new commits (a tag: refs/tags/NAME; HEAD: the default branch).",
)
@click.option(
    "--from",
    "source",
    default=None,
    metavar="PATH",
    help="Seed the mirror now from this local clone or bundle; URL stays the identity.",
)
def subject_add(name: str, url: str, track: str, source: str | None) -> None:
    """Write sources/NAME.toml for the repository at URL (https, ssh or a local path)."""
    from tracework.git.subjects import add_subject

    ws = _workspace()
    subj = add_subject(ws, name, url, track)
    click.echo(f"subject {subj.name}: {subj.url} ({subj.kind}), tracking {subj.track}")
    if source is None:
        click.echo(f"next: tracework fetch {subj.name}")
    else:
        _fetched(ws, subj.name, source)


@main.command()
@click.argument("name")
@click.option(
    "--from",
    "source",
    default=None,
    metavar="PATH",
    help="Fetch from this local clone or bundle instead of the subject's URL.",
)
def fetch(name: str, source: str | None) -> None:
    """Create or update the bare mirror of subject NAME (the only command using the network)."""
    _fetched(_workspace(), name, source)


def _fetched(ws: Any, name: str, source: str | None) -> None:
    """Fetch subject ``name`` (from ``source`` when given) and say what the mirror holds."""
    from tracework.git.subjects import fetch as do_fetch

    result = do_fetch(ws, name, source)
    verb = "created" if result.created else "updated"
    head = f", {result.head[:12]} at its tracked ref" if result.head else ""
    from tracework.text import visible_name

    origin = f" from {visible_name(source)}" if source is not None else ""
    click.echo(f"mirror {verb}{origin}: {result.mirror.relative_to(ws.root)}{head}")
    if result.removed_config:
        keys = ", ".join(visible_name(key) for key in result.removed_config)
        click.echo(f"mirror config rewritten; removed keys tracework never sets: {keys}")


# -- registers --------------------------------------------------------------------------


@main.group()
def register() -> None:
    """Create registers and add sources and files to them."""


@register.command("new")
@click.argument("register_name", metavar="REGISTER")
def register_new(register_name: str) -> None:
    """Create registers/REGISTER.yaml, empty."""
    import tracework.register.edits as regy
    from tracework.workspace import check_name

    ws = _workspace()
    path = ws.register_file(register_name)
    regy.create(path, check_name(path.stem, "register"))
    click.echo(f"register created: {path.relative_to(ws.root)}")


@register.command("add-source")
@click.argument("register_name", metavar="REGISTER")
@click.argument("source_id", metavar="SRC-ID")
@click.option("--subject", "subject_name", required=True, help="Subject name.")
@click.option("--commit", required=True, help="Commit id or unique prefix (hex only).")
def register_add_source(register_name: str, source_id: str, subject_name: str, commit: str) -> None:
    """Pin subject NAME at COMMIT as source SRC-ID."""
    from tracework.register.evidence import add_source

    ws = _workspace()
    path = ws.register_file(register_name)
    with _naming(ws, path, source_id):
        src = add_source(ws, path, source_id, subject_name, commit)
    click.echo(f"{source_id}: {src.subject} @ {src.commit} ({src.date})")


@register.command("add-capture")
@click.argument("register_name", metavar="REGISTER")
@click.argument("name")
@click.option("--commit", default=None, help="The capture's commit (default: the register's pin).")
def register_add_capture(register_name: str, name: str, commit: str | None) -> None:
    """Register runtime capture NAME (its files and their SHA-256) as a source, as a
    notebook's wb.capture(NAME) does in author mode."""
    import tracework.register.store as reg
    from tracework.capture.sources import add_capture_source
    from tracework.register.models import GitSource

    ws = _workspace()
    path = ws.register_file(register_name)
    with _naming(ws, path):
        if commit is None:
            register = reg.load(path)
            pins = [s.commit for s in register.sources.values() if isinstance(s, GitSource)]
            if not pins:
                raise TraceworkError(f"register {register_name} has no git source to pin")
            commit = pins[0]
        sid = add_capture_source(ws, path, name, commit)
    click.echo(f"{sid}: capture {name} at {commit[:12]}")


@register.command("add-document")
@click.argument("register_name", metavar="REGISTER")
@click.argument("source_id", metavar="SRC-ID")
@click.argument("location", metavar="PATH|URL")
@click.option("--sha256", "sha256", default=None, help="The SHA-256 the document must have.")
def register_add_document(
    register_name: str, source_id: str, location: str, sha256: str | None
) -> None:
    """Register a document cited as evidence: a file in the workspace (hashed now) or an
    https URL with --sha256 (never fetched)."""
    from tracework.register.evidence import add_document
    from tracework.text import visible_name

    ws = _workspace()
    path = ws.register_file(register_name)
    with _naming(ws, path, source_id):
        doc = add_document(ws, path, source_id, location, sha256)
    click.echo(f"{source_id}: document {visible_name(doc.location)} sha256 {doc.sha256}")


@register.command("add-file")
@click.argument("register_name", metavar="REGISTER")
@click.argument("source_id", metavar="SRC-ID")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--expect-sha256", default=None, help="The SHA-256 an outside dossier expects.")
def register_add_file(
    register_name: str, source_id: str, paths: tuple[str, ...], expect_sha256: str | None
) -> None:
    """Register files (paths, folders or globs over the tree) with their SHA-256."""
    from tracework.register.evidence import add_files
    from tracework.text import visible_name

    ws = _workspace()
    path = ws.register_file(register_name)
    with _naming(ws, path, source_id):
        added = add_files(ws, path, source_id, list(paths), expect_sha256)
    counts = Counter(a.status for a in added)
    for item in added[:50]:
        kind = {
            "file": " (binary)" if item.entry.binary else "",
            "lfs-pointer": " (Git LFS pointer: hashed as the pointer, content not in the repo)",
        }.get(item.entry.kind, f" ({item.entry.kind})")
        click.echo(f"  {item.entry.sha256[:12]}  {visible_name(item.path)}{kind}")
    if len(added) > 50:
        click.echo(f"  … and {len(added) - 50} more")
    for item in added:
        if item.before is not None and item.before.expect_sha256 != item.entry.expect_sha256:
            was = (item.before.expect_sha256 or "none")[:12]
            now = (item.entry.expect_sha256 or "none")[:12]
            click.echo(f"expected SHA-256 of {visible_name(item.path)}: was {was}, now {now}")
        expected = item.entry.expect_sha256
        if expected and expected != item.entry.sha256:  # say it now, not at the next render
            click.echo(
                f"warning: {visible_name(item.path)} has sha256 {item.entry.sha256} at the "
                f"pin, not the expected {expected}: `check` reports the expectation as "
                "differing",
                err=True,
            )
    files = f"{len(added)} file{'' if len(added) == 1 else 's'}"
    click.echo(
        f"{files}: {counts['new']} newly registered, {counts['updated']} updated, "
        f"{counts['unchanged']} already registered as given"
    )


@register.command("assert")
@click.argument("register_name", metavar="REGISTER")
@click.argument("source_id", metavar="SRC-ID")
@click.argument("path")
@click.argument("sha256", metavar="SHA256")
@click.option("--by", "by", required=True, metavar="SRC-ID", help="The document asserting it.")
@click.option(
    "--at-commit",
    default=None,
    metavar="COMMIT",
    help="The commit it is about (default: any); one this mirror lacks, by its full id, is "
    "kept as asserted and compared at the pin.",
)
@click.option("--required", is_flag=True, help="A differing hash fails the checks.")
def register_assert(
    register_name: str,
    source_id: str,
    path: str,
    sha256: str,
    by: str,
    at_commit: str | None,
    required: bool,
) -> None:
    """Record that a document (--by) asserts PATH of SRC-ID has SHA256; check says whether
    it holds (a differing assertion is a finding, and fails only with --required)."""
    from tracework.drift.check import where_compared
    from tracework.register.evidence import add_assertion
    from tracework.text import visible_name

    ws = _workspace()
    register_path = ws.register_file(register_name)
    with _naming(ws, register_path, source_id):
        added = add_assertion(ws, register_path, source_id, path, sha256, by, at_commit, required)
    made, found = added.assertion, added.found
    where = where_compared(added.compared_at, made.at_commit, added.absent)
    if made.at_commit is None:
        where = "at the pin"
    state = "holds" if found == made.sha256 else "is missing" if found is None else "differs"
    click.echo(f"{by} asserts {visible_name(path)} has sha256 {made.sha256}")
    if state == "holds":
        click.echo(f"{where}: holds")
    else:
        has = f": the file has {found}" if found else ": no such file there"
        click.echo(f"{where}: {state}{has}", err=True)


# -- quotes -----------------------------------------------------------------------------


def _line_range(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    first, sep, last = value.partition("-")
    try:
        a = int(first)
        b = int(last) if sep else a
    except ValueError:
        raise click.BadParameter("expected A-B, e.g. 10-14", param_hint="--lines") from None
    return a, b


@main.command()
@click.argument("register_name", metavar="REGISTER")
@click.argument("source_id", metavar="SRC-ID", required=False)
@click.argument("path", required=False)
@click.option("--lines", "lines", default=None, metavar="A-B", help="Line range, 1-based.")
@click.option("--symbol", default=None, metavar="QUALNAME", help="Python Class.method etc.")
@click.option("--match", default=None, metavar="TEXT", help="Substring on exactly one line.")
@click.option("--context", default=0, type=click.IntRange(0, 200), help="Lines around --match.")
@click.option("--id", "quote_id", default=None, help="Quote id (default derived from the span).")
@click.option("--replace", is_flag=True, help="Point the existing --id at this span instead.")
@click.option(
    "--remove", "remove_id", default=None, metavar="QUOTE-ID", help="Remove this quote instead."
)
def quote(
    register_name: str,
    source_id: str | None,
    path: str | None,
    lines: str | None,
    symbol: str | None,
    match: str | None,
    context: int,
    quote_id: str | None,
    replace: bool,
    remove_id: str | None,
) -> None:
    """Quote a span of PATH at the source's pin and add it to the register.

    The same span is always the same quote. --replace points an existing --id at a new
    span; --remove ID takes a quote out of the register unless a notebook cites it.
    """
    import tracework.register.store as reg
    from tracework.register.citations import remove_quote
    from tracework.register.quotes import QuoteRequest, add_quote
    from tracework.text import terminal_lines, visible_name

    ws = _workspace()
    register_path = ws.register_file(register_name)
    if remove_id is not None:
        if source_id or path or lines or symbol or match or quote_id or replace:
            raise click.UsageError("--remove takes the register and the quote id alone")
        with _naming(ws, register_path, None):
            gone = remove_quote(ws, register_path, remove_id)
        click.echo(
            f"removed {remove_id}  {visible_name(gone.path)}:{gone.lines[0]}-{gone.lines[1]}"
            f"  sha256 {gone.sha256}"
        )
        return
    if source_id is None or path is None:
        raise click.UsageError("give SRC-ID and PATH (or --remove QUOTE-ID)")
    if sum(x is not None for x in (lines, symbol, match)) != 1:
        raise click.UsageError("give exactly one of --lines, --symbol or --match")
    if context and match is None:
        raise click.UsageError("--context goes with --match (widen a --lines range instead)")
    request = QuoteRequest(_line_range(lines), symbol, match, context)
    with _naming(ws, register_path, source_id):
        qid, q, replaced = add_quote(
            ws, register_path, source_id, path, request, quote_id, replace=replace
        )
    color = sys.stdout.isatty()
    if replaced is not None:
        click.echo(
            f"replaced {qid}: was {visible_name(replaced.path)}:{replaced.lines[0]}-"
            f"{replaced.lines[1]}  sha256 {replaced.sha256}"
        )
    click.echo(f"{qid}  {visible_name(q.path)}:{q.lines[0]}-{q.lines[1]}  sha256 {q.sha256}")
    if reg.load(register_path).git_source(source_id).files[q.path].kind == "lfs-pointer":
        click.echo("(a Git LFS pointer: the content it names is not in the repository)")
    click.echo(terminal_lines(q.text, q.lines[0], q.path, color=color))


# -- check ------------------------------------------------------------------------------


@main.command()
@click.argument("register_name", metavar="REGISTER")
@click.option("--at", "at", default=None, metavar="COMMIT", help="Report drift at this commit.")
@click.option("--source", "only", default=None, metavar="SRC-ID", help="Check one source only.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--record", is_flag=True, help="Append this check to the register's history.")
@click.option(
    "--date", default=None, metavar="YYYY-MM-DD", help="Date for --record (default today)."
)
def check(
    register_name: str,
    at: str | None,
    only: str | None,
    as_json: bool,
    record: bool,
    date: str | None,
) -> None:
    """Verify every registered file and quote (exit 0 all hold, 1 otherwise)."""
    if date is not None and not record:
        raise click.UsageError("--date goes with --record (the date of the recorded check)")
    with _collector_paused():
        import tracework.register.store as reg
        from tracework.drift.check import check_register, record_check

        ws = _workspace()
        path = ws.register_file(register_name)
        with _naming(ws, path, only):
            report = check_register(ws, reg.load_data(path), at=at, only=only)
            if record:
                record_check(path, report, date)
        if as_json:
            _json(report.as_json())
        else:
            _print_check(report)
    sys.exit(0 if report.ok else 1)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector for one command.

    A check builds tens of thousands of objects that all live until it ends, and
    forms no cycles among them; the collector would only re-scan them, again and
    again (about 5% of a large check's time).  Reference counting still frees memory.
    """
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _candidates(item: Any) -> list[str]:
    """Each candidate place, with its file when it is not the quote's own."""
    paths = item.candidate_paths or (None,) * len(item.candidates)
    return [
        f"{p}:{a}-{b}" if p not in (None, item.path) else f"{a}-{b}"
        for p, (a, b) in zip(paths, item.candidates, strict=True)
    ]


def _print_check(report: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from tracework.drift.check import problem_text
    from tracework.text import visible, visible_name

    console = _console()
    for src in report.sources:
        where = "its pin" if src.commit == src.pin else f"{src.commit[:12]} (pin {src.pin[:12]})"
        table = Table(
            title=Text(f"{report.register} · {src.source} {src.subject} at {where}"),
            title_justify="left",
        )
        for col in ("kind", "id", "state", "where now", "detail"):
            # fold, never cut: a long path or quote id is what the reader has to act on
            table.add_column(col, overflow="fold")
        for item in src.items:
            if item.kind == "file" and item.state == "verified":
                continue
            now = ""
            if item.new_path or item.new_lines:
                lines = f":{item.new_lines[0]}-{item.new_lines[1]}" if item.new_lines else ""
                now = f"{item.new_path or item.path}{lines}"
            if item.candidates:
                now = "; ".join(_candidates(item))
            table.add_row(
                item.kind,
                Text(visible_name(item.id) if item.kind == "file" else visible(item.id)),
                item.state,
                Text(visible_name(now)),
                # the table abbreviates hashes; --json never does
                Text(visible(re.sub(r"\b([0-9a-f]{12})[0-9a-f]{52}\b", r"\1…", item.detail))),
            )
        if table.row_count:
            console.print(table)
        for item in src.items:
            if item.diff:
                console.print(Text(f"\n{item.id} changed:", style="bold"))
                console.print(Text(visible(item.diff)))
    files, quotes = report.counts("file"), report.counts("quote")

    def fmt(c: dict[str, int]) -> str:
        return ", ".join(f"{n} {state}" for state, n in sorted(c.items())) or "none"

    kinds = dict.fromkeys(report.document_sources, "document")
    kinds.update(dict.fromkeys(report.capture_sources, "capture"))
    for item in report.documents:  # documents and capture files, as a report's summary says
        if item.state != "verified":
            console.print(Text(visible(problem_text(item, kinds[item.source])), style="red"))
    for kind, what in (("document", "documents"), ("capture", "capture files")):
        kept = [d for d in report.documents if kinds[d.source] == kind]
        held = sum(d.state == "verified" for d in kept)
        if kept:
            of = "" if held == len(kept) else f" of {len(kept)}"
            console.print(Text(f"{what}: {held}{of} verified"))
    for sid in report.unchecked:
        console.print(Text(f"document {sid}: a URL, not checked (tracework never fetches it)"))
    for a in report.assertions:
        who = f"by {a.by}" if a.by else "expected by the register (--expect-sha256)"
        told = f"asserted {a.sha256[:12]}…"
        if a.state == "differs":
            told += f", the file has {a.sha256_at_commit and a.sha256_at_commit[:12]}…"
        line = f"assertion {who}: {visible_name(a.path)} {a.where()}: {a.state} ({told})"
        style = "red" if a.fails else "yellow" if a.state != "holds" else ""
        console.print(Text(line + (" — required" if a.required else ""), style=style))
    console.print(Text(f"files: {fmt(files)}; quotes: {fmt(quotes)}"))
    if not report.items:
        console.print(Text("nothing to check: the register has no files or quotes", style="red"))
    findings = sum(1 for a in report.assertions if a.state != "holds" and not a.fails)
    if findings:  # said before the verdict, which stays the last line
        noun = "finding" if findings == 1 else "findings"
        console.print(Text(f"{findings} {noun}: asserted hashes that do not hold, not --required"))
    console.print(Text("ok" if report.ok else "NOT OK", style="green" if report.ok else "red"))


# -- schema -----------------------------------------------------------------------------


@main.command()
@click.option(
    "--write",
    is_flag=True,
    help="Write every schema (register, records, history entry, manifest, batch outcome, "
    "check summary) as schemas/NAME.schema.json in the workspace.",
)
def schema(write: bool) -> None:
    """Print the register's JSON Schema (or write every schema), generated from the models."""
    from tracework.records.schemas import register_schema_text, schema_texts

    if write:
        from tracework.fsio import write_atomic

        folder = _workspace().root / "schemas"
        for name, text in schema_texts().items():
            target = folder / f"{name}.schema.json"
            write_atomic(target, text)
            click.echo(f"wrote {target}")
    else:
        click.echo(register_schema_text(), nl=False)


# -- reports ----------------------------------------------------------------------------


@main.command()
@click.argument("name")
@click.option("--subject", "subject_name", required=True, help="Subject to analyse.")
@click.option("--commit", required=True, help="Commit to pin (hex id or unique prefix).")
@click.option(
    "--kind",
    type=click.Choice(["runtime", "investigation"]),
    default="runtime",
    show_default=True,
    help="runtime: a runtime account; investigation: the parts of an investigation record "
    "built on a capture, its provenance, status conditions, results and limits computed.",
)
@click.option(
    "--capture",
    "capture_name",
    default=None,
    metavar="NAME",
    help="With --kind investigation: the capture it is built on (default: the report's name).",
)
def new(name: str, subject_name: str, commit: str, kind: str, capture_name: str | None) -> None:
    """Create notebooks/NAME.ipynb (clean, with a parameters cell) and registers/NAME.yaml."""
    from tracework.notebook.scaffold import new_report

    ws = _workspace()
    notebook, register_path = new_report(ws, name, subject_name, commit, kind, capture_name)
    click.echo(f"created {notebook.relative_to(ws.root)} and {register_path.relative_to(ws.root)}")
    click.echo(f"next: open the notebook in JupyterLab, then `tracework render {name}`")


@main.command()
@click.argument("name")
@click.option("--commit", default=None, help="Run at this commit (default: the pin).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def author(name: str, commit: str | None, as_json: bool) -> None:
    """Run notebooks/NAME.ipynb in author mode, headless, into reports/NAME/draft/."""
    from tracework.render.author import as_json as author_json
    from tracework.render.author import author as do_author
    from tracework.render.author import records_text
    from tracework.text import counted, visible

    ws = _workspace()
    result = do_author(ws, name, commit)
    if result.cleared:
        click.echo(
            f"notebooks/{name}.ipynb: the outputs of {result.cleared} cells were cleared in "
            "the run's copy (the notebook itself is unchanged)",
            err=True,
        )
    summary = result.summary
    if as_json:
        _json(author_json(result, ws.root))
    else:
        click.echo(f"ran {result.directory.relative_to(ws.root)}/report.ipynb")
        click.echo(counted(len(result.records), "record"))
        for line in records_text(result):
            click.echo(f"  {visible(line)}")
        for check_name_, check in summary.checks.families(by_name=True):
            mark = "FAILS" if check.verdict == "fails" else check.verdict_words
            click.echo(f"  {check_name_:<9} {mark:<6} {check.detail}")
        for problem in summary.problems[:20]:
            click.echo(f"  - {visible(problem)}")
    if result.at_pin and not summary.ok:
        sys.exit(1)


@main.command()
@click.argument("name")
@click.option("--commit", default=None, help="Render at this commit (default: the pin).")
@click.option(
    "--analysis-date",
    default=None,
    metavar="YYYY-MM-DD",
    help="Override the notebook's analysis_date parameter.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def render(name: str, commit: str | None, analysis_date: str | None, as_json: bool) -> None:
    """Execute notebooks/NAME.ipynb with papermill and export reports/NAME/<commit12>/."""
    from tracework.records.artefacts import to_json
    from tracework.render.pipeline import render as do_render

    ws = _workspace()
    result = do_render(ws, name, commit, analysis_date)
    summary = result.summary
    if result.cleared:
        click.echo(
            f"notebooks/{name}.ipynb: the outputs of {result.cleared} cells were cleared in "
            "the render's copy (the notebook itself is unchanged)",
            err=True,
        )
    if as_json:
        _json(
            {
                "ok": summary.ok,
                "name": result.name,
                "commit": result.commit,
                "directory": str(result.directory.relative_to(ws.root)),
                "checks": to_json(summary),
            }
        )
        return
    click.echo(f"rendered {result.directory.relative_to(ws.root)}/report.html")
    for check_name_, check in summary.checks.families(by_name=True):
        mark = "FAILS" if check.verdict == "fails" else check.verdict_words
        click.echo(f"  {check_name_:<9} {mark:<6} {check.detail}")
    for problem in summary.problems[:20]:
        from tracework.text import visible

        click.echo(f"  - {visible(problem)}")


@main.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--all", "every", is_flag=True, help="Every report in the workspace.")
@click.option("--commit", default=None, help="Render at this commit.")
@click.option("--latest", is_flag=True, help="Render at the head of each subject's tracked ref.")
@click.option("--fetch", "do_fetch", is_flag=True, help="Fetch the subjects first.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1, 64),
    default=None,
    help="Worker processes (default: the number of cores).",
)
@click.option("--force", is_flag=True, help="Render even reports whose inputs did not change.")
@click.option(
    "--capture",
    "recapture",
    is_flag=True,
    help="Run each cited capture again at the target first (runs subject code, isolated).",
)
@click.option(
    "--analysis-date",
    default=None,
    metavar="YYYY-MM-DD",
    help="The date of this check, instead of each notebook's analysis_date parameter.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="Where renders run.",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="Dask scheduler address (with --executor dask).",
)
@click.option(
    "--fail-on",
    "fail_on",
    default=None,
    metavar="KINDS",
    help="Exit 1 when a finding of these kinds appears, one line each on stderr: a "
    "comma-separated list of changed (a cited quote's content changed, or it is missing), "
    "broken (an evidenced absence's patterns match), review (a record needs re-review), "
    "any (all three).  Without it a finding exits 0: the report renders to show it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def rerender(
    names: tuple[str, ...],
    every: bool,
    commit: str | None,
    latest: bool,
    do_fetch: bool,
    jobs: int | None,
    force: bool,
    recapture: bool,
    analysis_date: str | None,
    executor: str,
    scheduler: str | None,
    fail_on: str | None,
    as_json: bool,
) -> None:
    """Re-render reports at a new commit: drift, first-changed commits, history."""
    from tracework.batch.findings import finding_kinds, findings
    from tracework.batch.rerender import report_names, targets
    from tracework.batch.rerender import rerender as do_rerender
    from tracework.records.artefacts import to_json

    if (executor == "dask") != (scheduler is not None):
        raise click.UsageError("--executor dask and --scheduler ADDRESS go together")
    kinds = finding_kinds(fail_on) if fail_on is not None else frozenset()
    ws = _workspace()
    plan = targets(ws, report_names(ws, names, every), commit, latest, do_fetch)
    results = _with_progress(
        plan,
        lambda update: do_rerender(
            ws,
            plan,
            jobs=jobs,
            force=force,
            scheduler=scheduler,
            analysis_date=analysis_date,
            capture=recapture,
            on_update=update,
        ),
        quiet=as_json,
    )
    ok = all(r.status != "failed" for r in results)
    found = findings(results, kinds)
    if as_json:
        _json({"ok": ok and not found, "reports": [to_json(r) for r in results]})
    else:
        _print_rerender(results)
    if found:
        from tracework.text import visible

        for finding in found:
            click.echo(f"finding: {visible(finding.line)}", err=True)
    sys.exit(0 if ok and not found else 1)


def _with_progress(plan: dict[str, str], run: Any, *, quiet: bool) -> Any:
    """Run with a live table of each report's state on a terminal (stderr)."""
    from rich.console import Console
    from rich.live import Live
    from rich.table import Table

    states = dict.fromkeys(plan, "queued")
    console = Console(stderr=True, highlight=False)

    def table() -> Table:
        view = Table(title="rerender", title_justify="left")
        view.add_column("report")
        view.add_column("commit")
        view.add_column("state")
        for name, state in states.items():
            view.add_row(name, plan[name][:12], state)
        return view

    if quiet or not console.is_terminal:

        def update(name: str, state: str) -> None:
            states[name] = state
            if not quiet:
                console.print(f"{name} @ {plan[name][:12]}: {state}")

        return run(update)
    with Live(table(), console=console, refresh_per_second=4) as live:

        def live_update(name: str, state: str) -> None:
            states[name] = state
            live.update(table())

        return run(live_update)


def _print_rerender(results: list[BatchOutcome]) -> None:
    from rich.table import Table
    from rich.text import Text

    from tracework.batch.findings import broken_line
    from tracework.text import visible

    console = _console()
    table = Table(title="rerender", title_justify="left")
    for col in ("report", "commit", "status", "quotes", "absences"):
        table.add_column(col)
    for r in results:
        counts = ", ".join(f"{n} {s}" for s, n in r.counts.items() if n) or "-"
        uncited = sum(r.uncited.values())
        if uncited:
            counts += f" (+{uncited} uncited)"
        broken = sum(1 for a in r.absences.values() if a.state == "broken")
        held = len(r.absences) - broken
        absences = (
            (f"{broken} broken, {held} hold" if broken else f"{held} hold") if r.absences else "-"
        )
        table.add_row(Text(visible(r.name)), r.commit[:12], r.status, counts, absences)
    console.print(table)
    for r in results:
        if r.error:
            console.print(Text(f"{r.name}: failed: {visible(r.error)}", style="red"))
            continue
        for qid, commit in sorted(r.first_changed.items()):
            content = r.first_content_change.get(qid)
            if qid in r.format_only:  # and so no first content change: content.py
                how = "format only"
            elif content == commit or content is None:
                how = "content changed there too"
            else:
                how = f"content first changed at {content[:12]}"
            line = f"{r.name}: {visible(qid)} first changed at {commit[:12]} ({how})"
            console.print(Text(line))
        for aid, absence in sorted(r.absences.items()):
            if absence.state == "broken":
                console.print(Text(f"{r.name}: {visible(broken_line(aid, absence))}"))


@main.command()
@click.option(
    "--out",
    default=None,
    type=click.Path(file_okay=False),
    help="Folder to publish into (default: reports/site): a new folder, or a site publish "
    "made before; inside a workspace only reports/site or such a site in reports/.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def publish(out: str | None, as_json: bool) -> None:
    """Publish the static site: an index of every report, their renders, the registers
    and one matrix per rubric.  Opens from disk; makes no outside request."""
    from tracework.site.publish import publish as do_publish

    ws = _workspace()
    result = do_publish(ws, Path(out) if out else None)
    try:
        where = str(result.out.relative_to(ws.root.resolve()))
    except ValueError:
        where = str(result.out)
    if as_json:
        _json(
            {
                "ok": True,
                "out": where,
                "reports": result.reports,
                "renders": result.renders,
                "rubrics": result.rubrics,
                "pages": result.pages,
                "skipped": result.skipped,
            }
        )
        return

    def count(n: int, what: str) -> str:
        return f"{n} {what}" + ("" if n == 1 else "s")

    click.echo(
        f"published {count(result.reports, 'report')} ({count(result.renders, 'render')}), "
        f"{count(len(result.rubrics), 'rubric')}, {count(result.pages, 'page')} "
        f"to {where}/index.html"
    )
    for problem in result.skipped:
        click.echo(f"  skipped {problem}", err=True)


@main.command()
@click.argument("subject_name", metavar="SUBJECT")
@click.option("--commit", required=True, help="Commit to screen (hex id or unique prefix).")
@click.option(
    "--cooldown-days",
    type=click.IntRange(1, 3650),
    default=None,
    help="List locked packages published this many days before the commit "
    "(default: [screen] cooldown_days in tracework.toml, else 7).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def screen(subject_name: str, commit: str, cooldown_days: int | None, as_json: bool) -> None:
    """Screen a subject at a commit without running anything: what would run or instruct."""
    from tracework.git.subjects import open_mirror
    from tracework.screen import DEFAULT_DAYS
    from tracework.screen import screen as do_screen

    ws = _workspace()
    days = cooldown_days or ws.cooldown_days or DEFAULT_DAYS
    mirror = open_mirror(ws, subject_name)
    result = do_screen(mirror, mirror.resolve_commit(commit), cooldown_days=days)
    if as_json:
        _json({"subject": subject_name, **result.as_json()})
        return
    _print_screen(subject_name, result)


def _print_screen(subject_name: str, result: Any) -> None:
    """The screen as tables.  On a terminal long cells fold; on a pipe every row stays
    on one line, however long, so no path is ever cut and each finding can be grepped."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from tracework.text import visible, visible_name

    def where(path: str, line: int) -> str:
        return f"{visible_name(path)}:{line}"

    rows: list[tuple[str, ...]] = [
        (
            f.category,
            where(f.path, f.line),
            visible(f.what())
            + (f" ← {', '.join(visible_name(r) for r in f.run_by)}" if f.run_by else ""),
            visible(f.text),
        )
        for f in result.findings
    ]
    window = result.cooldown
    recent: list[tuple[str, ...]] = [
        (where(lock.path, p.line), visible(p.name), visible(p.version), p.uploaded, str(p.age_days))
        for lock in window.locks
        for p in lock.packages
    ]
    console = _console()
    if not console.is_terminal:  # as wide as the longest row needs: rich sizes columns to fit
        console = Console(highlight=False, soft_wrap=True, width=1 << 20)

    def table(title: str, columns: tuple[str, ...], body: list[tuple[str, ...]]) -> Any:
        shown = Table(title=Text(title), title_justify="left")
        for column in columns:
            shown.add_column(column, overflow="fold")
        for row in body:
            shown.add_row(*(Text(cell) for cell in row))
        return shown

    console.print(
        table(
            f"{subject_name} at {result.commit[:12]}: nothing was run",
            ("category", "where", "what", "the line"),
            rows,
        )
    )
    console.print(Text(", ".join(f"{n} {c}" for c, n in result.counts().items())))
    title = (
        f"dependencies inside the {window.days}-day cooldown: published after {window.since}, "
        f"the commit being of {window.commit_date}: {window.verdict()}"
    )
    if recent:
        console.print(
            table(title, ("where", "package", "version", "uploaded", "age (days)"), recent)
        )
    else:
        console.print(Text(title))
    for lock in window.locks:
        console.print(Text(f"{visible_name(lock.path)}: {lock.note}"))


# -- captures ---------------------------------------------------------------------------


class _CaptureGroup(click.Group):
    """``capture env NAME`` is a subcommand; ``capture NAME …`` means ``capture run NAME …``."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().resolve_command(ctx, args)


@main.group(cls=_CaptureGroup)
def capture() -> None:
    """Run a harness against the subject's own code, isolated: `capture NAME`, `capture env NAME`.

    A capture is captures/NAME.toml (subject, commit, environment, limits) with the
    harness captures/NAME.py; its results go to captures/NAME/<commit12>/."""


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
    from tracework.capture.errors import HarnessFailed, NotDeterministic
    from tracework.capture.pipeline import capture as do_capture

    ws = _workspace()
    try:
        outcome = do_capture(ws, name, commit, repeat)
    except (HarnessFailed, NotDeterministic) as exc:
        if not as_json:
            raise
        _json({"ok": False, "capture": name, "error": exc.message, "hint": exc.hint})
        sys.exit(exc.exit_code)
    cap = outcome.capture
    if as_json:
        _json(
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
    _print_capture(outcome)


def _print_capture(outcome: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from tracework.text import visible

    cap = outcome.capture
    runs = "1 run" if outcome.runs == 1 else f"{outcome.runs} runs, byte-identical"
    console = _console()
    table = Table(
        title=Text(
            f"capture {cap.name} · {cap.manifest.subject} at {cap.commit[:12]} "
            f"({runs}; isolated by {outcome.isolation})"
        ),
        title_justify="left",
    )
    for col in ("case", "status", "question", "observed"):
        table.add_column(col, overflow="fold")
    for arm in (cap.results, cap.model_arm):
        for case in arm.cases if arm is not None else ():
            unmet = [ch.observed for ch in case.checks if ch.holds is not True]
            observed = case.observed or "; ".join(unmet or [ch.observed for ch in case.checks])
            status = case.status or "model-driven (not graded)"
            table.add_row(case.id, status, Text(visible(case.question)), Text(visible(observed)))
    console.print(table)
    counts = cap.results.counts
    tables = len(cap.results.tables)
    console.print(
        Text(
            f"{len(cap.results.cases)} scripted cases: {counts['PASS']} PASS, {counts['FAIL']} "
            f"FAIL, {counts['UNKNOWN']} UNKNOWN"
            + (f"; {tables} table{'s' if tables != 1 else ''}" if tables else "")
        )
    )
    click.echo(f"written to {cap.folder}/ (manifest.json lists every file's SHA-256)")


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

    ws = _workspace()
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
        _json(
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
    _print_environment(name, outcome)


def _print_environment(name: str, outcome: Any) -> None:
    """``capture env``'s report: the state, then the provenance a capture will record."""
    from tracework.text import visible

    env = outcome.environment
    made = env.provenance
    state = (
        f"built now, isolated by {outcome.isolation}"
        if env.built_now
        else "already built (and as built): nothing installed"
    )
    click.echo(f"environment of capture {name} at {outcome.commit[:12]}: {state}")
    click.echo(f"  key {env.key[:16]}…  {env.folder}")
    python = made.python
    click.echo(f"  uv {made.uv}; Python {python.version} at {python.path} (sha256 {python.sha256})")
    if made.lock is not None:
        lock = made.lock
        defaults = [g for g in lock.groups if g in lock.default_groups]
        named = [g for g in lock.groups if g not in lock.default_groups]
        groups = ", ".join([*(f"{g} (default)" for g in defaults), *named]) or "none"
        click.echo(f"  uv.lock sha256 {lock.sha256}; pyproject.toml sha256 {lock.project_sha256}")
        click.echo(
            visible(f"  groups: {groups}; extras: {', '.join(lock.extras) or 'none'}")
            + ("; the default groups left out" if lock.no_default_groups else "")
        )
    if made.extra_lock is not None:
        said = env.extra_note or "installed as written"
        click.echo(f"  extra: {said}; sha256 {made.extra_lock.sha256}")
    click.echo(f"  {len(made.distributions)} distributions; environment.txt sha256 {env.sha256}")
    for dist in made.distributions:
        if dist.sha256:
            how = f"sha256 {dist.sha256}" + (f" ({dist.file})" if dist.file else "")
        elif dist.hashes and dist.installed_by == "lock":
            how = f"one of the {len(dist.hashes)} files the lock lists, not told apart"
        elif dist.hashes:
            how = f"one of the {len(dist.hashes)} hashes the pin accepts"
        else:
            how = "no hash: not a file the lock or a pin names"
        built = "; built from source" if dist.built_from_source else ""
        click.echo(visible(f"    {dist.name}=={dist.version}  {how}{built}"))
