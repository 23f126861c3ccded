"""How a figure reads in a terminal table: a missing one as "-", a rate with its interval."""

from __future__ import annotations

from typing import Any


def cell_text(value: Any) -> str:
    """The value as text; "-" where there is none (None, or NaN: no test images, no price)."""
    return "-" if value is None or value != value else str(value)


def rate_text(row: dict[str, Any], key: str, digits: int = 3) -> str:
    """A rate with its 95% Wilson interval (`key`, `key_low`, `key_high`), or "-" where there is none."""
    value, low, high = row[key], row[f"{key}_low"], row[f"{key}_high"]
    if value is None or value != value:
        return "-"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"
