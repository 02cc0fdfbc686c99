"""The report page's own parts as Jinja templates, and the register as both pages show it.

The header, the drift section, the appendix and the footer of a report are templates in
``templates/tracework/fragments``; the register's tables are macros in
``templates/shared/register_tables.html.j2``, imported by the report's appendix and by the
site's register page alike, from the one context :func:`register_sources` builds.  Every
environment here autoescapes, as the site's does; this module loads no nbformat, so the
site can use it.
"""

from __future__ import annotations

import functools
from importlib.resources import files
from pathlib import Path
from typing import Any, TypedDict

import jinja2

from tracework.register.models import CaptureSource, GitSource, Register
from tracework.text import visible_name

TEMPLATES = Path(str(files("tracework") / "templates"))
#: The register's tables, shared by every page that shows a register.
SHARED = TEMPLATES / "shared"


def add_filters(env: jinja2.Environment) -> jinja2.Environment:
    """The filters every tracework template may use."""
    env.filters["name"] = visible_name
    env.filters["short"] = lambda commit: str(commit)[:12]
    return env


@functools.cache
def environment() -> jinja2.Environment:
    """The report fragments' environment: autoescaped; an undefined name is an error."""
    return add_filters(
        jinja2.Environment(
            loader=jinja2.FileSystemLoader(
                [str(TEMPLATES / "tracework" / "fragments"), str(SHARED)]
            ),
            autoescape=True,
            auto_reload=False,  # templates are package data: never re-read mid-build
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
    )


def warm() -> None:
    """Compile the page's own fragments (about 30 ms), as a render does while its
    kernel boots (see :func:`tracework.render.export.warmed_exporter`)."""
    env = environment()
    for template in sorted((TEMPLATES / "tracework" / "fragments").glob("*.j2")):
        env.get_template(template.name)


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


class FileRow(TypedDict):
    """A registered file, as the register's table lists it."""

    path: str
    kind: str
    size: int | str  # "" for a capture's file, whose size the register does not hold
    sha256: str


class SourceRow(TypedDict):
    """A source of the register, as the report's appendix and the site's register page
    list it."""

    id: str
    kind: str
    what: str
    subject: str
    pinned: str
    date: str
    files: list[FileRow]


def register_sources(register: Register) -> list[SourceRow]:
    """Each source of the register, in SRC order, with what it is and its files."""
    out: list[SourceRow] = []
    for sid, src in sorted(register.sources.items(), key=lambda kv: int(kv[0].split("-")[1])):
        if isinstance(src, GitSource):
            out.append(
                {
                    "id": sid,
                    "kind": "git",
                    "what": f"{src.subject} @ {src.commit}",
                    "subject": src.subject,
                    "pinned": src.commit,
                    "date": src.date,
                    "files": [
                        {
                            "path": path,
                            "kind": entry.kind + (", binary" if entry.binary else ""),
                            "size": entry.size,
                            "sha256": entry.sha256,
                        }
                        for path, entry in sorted(src.files.items())
                    ],
                }
            )
        elif isinstance(src, CaptureSource):
            out.append(
                {
                    "id": sid,
                    "kind": "capture",
                    "what": f"capture {src.capture} of {src.subject} @ {src.commit}",
                    "subject": f"{src.capture} of {src.subject}: {len(src.files)} files",
                    "pinned": src.commit,
                    "date": "",
                    "files": [
                        {"path": path, "kind": "capture file", "size": "", "sha256": digest}
                        for path, digest in sorted(src.files.items())
                    ],
                }
            )
        else:
            out.append(
                {
                    "id": sid,
                    "kind": "document",
                    "what": f"document {src.location} (SHA-256 {src.sha256})",
                    "subject": src.location,
                    "pinned": src.sha256,
                    "date": "",
                    "files": [],
                }
            )
    return out
