"""``tracework register …``: a register's sources, files and asserted hashes."""

from __future__ import annotations

from collections import Counter

import click

from tracework.cli.common import find_workspace, naming
from tracework.errors import TraceworkError


@click.group()
def register() -> None:
    """Create registers and add sources and files to them."""


@register.command("new")
@click.argument("register_name", metavar="REGISTER")
def register_new(register_name: str) -> None:
    """Create registers/REGISTER.yaml, empty."""
    import tracework.register.edits as regy
    from tracework.workspace import check_name

    ws = find_workspace()
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

    ws = find_workspace()
    path = ws.register_file(register_name)
    with naming(ws, path, source_id):
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

    ws = find_workspace()
    path = ws.register_file(register_name)
    with naming(ws, path):
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

    ws = find_workspace()
    path = ws.register_file(register_name)
    with naming(ws, path, source_id):
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

    ws = find_workspace()
    path = ws.register_file(register_name)
    with naming(ws, path, source_id):
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

    ws = find_workspace()
    register_path = ws.register_file(register_name)
    with naming(ws, register_path, source_id):
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
