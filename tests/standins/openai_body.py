"""OpenAI chat-completions bodies checked against the SDK's own request types, as the API checks them.

`CompletionCreateParamsNonStreaming` is the openai package's TypedDict of the request. Pydantic
validates its `Iterable` fields lazily and drops keys a TypedDict does not name, so the check
walks the validated body to the end (raising on a bad nested part) and names any key it dropped:
the API answers such a request "Unrecognized request argument supplied".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import TypeAdapter, ValidationError

_REQUEST = TypeAdapter(CompletionCreateParamsNonStreaming)


def body_problem(body: Any) -> str | None:
    """What the API would refuse in `body`, in its words; None for a body it takes."""
    try:
        checked = _consumed(_REQUEST.validate_python(body))
    except ValidationError as error:
        first = error.errors()[0]
        return f"Invalid value for '{'.'.join(map(str, first['loc']))}': {first['msg']}"
    unknown = _dropped(body, checked, "")
    return f"Unrecognized request argument supplied: {unknown}" if unknown else None


def _consumed(value: Any) -> Any:
    """`value` with every lazily validated iterable run to its end (its errors raised)."""
    if isinstance(value, Mapping):
        return {key: _consumed(item) for key, item in value.items()}
    if value is None or isinstance(value, str | bytes | int | float | bool):
        return value
    try:
        items = iter(value)
    except TypeError:
        return value
    return [_consumed(item) for item in items]


def _dropped(sent: Any, kept: Any, where: str) -> str | None:
    """The first key of `sent` that validation left out of `kept`, as a dotted path."""
    if isinstance(sent, Mapping) and isinstance(kept, Mapping):
        for key, item in sent.items():
            path = f"{where}.{key}" if where else str(key)
            if key not in kept:
                return path
            if (found := _dropped(item, kept[key], path)) is not None:
                return found
    elif isinstance(sent, list) and isinstance(kept, list):
        for index, (item, kept_item) in enumerate(zip(sent, kept, strict=False)):
            if (found := _dropped(item, kept_item, f"{where}[{index}]")) is not None:
                return found
    return None
