"""What a recorded request carried, read back from its body as a provider would read it."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any


def sent_images(body: Mapping[str, Any]) -> list[bytes]:
    """Every image of a request, decoded from its data URL, in message order."""
    return [
        base64.b64decode(block["image_url"]["url"].split(",", 1)[1])
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "image_url"
    ]
