"""Pictures of the site, drawn at publish time as inline SVG (``templates/site/charts.html.j2``).

A reader sees them with no script, a screen reader hears their text alternative, and a
printer prints them: this module only measures — every number and word a chart shows is
computed here, and the template writes the shapes with autoescaping on.  Three kinds:

- a report's **history**: a stacked bar per render of its quotes' states (verified,
  moved, changed (format only), changed, ambiguous, missing);
- a rubric's **distribution**: a bar per "carries k of M" with its count of systems;
- the index's **sparkline** per report: the share of quotes verified at each render.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from tracework.site.read import Report
from tracework.text import counted

#: Quote states from the best news to the worst, the order bars stack from the bottom.
#: "changed (format only)" is a changed quote whose content still occurs.
STACK = ("verified", "moved", "format only", "changed", "ambiguous", "missing")
#: The words each state is called in a legend and a text alternative.
WORDS = {"format only": "changed (format only)"}


@dataclass(frozen=True)
class Segment:
    """One state's part of a bar: its rectangle, and what it counts."""

    state: str
    y: float
    height: float
    count: int


@dataclass(frozen=True)
class Bar:
    """One render of a report: its place, label, segments and the sentence that says it."""

    x: float
    width: float
    label: str
    segments: list[Segment]
    text: str


@dataclass(frozen=True)
class HistoryChart:
    width: int
    height: int
    base: float
    top: int
    bars: list[Bar]
    states: list[tuple[str, str]]
    summary: str


@dataclass(frozen=True)
class DistributionRow:
    label: str
    y: float
    width: float
    systems: int
    share: int


@dataclass(frozen=True)
class DistributionChart:
    width: int
    height: int
    left: int
    rows: list[DistributionRow]
    summary: str


@dataclass(frozen=True)
class Sparkline:
    width: int
    height: int
    points: str
    last: tuple[float, float]
    summary: str
    label: str  # shown beside it: the first and the newest share


def quote_states(counts: Mapping[str, object], format_only: int) -> dict[str, int]:
    """A render's quote counts by the chart's states (format-only taken out of changed)."""
    out = {s: _count(counts.get(s)) for s in STACK}
    out["format only"] = min(_count(format_only), out["changed"])
    out["changed"] -= out["format only"]
    return out


def _count(value: object) -> int:
    return value if type(value) is int and value > 0 else 0


def renders_of(report: Report) -> list[tuple[str, str, int, dict[str, int]]]:
    """(commit, date, commits since the pin, states) per render, oldest first: from the
    report's history, else (no history.json) from the renders the site publishes."""
    if report.history:
        return [
            (
                e.commit,
                e.date[:10],
                e.commits_since_pin,
                quote_states(e.counts, e.format_only),
            )
            for e in report.history
        ]
    out = []
    for render in report.renders:
        quotes = render.records.quotes.values()
        counts: dict[str, int] = {}
        for q in quotes:
            counts[q.state] = counts.get(q.state, 0) + 1
        formatted = sum(1 for q in quotes if q.format_only and q.state == "changed")
        out.append(
            (
                render.commit,
                render.records.commit_date[:10],
                render.records.drift.commits_since_pin,
                quote_states(counts, formatted),
            )
        )
    return out


def _sentence(states: dict[str, int]) -> str:
    total = sum(states.values())
    parts = [f"{n} {WORDS.get(s, s)}" for s, n in states.items() if n and s != "verified"]
    return f"{states['verified']} of {total} quotes verified" + (
        f", {', '.join(parts)}" if parts else ""
    )


def history_chart(report: Report) -> HistoryChart | None:
    """The report's renders as stacked bars of quote states, oldest on the left."""
    series = renders_of(report)
    if not series:
        return None
    step, bar, top, plot = 48, 32, 18, 120
    left = 40
    highest = max(max(sum(s.values()) for *_, s in series), 1)
    bars = []
    for i, (commit, date, since, states) in enumerate(series):
        y = float(top + plot)
        segments = []
        for state in STACK:
            n = states[state]
            if not n:
                continue
            height = plot * n / highest
            y -= height
            segments.append(Segment(state, round(y, 2), round(height, 2), n))
        label = "pin" if since == 0 else f"+{since}"
        where = "the pin" if since == 0 else f"{counted(since, 'commit')} after the pin"
        text = f"at {commit[:12]} ({date}), {where}: "
        bars.append(Bar(left + i * step + 7, bar, label, segments, text + _sentence(states)))
    shown = [s for s in STACK if any(g.state == s for b in bars for g in b.segments)]
    first, last = series[0], series[-1]
    summary = (
        f"{report.title}: quote states at {len(series)} render"
        f"{'s' if len(series) != 1 else ''}, oldest first: "
        f"from {_sentence(first[3])} at {first[0][:12]} to {_sentence(last[3])} at "
        f"{last[0][:12]}."
    )
    return HistoryChart(
        width=left + len(series) * step + 8,
        height=top + plot + 28,
        base=float(top + plot),
        top=highest,
        bars=bars,
        states=[(s, WORDS.get(s, s)) for s in shown],
        summary=summary,
    )


class SpreadRow(TypedDict):
    """How many systems carry ``carries`` of a rubric's mechanisms: what the distribution
    chart draws, and the rubric page's table lists."""

    carries: int
    systems: int
    share: int  # percent of the systems


def distribution_chart(distribution: list[SpreadRow], mechanisms: int) -> DistributionChart:
    """A horizontal bar per "carries k of M", as long as its share of systems."""
    row, left, room = 26, 72, 180
    rows = [
        DistributionRow(
            label=f"{d['carries']} of {mechanisms}",
            y=float(4 + i * row),
            width=round(room * d["share"] / 100, 2),
            systems=int(d["systems"]),
            share=int(d["share"]),
        )
        for i, d in enumerate(distribution)
    ]
    summary = "Systems by how many mechanisms they carry: " + "; ".join(
        f"{r.label}: {r.systems} ({r.share}%)" for r in rows
    )
    return DistributionChart(left + room + 90, 8 + len(rows) * row, left, rows, summary)


def sparkline(report: Report) -> Sparkline | None:
    """The share of quotes verified at each render of the report, oldest first."""
    series = renders_of(report)
    if not series:
        return None
    width, height, pad = 96, 24, 3
    shares = [s["verified"] / max(sum(s.values()), 1) for *_, s in series]
    step = (width - 2 * pad) / max(len(shares) - 1, 1)
    xy = [
        (round(pad + i * step, 2), round(pad + (1 - v) * (height - 2 * pad), 2))
        for i, v in enumerate(shares)
    ]
    if len(xy) == 1:  # one render: a level line to its dot
        xy = [(float(pad), xy[0][1]), (float(width - pad), xy[0][1])]
    summary = f"{report.title}: share of quotes verified at each of {len(shares)} render" + (
        "s" if len(shares) != 1 else ""
    )
    summary += ", oldest first: " + ", ".join(f"{round(100 * v)}%" for v in shares)
    ends = [shares[0]] if len(shares) == 1 else [shares[0], shares[-1]]
    label = "Verified: " + " → ".join(f"{round(100 * v)}%" for v in ends)
    label += f" ({counted(len(shares), 'render')})"
    return Sparkline(
        width,
        height,
        " ".join(f"{x},{y}" for x, y in xy),
        xy[-1],
        summary,
        label,
    )
