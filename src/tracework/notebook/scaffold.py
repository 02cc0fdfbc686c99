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
Quote spans of the subject at the pin and declare what the code does. Each quote is
hashed, and a cell's quotes are added to `registers/{name}.yaml` when it ends (author
mode); a render
(`tracework render {name}`) re-executes this notebook in render mode and never
writes to the register.

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

#: The parts of an investigation, in order: a heading, what the analyst writes under
#: it, and the cell that fills the rest from the capture (None: prose alone).
_PARTS: tuple[tuple[str, str, str | None], ...] = (
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
    ("Limits", "What this fixture cannot show, beyond what the capture lists:", "cap.limits()"),
)


def notebook_for(
    name: str, kind: str = "runtime", capture: str | None = None
) -> nbformat.NotebookNode:
    """The starting notebook: title, parameters cell, opening cell, then the kind's own
    parts (a runtime account, or an investigation's parts around ``capture``), records
    and done."""
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
            new_markdown_cell(
                f"# {name}: investigation record\n\n" + _INVESTIGATION_GUIDE.format(capture=capture)
            ),
            params,
            new_code_cell(opening + f'\ncap = wb.capture("{capture}")'),
        ]
        for heading, prose, code in _PARTS:
            cells.append(new_markdown_cell(f"## {heading}" + (f"\n\n{prose}" if prose else "")))
            if code is not None:
                cells.append(new_code_cell(code))
    else:
        cells = [
            new_markdown_cell(f"# {name} runtime report\n\n" + _GUIDE.format(name=name)),
            params,
            new_code_cell(opening),
            new_markdown_cell("## Runtime account\n\nWrite the account here."),
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
KINDS = ("runtime", "investigation")


def new_report(
    ws: Workspace,
    name: str,
    subject: str,
    commit: str,
    kind: str = "runtime",
    capture: str | None = None,
) -> tuple[Path, Path]:
    """Create ``notebooks/NAME.ipynb`` of ``kind`` and ``registers/NAME.yaml`` pinned at
    ``commit``; an investigation cites ``capture`` (default: NAME)."""
    check_name(name, "report")
    if kind not in KINDS:
        raise TraceworkError(f"no report kind {kind!r}", hint=f"kinds: {', '.join(KINDS)}")
    if capture is not None and kind != "investigation":
        raise TraceworkError(
            "--capture names the capture of an investigation",
            hint="add --kind investigation, or cite a capture with wb.capture(NAME) yourself",
        )
    if kind == "investigation":
        capture_name(capture or name)
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
    write_atomic(notebook, nbformat.writes(notebook_for(name, kind, capture)) + "\n")
    ensure_kernelspec()
    return notebook, register_path
