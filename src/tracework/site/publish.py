"""``tracework publish``: the static site of every report, its history and the rubrics.

The site is built from what renders left in ``reports/`` (read by :mod:`tracework.site.read`),
the registers and the rubric files; nothing is re-executed.  Pages come from Jinja
templates in ``templates/site`` with autoescaping on; each finished page shows hidden
characters as ``<U+XXXX>`` (one rule for every page,
:func:`tracework.text.visible_markup`), and so does the search index.  Every link is
relative, so the site opens from ``file://`` or any static host; pages carry a
Content-Security-Policy, run only their own scripts (a nonce per page) and make no
request outside the site.  The output is deterministic (sorted, no clock) and is built
in a staging folder that replaces the old site only when complete.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markdown_it import MarkdownIt
from markupsafe import Markup

from tracework.errors import TraceworkError
from tracework.records.artefacts import HistoryEntry, MarkEntry
from tracework.records.rubrics import Rubric
from tracework.render.fragments import SHARED, add_filters, register_sources
from tracework.render.pagesafety import NONCE_SLOT, clean_html, seal
from tracework.render.theme import theme_js
from tracework.site import charts
from tracework.site.compare import Spans, compare, page_name
from tracework.site.contexts import (
    IndexRow,
    MarkChange,
    MarkHistory,
    MarkSummary,
    MatrixCell,
    MatrixRender,
    MatrixRow,
    RenderRow,
    RubricMatrix,
    RubricRow,
    SearchEntry,
)
from tracework.site.read import SITE_MARKER, Render, Report, Site, gather
from tracework.staging import Staging
from tracework.text import counted, visible, visible_markup, visible_name
from tracework.version import __version__
from tracework.views.marks import mark_anchor
from tracework.workspace import FOLDERS, MARKER, Workspace

#: The site's templates and assets (not imported from rendering: that loads nbformat).
TEMPLATES = Path(str(files("tracework") / "templates"))
#: Rubric text is prose inside a page's own sections: no headings, raw HTML or images.
_RUBRIC_MD = MarkdownIt("js-default", {"typographer": False}).disable(
    ["image", "heading", "lheading"]
)
#: Site pages load only the site's own stylesheet, and run only their own scripts, by
#: the page's nonce: every page the theme script inline in its head, the index its two
#: search scripts and a rubric page its one.
CSP = (
    "default-src 'none'; style-src 'self'; script-src 'nonce-{nonce}'; img-src 'self' data:; "
    "connect-src 'none'; base-uri 'none'; form-action 'none'"
)


@dataclass(frozen=True)
class Published:
    """What a publish wrote, for the CLI's summary and ``--json``."""

    out: Path
    reports: int
    renders: int
    rubrics: list[str]
    pages: int
    skipped: list[str]


def publish(ws: Workspace, out: Path | None = None) -> Published:
    """Build the site into a staging folder and swap it in for ``out`` when complete.

    ``out`` (default ``reports/site``; relative to the workspace root) is checked by
    :func:`checked_out` before the build and again, under the lock, before the swap.
    """
    out = checked_out(ws, ws.root / out if out else ws.reports / "site")
    stage = Staging(out.parent, out.name)  # a site keeps no failed folder
    with stage.locked():
        # left by a publish that was killed; only the site's own: --out's parent may be
        # anyone's folder
        stage.sweep(every_name=False)
        with stage.hold() as staging:  # removed unless swapped in
            site = gather(ws, staging)
            pages = write_site(site, staging)
            checked_out(ws, out)
            stage.swap()
    return Published(
        out,
        len(site.reports),
        sum(len(r.renders) for r in site.reports),
        list(site.rubrics),
        pages,
        site.skipped,
    )


#: The rule for ``--out``, as the manual and every refusal state it.
OUT_RULE = (
    "publish replaces the whole folder it writes, so --out must be a folder that does not "
    f"exist yet or a site publish made before (it holds {SITE_MARKER}); inside a workspace "
    "only reports/site and such sites directly in reports/"
)


def checked_out(ws: Workspace, out: Path) -> Path:
    """The output folder, refused when replacing it could destroy anything but a site.

    Inside a workspace (this one or any other) the only places are ``reports/site`` and
    sites published before directly in ``reports/``: never the root, one of its folders
    or anything within them, however empty (an empty ``registers/`` fills up later, and
    the next publish would replace it).  Anywhere, a folder that exists must hold the
    marker of a site, and no folder may contain the workspace or lie inside a site.
    """
    out = out.resolve()
    root = ws.root.resolve()
    shown = str(out.relative_to(root)) if root in out.parents else str(out)

    def refuse(problem: str) -> TraceworkError:
        return TraceworkError(f"--out {shown} {problem}", hint=OUT_RULE)

    if out.exists() and not out.is_dir():
        raise refuse("is a file, not a folder")
    if out == root or out in root.parents:
        raise refuse(f"{'is' if out == root else 'contains'} the workspace {root}")
    marked = (out / SITE_MARKER).is_file()
    owner = next((p for p in (out, *out.parents) if (p / MARKER).is_file()), None)
    if owner is not None:
        place = out.relative_to(owner).parts
        site = place == ("reports", "site") or (
            len(place) == 2 and place[0] == "reports" and marked
        )
        if not site:
            raise refuse(_inside_workspace(place, owner, root))
    inside = next((p for p in out.parents if (p / SITE_MARKER).is_file()), None)
    if inside is not None:
        raise refuse(f"lies inside the site {inside}")
    if out.exists() and not marked:
        if any(out.iterdir()):
            raise refuse(f"is a folder publish did not make (no {SITE_MARKER} in it)")
        raise refuse(
            f"is an empty folder publish did not make (no {SITE_MARKER} in it): "
            "remove it first to publish there"
        )
    return out


def _inside_workspace(place: tuple[str, ...], owner: Path, root: Path) -> str:
    """Where in a workspace a refused ``--out`` lies, in words."""
    whose = "the workspace's" if owner == root else f"the workspace {owner}'s"
    if not place:
        return f"is the workspace {owner}"
    if place[0] not in FOLDERS:
        return f"lies inside the workspace {owner}"
    if len(place) == 1:
        return f"is {whose} {place[0]}/ folder"
    if place[0] == "reports" and len(place) == 2:
        return f"is a folder of {whose} reports/ that holds no site"
    return f"lies inside {whose} {place[0]}/{place[1]}/ folder"


# -- writing -------------------------------------------------------------------------


def _rubric_markdown(text: str) -> str:
    """Rubric prose: analyst Markdown, so it passes the sanitiser reports use too."""
    return clean_html(str(_RUBRIC_MD.render(text)))


def environment(site: Site) -> Environment:
    """The Jinja environment of the site's templates: autoescaping on, undefined is an error."""
    env = Environment(
        loader=FileSystemLoader([str(TEMPLATES / "site"), str(SHARED)]),
        autoescape=True,
        auto_reload=False,  # templates are package data: never re-read mid-build
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["markdown"] = _rubric_markdown
    env.filters["plural"] = lambda n, word, plural=None: counted(n, word, plural)
    add_filters(env)
    env.globals.update(
        version=__version__, nonce=NONCE_SLOT, site_title=site.title, theme_js=Markup(theme_js())
    )
    env.globals["rubric_links"] = [(n, r.title) for n, (r, _) in site.rubrics.items()]
    return env


def write_site(site: Site, root: Path) -> int:
    """Write every page and asset of ``site`` under ``root``; returns the page count."""
    pages, env = 0, environment(site)
    spans = Spans(site.ws)

    def page(rel: str, template: str, **context: Any) -> None:
        nonlocal pages
        html = env.get_template(template).render(
            root="../" * rel.count("/"), csp=CSP.format(nonce=NONCE_SLOT), **context
        )
        _write(root / rel, seal(visible_markup(html)))
        pages += 1

    _write(root / SITE_MARKER, f"published by tracework {__version__}\n")
    assets = TEMPLATES / "site"
    for asset in ("site.css", "search.js", "rubric.js"):
        _write(root / "assets" / asset, (assets / asset).read_text(encoding="utf-8"))
    index = search_index(site)
    _write(root / "search.json", json.dumps(index, indent=1, sort_keys=True) + "\n")
    _write(
        root / "assets" / "search-index.js",
        "window.TRACEWORK_SEARCH = " + json.dumps(index, sort_keys=True) + ";\n",
    )
    rows = [_index_row(site, r) for r in site.reports]
    page("index.html", "index.html.j2", title="Index", rows=rows, rubrics=_rubric_list(site))
    for report in site.reports:
        base = f"reports/{report.name}"
        page(
            f"{base}/index.html",
            "report.html.j2",
            title=report.title,
            report=report,
            row=_index_row(site, report),
            renders=_render_list(report),
            history=charts.history_chart(report),
            marks_history=mark_history(report),
        )
        for old, new in zip(report.renders, report.renders[1:], strict=False):
            page(
                f"{base}/{page_name(old, new)}",
                "compare.html.j2",
                title=f"{report.title}: {old.commit[:12]} → {new.commit[:12]}",
                report=report,
                old=old,
                new=new,
                changes=compare(old, new, spans),
            )
        if report.register is not None and report.register_text is not None:
            _write(root / base / "register.yaml", report.register_text)
            page(
                f"{base}/register.html",
                "register.html.j2",
                title=f"Register {report.name}",
                report=report,
                register=report.register,
                sources=register_sources(report.register),
                checks=report.register.checks,
            )
    for name, (rubric, digest) in site.rubrics.items():
        page(
            f"rubrics/{name}.html",
            "rubric.html.j2",
            title=rubric.title,
            name=name,
            rubric=rubric,
            matrix=rubric_matrix(site, name, rubric, digest),
        )
    return pages


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def _index_row(site: Site, report: Report) -> IndexRow:
    newest = report.newest
    state, text = newest.status()
    records = newest.records
    return {
        "name": report.name,
        "title": report.title,
        "kind": report.kind,
        "href": f"reports/{report.name}/index.html",
        "report_href": f"reports/{report.name}/{newest.folder}/report.html",
        "subject": records.subject,
        "pin": records.pin,
        "newest": newest.commit,
        "newest_date": records.commit_date,
        "state": state,
        "status": text,
        "marks": _marks_of(site, report),
        "checked": report.last_checked(),
        "spark": charts.sparkline(report),
    }


def _render_list(report: Report) -> list[RenderRow]:
    """The report's renders, newest first, each with its history entry when there is one;
    then the history's entries whose render is no longer kept (a render of the same
    commit at an earlier pin, replaced by a re-pin's)."""
    before = dict(zip((r.commit for r in report.renders[1:]), report.renders, strict=False))
    out: list[RenderRow] = []
    shown: set[int] = set()
    for render in reversed(report.renders):
        previous = before.get(render.commit)
        state, text = render.status()
        entry = _entry_of(report, render)
        if entry is not None:
            shown.add(id(entry))
        out.append(
            {
                "href": f"{render.folder}/report.html",
                "commit": render.commit,
                "date": render.records.commit_date,
                "since_pin": render.records.drift.commits_since_pin,
                "state": state,
                "status": text,
                "checked": entry.checked if entry else None,
                "compare": page_name(previous, render) if previous else None,
                "previous": previous.commit if previous else None,
                "changed_in": sorted(
                    (qid, c.path, c.commit, c.format_only)
                    for qid, c in (entry.changed_in if entry else {}).items()
                ),
                "broken": sorted(
                    (aid, b.commit, b.matches, b.files)
                    for aid, b in (entry.broken if entry else {}).items()
                ),
            }
        )
    gone = [e for e in reversed(report.history) if id(e) not in shown]
    return out + [
        {
            "href": None,
            "commit": e.commit,
            "date": e.date,
            "since_pin": e.commits_since_pin,
            "state": "holds" if e.ok else "drift",
            "status": "render no longer kept",
            "checked": e.checked,
            "compare": None,
            "previous": None,
            "changed_in": [],
            "broken": sorted((aid, b.commit, b.matches, b.files) for aid, b in e.broken.items()),
        }
        for e in gone
    ]


def _entry_of(report: Report, render: Render) -> HistoryEntry | None:
    """The history entry of ``render``: the same commit, checked against the same pin
    (an entry from before pins were kept: as far from its pin)."""
    for entry in reversed(report.history):
        if entry.commit != render.commit:
            continue
        if entry.pin == render.records.pin or (
            entry.pin is None and entry.commits_since_pin == render.records.drift.commits_since_pin
        ):
            return entry
    return None


def _marks_of(site: Site, report: Report) -> list[MarkSummary]:
    """The newest render's rubric marks: title, carried of total, and whether the rubric
    has a page (a mark against a rubric file since removed has none)."""
    return [
        {
            "name": name,
            "title": entry.title,
            "carries": entry.carries,
            "of": entry.mechanisms,
            "linked": name in site.rubrics,
        }
        for name, entry in sorted(report.marks().items())
    ]


def _rubric_list(site: Site) -> list[RubricRow]:
    out: list[RubricRow] = []
    for name, (rubric, _) in site.rubrics.items():
        systems = sum(1 for r in site.reports if name in r.marks())
        out.append(
            {
                "name": name,
                "title": rubric.title,
                "mechanisms": len(rubric.mechanisms),
                "systems": systems,
            }
        )
    return out


def rubric_matrix(site: Site, name: str, rubric: Rubric, digest: str) -> RubricMatrix:
    """Systems by mechanisms, with per-row and per-column counts and the distribution.

    Counts and the distribution compare systems at their newest render; each system
    also carries a row per earlier render that marked this rubric, for the reader to
    choose (the page's script shows the chosen one; without it, the newest shows).
    """
    rows: list[MatrixRow] = []
    per_mechanism = Counter[str]()
    for report in site.reports:
        if name not in report.marks():
            continue
        renders = [
            _matrix_row(report, render, name, rubric, digest)
            for render in reversed(report.renders)
            if name in render.records.marks
        ]
        newest = renders[0]
        for mechanism, cell in zip(rubric.mechanisms, newest["cells"], strict=True):
            per_mechanism[mechanism.id] += cell["state"] == "present"
        rows.append(
            {
                "name": report.name,
                "href": f"../reports/{report.name}/index.html",
                "history_href": f"../reports/{report.name}/index.html#marks-{name}",
                "carries": newest["carries"],
                "renders": renders,
            }
        )
    systems = len(rows)
    spread = Counter(r["carries"] for r in rows)
    distribution: list[charts.SpreadRow] = [
        {
            "carries": k,
            "systems": spread[k],
            "share": _percent(spread[k], systems),
        }
        for k in range(len(rubric.mechanisms) + 1)
    ]
    return {
        "rows": rows,
        "systems": systems,
        "per_mechanism": [per_mechanism[m.id] for m in rubric.mechanisms],
        "distribution": distribution,
        "none_or_one": _percent(spread[0] + spread[1], systems),
        "chart": charts.distribution_chart(distribution, len(rubric.mechanisms)),
    }


def _matrix_row(
    report: Report, render: Render, name: str, rubric: Rubric, digest: str
) -> MatrixRender:
    """One system at one render: a cell per mechanism, linking the mark's card there."""
    entry = render.records.marks[name]
    base = f"../reports/{report.name}/{render.folder}/report.html"
    cells: list[MatrixCell] = []
    for mechanism in rubric.mechanisms:
        mark = entry.marks.get(mechanism.id)
        if mark is None:
            cells.append({"state": "unmarked", "text": "not marked", "review": False, "href": None})
            continue
        state = "present" if mark.present else "absent"
        cells.append(
            {
                "state": state,
                "text": state,
                "review": bool(mark.needs_review),
                "href": f"{base}#{mark_anchor(name, mechanism.id)}",
            }
        )
    return {
        "commit": render.commit,
        "date": render.records.commit_date[:10],
        "cells": cells,
        "carries": sum(c["state"] == "present" for c in cells),
        "stale": entry.sha256 != digest,
    }


def mark_history(report: Report) -> list[MarkHistory]:
    """Per rubric the report marks, how each mark changed across its renders, oldest
    first: "expiry: absent → present at 1a2b3c4d5e6f, 2026-05-01".  Read from the
    history, which keeps the marks of a render whose folder a later one replaced (a
    re-pin's render of the same commit), and from a render's own records where its
    history entry predates marks being kept."""
    steps: list[tuple[str, str, str | None, dict[str, dict[str, str]]]] = []
    covered: set[int] = set()
    for entry in report.history:
        render = next((r for r in report.renders if _entry_of(report, r) is entry), None)
        if render is not None:
            covered.add(id(render))
        marks = entry.marks or (_marks_in(render) if render is not None else {})
        if marks:
            href = f"{render.folder}/report.html" if render is not None else None
            steps.append((entry.commit, entry.date[:10], href, marks))
    for render in report.renders:
        if id(render) not in covered and render.records.marks:
            href = f"{render.folder}/report.html"
            steps.append((render.commit, render.records.commit_date[:10], href, _marks_in(render)))
    out: list[MarkHistory] = []
    for name in sorted({n for *_, marks in steps for n in marks}):
        changes: list[MarkChange] = []
        before: dict[str, str] = {}
        shown = [step for step in steps if name in step[3]]
        for commit, date, href, marks in shown:
            now = marks[name]
            for mid in sorted(set(now) | set(before)):
                old, new = before.get(mid), now.get(mid, "not marked")
                if old != new:
                    changes.append(
                        {
                            "mechanism": mid,
                            "before": old,
                            "after": new,
                            "commit": commit,
                            "date": date,
                            "href": f"{href}#{mark_anchor(name, mid)}" if href else None,
                        }
                    )
            before = now
        titled = [r for r in report.renders if name in r.records.marks]
        title = (titled[-1].records.marks[name].title if titled else "") or name
        out.append({"name": name, "title": title, "renders": len(shown), "changes": changes})
    return out


def _marks_in(render: Render) -> dict[str, dict[str, str]]:
    return {
        name: {mid: _mark_state(m) for mid, m in sorted(entry.marks.items())}
        for name, entry in sorted(render.records.marks.items())
    }


def _mark_state(mark: MarkEntry) -> str:
    state = "present" if mark.present else "absent"
    return state + (" (needs re-review)" if mark.needs_review else "")


def _percent(part: int, whole: int) -> int:
    return round(100 * part / whole) if whole else 0


def search_index(site: Site) -> list[SearchEntry]:
    """The client-side search's entries: records, quotes and reports, with their links.

    Its text is shown with ``textContent``, so hidden characters are made visible here,
    by the rule every page follows.
    """
    out: list[SearchEntry] = []
    for report in site.reports:
        newest = report.newest
        base = f"reports/{report.name}/{newest.folder}/report.html"
        quotes = newest.records.quotes
        out.append(
            {
                "kind": report.kind,
                "id": report.name,
                "label": f"{report.title} · {newest.records.subject} at {newest.commit[:12]}",
                "report": report.name,
                "paths": [],
                "href": f"reports/{report.name}/index.html",
            }
        )
        for record in newest.records.records:
            paths = sorted({quotes[e].path for e in record.evidence if e in quotes})
            out.append(
                {
                    "kind": record.kind,
                    "id": record.id,
                    "label": record.label,
                    "report": report.name,
                    "paths": paths,
                    "href": f"{base}#{record.id}",
                }
            )
        for qid, quote in sorted(quotes.items()):
            first, last = quote.lines
            out.append(
                {
                    "kind": "quote",
                    "id": qid,
                    "label": f"{quote.path}:{first}-{last}",
                    "report": report.name,
                    "paths": [quote.path],
                    "href": f"{base}#{qid}",
                }
            )
    return [
        SearchEntry(
            kind=visible(e["kind"]),
            id=visible(e["id"]),
            label=visible(e["label"]),
            report=visible(e["report"]),
            paths=[visible_name(p) for p in e["paths"]],
            href=visible(e["href"]),
        )
        for e in out
    ]
