"""Which JSON schemas OpenAI's structured outputs can enforce exactly (`strict: true`).

Strict mode guarantees a reply that fits the schema, but only for a subset of JSON Schema: every
object lists all its properties as required and allows no others, and only the keywords below
appear (the OpenAI API reference, "Supported schemas"). A schema outside it (an optional field, a
`default`, a `pattern`) is sent non-strict, as before: the model is asked for it and the reply is
validated here.
"""

from __future__ import annotations

from typing import Any

STRICT_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "items", "enum", "const", "anyOf", "$ref", "$defs",
        "definitions", "description", "title", "additionalProperties",
    }
)  # fmt: skip


def fits_strict(schema: Any) -> bool:
    """Whether `schema` (a JSON schema, nested ones included) is inside the strict subset."""
    if isinstance(schema, list):
        return all(fits_strict(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if not set(schema) <= STRICT_KEYWORDS:
        return False
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        if set(schema.get("required", [])) != set(properties) or schema.get("additionalProperties", False):
            return False
        if not fits_strict(list(properties.values())):
            return False
    nested = [schema.get(key) for key in ("items", "anyOf") if key in schema]
    nested += list(schema.get("$defs", {}).values()) + list(schema.get("definitions", {}).values())
    return fits_strict(nested)
