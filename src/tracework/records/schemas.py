"""JSON Schemas generated from the models, so other tools can read tracework files.

The register's, those of what a render writes (records.json, a history.json entry,
manifest.json, a batch outcome, the check summary: :mod:`tracework.records.artefacts`),
and what ``check --json`` prints (:mod:`tracework.drift.contract`).
``tracework schema --write`` puts each in ``schemas/NAME.schema.json``.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import JsonSchemaValue

from tracework.drift.contract import CheckJson
from tracework.records.artefacts import SCHEMAS
from tracework.register.models import Register


def register_schema_text() -> str:
    """The register's JSON Schema as stable, sorted JSON text."""
    return _text(Register, "tracework source register")


def schema_texts() -> dict[str, str]:
    """Every schema tracework publishes, by name (``schemas/<name>.schema.json``): the
    register's, those of the files a render writes, and ``check --json``'s."""
    texts = {"register": register_schema_text()}
    texts.update({name: _text(model, title) for name, (model, title) in SCHEMAS.items()})
    texts["check"] = _text(CheckJson, "tracework check --json")
    return texts


def _text(model: type[BaseModel] | type[CheckJson], title: str) -> str:
    schema: JsonSchemaValue = TypeAdapter(model).json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = title
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
