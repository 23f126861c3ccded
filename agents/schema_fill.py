"""Filling any output schema from what a non-LLM agent knows, so its reply validates against it.

A call's schema names its fields; the agent knows some values by name (`answer`,
`rule`, `summary`, ...). Every field gets its known value, converted to the
field's type, or else a default that is true of any call: the call's explanation
for text, an empty list for a list. A field that needs one of a fixed set of
values (an enum, a literal) or a number has no honest default, so its absence is
an error that names it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agents.call import CallSpec, schema_json
from datasets_io.errors import BongardError


class SchemaFillError(BongardError, ValueError):
    """A field of the reply schema the agent has no honest value for; the message names it."""


def _resolve(schema: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    """`node` with a `$ref` followed and an optional (`anyOf` with null) reduced to its non-null type."""
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolve(schema, schema["$defs"][ref.removeprefix("#/$defs/")])
    options = [option for option in node.get("anyOf", []) if option.get("type") != "null"]
    return _resolve(schema, options[0]) if options else node


def _kind(node: Mapping[str, Any]) -> str:
    if "properties" in node:
        return "object"
    kind = node.get("type", "string")
    return kind if isinstance(kind, str) else next(k for k in kind if k != "null")


def _convert(
    schema: Mapping[str, Any], node: Mapping[str, Any], value: Any, name: str, explanation: str
) -> Any:
    node = _resolve(schema, node)
    kind = _kind(node)
    if kind == "array":
        items = node.get("items", {})
        listed = value if isinstance(value, list | tuple) else [value]
        return [_convert(schema, items, item, name, explanation) for item in listed]
    if kind == "object":
        if not isinstance(value, Mapping):
            raise SchemaFillError(f"the field {name!r} takes an object, and the agent has {value!r}")
        return fill(schema, value, explanation, node)
    if isinstance(value, list | tuple) and kind == "string":
        value = "; ".join(map(str, value))
    converted = {"string": str, "integer": int, "number": float, "boolean": bool}.get(kind, lambda v: v)(
        value
    )
    allowed = node["enum"] if "enum" in node else [node["const"]] if "const" in node else None
    if allowed is not None and converted not in allowed:
        raise SchemaFillError(f"the field {name!r} takes one of {allowed}, and the agent has {value!r}")
    return converted


def _default(
    schema: Mapping[str, Any], node: Mapping[str, Any], known: Mapping[str, Any], explanation: str, name: str
) -> Any:
    node = _resolve(schema, node)
    kind = _kind(node)
    if "enum" in node or "const" in node or kind not in ("string", "array", "object"):
        raise SchemaFillError(f"the agent has no value for the field {name!r} of the reply schema")
    if kind == "object":
        return fill(schema, known, explanation, node)
    return explanation if kind == "string" else []


def fill(
    schema: Mapping[str, Any],
    known: Mapping[str, Any],
    explanation: str,
    node: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An object for `node` (default: the whole schema): known values by property name, defaults elsewhere."""
    properties: Mapping[str, Any] = _resolve(schema, schema if node is None else node).get("properties", {})
    return {
        name: _convert(schema, prop, known[name], name, explanation)
        if name in known
        else _default(schema, prop, known, explanation, name)
        for name, prop in properties.items()
    }


CONCLUSIONS = {"left": "positive", "right": "negative"}
"""A left-side query is positive (it shows the left concept)."""


def side_decision(side: str, explanation: str, concept: str, query: str) -> dict[str, str]:
    """One test panel's decision under every name a classify schema may ask for."""
    return {
        "answer": side.upper(),
        "conclusion": CONCLUSIONS[side],
        "explanation": explanation,
        "analysis": explanation,
        "concept": concept,
        "rule": concept,
        "query": query,
    }


def _panel_fields(schema: Mapping[str, Any]) -> list[str]:
    """The schema's fields that hold one test panel's decision each (objects), in order."""
    properties = schema.get("properties", {})
    return [key for key, node in properties.items() if "$ref" in node or node.get("type") == "object"]


def decisions_reply(call: CallSpec, decisions: list[dict[str, Any]]) -> str:
    """Classification decisions (one per test panel, each with an `explanation`) in the call's
    schema: one decision's fields, or one object per test panel (fields beside those, such as
    Bongard-RWR+'s shared `concept`, from the first decision); plain lines without a schema."""
    if call.output_schema is None:
        return "\n".join(f"{d['answer']}: {d['explanation']}" for d in decisions)
    schema = schema_json(call.output_schema)
    panels = _panel_fields(schema)
    if panels and len(panels) != len(decisions):
        raise SchemaFillError(f"the schema has {len(panels)} fields for {len(decisions)} test panels")
    per_panel = dict(zip(panels, decisions, strict=True)) if panels else {}
    known = {**decisions[0], **per_panel}  # the fields beside the panels' objects: the first decision's
    return json.dumps(fill(schema, known, decisions[0]["explanation"]))
