"""The package's layering: the import contract covers every package, and no import
cycle remains between modules (the contract checks packages; a cycle inside one, closed
by an import in a function, would not show there)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
PACKAGE = PROJECT / "src" / "tracework"


def _modules() -> dict[str, Path]:
    """Every module of the package that runs in tracework's own process (the harness
    files run inside a capture's sandbox and import nothing of it)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if "harness" in path.relative_to(PACKAGE).parts:
            continue
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """What each module imports of the package, wherever the import statement is."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                named = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for target in named:
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_back_through_others() -> None:
    graph = _imports(_modules())
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_closed_inside_a_function(tmp_path: Path) -> None:
    """A positive control: two modules importing each other, one of them in a function."""
    (tmp_path / "one.py").write_text("import two\n")
    (tmp_path / "two.py").write_text("def f():\n    import one\n")
    modules = {"one": tmp_path / "one.py", "two": tmp_path / "two.py"}
    assert _cycles(_imports(modules)) == [["one", "two"]]


def test_the_import_contract_names_every_package_and_module() -> None:
    """A new package or top-level module must take its place in a layer."""
    config = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    [contract] = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    layered = {name.strip() for layer in contract["layers"] for name in layer.split("|")}
    top = {
        path.stem if path.is_file() else path.name
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" and path.name != "__init__.py")
        or (path.is_dir() and (path / "__init__.py").is_file())
    }
    assert top == layered


def _layers() -> list[str]:
    config = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    [contract] = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    return [" | ".join(n.strip() for n in layer.split("|")) for layer in contract["layers"]]


def test_the_readme_draws_the_layers_the_contract_checks() -> None:
    """The README's drawing is the contract's list, top first (``__main__`` aside)."""
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Architecture", 1)[1].split("```", 2)[1]
    drawn = [line.strip() for line in section.strip().splitlines()]
    assert drawn == [layer for layer in _layers() if layer != "__main__"]


def test_the_architecture_page_names_only_packages_that_exist() -> None:
    """The page's drawing names every layer's packages, and its module table is generated
    (so a module that is gone, or new, cannot be missed there)."""
    page = (PROJECT / "docs" / "explanation" / "architecture.md").read_text(encoding="utf-8")
    assert "<!-- generated: module-map -->" in page
    drawing = page.split("```", 2)[1]
    named = {
        word.strip(",")
        for line in drawing.strip().splitlines()
        for word in line.split("  ")[0].replace("|", " ").split()
    }
    packages = {name.strip() for layer in _layers() for name in layer.split("|")}
    assert named == packages - {"__main__"}


def test_the_module_map_gives_every_module_its_job() -> None:
    """The generated table lists each module with its docstring's first sentence."""
    import sys

    sys.path.insert(0, str(PROJECT / "docs"))
    try:
        import hooks  # the MkDocs hook that writes the table
    finally:
        sys.path.pop(0)
    table = hooks.module_map()
    for name, path in _modules().items():
        parts = name.split(".")
        if len(parts) == 3:  # a module of a package: listed in its package's row
            assert f"`{parts[2]}` " in table, name
        elif len(parts) == 2 and path.name != "__init__.py":
            assert f"`{parts[1]}.py`" in table, name
    assert "`sources` A capture registered as a source of a register" in table
