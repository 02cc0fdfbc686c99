"""MkDocs hooks: the reference pages' tables are generated from the code at build time.

A page holds a marker such as ``<!-- generated: record-kinds -->`` where a table goes;
the hook replaces it with Markdown built from the models, the error classes, the
JSON Schemas in ``schemas/`` and the workspace defaults, so the reference cannot drift
from the code it describes.  The schema files themselves are copied into the site, so
new ones appear without editing a page.

The site must work from ``file://`` without any outside request, and Material's search
runs in a web worker, which Chromium refuses to start from a local file.  Material's
offline plugin would load the iframe-worker shim that works around it from a CDN; the
hook publishes the copy ``npm ci`` installs (pinned in package-lock.json) instead.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "schemas"
WORKER_SHIM = ROOT / "node_modules" / "iframe-worker" / "shim" / "index.js"
#: where the site serves the shim; mkdocs.yml names it under extra.polyfills
WORKER_SHIM_URI = "assets/javascripts/iframe-worker-shim.js"
MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _type_name(annotation: Any) -> str:
    """A field's type as a notebook writes it: `Markdown`, `str`, `list of str`, or the
    values of a vocabulary."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        described = [a for a in args[1:] if getattr(a, "description", None)]
        return (
            "Markdown"
            if described and described[0].description == "Markdown text"
            else (_type_name(args[0]))
        )
    if origin in (Union, UnionType):
        return " or ".join(_type_name(a) for a in args if a is not type(None))
    if origin is Literal:
        return " · ".join(f"`{a}`" for a in args)
    if origin is tuple:
        return f"list of {_type_name(args[0])}"
    return getattr(annotation, "__name__", str(annotation))


def record_kinds() -> str:
    """One section per record kind: its prefix, its purpose and every field."""
    from tracework.records.kinds import KINDS, VOCABULARIES, Record

    common = set(Record.model_fields)
    out: list[str] = []
    for kind in KINDS:
        out += [
            f"## {kind.kind.capitalize()} (`{kind.prefix}…`)",
            "",
            inspect.cleandoc(kind.__doc__ or ""),
            "",
            "| field | required | type | shown as |",
            "|---|---|---|---|",
        ]
        for name, info in kind.model_fields.items():
            if name in common and name != "label":
                continue
            described = info.description not in (None, "Markdown text")
            shown = info.title or (info.description if described else "") or ""
            if described and info.title:
                shown = f"{info.title}: {info.description}"
            # pydantic folds a required Markdown field's metadata into the field itself
            markdown = info.description == "Markdown text" and info.annotation is str
            type_name = "Markdown" if markdown else _type_name(info.annotation)
            required = "yes" if info.is_required() else f"no (default `{info.default!r}`)"
            if info.default in (None, (), ""):
                required = "no"
            out.append(f"| `{name}` | {required} | {_cell(type_name)} | {_cell(shown)} |")
        out.append("")
    out += ["## Controlled vocabularies", "", "| status | values |", "|---|---|"]
    for status, values in VOCABULARIES.items():
        out.append(f"| `{status}` | {' · '.join(f'`{v}`' for v in values)} |")
    return "\n".join(out) + "\n"


def error_classes() -> str:
    """Every error class, its exit code and when it is raised."""
    import tracework.errors as errors

    rows = ["| error | exit code | raised when |", "|---|---|---|"]
    for name, cls in sorted(vars(errors).items()):
        if isinstance(cls, type) and issubclass(cls, errors.TraceworkError):
            doc = _cell(inspect.cleandoc(cls.__doc__ or "").replace("``", "`"))
            rows.append(f"| `{name}` | {cls.exit_code} | {doc} |")
    return "\n".join(rows) + "\n"


def _schema_files() -> list[Path]:
    return sorted(SCHEMAS.glob("*.json"))


def _schema_type(spec: dict[str, Any]) -> str:
    """A property's JSON type in a few words: `string`, `array of Quote`, `a or b`."""
    if "$ref" in spec:
        return str(spec["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in spec:
        return " or ".join(_schema_type(s) for s in spec["anyOf"])
    if "enum" in spec:
        return " · ".join(f"`{v}`" for v in spec["enum"])
    if "const" in spec:
        return f"`{spec['const']}`"
    kind = spec.get("type", "any")
    if kind == "array" and isinstance(spec.get("items"), dict):
        return f"array of {_schema_type(spec['items'])}"
    if kind == "object" and isinstance(spec.get("additionalProperties"), dict):
        return f"map to {_schema_type(spec['additionalProperties'])}"
    return str(kind)


def _properties(schema: dict[str, Any]) -> list[str]:
    """A table of an object schema's properties."""
    rows = ["| property | type | required | description |", "|---|---|---|---|"]
    required = set(schema.get("required", ()))
    for prop, spec in schema.get("properties", {}).items():
        text = spec.get("description") or ""
        rows.append(
            f"| `{prop}` | {_cell(_schema_type(spec))} | {'yes' if prop in required else 'no'} "
            f"| {_cell(text)} |"
        )
    return rows


def schemas() -> str:
    """A section per JSON Schema in ``schemas/``: the file, then every object it defines."""
    out: list[str] = []
    for path in _schema_files():
        schema = json.loads(path.read_text(encoding="utf-8"))
        title = schema.get("title", path.stem)
        out += [
            f"## {title}",
            "",
            f"[`schemas/{path.name}`](schemas/{path.name}) — "
            f"{_cell(schema.get('description', ''))}",
            "",
            *_properties(schema),
            "",
        ]
        for name, definition in sorted(schema.get("$defs", {}).items()):
            out += [f"### {name}", "", _cell(definition.get("description", "")), ""]
            if "properties" in definition:
                out += [*_properties(definition), ""]
            else:
                out += [f"Type: {_cell(_schema_type(definition))}.", ""]
    return "\n".join(out)


def workspace_defaults() -> str:
    """The ``tracework.toml`` that ``tracework init`` writes."""
    from tracework.workspace import _MARKER_TEXT

    return f"```toml\n{_MARKER_TEXT}```\n"


def _first_sentence(doc: str) -> str:
    """A docstring's first sentence, on one line, reST roles kept as code: up to the first
    full stop outside a code span (at most about 200 characters)."""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    paragraph = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", paragraph).replace("``", "`")
    inside, end = False, len(paragraph)
    for i, char in enumerate(paragraph):
        if char == "`":
            inside = not inside
        elif (
            char == "."
            and not inside
            and paragraph[i + 1 : i + 2] in ("", " ")
            and not re.search(r"(e\.g|i\.e|etc)$", paragraph[:i])
        ):
            end = i
            break
    sentence = paragraph[:end]
    if len(sentence) > 200:
        sentence = sentence[:200].rsplit(" ", 1)[0] + " …"
    return sentence


def _docstring(path: Path) -> str:
    import ast

    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not doc:
        raise PluginError(f"{path.relative_to(ROOT)} has no docstring: say what it is for")
    return doc


def layers() -> list[list[str]]:
    """The import contract's layers, top first, each a list of packages or modules
    (pyproject.toml, ``[tool.importlinter]``: what ``lint-imports`` checks)."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [contract] = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    return [[name.strip() for name in layer.split("|")] for layer in contract["layers"]]


def module_map() -> str:
    """Every package and module of tracework, layer by layer from the top, each with the
    first sentence of its docstring: what it is for."""
    package = ROOT / "src" / "tracework"
    rows = ["| layer | package | module: its job |", "|---|---|---|"]
    for number, layer in enumerate(layers(), 1):
        for name in layer:
            folder = package / name
            if folder.is_dir():
                modules = sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")
                jobs = "<br>".join(
                    f"`{p.stem}` {_cell(_first_sentence(_docstring(p)))}" for p in modules
                )
                about = _cell(_first_sentence(_docstring(folder / "__init__.py")))
                rows.append(f"| {number} | `{name}/`: {about} | {jobs} |")
            else:
                job = _cell(_first_sentence(_docstring(package / f"{name}.py")))
                rows.append(f"| {number} | `{name}.py` | {job} |")
    return "\n".join(rows) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "module-map": module_map,
    "record-kinds": record_kinds,
    "error-classes": error_classes,
    "schemas": schemas,
    "workspace-defaults": workspace_defaults,
}


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Publish each JSON Schema beside the page that lists it, and the local search shim."""
    if not WORKER_SHIM.is_file():
        raise PluginError(
            f"{WORKER_SHIM.relative_to(ROOT)} is missing: run `npm ci --ignore-scripts` "
            "(or `make setup`), which installs the pinned shim the offline search needs"
        )
    files.append(File.generated(config, WORKER_SHIM_URI, abs_src_path=str(WORKER_SHIM)))
    for path in _schema_files():
        files.append(
            File.generated(config, f"reference/schemas/{path.name}", abs_src_path=str(path))
        )
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Replace each marker with the table generated from the code."""

    def generate(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_uri}: no generator named {name!r}")
        return GENERATORS[name]()

    return MARKER.sub(generate, markdown)
