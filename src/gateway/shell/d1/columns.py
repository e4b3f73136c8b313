"""Column values both ways, shared by the tables' modules: a JSON column read leniently (a row may
have been edited by hand), a Python value written as D1 stores it."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["column_value", "json_or"]


def json_or(text: Any, default: Any) -> Any:
    """A JSON column's value, or ``default`` when a row edited by hand holds something else."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return default


def column_value(value: Any) -> Any:
    """A list, tuple or dict as JSON text, a bool as 0/1, anything else as it is."""
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value))
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, bool):
        return int(value)
    return value
