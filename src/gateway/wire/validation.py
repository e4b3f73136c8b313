"""Turn a pydantic ``ValidationError`` into one readable message that names the field."""

from __future__ import annotations

from pydantic import ValidationError

__all__ = ["describe"]


def describe(exc: ValidationError) -> tuple[str, str]:
    """``(param, message)`` for the first error, e.g. ``("messages", "messages: List should …")``.

    Input values are never echoed (they may hold secrets such as an API key)."""
    first = exc.errors(include_url=False, include_input=False, include_context=False)[0]
    param = ".".join(str(part) for part in first["loc"]) or "body"
    message = first["msg"]
    if first["type"] == "missing":
        message = "Field required"
    elif first["type"] == "extra_forbidden":
        message = "Unknown field"
    return param, f"Invalid value for '{param}': {message}"
