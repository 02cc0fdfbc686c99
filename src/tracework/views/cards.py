"""HTML fragments for quotes, records, absences and check summaries.

The same fragments are a cell's rich display in JupyterLab and the body of the
published report, so a record looks in the notebook as it will on the page.  Every
piece of subject text is escaped here: code goes through pygments (which escapes),
Markdown through markdown-it with raw HTML disabled, everything else through
:func:`html.escape`.

Their look is one stylesheet, :func:`display_css`: in JupyterLab each display carries
it (:func:`styled`), since nothing else of tracework's reaches the notebook's page; a
report page carries it once in its head, and the exporter's sanitiser drops the copies
the displays brought along, as it drops every style sheet in cell outputs.
"""

from __future__ import annotations

import functools
import html
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from markdown_it import MarkdownIt
from pygments.formatters import HtmlFormatter

from tracework.drift.check import CheckItem
from tracework.git.forge import upstream_file_url, upstream_url
from tracework.hashing import is_lfs_pointer
from tracework.records.absences import AbsenceResult
from tracework.records.artefacts import CheckSummary
from tracework.records.diagrams import DiagramCheck
from tracework.records.kinds import KINDS, Absence, Record
from tracework.register.models import FileEntry, Quote
from tracework.screen import Screen
from tracework.text import counted, visible, visible_name
from tracework.views.code import code_html, diff_html

# raw HTML off (js-default); images off too, so no text can make a viewer fetch anything
_MD = MarkdownIt("js-default", {"typographer": False}).disable("image")


#: Where a JupyterLab dark theme is on (JupyterLab marks ``<body>`` with the theme's
#: lightness); ``:where`` keeps the selector starting with a ``.tw-`` class, and at the
#: specificity of the light palette's rules, which come first.  The dark rules are
#: nested under it, so the long selector is written once.
_DARK = '.tw-hl:where([data-jp-theme-light="false"] *)'
#: pygments' palettes for code: its default on light themes and on the report page,
#: GitHub's dark one under a JupyterLab dark theme.
_LIGHT_STYLE, _DARK_STYLE = "default", "github-dark"


@functools.cache
def display_css() -> str:
    """The displays' stylesheet: ``display.css``, then the light token colours for code,
    then the dark ones, every selector under a ``.tw-`` class, comments and layout
    taken out (each display in a notebook carries a copy)."""
    sheet = (files("tracework.notebook") / "display.css").read_text(encoding="utf-8")
    light = HtmlFormatter(style=_LIGHT_STYLE).get_token_style_defs(".tw-hl")
    dark = HtmlFormatter(style=_DARK_STYLE).get_token_style_defs("&")
    css = "\n".join([sheet, *light, _DARK + "{", *dark, "}"])
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    css = re.sub(r"\s+", " ", css).replace(": ", ":")
    return re.sub(r" ?([{};,]) ?", r"\1", css).strip()


def styled(markup: str) -> str:
    """A display's HTML with the displays' stylesheet in front of it, for JupyterLab."""
    return f"<style>{display_css()}</style>{markup}"


def esc(text: object) -> str:
    """Escape for HTML text and attribute values, making control characters visible."""
    return html.escape(visible(str(text)), quote=True)


def sha256_html(value: str) -> str:
    """A SHA-256 in full, breakable only between groups of 8 digits, as the register
    tables write it (``sha256`` in ``register_tables.html.j2``): a narrow column wraps it
    without hiding a digit, and a copy takes it whole."""
    groups = "<wbr/>".join(esc(value[i : i + 8]) for i in range(0, len(value), 8))
    return f'<code class="tw-sha256" title="{esc(value)}">{groups}</code>'


def esc_name(path: str) -> str:
    """Escape a file name for HTML, one line and told apart from its look-alikes."""
    return html.escape(visible_name(path), quote=True)


def markdown(text: str) -> str:
    """Markdown to HTML with raw HTML disabled and unsafe link schemes refused."""
    return str(_MD.render(visible(text)))


def code_block(text: str, path: str, first_line: int, whole: str | None = None) -> str:
    """Highlighted code with line numbers starting at ``first_line``, lexed within
    ``whole`` (the file's text) when given (:func:`tracework.views.code.code_html`)."""
    return code_html(text, path, first_line, whole)


def diff_block(diff: str, path: str) -> str:
    """A drifted quote's diff, wrapping as quoted code does
    (:func:`tracework.views.code.diff_html`)."""
    return diff_html(diff, path)


def badge(state: str, text: str | None = None) -> str:
    cls = state.replace(" ", "-").replace("(", "").replace(")", "")
    return f'<span class="tw-badge tw-{esc(cls)}">{esc(text or state)}</span>'


@dataclass(frozen=True)
class QuoteInfo:
    """A quote as a report shows it: the register entry plus its state at the commit."""

    quote_id: str
    quote: Quote
    pin: str
    commit: str
    url: str
    drift: CheckItem | None = None
    #: the quoted file's text at the pin, to highlight the span as it reads in its file
    file_text: str | None = None

    @property
    def state(self) -> str:
        """The quote's state at the commit; a formatting-only change is named as such."""
        if self.drift is None:
            return "verified"
        if self.drift.format_only and self.drift.state == "changed":
            return "changed (format only)"
        return self.drift.state  # ambiguous stays ambiguous, whatever its content

    def location(self) -> str:
        """``path:A–B`` with the path made visible (one line, look-alikes told apart)."""
        a, b = self.quote.lines
        path = visible_name(self.quote.path)
        return f"{path}:{a}–{b}" if a != b else f"{path}:{a}"

    def location_html(self) -> str:
        """:meth:`location`, escaped, for a line too narrow for it: the path may break
        after each ``/``, the line range never (``233–`` and ``264`` on two lines read
        as two places)."""
        path, _, lines = self.location().rpartition(":")
        return f'{esc(path).replace("/", "/<wbr>")}:<span class="tw-lines">{esc(lines)}</span>'

    @property
    def lfs_pointer(self) -> bool:
        """Whether the quoted text is a Git LFS pointer (its header line opens the span).

        Pointers are UTF-8 by their spec, so the text is their bytes.
        """
        return self.quote.lines[0] == 1 and is_lfs_pointer(self.quote.text.encode("utf-8"))


def file_key(source: str, path: str) -> str:
    """How a record's evidence names a whole registered file: ``SRC-1:path``."""
    return f"{source}:{path}"


@dataclass(frozen=True)
class FileInfo:
    """A whole registered file cited as evidence, and its state at the commit."""

    key: str
    source: str
    path: str
    entry: FileEntry
    pin: str
    commit: str
    url: str
    check: CheckItem | None = None

    @property
    def state(self) -> str:
        return self.check.state if self.check is not None else "verified"

    @property
    def drifted(self) -> bool:
        """A file that changed or is gone puts what cites it up for re-review."""
        return self.state in ("changed", "missing")


def file_html(info: FileInfo, *, anchor: bool = False) -> str:
    """A cited file: its path, source, pin, full hash, state and upstream link."""
    ident = f' id="{esc(info.key)}"' if anchor else ""
    e = info.entry
    parts = [
        f'<a class="tw-quote-id" href="#{esc(info.key)}">{esc(info.key)}</a>',
        f'<span class="tw-path">{esc_name(info.path)}</span>',
        f'<span class="tw-at">@ <code>{esc(info.pin[:12])}</code></span>',
        badge(info.state),
    ]
    link = upstream_file_url(info.url, info.pin, info.path)
    if link:
        parts.append(f'<a class="tw-upstream" href="{esc(link)}" rel="noopener">upstream</a>')
    what = "binary file" if e.binary else e.kind.replace("-", " ")
    body = (
        f'<p class="tw-file-hash">{esc(what)}, {e.size:,} bytes, sha256 '
        f"<code>{esc(e.sha256)}</code></p>"
    )
    check = info.check
    if check is not None and check.state != "verified":
        body += (
            f'<p class="tw-drift-note">at {esc(info.commit[:12])}: {esc(check.state)}'
            f" ({esc(check.detail)})</p>"
        )
    return (
        f'<figure class="tw-quote tw-file tw-state-{esc(info.state)}"{ident}>'
        f"<figcaption>{' '.join(parts)}</figcaption>{body}</figure>"
    )


def quote_html(info: QuoteInfo, *, anchor: bool = False) -> str:
    """A quote: id, location, pin, short hash, state, upstream link and the code."""
    q = info.quote
    link = upstream_url(info.url, info.pin, q.path, q.lines)
    ident = f' id="{esc(info.quote_id)}"' if anchor else ""
    parts = [
        f'<a class="tw-quote-id" href="#{esc(info.quote_id)}">{esc(info.quote_id)}</a>',
        f'<span class="tw-path">{info.location_html()}</span>',
        f'<span class="tw-at">@ <code>{esc(info.pin[:12])}</code></span>',
        f'<span class="tw-hash" title="sha256 {esc(q.sha256)}">sha256 {esc(q.sha256[:12])}</span>',
        badge(info.state),
    ]
    if info.lfs_pointer:
        parts.append(badge("lfs-pointer", "Git LFS pointer: the content it names is not here"))
    if link:
        parts.append(
            f'<a class="tw-upstream" href="{esc(link)}" rel="noopener" '
            f'title="the pinned lines, upstream at {esc(info.pin[:12])}">upstream</a>'
        )
    body = code_block(q.text, q.path, q.lines[0], info.file_text)
    drift = info.drift
    if drift is not None and drift.state != "verified":
        where = visible_name(drift.new_path or q.path)
        if drift.new_lines:
            where += f":{drift.new_lines[0]}–{drift.new_lines[1]}"
        note = f"at {esc(info.commit[:12])}: {esc(drift.state)} ({esc(drift.detail)})"
        if drift.new_lines or drift.new_path:
            now = f'<span class="tw-path">{esc(where)}</span>'
            # the pinned lines are linked above (at the pin); these at the rendered commit
            here = upstream_url(
                info.url, info.commit, drift.new_path or q.path, drift.new_lines or q.lines
            )
            if here:
                now = f'<a class="tw-upstream" href="{esc(here)}" rel="noopener">{now}</a>'
            note += f", now {now}"
        if drift.candidates:
            paths = drift.candidate_paths or (q.path,) * len(drift.candidates)
            places = [
                f"{visible_name(p)}:{a}–{b}" if p != q.path else f"{a}–{b}"
                for p, (a, b) in zip(paths, drift.candidates, strict=True)
            ]
            note += ", candidates " + esc(", ".join(places))
        body += f'<p class="tw-drift-note">{note}</p>'
        if drift.diff:
            body += diff_block(drift.diff, drift.new_path or q.path)
    return (
        f'<figure class="tw-quote tw-state-{esc(info.state)}"{ident}>'
        f"<figcaption>{' '.join(parts)}</figcaption>{body}</figure>"
    )


def _value_html(name: str, value: Any, titles: dict[str, str]) -> str:
    if isinstance(value, tuple | list):
        return ", ".join(_ref_html(v, titles) for v in value)
    if name.endswith("status") or name in ("Strength",):
        return badge(str(value))
    text = str(value)
    if text in titles:
        return _ref_html(text, titles)
    return markdown(text)


def _ref_html(ref: str, titles: dict[str, str]) -> str:
    if ref in titles:
        return f'<a class="tw-ref" href="#{esc(ref)}">{esc(ref)}</a>'
    return f"<code>{esc(ref)}</code>"


def record_html(
    record: Record,
    quotes: dict[str, QuoteInfo],
    titles: dict[str, str],
    *,
    anchor: bool = False,
    absence: AbsenceResult | None = None,
    drifted: Sequence[str] = (),
) -> str:
    """A record card: id, label, fields, evidence (quotes folded under their place) and
    review stamp."""
    ident = f' id="{esc(record.id)}"' if anchor else ""
    head = (
        f'<header><a class="tw-record-id" href="#{esc(record.id)}">{esc(record.id)}</a>'
        f' <span class="tw-kind">{esc(record.kind)}</span>'
    )
    if drifted:
        head += badge("needs re-review")
    head += "</header>"
    if record.label:
        head += f'<p class="tw-label">{esc(record.label)}</p>'
    rows = []
    for title, value in record.fields():
        if isinstance(record, Absence) and title in ("Scope", "Patterns"):
            rendered = ", ".join(f"<code>{esc(v)}</code>" for v in value)
        else:
            rendered = _value_html(title, value, titles)
        rows.append(f"<dt>{esc(title)}</dt><dd>{rendered}</dd>")
    body = f'<dl class="tw-fields">{"".join(rows)}</dl>' if rows else ""
    if absence is not None:
        body += absence_html(absence)
    if record.notes:
        body += f'<div class="tw-notes">{markdown(record.notes)}</div>'
    if record.evidence:
        items = "".join(f"<li>{_evidence_ref(e, quotes, titles)}</li>" for e in record.evidence)
        body += f'<div class="tw-evidence">Evidence:<ul>{items}</ul></div>'
    if record.reviewed_at:
        stamp = record.reviewed_at
        body += (
            f'<p class="tw-reviewed">Reviewed against <code>{esc(stamp.commit[:12])}</code>'
            f" on {esc(stamp.date)}</p>"
        )
    kind = esc(record.prefix[3:-1].lower())
    return f'<article class="tw-record tw-kind-{kind}"{ident}>{head}{body}</article>'


def _evidence_ref(ref: str, quotes: dict[str, QuoteInfo], titles: dict[str, str]) -> str:
    """A link to cited evidence: a quote, a record, or a whole file.

    A quote is cited by its id, place and state, its lines folded under them: its card,
    with the full text, hash and drift, is in "Quoted evidence", once however many
    records cite it, so a record stays a few lines tall.
    """
    if ref in quotes:
        info = quotes[ref]
        q = info.quote
        return (
            f'<details class="tw-cite"><summary><a class="tw-ref" href="#{esc(ref)}">'
            f'{esc(ref)}</a> <span class="tw-path">{info.location_html()}</span> '
            f"{badge(info.state)}</summary>"
            f"{code_block(q.text, q.path, q.lines[0], info.file_text)}</details>"
        )
    if ref in titles or (ref.startswith("SRC-") and ":" in ref):
        return f'<a class="tw-ref" href="#{esc(ref)}">{esc(ref)}</a>'
    return f"<code>{esc(ref)}</code>"


def absence_html(result: AbsenceResult) -> str:
    """The search behind an absence: how many files, and any line that breaks it."""
    skipped = ""
    if result.skipped:
        names = ", ".join(f"<code>{esc(p)}</code>" for p in result.skipped[:10])
        more = " …" if len(result.skipped) > 10 else ""
        skipped = f" Not searched (binary or too large): {names}{more}."
    if result.holds:
        return (
            f'<p class="tw-absence">{badge("holds")} searched '
            f"{counted(len(result.files), 'text file')} at "
            f"<code>{esc(result.commit[:12])}</code>: no match.{skipped}</p>"
        )
    items = "".join(
        f'<li><span class="tw-path">{esc_name(m.path)}:{m.line}</span> '
        f"<code>{esc(m.text)}</code></li>"
        for m in result.matches
    )
    more = "<li>… more matches not shown</li>" if result.truncated else ""
    matched = len({m.path for m in result.matches})
    return (
        f'<div class="tw-absence">{badge("broken")} '
        f"{counted(len(result.matches), 'match', 'matches')} in "
        f"{counted(matched, 'file')} (of {counted(len(result.files), 'text file')} searched) "
        f"at <code>{esc(result.commit[:12])}</code>:"
        f"<ul>{items}{more}</ul>{skipped}</div>"
    )


def records_section(
    records: Iterable[Record],
    quotes: dict[str, QuoteInfo],
    absences: dict[str, AbsenceResult],
    drifted: dict[str, list[str]],
    files: dict[str, FileInfo] | None = None,
) -> str:
    """The "Shared records" section: records grouped by kind, then the quoted evidence
    and the files cited whole."""
    records = list(records)
    titles = {r.id: r.label for r in records}
    out = ['<section class="tw-records"><h2 id="shared-records">Shared records</h2>']
    for kind in KINDS:
        group = [r for r in records if isinstance(r, kind) and type(r) is kind]
        out.append(f'<h3 id="records-{esc(kind.prefix[3:-1].lower())}">{esc(kind.title)}</h3>')
        if not group:
            out.append('<p class="tw-none">none declared</p>')
        for record in group:
            out.append(
                record_html(
                    record,
                    quotes,
                    titles,
                    anchor=True,
                    absence=absences.get(record.id),
                    drifted=drifted.get(record.id, ()),
                )
            )
    out.append('<h3 id="quoted-evidence">Quoted evidence</h3>')
    for qid in sorted(quotes):
        out.append(quote_html(quotes[qid], anchor=True))
    if files:
        out.append('<h3 id="cited-files">Files cited whole</h3>')
        out.extend(file_html(files[key], anchor=True) for key in sorted(files))
    out.append("</section>")
    return "".join(out)


@dataclass(frozen=True)
class Declared:
    """One record or mark a notebook cell declared, as the cell's summary lists it."""

    name: str  # the record's id, or RUBRIC/MECHANISM for a mark
    kind: str  # the record's kind, or "rubric mark"
    label: str
    states: tuple[str, ...]  # shown as badges: holds or broken, present or absent, ...
    card: str | None  # its full card, one click away; None: the cell shows it already


@functools.cache
def declared_css() -> str:
    """The stylesheet of a cell's summary of declarations (``declared.css``): a notebook
    display alone (a report never shows the summary), so not in :func:`display_css`,
    which every report page carries."""
    sheet = (files("tracework.notebook") / "declared.css").read_text(encoding="utf-8")
    sheet = re.sub(r"/\*.*?\*/", "", sheet, flags=re.DOTALL)
    return re.sub(r"\s+", " ", sheet).strip()


def declared_html(entries: Sequence[Declared]) -> str:
    """What one cell declared, one line each (id, kind, label, states), each opening to
    its full card; the one the cell shows as its result is named, not repeated."""
    kinds = Counter("mark" if e.kind == "rubric mark" else "record" for e in entries)
    what = " and ".join(counted(kinds[k], k) for k in ("record", "mark") if kinds[k])
    items = []
    for entry in entries:
        states = "".join(badge(state) for state in entry.states)
        line = (
            f'<span class="tw-declared-id">{esc(entry.name)}</span> '
            f'<span class="tw-kind">{esc(entry.kind)}</span>'
            + (f' <span class="tw-declared-label">{esc(entry.label)}</span>' if entry.label else "")
            + states
        )
        if entry.card is None:
            items.append(
                f'<li class="tw-declared-shown"><span class="tw-declared-line">{line}'
                ' <span class="tw-note">(its card is above)</span></span></li>'
            )
        else:
            items.append(
                f'<li><details class="tw-declared-item"><summary>{line}</summary>'
                f"{entry.card}</details></li>"
            )
    return (
        f"<style>{declared_css()}</style>"
        f'<section class="tw-declared"><p class="tw-declared-head">This cell declared {what}'
        f"{':' if entries else ''}</p><ul>{''.join(items)}</ul></section>"
    )


@dataclass(frozen=True)
class Diagram:
    """A drawn diagram: its Mermaid source, caption and check at the commit."""

    name: str
    caption: str
    source: str
    check: DiagramCheck
    kind: str
    cell: str | None = None


def diagram_status_html(check: DiagramCheck) -> str:
    """What the check found: bound records and identifiers, and what is missing."""
    parts = []
    if check.identifiers:
        found = sum(check.identifiers.values())
        parts.append(f"{found}/{len(check.identifiers)} code identifiers found")
    if check.bindings:
        parts.append(f"{counted(len(check.bindings), 'node')} bound to records")
    note = esc("; ".join(parts) or "nothing to check")
    state = badge("holds" if check.ok else "fails")
    problems = ""
    if check.vanished:
        problems += " not found: " + ", ".join(f"<code>{esc(i)}</code>" for i in check.vanished)
    if check.unknown_records:
        problems += " unknown records: " + ", ".join(
            f"<code>{esc(r)}</code>" for r in check.unknown_records
        )
    return f'<p class="tw-diagram-check">{state} {note}.{problems}</p>'


#: JupyterLab draws a Mermaid output as an image shrunk to the output's width
#: (``.jp-RenderedMermaid img { max-width: 100% }``), which made a wide diagram's labels
#: unreadably small.  The note under each diagram carries this rule, scoped to the
#: output just before a note, so the diagram keeps its natural size and its figure
#: (``overflow: auto`` in JupyterLab) scrolls.  Where JupyterLab drops styles from an
#: output (an untrusted notebook), the diagram is shrunk as before.
_JUPYTER_STYLE = (
    "<style>.jp-OutputArea-child:has(+ .jp-OutputArea-child .tw-diagram-note) "
    ".jp-RenderedMermaid img { max-width: none; }</style>"
)


def diagram_note_html(diagram: Diagram) -> str:
    """Shown under a diagram in JupyterLab: caption, check and its source, folded; its
    style lets the diagram above scroll at its natural size instead of shrinking."""
    return (
        f'{_JUPYTER_STYLE}<div class="tw-diagram-note">'
        f'<p class="tw-caption">{esc(diagram.caption)}</p>'
        f"{diagram_status_html(diagram.check)}"
        f"<details><summary>Diagram source</summary><pre><code>{esc(diagram.source)}"
        "</code></pre></details></div>"
    )


def screen_html(result: Screen) -> str:
    """The screen as a report section: counts, every finding with its line and what
    runs it, then the dependencies inside the cooldown and what each lock file allows."""
    counts = ", ".join(f"{n} {esc(c)}" for c, n in result.counts().items())
    rows = "".join(
        f'<tr><td data-label="category">{esc(f.category)}</td><td data-label="where">'
        f'<span class="tw-path">{esc_name(f.path)}:{f.line}</span></td>'
        f'<td data-label="what">{esc(f.what())}'
        + (
            " (" + ", ".join(f'<span class="tw-path">{esc_name(r)}</span>' for r in f.run_by) + ")"
            if f.run_by
            else ""
        )
        + f'</td><td data-label="the line"><code>{esc(f.text)}</code></td></tr>'
        for f in result.findings
    )
    window = result.cooldown
    recent = "".join(
        f'<tr><td><span class="tw-path">{esc_name(lock.path)}:{p.line}</span></td>'
        f"<td><code>{esc(p.name)}</code></td><td><code>{esc(p.version)}</code></td>"
        f"<td>{esc(p.uploaded)}</td><td>{p.age_days}</td></tr>"
        for lock in window.locks
        for p in lock.packages
    )
    notes = "".join(
        f'<li><span class="tw-path">{esc_name(lock.path)}</span>: {esc(lock.note)}</li>'
        for lock in window.locks
    )
    cooldown = (
        f'<h3 id="screen-cooldown">Dependencies inside the {window.days}-day cooldown</h3>'
        f"<p>Locked packages published after {esc(window.since)}, {window.days} days before "
        f"the commit's date ({esc(window.commit_date)}), read from the lock files alone: "
        f"{esc(window.verdict())}.</p>"
        + (
            "<table><thead><tr><th>where</th><th>package</th><th>version</th><th>uploaded</th>"
            f"<th>age (days)</th></tr></thead><tbody>{recent}</tbody></table>"
            if recent
            else ""
        )
        + (f"<ul>{notes}</ul>" if notes else "")
    )
    return (
        '<section class="tw-screen"><h2 id="screen">Screen of the checkout</h2>'
        f"<p>{result.files} paths at <code>{esc(result.commit[:12])}</code> read as git blobs; "
        f"nothing was installed or run. {counts}. Agent-instruction files are listed as data "
        "and were not followed.</p>"
        '<table class="tw-findings"><thead><tr><th>category</th><th>where</th><th>what</th>'
        "<th>the line</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>{cooldown}</section>"
    )


def summary_html(summary: CheckSummary, *, by_name: bool = False) -> str:
    """The check summary as a compact table with one line per check.

    The notebook lists the checks in the order they ran (register first); the report
    page lists them ``by_name``, as the command line does and records.json (its keys
    sorted) holds them.
    """
    rows = []
    findings = 0
    for name, check in summary.checks.families(by_name=by_name):
        findings += check.findings or 0
        shown = badge(check.verdict, check.verdict_words)
        rows.append(f"<tr><th>{esc(name)}</th><td>{shown}</td><td>{esc(check.detail)}</td></tr>")
    problems = "".join(f"<li>{esc(p)}</li>" for p in summary.problems)
    state = "fails" if not summary.ok else "findings" if findings else "holds"
    verdict = {
        "fails": "checks do not all hold",
        "findings": f"checks hold, with {findings} finding{'' if findings == 1 else 's'}",
        "holds": "all checks hold",
    }[state]
    return (
        f'<section class="tw-summary"><p>{badge(state, verdict)} '
        f"at <code>{esc(summary.commit[:12])}</code></p>"
        f'<table class="tw-checks">{"".join(rows)}</table>'
        + (f'<ul class="tw-problems">{problems}</ul>' if problems else "")
        + "</section>"
    )
