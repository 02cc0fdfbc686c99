"""What the site's templates read: one typed dictionary per row or block a page shows.

The templates take plain mappings (Jinja reads ``row.name`` as ``row["name"]``), so the
shapes are ``TypedDict`` s: mypy then checks every key the publisher builds against what
is declared here, and a key a template reads that nobody builds is a missing field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, TypedDict

if TYPE_CHECKING:
    from tracework.site.charts import DistributionChart, Sparkline, SpreadRow

# -- the index and a report's page -----------------------------------------------------


class MarkSummary(TypedDict):
    """A rubric's marks at a report's newest render: carried of total."""

    name: str
    title: str
    carries: int
    of: int
    linked: bool  # the rubric has a page (a mark against a removed rubric file has none)


class IndexRow(TypedDict):
    """A report on the index: its newest render, its state and its marks."""

    name: str
    title: str
    kind: str
    href: str
    report_href: str
    subject: str
    pin: str
    newest: str
    newest_date: str
    state: str
    status: str
    marks: list[MarkSummary]
    checked: str | None
    spark: Sparkline | None


class RenderRow(TypedDict):
    """A render of a report (or a history entry whose render is no longer kept)."""

    href: str | None
    commit: str
    date: str
    since_pin: int
    state: str
    status: str
    checked: str | None
    compare: str | None  # the compare page against the render before it
    previous: str | None
    changed_in: list[tuple[str, str, str, bool]]  # quote id, path, commit, format only
    broken: list[tuple[str, str | None, int, int]]  # absence id, commit, matches, files


class MarkChange(TypedDict):
    """One mark's change of state at a render."""

    mechanism: str
    before: str | None
    after: str
    commit: str
    date: str
    href: str | None


class MarkHistory(TypedDict):
    """How a report's marks against one rubric changed, oldest first."""

    name: str
    title: str
    renders: int
    changes: list[MarkChange]


# -- the rubric pages ------------------------------------------------------------------


class RubricRow(TypedDict):
    """A rubric on the rubrics' list."""

    name: str
    title: str
    mechanisms: int
    systems: int


class MatrixCell(TypedDict):
    """A system's mark of one mechanism at one render."""

    state: str  # present, absent or unmarked
    text: str
    review: bool
    href: str | None


class MatrixRender(TypedDict):
    """A system's row of the matrix at one render."""

    commit: str
    date: str
    cells: list[MatrixCell]
    carries: int
    stale: bool  # marked against another version of the rubric


class MatrixRow(TypedDict):
    """A system of the matrix, its renders newest first."""

    name: str
    href: str
    history_href: str
    carries: int
    renders: list[MatrixRender]


class RubricMatrix(TypedDict):
    """A rubric's page: systems by mechanisms, with counts and the distribution."""

    rows: list[MatrixRow]
    systems: int
    per_mechanism: list[int]
    distribution: list[SpreadRow]
    none_or_one: int
    chart: DistributionChart


# -- search ------------------------------------------------------------------------------


class SearchEntry(TypedDict):
    """One entry of the client-side search: a report, a record or a quote."""

    kind: str
    id: str
    label: str
    report: str
    paths: list[str]
    href: str


# -- the compare pages -----------------------------------------------------------------


class QuoteChange(TypedDict):
    """A quote whose state changed between two renders, with the diff of its text."""

    id: str
    before: str
    after: str
    where: list[str]
    diff: list[tuple[str, str]] | None  # (kind, line); None when a side cannot be read
    cited: bool


class RecordChange(TypedDict):
    """A record whose state changed."""

    id: str
    before: str
    after: str
    shown: bool


class MarkStateChange(TypedDict):
    """A rubric mark whose state changed."""

    rubric: str
    mechanism: str
    before: str
    after: str


class AbsenceMatch(TypedDict):
    """A line that matches an absence's patterns, linked upstream."""

    path: str
    line: int
    text: str
    href: str | None


class AbsenceChange(TypedDict):
    """An absence whose state changed, with where it broke and what matched."""

    id: str
    label: str
    before: str
    after: str
    shown: bool
    first_broken: str | None
    date: str
    subject: str
    searched: int
    matches: list[AbsenceMatch]
    files: int


class FindingRow(TypedDict):
    """A screen finding as the compare page shows it."""

    category: str
    path: str
    kind: str
    step: str
    text: str
    line: int


class PackageRow(TypedDict):
    """A locked package inside the screen's cooldown window."""

    path: str
    name: str
    version: str
    uploaded: str


class ScreenChanges(TypedDict):
    """What a render's screen gained and lost; only ``missing`` when one side has none."""

    missing: str | None
    gained: NotRequired[list[FindingRow]]
    lost: NotRequired[list[FindingRow]]
    packages_gained: NotRequired[list[PackageRow]]
    packages_lost: NotRequired[list[PackageRow]]


class Comparison(TypedDict):
    """A compare page: what changed state from one render to the next."""

    quotes: list[QuoteChange]
    records: list[RecordChange]
    marks: list[MarkStateChange]
    absences: list[AbsenceChange]
    screen: ScreenChanges | None
