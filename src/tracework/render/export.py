"""Exporting an executed notebook to ``report.html`` with nbconvert and our template.

The template (``templates/tracework``) extends nbconvert's ``lab`` template for cell
rendering but replaces its head: no CDN scripts, a Content-Security-Policy, our
stylesheet inline.  Inputs are hidden; the header, drift section, register appendix
and footer are autoescaped Jinja templates (:mod:`tracework.render.fragments`) filled
here from records.json, the register and the manifest.  Every HTML the
notebook holds — Markdown cells, HTML and Markdown outputs, tracework's own displays —
goes through nbconvert's sanitising path with :func:`tracework.render.pagesafety.clean_html`
as its filter, and the finished page through one rule for hidden characters.
nbconvert's accessibility pass over the page is made without its BeautifulSoup tree
(:mod:`tracework.render.accessibility`: the same bytes, in half the time).
"""

from __future__ import annotations

import copy
import functools
import html
import threading
from html.parser import HTMLParser
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from markupsafe import Markup

from tracework.readers import Table
from tracework.records.artefacts import (
    RECORDS_MIME,
    HistoryEntry,
    KernelRecords,
    RenderManifest,
    ReportRecords,
    absence_outcomes,
    quote_counts,
    to_json,
)
from tracework.register.models import DocumentSource, Register
from tracework.render import fragments
from tracework.render.pagesafety import NONCE_SLOT, clean_html, seal
from tracework.render.theme import page_code_css, theme_js
from tracework.text import visible_markup
from tracework.version import __version__
from tracework.views.cards import display_css
from tracework.views.marks import atlas

if TYPE_CHECKING:  # nbformat loads with the notebook (load_nbformat), nbconvert on first export
    import nbformat
    from nbconvert import HTMLExporter

    from tracework.render.outputs import Resources

TEMPLATES = Path(str(files("tracework") / "templates"))


#: No request may leave the page: everything it needs is inline or beside it.  Scripts
#: run only from the page's own ``<script>`` elements, each with the page's nonce: the
#: theme script inline in its head, and, when the page has diagrams, the pinned Mermaid
#: and report.js beside it;
#: Mermaid's inline SVG styles need 'unsafe-inline' for styles.  No ``frame-ancestors``:
#: browsers ignore it in a <meta> policy, and log an error for it.
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
    "script-src {scripts}; connect-src 'none'; base-uri 'none'; form-action 'none'"
)
ASSETS = ("assets/mermaid.min.js", "assets/report.js")
#: The output types a report shows, each through a block that escapes or sanitises it
#: (an SVG becomes an inert ``<img>``).  JavaScript and widget views would run code.
READER_MIMETYPES = (
    "text/html",
    "text/markdown",
    "image/svg+xml",
    "text/vnd.mermaid",
    "text/latex",
    "image/png",
    "image/jpeg",
    "text/plain",
)


def mermaid_js() -> Path | None:
    """The pinned Mermaid bundle: the package's own (an installed wheel carries it, checked
    against package-lock.json when it was built: see hatch_build.py), else, in a source
    checkout, what ``npm ci`` installed beside the sources.  Never a workspace's own
    ``node_modules``: what a report vendors is tracework's pin, not whatever is there."""
    shipped = Path(str(files("tracework") / "assets" / "mermaid.min.js"))
    if shipped.is_file():
        return shipped
    checkout = Path(__file__).resolve().parents[3] / "node_modules" / "mermaid" / "dist"
    candidate = checkout / "mermaid.min.js"
    return candidate if candidate.is_file() else None


def report_js() -> Path:
    return TEMPLATES / "tracework" / "report.js"


def has_diagrams(nb: nbformat.NotebookNode) -> bool:
    return bool(diagram_sources(nb))


def diagram_sources(nb: nbformat.NotebookNode) -> dict[str, str]:
    """Each diagram's Mermaid source by name, from the executed notebook's outputs: the
    source as written (code in backticks), which the display's metadata keeps beside the
    text drawn (code as ``<code>``)."""
    found: dict[str, str] = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("data", {}).get("text/vnd.mermaid")
            meta = out.get("metadata", {}).get("tracework")
            name = meta.get("diagram") if isinstance(meta, dict) else None
            if text is not None and name:
                source = meta.get("source") if isinstance(meta, dict) else None
                found[str(name)] = str(source if isinstance(source, str) else text)
    return found


def reader_notebook(nb: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, str | None]:
    """A copy for readers: machine outputs dropped, what may run or load dropped from the
    others, the first ``# title`` taken out, and the rubric marks (which ``wb.done()``
    shows last) moved near the top, after the cell that held the title: a reader of an
    atlas looks for the verdicts first."""
    nb = copy.deepcopy(nb)
    title, after, marks = None, 0, []
    for n, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            outputs = [_reader_output(o) for o in cell.get("outputs", []) if _for_readers(o)]
            marks += [o for o in outputs if o is not None and _is_marks(o)]
            cell.outputs = [o for o in outputs if o is not None and not _is_marks(o)]
        elif cell.cell_type == "markdown" and title is None:
            lines = cell.source.split("\n")
            for i, line in enumerate(lines):
                if line.startswith("# "):
                    title, after = line[2:].strip(), n + 1
                    cell.source = "\n".join(lines[:i] + lines[i + 1 :])
                    break
                if line.strip():
                    break
    if marks:
        import nbformat  # loaded by then: the notebook was read (see load_nbformat)

        held = nbformat.v4.new_code_cell(outputs=marks)
        held.id = "tracework-marks"  # a fixed id: renders stay byte-identical
        own = _heading_cell(nb, _MARKS_HEADINGS)
        if own is not None:  # the analyst's own heading: the section goes under it
            after = own + 1
            _drop_heading(held, _MARKS_OPENING)
        nb.cells.insert(after, held)
    for n, cell in enumerate(nb.cells):  # wb.screen() right under a heading of the analyst's
        if n and cell.cell_type == "code" and _ends_with_heading(nb.cells[n - 1]):
            _drop_heading(cell, _SCREEN_OPENING)
    return nb, title


#: How the automatic sections open; an analyst's heading right above one replaces its own.
_SCREEN_OPENING = (
    '<section class="tw-screen"><h2 id="screen">Screen of the checkout</h2>',
    '<section class="tw-screen" id="screen">',
)
_MARKS_OPENING = (
    '<section class="tw-marks"><h2 id="rubric-marks">Rubric marks</h2>',
    '<section class="tw-marks" id="rubric-marks">',
)
#: Headings of the analyst's under which the rubric marks go (lower case).
_MARKS_HEADINGS = ("rubric marks", "marks")


def _heading_lines(cell: nbformat.NotebookNode) -> list[str]:
    if cell.cell_type != "markdown":
        return []
    return [line for line in cell.source.split("\n") if line.startswith("#")]


def _ends_with_heading(cell: nbformat.NotebookNode) -> bool:
    """A markdown cell whose last non-blank line is a heading."""
    lines = [line for line in cell.source.split("\n") if line.strip()]
    return cell.cell_type == "markdown" and bool(lines) and lines[-1].startswith("#")


def _heading_cell(nb: nbformat.NotebookNode, texts: tuple[str, ...]) -> int | None:
    """The first markdown cell with a heading whose words are one of ``texts``."""
    for n, cell in enumerate(nb.cells):
        for line in _heading_lines(cell):
            if line.lstrip("#").strip().lower() in texts:
                return n
    return None


def _drop_heading(cell: nbformat.NotebookNode, opening: tuple[str, str]) -> None:
    """Open an automatic section without its own heading (its id kept on the section)."""
    for output in cell.get("outputs", []):
        page = output.get("data", {}).get("text/html")
        if isinstance(page, str) and opening[0] in page:  # after the display's <style>
            output.data["text/html"] = page.replace(opening[0], opening[1], 1)


def _is_marks(output: nbformat.NotebookNode) -> bool:
    return bool(output.get("metadata", {}).get("tracework") == "marks")


def _reader_output(output: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
    """An output with only the types a report shows (None when none is left), and of its
    metadata only tracework's own and whole-number image sizes: nbconvert writes an
    image's ``width`` unquoted and its ``filenames`` as the image's address."""
    if "data" not in output:
        return output
    output.data = {k: v for k, v in output.data.items() if k in READER_MIMETYPES}
    if not output.data:
        return None
    metadata = output.get("metadata", {})
    kept: Table = {}  # an output's metadata: nbformat's JSON
    if "tracework" in metadata:
        kept["tracework"] = metadata["tracework"]
    for mimetype in ("image/png", "image/jpeg"):
        sizes = metadata.get(mimetype)
        if isinstance(sizes, dict):
            kept[mimetype] = {
                k: v
                for k, v in sizes.items()
                if k in ("width", "height") and type(v) is int and v > 0
            }
    output.metadata = kept
    return output


def _for_readers(output: nbformat.NotebookNode) -> bool:
    """records.json, the in-notebook summary (shown in the appendix), a cell's list of
    what it declared (the notebook's alone: a render never shows one, its page holds every
    card) and stderr are not."""
    if RECORDS_MIME in output.get("data", {}):
        return False
    if output.get("metadata", {}).get("tracework") in ("summary", "diagram-note", "declared"):
        return False
    return not (output.get("output_type") == "stream" and output.get("name") == "stderr")


def report_title(nb: nbformat.NotebookNode, records: KernelRecords) -> str:
    """The report's title: ``tw.open(title=...)``, else the notebook's first ``# heading``,
    else the register's name and the report's kind.  The render writes it into
    records.json, so the page, the site's index and its search all show the same."""
    if records.title:
        return records.title
    _, heading = reader_notebook(nb)
    return heading or f"{records.register_name} {report_kind(records)}"


def report_kind(records: KernelRecords) -> str:
    """What the report is ("runtime report" unless the notebook says otherwise)."""
    return records.kind or "runtime report"


def header_html(records: ReportRecords, title: str) -> str:
    """The page's header, from ``fragments/header.html.j2``: the one count of quotes
    (:func:`~tracework.records.artefacts.quote_counts`) and every broken absence."""
    cited, uncited = quote_counts(records)
    kind = report_kind(records)
    return fragments.render(
        "header.html.j2",
        eyebrow=kind[:1].upper() + kind[1:],
        title=title,
        subject=records.subject,
        url=records.url,
        commit=records.commit,
        commit_date=records.commit_date,
        pin=records.pin,
        pin_date=records.pin_date,
        analysis_date=records.analysis_date,
        rubrics=atlas(records.marks),
        checks={
            "ok": records.checks.ok,
            "verified": cited["verified"],
            "total": sum(cited.values()),
            "others": ", ".join(f"{n} {s}" for s, n in cited.items() if n and s != "verified"),
            "uncited": sum(uncited.values()),
            "uncited_held": uncited["verified"] + uncited["moved"],
        },
        broken=[
            {"id": aid, "since": a.first_broken, "matches": a.matches, "files": a.files}
            for aid, a in absence_outcomes(records).items()
            if a.state == "broken"
        ],
    )


def appendix_html(
    register: Register,
    records: KernelRecords,
    manifest: RenderManifest,
    summary_html: str,
    history: list[HistoryEntry],
) -> str:
    """The check summary, the render history, the source register and the provenance
    (every key manifest.json holds, as it holds it)."""
    states = records.quotes
    documents = {
        sid: src.location
        for sid, src in register.sources.items()
        if isinstance(src, DocumentSource)
    }
    return fragments.render(
        "appendix.html.j2",
        summary_html=Markup(summary_html),  # tracework's own display, escaped as it was made
        history=[_history_entry(e) for e in history],
        sources=fragments.register_sources(register),
        quotes=[
            {
                "id": qid,
                "path": q.path,
                "lines": q.lines,
                "sha256": q.sha256,
                "state": states[qid].state if qid in states else None,
            }
            for qid, q in register.quotes.items()
        ],
        assertions=[
            {**a.model_dump(mode="json"), "location": documents.get(a.by) if a.by else None}
            for a in records.assertions
        ],
        checks=register.checks,
        provenance=[
            (
                key,
                ", ".join(f"{k}={v!r}" for k, v in sorted(value.items()))
                if isinstance(value, dict)
                else value,
            )
            for key, value in sorted(to_json(manifest).items())
        ],
    )


class ChangedRow(TypedDict):
    """A quote that changed at a render, as the appendix lists it."""

    id: str
    path: str
    commit: str
    format_only: bool


class BrokenRow(TypedDict):
    """An absence broken at a render, as the appendix lists it."""

    id: str
    commit: str | None  # where it first broke, when the search found it
    matches: int
    files: int


class HistoryRow(TypedDict):
    """One render of the history, as the appendix's template reads it."""

    commit: str
    date: str
    since: int
    verified: int
    total: int
    others: str
    changed: list[ChangedRow]
    broken: list[BrokenRow]


def _history_entry(entry: HistoryEntry) -> HistoryRow:
    """One render of the history, as the appendix lists it."""
    counts = entry.counts
    return {
        "commit": entry.commit,
        "date": entry.date,
        "since": entry.commits_since_pin,
        "verified": counts.get("verified", 0),
        "total": sum(counts.values()),
        "others": ", ".join(f"{n} {s}" for s, n in counts.items() if n and s != "verified"),
        "changed": [
            {"id": qid, "path": c.path, "commit": c.commit, "format_only": c.format_only}
            for qid, c in entry.changed_in.items()
        ],
        "broken": [
            {"id": aid, "commit": b.commit, "matches": b.matches, "files": b.files}
            for aid, b in sorted(entry.broken.items())
        ],
    }


class _Headings(HTMLParser):
    """Collects (level, id, text) of h2/h3 headings inside <main>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, str, str]] = []
        self._open: tuple[int, str] | None = None
        self._text: list[str] = []
        self._in_main = False
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "main":
            self._in_main = True
        elif self._in_main and tag in ("h2", "h3"):
            ident = dict(attrs).get("id")
            if ident:
                self._open, self._text = (int(tag[1]), ident), []
        elif self._open and tag == "a" and "anchor-link" in (dict(attrs).get("class") or ""):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._skip:
            self._skip -= 1
        elif self._open and tag == f"h{self._open[0]}":
            self.found.append((self._open[0], self._open[1], "".join(self._text).strip()))
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open and not self._skip:
            self._text.append(data)


def toc_html(page: str) -> str:
    """A nested table of contents from the page's own h2/h3 ids: each h3 in a list inside
    the item of the h2 before it (one before any h2 is listed at the top level)."""
    parser = _Headings()
    parser.feed(page)
    out = ['<nav class="tw-toc" aria-label="Contents"><h2>Contents</h2><ol>']
    item_open = sub_open = False
    for level, ident, text in parser.found:
        link = f'<a href="#{html.escape(ident, quote=True)}">{html.escape(text)}</a>'
        if level == 3 and item_open:
            if not sub_open:
                out.append("<ol>")
                sub_open = True
            out.append(f"<li>{link}</li>")
            continue
        if sub_open:
            out.append("</ol>")
            sub_open = False
        if item_open:
            out.append("</li>")
        out.append(f"<li>{link}")
        item_open = True
    out.append(("</ol>" if sub_open else "") + ("</li>" if item_open else "") + "</ol></nav>")
    return "".join(out)


def drift_html(records: ReportRecords) -> str:
    """At a commit other than the pin: what changed since the pin, and since when."""
    drift = records.drift
    if records.commit == records.pin:
        return ""
    cited, uncited = quote_counts(records)
    quotes = []
    for qid, commit in drift.first_changed.items():
        content = drift.first_content_change.get(qid)
        culprit = drift.culprits[commit]
        quotes.append(
            {
                "id": qid,
                "path": records.quotes[qid].path,
                "state": records.quotes[qid].state,
                "commit": commit,
                "date": culprit.date,
                "subject": culprit.subject,
                # format only has no first content change (drift/content.py)
                "format_only": qid in drift.format_only,
                "content": content if content not in (None, commit) else None,
            }
        )
    return fragments.render(
        "drift.html.j2",
        commit=records.commit,
        pin=records.pin,
        since=drift.commits_since_pin,
        counts=", ".join(f"{n} {s}" for s, n in cited.items() if n) or "no quote cited",
        uncited=", ".join(f"{n} {s}" for s, n in uncited.items() if n),
        quotes=quotes,
        needs_review=drift.needs_review,
        format_only=drift.format_only,
        broken=[
            {
                "id": aid,
                "since": a.first_broken,
                "date": drift.culprits[a.first_broken].date if a.first_broken else "",
                "subject": drift.culprits[a.first_broken].subject if a.first_broken else "",
                "matches": records.absences[aid].matches,
                "files": a.files,
            }
            for aid, a in absence_outcomes(records).items()
            if a.state == "broken"
        ],
        vanished=list(drift.vanished_identifiers.items()),
    )


_exporters = threading.local()


@functools.cache
def _page_exporter() -> type[HTMLExporter]:
    """nbconvert's ``HTMLExporter``, its accessibility pass made without a tree
    (:func:`~tracework.render.accessibility.accessible_page`, the same bytes)."""
    from nbconvert import HTMLExporter
    from nbconvert.exporters.templateexporter import TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    from tracework.render.accessibility import accessible_page  # BeautifulSoup's driver

    class PageExporter(HTMLExporter):
        def from_notebook_node(  # type: ignore[override]
            self, nb: nbformat.NotebookNode, resources: Resources | None = None, **kw: object
        ) -> tuple[str, Resources]:
            # HTMLExporter.from_notebook_node (nbconvert 7.17) up to its BeautifulSoup pass
            langinfo = nb.metadata.get("language_info", {})
            lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
            highlight_code = self.filters.get(
                "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)
            )
            resources = self._init_resources(resources)  # type: ignore[no-untyped-call]
            filter_data_type = WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources
            )
            self.register_filter("highlight_code", highlight_code)  # type: ignore[no-untyped-call]
            self.register_filter("filter_data_type", filter_data_type)  # type: ignore[no-untyped-call]
            body, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
            page, missing_alt = accessible_page(body)
            if missing_alt:  # as nbconvert says it
                self.log.warning("Alternative text is missing on %s image(s).", missing_alt)
            return page, resources

    return PageExporter


def html_exporter() -> HTMLExporter:
    """This thread's nbconvert exporter for report pages, built on first use.

    Building one loads and compiles the ``tracework`` and ``lab`` Jinja templates, a
    tenth of a second; a batch worker exports many reports, so it keeps one.  Every
    export passes its own notebook and resources (the exporter re-registers its
    per-notebook filters on each call), so a kept exporter gives the same bytes.
    One per thread, as an exporter's filters are set per call.
    """
    exporter: HTMLExporter | None = getattr(_exporters, "html", None)
    if exporter is None:
        from nbconvert.preprocessors import TagRemovePreprocessor

        # here, not at the top: scaffold imports nbformat, which must come after
        # load_nbformat (a second of CPU otherwise; the notebook was read by now)
        from tracework.notebook.scaffold import GUIDE_TAG

        exporter = _page_exporter()(
            template_name="tracework",
            extra_template_basedirs=[str(TEMPLATES)],
            exclude_input=True,
            exclude_input_prompt=True,
            exclude_output_prompt=True,
            sanitize_html=True,
            filters={"clean_html": clean_html},
        )
        # a scaffold's guidance is for the analyst, never for a reader
        exporter.register_preprocessor(
            TagRemovePreprocessor(remove_cell_tags={GUIDE_TAG}, enabled=True), enabled=True
        )
        _exporters.html = exporter
    return exporter


def warmed_exporter() -> HTMLExporter:
    """:func:`html_exporter`, warm: the first time in a thread, one page of a notebook
    of two cells is exported and thrown away, so the templates (nbconvert's and the
    page's own fragments) are compiled and the page's accessibility pass loaded.  That is
    most of a cold render's first page; a render calls this while its kernel boots.  The
    exporter gives the same bytes after it (each export passes its own notebook and
    resources, as a batch's many reports do)."""
    exporter = html_exporter()
    if getattr(exporter, "_tracework_warm", False):
        return exporter
    import nbformat  # loaded by then: the render read its notebook (see load_nbformat)

    v4 = nbformat.v4
    cells = [
        v4.new_markdown_cell("Warm-up: *text* and `code`."),
        v4.new_code_cell(
            outputs=[
                v4.new_output("stream", name="stdout", text="out\n"),
                v4.new_output("display_data", data={"text/html": "<p>html</p>"}),
            ]
        ),
    ]
    shown = {"title": "", "version": __version__, "css": "", "scripts": [], "nonce": ""}
    parts = ("header_html", "appendix_html", "drift_html", "footer_html", "csp")
    resources = {"tracework": {**shown, **dict.fromkeys(parts, "")}}
    exporter.from_notebook_node(v4.new_notebook(cells=cells), resources=resources)
    fragments.warm()
    exporter._tracework_warm = True  # type: ignore[attr-defined]
    return exporter


def export_html(
    nb: nbformat.NotebookNode,
    records: ReportRecords,
    register: Register,
    manifest: RenderManifest,
    summary_html: str,
    history: list[HistoryEntry] | None = None,
) -> str:
    """The report page for an executed, normalised notebook."""
    reader, _ = reader_notebook(nb)
    title = report_title(nb, records)
    # the displays' stylesheet once, here: the sanitiser drops the copy each display carries
    css = (TEMPLATES / "tracework" / "report.css").read_text(encoding="utf-8")
    css += "\n" + display_css() + "\n" + page_code_css()
    resources: Resources = {
        "tracework": {
            "title": title,
            "version": __version__,
            "css": css,
            "header_html": header_html(records, title),
            "appendix_html": appendix_html(
                register, records, manifest, summary_html, history or []
            ),
            "drift_html": drift_html(records),
            "footer_html": fragments.render(
                "footer.html.j2",
                version=__version__,
                notebook=manifest.notebook,
                commit=records.commit,
            ),
        }
    }
    scripts = list(ASSETS) if has_diagrams(reader) else []
    resources["tracework"]["scripts"] = scripts
    resources["tracework"]["theme_js"] = theme_js()
    resources["tracework"]["nonce"] = NONCE_SLOT
    resources["tracework"]["csp"] = CSP.format(scripts=f"'nonce-{NONCE_SLOT}'")
    body, _ = html_exporter().from_notebook_node(reader, resources=resources)
    page = str(body).replace("<!--tw-toc-->", toc_html(str(body)), 1)
    return seal(visible_markup(page))
