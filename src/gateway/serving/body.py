"""Reading a JSON body once, within a size limit, and validating it at the edge."""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gateway.errors import BodyTooLargeError, InvalidRequestError
from gateway.shell.http import IncomingRequest
from gateway.wire.validation import describe

__all__ = ["ADMIN_BODY_LIMIT", "read_json", "read_upload", "set_fields", "validate"]

# Admin bodies are small; this bound is independent of the chat body limit.
ADMIN_BODY_LIMIT = 64 * 1024

Model = TypeVar("Model", bound=BaseModel)
Body = TypeVar("Body")


async def _within(read: Callable[[int], Awaitable[Body | None]], limit: int) -> Body:
    """What ``read(limit)`` read; 413 above ``limit`` bytes (from Content-Length before reading
    when the caller sent one), 400 when the caller's stream fails."""
    try:
        body = await read(limit)
    except OSError as exc:
        raise InvalidRequestError("The request body could not be read.") from exc
    if body is None:
        raise BodyTooLargeError(f"Request body is larger than the limit of {limit} bytes.")
    return body


async def read_upload(request: IncomingRequest, limit: int) -> Any:
    """The raw body as a JS ``ArrayBuffer`` (an upload stays in JS), within ``limit``."""
    return await _within(request.read_buffer, limit)


def _not_json(name: str) -> Any:
    # Python reads NaN, Infinity and -Infinity; JSON (RFC 8259 §6) has no such values, and an
    # upstream given the raw body would choke on them. Called only when one occurs: no cost per body.
    raise ValueError(f"{name} is not a JSON value (RFC 8259 numbers are finite)")


def _finite(text: str) -> float:
    # A number too large for a double (1e999) is JSON, but Python reads it as inf, which a body
    # re-serialised for an upstream would carry as Infinity. Called per float of the body (a few).
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large")
    return value


# One decoder for every body: ``json.loads`` given these hooks builds a new decoder, and its
# scanner, per call (issue 39: half the cost of parsing a small chat body).
_DECODER = json.JSONDecoder(parse_constant=_not_json, parse_float=_finite)


async def read_json(request: IncomingRequest, limit: int) -> tuple[bytes, Any]:
    """The raw body and its parsed JSON, within ``limit``; 400 for an empty or invalid body
    (``NaN``/``Infinity`` included: they are not JSON). Bytes are decoded as ``json.loads``
    decodes them (UTF-8, -16 or -32 by ``json.detect_encoding``)."""
    raw = await _within(request.read_body, limit)
    if not raw.strip():
        raise InvalidRequestError("The request body is empty; a JSON object is expected.", param="body")
    try:
        return raw, _DECODER.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))
    except (ValueError, RecursionError) as exc:
        raise InvalidRequestError(f"The request body is not valid JSON: {exc}", param="body") from exc


def validate(model: type[Model], data: Any) -> Model:
    """``data`` as ``model``; 400 naming the first invalid field."""
    if not isinstance(data, dict):
        raise InvalidRequestError("The request body must be a JSON object.", param="body")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        param, message = describe(exc)
        raise InvalidRequestError(message, param=param) from exc


def set_fields(body: BaseModel, nullable: frozenset[str]) -> dict[str, Any]:
    """The fields an update body set, by name; 400 for a null in a field outside ``nullable``
    (one that may be changed but never cleared)."""
    fields = body.model_dump(include=body.model_fields_set)
    for name, value in fields.items():
        if value is None and name not in nullable:
            raise InvalidRequestError(f"Invalid value for '{name}': must not be null", param=name)
    return fields
