"""Which notebook cells cite a quote: read, never run.

Removing a quote that a notebook still quotes would break that notebook's next render,
so :func:`remove_quote` (``tracework quote --remove``) asks here first.  A cell cites a
quote when it names its id in a string literal (``id="Q-keep"``, ``evidence=["Q-keep"]``),
or when it calls ``.quote(...)`` with literal arguments that locate the quote's span at
the pin (``src.quote("notes.py", symbol="NoteStore.keep")``).  Cells are parsed with
:mod:`ast`; a call whose arguments are not literals cannot be resolved and is not
counted, and a cell that does not parse is searched for the id's text alone.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import tracework.register.edits as regy
import tracework.register.store as reg
from tracework.errors import RegisterError, TraceworkError
from tracework.git.subjects import open_mirror
from tracework.register.models import GitSource, Quote, Register
from tracework.register.quotes import QuoteRequest, make_quote, quotable_lines, same_evidence
from tracework.text import cell_name
from tracework.workspace import Workspace


def citing_cells(ws: Workspace, register: Register, quote_id: str) -> list[str]:
    """Where the workspace's notebooks for ``register`` cite ``quote_id``, as
    ``notebooks/NAME.ipynb cell N of M (id …)``, in notebook and cell order (a cell named
    as JupyterLab shows it: :func:`~tracework.text.cell_name`)."""
    quote = register.quotes[quote_id]
    found = []
    for notebook in sorted(ws.notebooks.glob("*.ipynb")):
        total, cells = _code_cells(notebook)
        if notebook.stem != register.name and not _opens(cells, register.name):
            continue
        for number, cell_id, source in cells:
            if _cites(ws, register, source, quote_id, quote):
                found.append(f"{notebook.relative_to(ws.root)} {cell_name(number, total, cell_id)}")
    return found


def _code_cells(notebook: Path) -> tuple[int, list[tuple[int, str | None, str]]]:
    """How many cells the notebook has, and (1-based place among them all, cell id,
    source) of each code cell; none if it does not read."""
    try:
        data = json.loads(notebook.read_bytes())
        cells = data["cells"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return 0, []
    cells = cells if isinstance(cells, list) else []
    out = []
    for number, cell in enumerate(cells, start=1):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            text = "".join(source) if isinstance(source, list) else str(source)
            cell_id = cell.get("id")
            out.append((number, cell_id if isinstance(cell_id, str) else None, text))
    return len(cells), out


def _opens(cells: list[tuple[int, str | None, str]], name: str) -> bool:
    """Whether a cell sets the ``register`` parameter to ``name``."""
    pattern = re.compile(rf"""^\s*register\s*=\s*["']{re.escape(name)}["']\s*$""", re.M)
    return any(pattern.search(source) for _, _, source in cells)


def _cites(ws: Workspace, register: Register, source: str, quote_id: str, quote: Any) -> bool:
    try:
        tree = ast.parse(_without_magics(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return quote_id in source
    sources: dict[str, str] = {}  # variable -> SRC id, from `src = wb.source("SRC-1")`
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == quote_id:
            return True
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            sid = _source_id(value)
            if isinstance(target, ast.Name) and sid is not None:
                sources[target.id] = sid
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "quote"
        and _locates(ws, register, node, sources, quote)
        for node in ast.walk(tree)
    )


def _without_magics(source: str) -> str:
    """The cell without IPython's ``%magic`` and ``!shell`` lines, which are not Python."""
    return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in source.split("\n"))


def _source_id(value: ast.expr) -> str | None:
    """``SRC-1`` from ``<anything>.source("SRC-1")``."""
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "source"
        and len(value.args) == 1
        and isinstance(value.args[0], ast.Constant)
        and isinstance(value.args[0].value, str)
    ):
        return value.args[0].value
    return None


def _locates(
    ws: Workspace, register: Register, call: ast.Call, sources: dict[str, str], quote: Any
) -> bool:
    """Whether a ``.quote(...)`` call with literal arguments names the quote's span."""
    try:
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return False  # not literals: cannot tell without running the cell
    owner = call.func.value if isinstance(call.func, ast.Attribute) else None
    sid = _source_id(owner) if owner is not None else None
    if isinstance(owner, ast.Name):
        sid = sources.get(owner.id)
    gits = [k for k, s in register.sources.items() if isinstance(s, GitSource)]
    sid = sid or (gits[0] if gits else None)
    if sid is None or sid != quote.source or not args or args[0] != quote.path:
        return False
    lines = args[1] if len(args) > 1 else kwargs.get("lines")
    try:
        request = QuoteRequest(
            (int(lines[0]), int(lines[1])) if lines else None,
            kwargs.get("symbol"),
            kwargs.get("match"),
            int(kwargs.get("context", 0)),
        )
        src = register.git_source(sid)
        mirror = open_mirror(ws, src.subject)
        data = quotable_lines(mirror, mirror.entry(src.commit, quote.path), quote.path)
        span, anchor = request.locate(data, quote.path)
    except (TraceworkError, TypeError, ValueError, IndexError):  # it would fail in its cell
        return False
    return same_evidence(make_quote(sid, quote.path, data, span, anchor), quote)


def remove_quote(ws: Workspace, register_path: Path, quote_id: str) -> Quote:
    """Remove a quote from the register, unless a notebook still cites it (named, with
    its cell).  Returns what was removed."""
    register = reg.load(register_path)
    if quote_id not in register.quotes:
        known = ", ".join(sorted(register.quotes)[:12]) or "none"
        raise RegisterError(
            f"{register_path.name}: there is no quote {quote_id}", hint=f"its quotes: {known}"
        )
    cited = citing_cells(ws, register, quote_id)
    if cited:
        raise RegisterError(
            f"{register_path.name}: {quote_id} is still cited by " + "; ".join(cited),
            hint="remove or change that citation first, then remove the quote",
        )
    with regy.edit(register_path) as doc:
        node = regy.section(doc, "quotes").pop(quote_id)
    return Quote.model_validate(dict(node))
