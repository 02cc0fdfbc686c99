"""Exporting an executed notebook to ``report.html`` with nbconvert and our template.

The template (``templates/tracework``) extends nbconvert's ``lab`` template for cell
rendering but replaces its head: no CDN scripts, a Content-Security-Policy, our
stylesheet inline.  Inputs are hidden; the header, contents and register appendix
are built here from records.json, the register and the manifest.  Every HTML the
notebook holds — Markdown cells, HTML and Markdown outputs, tracework's own displays —
goes through nbconvert's sanitising path with :func:`tracework.render.pagesafety.clean_html`
as its filter, and the finished page through one rule for hidden characters.
"""

from __future__ import annotations

import copy
import functools
import html
import threading
from html.parser import HTMLParser
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import nbformat
from pygments.formatters import HtmlFormatter

from tracework import __version__
from tracework.notebook.marks import atlas
from tracework.notebook.views import badge, esc, esc_name
from tracework.register.models import CaptureSource, DocumentSource, GitSource, Register
from tracework.render.execution import RECORDS_MIME
from tracework.render.pagesafety import NONCE_SLOT, clean_html, seal
from tracework.text import visible_markup

if TYPE_CHECKING:  # nbconvert loads on first export
    from nbconvert import HTMLExporter

TEMPLATES = Path(str(files("tracework") / "templates"))


@functools.cache
def fragments() -> jinja2.Environment:
    """The Jinja environment of the page's own parts (``templates/tracework/fragments``):
    autoescaped, as the site's pages are; an undefined name is an error."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES / "tracework" / "fragments")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


#: No request may leave the page: everything it needs is inline or beside it.  Scripts
#: run only from the page's own ``<script>`` elements (the pinned Mermaid and report.js
#: beside it, each with the page's nonce), and only when the page has diagrams;
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


def mermaid_js(workspace_root: Path) -> Path | None:
    """The pinned Mermaid bundle installed by ``npm ci`` (the workspace's, else ours)."""
    for base in (workspace_root, Path(__file__).resolve().parents[3]):
        candidate = base / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
        if candidate.is_file():
            return candidate
    return None


def report_js() -> Path:
    return TEMPLATES / "tracework" / "report.js"


def has_diagrams(nb: nbformat.NotebookNode) -> bool:
    return bool(diagram_sources(nb))


def diagram_sources(nb: nbformat.NotebookNode) -> dict[str, str]:
    """Each diagram's Mermaid source by name, from the executed notebook's outputs."""
    found: dict[str, str] = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("data", {}).get("text/vnd.mermaid")
            meta = out.get("metadata", {}).get("tracework")
            name = meta.get("diagram") if isinstance(meta, dict) else None
            if text is not None and name:
                found[str(name)] = str(text)
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
        held = nbformat.v4.new_code_cell(outputs=marks)
        held.id = "tracework-marks"  # a fixed id: renders stay byte-identical
        nb.cells.insert(after, held)
    return nb, title


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
    kept: dict[str, Any] = {}
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


def _for_readers(output: dict[str, Any]) -> bool:
    """records.json, the in-notebook summary (shown in the appendix) and stderr are not."""
    if RECORDS_MIME in output.get("data", {}):
        return False
    if output.get("metadata", {}).get("tracework") in ("summary", "diagram-note"):
        return False
    return not (output.get("output_type") == "stream" and output.get("name") == "stderr")


def report_title(nb: nbformat.NotebookNode, records: dict[str, Any]) -> str:
    """The report's title: ``tw.open(title=...)``, else the notebook's first ``# heading``,
    else the register's name and the report's kind.  The render writes it into
    records.json, so the page, the site's index and its search all show the same."""
    if records.get("title"):
        return str(records["title"])
    _, heading = reader_notebook(nb)
    return heading or f"{records['register']} {report_kind(records)}"


def report_kind(records: dict[str, Any]) -> str:
    """What the report is ("runtime report" unless the notebook says otherwise)."""
    return str(records.get("kind") or "runtime report")


def header_html(records: dict[str, Any], title: str) -> str:
    """The page's header, from ``fragments/header.html.j2``."""
    quotes = records["checks"]["checks"]["register"]["counts"].get("quote", {})
    kind = report_kind(records)
    return (
        fragments()
        .get_template("header.html.j2")
        .render(
            eyebrow=kind[:1].upper() + kind[1:],
            title=title,
            subject=records["subject"],
            url=records["url"],
            commit=records["commit"],
            commit_date=records["commit_date"],
            pin=records["pin"],
            pin_date=records["pin_date"],
            analysis_date=records.get("analysis_date"),
            rubrics=atlas(records.get("marks") or {}),
            checks={
                "ok": records["checks"]["ok"],
                "verified": quotes.get("verified", 0),
                "total": sum(quotes.values()),
                "others": ", ".join(
                    f"{n} {s}" for s, n in sorted(quotes.items()) if s != "verified"
                ),
            },
        )
    )


def assertions_html(assertions: list[dict[str, Any]], register: Register) -> str:
    """Hashes others assert of the subject's files, and whether each holds: a hash that
    differs is a finding, shown here whether or not it fails the checks."""
    if not assertions:
        return ""
    rows = []
    for a in assertions:
        by = a["by"]
        doc = register.sources.get(by) if by else None
        who = (
            f'{esc(by)} <span class="tw-path">{esc(doc.location)}</span>'
            if isinstance(doc, DocumentSource)
            else "the register (<code>--expect-sha256</code>)"
        )
        state = badge("verified" if a["state"] == "holds" else "changed", a["state"])
        found = a["sha256_at_commit"]
        rows.append(
            f"<tr><td>{esc(a['source'])} {esc_name(a['path'])}</td><td>{who}</td>"
            f"<td><code>{esc(a['commit'][:12])}</code></td>"
            f"<td><code>{esc(a['sha256'])}</code></td>"
            f"<td>{f'<code>{esc(found)}</code>' if found else 'no such file'}</td>"
            f"<td>{state}{' (required)' if a['required'] else ''}</td></tr>"
        )
    return (
        '<h3 id="register-assertions">Asserted hashes</h3><table><thead><tr><th>file</th>'
        "<th>asserted by</th><th>at</th><th>asserted sha256</th><th>the file's sha256</th>"
        f"<th>state</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def appendix_html(register: Register, records: dict[str, Any], manifest: dict[str, Any]) -> str:
    """The source register (sources, files, quotes, check history) and the provenance."""
    out = [
        '<section class="tw-appendix"><h2 id="source-register">Source register</h2>',
        "<p>Every hash below can be re-computed with plain git: a file's is "
        "<code>git show COMMIT:PATH | sha256sum</code>; a quote's covers its lines "
        "including the last line's newline (<code>… | sed -n 'A,Bp' | sha256sum</code>).</p>",
        '<h3 id="register-sources">Sources</h3><table><thead><tr><th>id</th><th>kind</th>'
        "<th>what</th><th>commit or hash</th></tr></thead><tbody>",
    ]
    for sid, src in register.sources.items():
        if isinstance(src, GitSource):
            out.append(
                f"<tr><td>{esc(sid)}</td><td>git</td><td>{esc(src.subject)}</td>"
                f"<td><code>{esc(src.commit)}</code><br>{esc(src.date)}</td></tr>"
            )
        elif isinstance(src, CaptureSource):
            out.append(
                f"<tr><td>{esc(sid)}</td><td>capture</td><td>{esc(src.capture)} of "
                f"{esc(src.subject)}: {len(src.files)} files</td>"
                f"<td><code>{esc(src.commit)}</code></td></tr>"
            )
        else:
            out.append(
                f"<tr><td>{esc(sid)}</td><td>document</td><td>{esc(src.location)}</td>"
                f"<td><code>{esc(src.sha256)}</code></td></tr>"
            )
    out.append(
        '</tbody></table><h3 id="register-files">Files</h3><table><thead><tr>'
        "<th>source</th><th>path</th><th>kind</th><th>bytes</th><th>sha256</th></tr></thead><tbody>"
    )
    for sid, src in register.sources.items():
        if isinstance(src, GitSource):
            for path, entry in src.files.items():
                kind = entry.kind + (" (binary)" if entry.binary else "")
                out.append(
                    f"<tr><td>{esc(sid)}</td><td>{esc_name(path)}</td><td>{esc(kind)}</td>"
                    f"<td>{entry.size}</td><td><code>{esc(entry.sha256)}</code></td></tr>"
                )
    out.append(
        '</tbody></table><h3 id="register-quotes">Quotes</h3><table><thead><tr><th>id</th>'
        "<th>where</th><th>sha256</th><th>at this commit</th></tr></thead><tbody>"
    )
    states = records.get("quotes", {})
    for qid, q in register.quotes.items():
        cited = qid in states
        ident = f'<a href="#{esc(qid)}">{esc(qid)}</a>' if cited else esc(qid)
        state = badge(states[qid]["state"]) if cited else "not cited"
        out.append(
            f"<tr><td>{ident}</td><td>{esc_name(q.path)}:{q.lines[0]}–{q.lines[1]}</td>"
            f"<td><code>{esc(q.sha256)}</code></td><td>{state}</td></tr>"
        )
    out.append("</tbody></table>")
    out.append(assertions_html(records.get("assertions") or [], register))
    out.append('<h3 id="register-history">Check history</h3>')
    if register.checks:
        items = "".join(
            f"<li>{esc(c.date)}: {esc(c.source)} at <code>{esc(c.commit[:12])}</code> — "
            + esc(", ".join(f"{n} {s}" for s, n in sorted(c.counts.items())))
            + "</li>"
            for c in register.checks
        )
        out.append(f"<ul>{items}</ul>")
    else:
        out.append('<p class="tw-none">no recorded checks (tracework check --record adds one)</p>')
    out.append(
        '<h2 id="provenance">Provenance</h2><p>What produced this page '
        "(also in <code>manifest.json</code> beside it):</p><table><tbody>"
    )
    for key in sorted(manifest):
        value = manifest[key]
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v!r}" for k, v in sorted(value.items()))
        out.append(f"<tr><th>{esc(key)}</th><td><code>{esc(value)}</code></td></tr>")
    out.append("</tbody></table></section>")
    return "".join(out)


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
    """A nested table of contents from the page's own h2/h3 ids."""
    parser = _Headings()
    parser.feed(page)
    out = ['<nav class="tw-toc" aria-label="Contents"><h2>Contents</h2><ol>']
    open_sub = False
    for level, ident, text in parser.found:
        link = f'<a href="#{html.escape(ident, quote=True)}">{html.escape(text)}</a>'
        if level == 2:
            out.append("</li></ol>" if open_sub else "</li>" if len(out) > 1 else "")
            open_sub = False
            out.append(f"<li>{link}")
        else:
            if not open_sub:
                out.append("<ol>")
                open_sub = True
            out.append(f"<li>{link}</li>")
    out.append("</ol></li>" if open_sub else "</li>" if len(out) > 1 else "")
    out.append("</ol></nav>")
    return "".join(out)


def drift_html(records: dict[str, Any]) -> str:
    """At a commit other than the pin: what changed since the pin, and since when."""
    drift = records.get("drift") or {}
    if records["commit"] == records["pin"] or not drift:
        return ""
    counts = ", ".join(f"{n} {s}" for s, n in drift["counts"].items() if n)
    rows = []
    for qid, commit in drift["first_changed"].items():
        q = records["quotes"][qid]
        culprit = drift["culprits"][commit]
        content = drift["first_content_change"].get(qid)
        if qid in drift["format_only"]:  # and so no first content change: content.py
            note = " (content unchanged: formatting only)"
        elif content is None or content == commit:
            note = ""
        else:
            note = f"; content first changed at <code>{esc(content[:12])}</code>"
        rows.append(
            f'<li><a href="#{esc(qid)}">{esc(qid)}</a> in '
            f'<span class="tw-path">{esc_name(q["path"])}</span>: '
            f"{badge(q['state'])} since <code>{esc(commit[:12])}</code> "
            f"({esc(culprit['date'][:10])}, “{esc(culprit['subject'])}”){note}</li>"
        )
    review = ", ".join(f'<a href="#{esc(r)}">{esc(r)}</a>' for r in drift["needs_review"])
    extra = []
    if drift["format_only"]:
        extra.append("formatting only: " + ", ".join(esc(q) for q in drift["format_only"]))
    if drift["broken_absences"]:
        extra.append(
            "broken absences: "
            + ", ".join(f'<a href="#{esc(a)}">{esc(a)}</a>' for a in drift["broken_absences"])
        )
    for diagram, gone in drift["vanished_identifiers"].items():
        extra.append(
            f'diagram <a href="#diagram-{esc(diagram)}">{esc(diagram)}</a>: '
            + ", ".join(f"<code>{esc(i)}</code>" for i in gone)
            + " no longer found"
        )
    return (
        '<section class="tw-drift"><h2 id="drift">Drift since the pin</h2>'
        f"<p>At <code>{esc(records['commit'][:12])}</code>, {drift['commits_since_pin']} commits "
        f"after the pin <code>{esc(records['pin'][:12])}</code>: {esc(counts)}.</p>"
        + (f"<ul>{''.join(rows)}</ul>" if rows else "")
        + (f"<p>Needs re-review: {review}</p>" if review else "")
        + "".join(f"<p>{e}</p>" for e in extra)
        + "</section>"
    )


def history_html(entries: list[dict[str, Any]]) -> str:
    """The report's renders as a readable list, oldest first."""
    if not entries:
        return ""
    items = []
    for e in entries:
        counts = e.get("counts", {})
        total = sum(counts.values())
        others = ", ".join(f"{n} {s}" for s, n in counts.items() if n and s != "verified")
        changed = "; ".join(
            f'{esc(qid)} in <span class="tw-path">{esc_name(c["path"])}</span> at '
            f"<code>{esc(c['commit'][:12])}</code>"
            + (" (format only)" if c.get("format_only") else "")
            for qid, c in e.get("changed_in", {}).items()
        )
        items.append(
            f"<li>at <code>{esc(e['commit'][:12])}</code> ({esc(str(e.get('date', ''))[:10])}), "
            f"{e.get('commits_since_pin', 0)} commits after the pin: "
            f"{counts.get('verified', 0)} of {total} quotes verified"
            + (f", {esc(others)}" if others else "")
            + (f" — changed: {changed}" if changed else "")
            + "</li>"
        )
    return (
        f'<h3 id="render-history">Render history</h3><ul class="tw-history">{"".join(items)}</ul>'
    )


_exporters = threading.local()


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
        from nbconvert import HTMLExporter

        exporter = HTMLExporter(
            template_name="tracework",
            extra_template_basedirs=[str(TEMPLATES)],
            exclude_input=True,
            exclude_input_prompt=True,
            exclude_output_prompt=True,
            sanitize_html=True,
            filters={"clean_html": clean_html},
        )
        _exporters.html = exporter
    return exporter


def export_html(
    nb: nbformat.NotebookNode,
    records: dict[str, Any],
    register: Register,
    manifest: dict[str, Any],
    summary_html: str,
    history: list[dict[str, Any]] | None = None,
) -> str:
    """The report page for an executed, normalised notebook."""
    reader, _ = reader_notebook(nb)
    title = report_title(nb, records)
    css = (TEMPLATES / "tracework" / "report.css").read_text(encoding="utf-8")
    css += HtmlFormatter(style="default").get_style_defs(".tw-hl")
    summary_section = (
        '<section id="check-summary-section"><h2 id="check-summary">Check summary</h2>'
        f"{summary_html}</section>"
    )
    resources = {
        "tracework": {
            "title": title,
            "version": __version__,
            "css": css,
            "header_html": header_html(records, title),
            "appendix_html": summary_section
            + history_html(history or [])
            + appendix_html(register, records, manifest),
            "drift_html": drift_html(records),
            "footer_html": (
                f"Rendered by tracework {esc(__version__)} from "
                f"<code>{esc(manifest['notebook'])}</code> at "
                f"<code>{esc(records['commit'][:12])}</code>."
            ),
        }
    }
    scripts = list(ASSETS) if has_diagrams(reader) else []
    resources["tracework"]["scripts"] = scripts
    resources["tracework"]["nonce"] = NONCE_SLOT
    resources["tracework"]["csp"] = CSP.format(
        scripts=f"'nonce-{NONCE_SLOT}'" if scripts else "'none'"
    )
    body, _ = html_exporter().from_notebook_node(reader, resources=resources)
    page = str(body).replace("<!--tw-toc-->", toc_html(str(body)), 1)
    return seal(visible_markup(page))
