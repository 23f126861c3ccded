"""A stand-in responder that answers any request in the least a valid reply can say.

A request asking for structured output (OpenAI protocol: `response_format` of type
`json_schema`) gets the minimal JSON instance of its schema: the first value of every
enum, so both test images of a two-image call land on the same side, which is where
a same-side re-ask would show. A free-text request gets one plain sentence.

Hand-written rather than taken from a library: polyfactory (in the venv) builds from
Python types, not from the JSON schema a request carries, and draws values at random;
hypothesis-jsonschema and jsf are not installed, and neither promises the minimal instance.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

FREE_TEXT = "The panels differ, but I cannot say how."
WORD = "word"


def minimal_instance(node: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    """The smallest value valid for `node` of the JSON schema `root`: required properties only,
    `minItems` items, the first enum value or `anyOf` option (pydantic's `allOf` wraps one `$ref`),
    a number's lower bound (else 1), a short word."""
    if "$ref" in node:
        *_, name = str(node["$ref"]).split("/")
        return minimal_instance(root["$defs"][name], root)
    for combined in ("anyOf", "oneOf", "allOf"):
        if combined in node:
            return minimal_instance(node[combined][0], root)
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][0]
    kind = node.get("type", "object" if "properties" in node else "string")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind == "object":
        properties = node.get("properties", {})
        return {name: minimal_instance(properties[name], root) for name in node.get("required", [])}
    if kind == "array":
        return [minimal_instance(node.get("items", {}), root) for _ in range(node.get("minItems", 0))]
    if kind in ("integer", "number"):
        low = node["exclusiveMinimum"] + 1 if "exclusiveMinimum" in node else node.get("minimum", 1)
        return min(low, node.get("maximum", low))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return WORD.ljust(node.get("minLength", 0), "s")


def output_schema(body: Any) -> Mapping[str, Any] | None:
    """The JSON schema a request asks its reply to fit, if it asks for one: an OpenAI-protocol
    `response_format`, an Anthropic forced tool's `input_schema`, a Gemini `responseJsonSchema`, an
    Ollama `format`."""
    body = body or {}
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return dict(response_format["json_schema"]["schema"])
    forced = (body.get("tool_choice") or {}).get("name")
    tool = next((tool for tool in body.get("tools") or [] if tool.get("name") == forced), None)
    if tool is not None:
        return dict(tool["input_schema"])
    gemini = (body.get("generationConfig") or {}).get("responseJsonSchema")
    if isinstance(gemini, dict):
        return dict(gemini)
    ollama = body.get("format")
    return dict(ollama) if isinstance(ollama, dict) else None


def minimal_reply(body: Any) -> str:
    """The responder: the minimal instance of the requested schema as JSON, else a plain sentence."""
    schema = output_schema(body)
    return FREE_TEXT if schema is None else json.dumps(minimal_instance(schema, schema))


RUBRIC_OK = json.dumps({"answer": 1})
"""A rubric judge's reply that accepts the answer (`judges.llm_judge.RubricVerdict`)."""
