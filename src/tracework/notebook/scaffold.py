"""``tracework new``: a clean analyst notebook and its register, ready for JupyterLab."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

import tracework.register.store as reg
from tracework.errors import TraceworkError
from tracework.fsio import write_atomic
from tracework.register.evidence import add_source
from tracework.render.execution import KERNEL_NAME, ensure_kernelspec
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


def notebook_for(name: str) -> nbformat.NotebookNode:
    """The starting notebook: title, parameters cell, opening cell, records and done."""
    params = new_code_cell(
        f'register = "{name}"\ncommit = None  # None: the register\'s pin\n'
        'mode = "author"  # tracework render passes "render"\n'
        "analysis_date = None  # YYYY-MM-DD shown in the report header"
    )
    params.metadata["tags"] = ["parameters"]
    cells = [
        new_markdown_cell(f"# {name} runtime report\n\n" + _GUIDE.format(name=name)),
        params,
        new_code_cell(
            "import tracework as tw\n\n"
            "wb = tw.open(register, commit=commit, mode=mode, analysis_date=analysis_date)\n"
            'src = wb.source("SRC-1")'
        ),
        new_markdown_cell("## Runtime account\n\nWrite the account here."),
        new_code_cell("wb.records()"),
        new_code_cell("wb.done()"),
    ]
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


def new_report(ws: Workspace, name: str, subject: str, commit: str) -> tuple[Path, Path]:
    """Create ``notebooks/NAME.ipynb`` and ``registers/NAME.yaml`` pinned at ``commit``."""
    check_name(name, "report")
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
    reg.create(register_path, name)
    try:
        add_source(ws, register_path, "SRC-1", subject, commit)
    except TraceworkError:
        register_path.unlink()
        raise
    write_atomic(notebook, nbformat.writes(notebook_for(name)) + "\n")
    ensure_kernelspec()
    return notebook, register_path
