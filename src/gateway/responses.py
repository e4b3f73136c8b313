"""Building answers: JSON bodies, the CORS headers every answer carries, SSE headers."""

from __future__ import annotations

import json
from typing import Any

from gateway.shell.http import JsResponse, respond
from gateway.wire import headers as h

__all__ = ["CORS_HEADERS", "json_response", "preflight_response", "sse_headers"]

CORS_HEADERS = {
    "access-control-allow-origin": "*",
    "access-control-expose-headers": ", ".join(h.EXPOSED),
}
_PREFLIGHT_HEADERS = {
    **CORS_HEADERS,
    "access-control-allow-methods": "GET, POST, PUT, DELETE, OPTIONS",
    "access-control-allow-headers": "authorization, content-type, x-api-key, x-goog-api-key",
    "access-control-max-age": "86400",
}


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> JsResponse:
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return respond(text, status, {"content-type": "application/json", **CORS_HEADERS, **(headers or {})})


def preflight_response() -> JsResponse:
    return respond(None, 204, _PREFLIGHT_HEADERS)


def sse_headers(extra: dict[str, str]) -> dict[str, str]:
    """Fresh headers for a passed-through SSE stream; never the upstream's (SPEC §2.6)."""
    return {"content-type": "text/event-stream", "cache-control": "no-cache", **CORS_HEADERS, **extra}
