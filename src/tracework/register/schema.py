"""JSON Schemas generated from the models, so other tools can read tracework files."""

from __future__ import annotations

import json

from tracework.register.models import Register


def register_schema_text() -> str:
    """The register's JSON Schema as stable, sorted JSON text."""
    schema = Register.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "tracework source register"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
