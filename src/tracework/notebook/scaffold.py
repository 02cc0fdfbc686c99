"""``tracework new``: a clean analyst notebook and its register, ready for JupyterLab."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

import tracework.register.edits as regy
from tracework.capture.config import capture_name
from tracework.errors import TraceworkError
from tracework.fsio import write_atomic
from tracework.kernels.spec import KERNEL_NAME, ensure_kernelspec
from tracework.register.evidence import add_source
from tracework.workspace import Workspace, check_name

_GUIDE = """\
Write the account here: what runs, in what order, and what it keeps. Quote spans of the
subject at the pin and declare what the code does. Each quote is hashed, and a cell's
quotes are added to `registers/{name}.yaml` when it ends (author mode); a render
(`tracework render {name}`) re-executes this notebook in render mode and never writes
to the register.

```python
q = src.quote("pkg/store.py", lines=(10, 14))        # or symbol="Store.write", or match="text"
wb.component("RT-CMP-store", label="…", identity="…", evidence=[q])
wb.route("RT-RTE-write", label="…", progression="…", implementation="wired",
         operation="uninspected", evidence=[q])
```
"""


_INVESTIGATION_GUIDE = """\
An investigation record built on capture `{capture}` (`captures/{capture}.toml` and
its harness `captures/{capture}.py`; `tracework capture env {capture}`, then
`tracework capture {capture} --repeat 2`). The provenance, the status conditions, the
results and the capture's own limits are computed from the capture's manifest and the
register: write the question, the method and what the capture shows between them.
"""

#: The cell tag of a scaffold's guidance: shown in JupyterLab, never in a report (the
#: export drops tagged cells with nbconvert's ``TagRemovePreprocessor``).
GUIDE_TAG = "tracework-guide"

#: A part of a report's shape: its heading, the guidance under it (for the analyst, not
#: published), and the cell that fills the rest (None: prose alone).
Part = tuple[str, str, str | None]

#: The parts of an investigation, in order.
_PARTS: tuple[Part, ...] = (
    (
        "Question",
        "What the static reading says the code does, and what this capture asks of it at "
        "runtime: one question per case.",
        None,
    ),
    ("Data and provenance", "What the inputs are (synthetic, redacted, none).", "cap.provenance()"),
    (
        "Method and where it hooks",
        "How the harness drives the subject, and the one place it replaces something "
        "(quote that place, so a reader can check it at the pin).",
        '# hook = src.quote("pkg/module.py", symbol="function_replaced")',
    ),
    ("Status conditions", "What PASS and FAIL mean for this question.", "cap.conditions()"),
    ("Results", "", "cap.results()"),
    (
        "What the capture shows",
        "Cite the cases and the transcript values that carry the answer.",
        '# wb.claim("RT-CLM-...", label="...", claim="...", assessment="...",\n'
        '#          operation="observed", evidence=[cap.case("..."), hook])\n'
        "cap.transcripts()",
    ),
    ("Limits", "What this fixture cannot show, beyond what the capture lists.", "cap.limits()"),
)

_ATLAS_GUIDE = """\
An atlas report reads one system against the rubric `{rubric}`
(`registers/rubrics/{rubric}.yaml`): what it is, how it works, and which of the rubric's
mechanisms it carries, each mark backed by evidence. The site's matrix sets this report's
marks beside every other system's.
"""

#: The parts of an atlas report, in order.  The screen and the rubric marks make their
#: own sections (headed "Screen of the checkout" and "Rubric marks").
_ATLAS_PARTS: tuple[Part, ...] = (
    (
        "Summary",
        "What the system is, what it keeps and for how long, and the two or three findings "
        "that matter most, in a paragraph a reader can stop after.",
        None,
    ),
    (
        "Mental model",
        "The system's life cycle in a few steps, each backed by a quote, and a diagram of "
        "the records that carry it.",
        '# q = src.quote("pkg/module.py", symbol="Class.method")\n'
        '# wb.component("RT-CMP-...", label="...", identity="...", evidence=[q])\n'
        '# wb.diagram("mental-model", caption="...", records="all")',
    ),
    (
        "Mechanisms",
        "One short account per mechanism of the rubric: present (with the records or quotes "
        "that show it) or absent (with an evidenced absence where the code allows one).",
        '# wb.mark("{rubric}", "mechanism-id", present=True, evidence=[q])\n'
        '# wb.mark("{rubric}", "other-id", present=False, evidence=["RT-ABS-..."],\n'
        '#         note="...")',
    ),
    (
        "",
        "What a checkout of the subject would run, install or instruct, and its packages "
        "inside the cooldown window: `wb.screen()` makes that section.",
        "wb.screen()",
    ),
    (
        "Open questions",
        "What this reading could not settle, and what would settle it (a capture, a "
        "maintainer's answer, a later commit).",
        None,
    ),
)


def _guide(text: str) -> nbformat.NotebookNode:
    """Guidance for the analyst: a markdown cell tagged never to be published."""
    cell: nbformat.NotebookNode = new_markdown_cell(f"*Guidance, not published:* {text}")
    cell.metadata["tags"] = [GUIDE_TAG]
    return cell


def _parts(parts: tuple[Part, ...], **names: str) -> list[nbformat.NotebookNode]:
    """Each part's heading, guidance and cell, with ``names`` filled in."""
    cells = []
    for heading, guidance, code in parts:
        if heading:
            cells.append(new_markdown_cell(f"## {heading}"))
        if guidance:
            cells.append(_guide(guidance.format(**names)))
        if code is not None:
            cells.append(new_code_cell(code.format(**names)))
    return cells


def notebook_for(
    name: str, kind: str = "runtime", capture: str | None = None, rubric: str | None = None
) -> nbformat.NotebookNode:
    """The starting notebook: title, parameters cell, opening cell, then the kind's own
    parts (a runtime account, an investigation's parts around ``capture``, or an atlas
    report's marked against ``rubric``), records and done.  Guidance cells are tagged
    :data:`GUIDE_TAG`, so that no report publishes them."""
    params = new_code_cell(
        f'register = "{name}"\ncommit = None  # None: the register\'s pin\n'
        'mode = "author"  # tracework render passes "render"\n'
        "analysis_date = None  # YYYY-MM-DD shown in the report header"
    )
    params.metadata["tags"] = ["parameters"]
    opening = (
        "import tracework as tw\n\n"
        "wb = tw.open(register, commit=commit, mode=mode, analysis_date=analysis_date)\n"
        'src = wb.source("SRC-1")'
    )
    if kind == "investigation":
        capture = capture or name
        cells = [
            new_markdown_cell(f"# {name}: investigation record"),
            _guide(_INVESTIGATION_GUIDE.format(capture=capture)),
            params,
            new_code_cell(opening + f'\ncap = wb.capture("{capture}")'),
            *_parts(_PARTS),
        ]
    elif kind == "atlas":
        named = rubric or "RUBRIC"
        cells = [
            new_markdown_cell(f"# {name}: atlas report"),
            _guide(_ATLAS_GUIDE.format(rubric=named)),
            params,
            new_code_cell(opening),
            *_parts(_ATLAS_PARTS, rubric=named),
        ]
    else:
        cells = [
            new_markdown_cell(f"# {name} runtime report"),
            params,
            new_code_cell(opening),
            new_markdown_cell("## Runtime account"),
            _guide(_GUIDE.format(name=name)),
        ]
    cells += [new_code_cell("wb.records()"), new_code_cell("wb.done()")]
    nb: nbformat.NotebookNode = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": KERNEL_NAME,
        "display_name": "tracework (Python 3)",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"tw-{i:02d}"
    return nb


#: What ``tracework new --kind`` scaffolds.
KINDS = ("runtime", "investigation", "atlas")


def new_report(
    ws: Workspace,
    name: str,
    subject: str,
    commit: str,
    kind: str = "runtime",
    capture: str | None = None,
    rubric: str | None = None,
) -> tuple[Path, Path]:
    """Create ``notebooks/NAME.ipynb`` of ``kind`` and ``registers/NAME.yaml`` pinned at
    ``commit``; an investigation cites ``capture`` (default: NAME), an atlas report is
    marked against ``rubric`` (default: the workspace's only rubric, if it has one)."""
    check_name(name, "report")
    if kind not in KINDS:
        raise TraceworkError(f"no report kind {kind!r}", hint=f"kinds: {', '.join(KINDS)}")
    if capture is not None and kind != "investigation":
        raise TraceworkError(
            "--capture names the capture of an investigation",
            hint="add --kind investigation, or cite a capture with wb.capture(NAME) yourself",
        )
    if rubric is not None and kind != "atlas":
        raise TraceworkError(
            "--rubric names the rubric of an atlas report",
            hint="add --kind atlas, or mark against a rubric with wb.mark(RUBRIC, ...) yourself",
        )
    if kind == "investigation":
        capture_name(capture or name)
    if kind == "atlas":
        rubric = _rubric_for(ws, rubric)
    if name == "site":
        raise TraceworkError(
            "'site' is not a report name: reports/site is where the site is published",
            hint="choose another name",
        )
    notebook = ws.notebooks / f"{name}.ipynb"
    register_path = ws.registers / f"{name}.yaml"
    for path in (notebook, register_path):
        if path.exists():
            raise TraceworkError(
                f"{path.relative_to(ws.root)} already exists",
                hint="choose another name, or edit the existing report",
            )
    regy.create(register_path, name)
    try:
        add_source(ws, register_path, "SRC-1", subject, commit)
    except TraceworkError:
        register_path.unlink()
        raise
    write_atomic(notebook, nbformat.writes(notebook_for(name, kind, capture, rubric)) + "\n")
    ensure_kernelspec()
    return notebook, register_path


def _rubric_for(ws: Workspace, rubric: str | None) -> str | None:
    """The rubric an atlas report is marked against: the one named (which must exist),
    else the workspace's only one; None leaves a placeholder to fill in."""
    folder = ws.registers / "rubrics"
    have = sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []
    if rubric is None:
        return have[0] if len(have) == 1 else None
    check_name(rubric, "rubric")
    if rubric not in have:
        raise TraceworkError(
            f"no rubric {rubric}: registers/rubrics/{rubric}.yaml does not exist",
            hint=f"rubrics here: {', '.join(have)}"
            if have
            else "write the rubric first (see docs/how-to/rubrics.md)",
        )
    return rubric
