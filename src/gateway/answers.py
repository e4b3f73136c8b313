"""Building answers: JSON bodies, the CORS headers every answer carries, a stream's headers."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from gateway.shell.http import JsResponse, respond
from gateway.wire import headers as h

__all__ = ["CORS_HEADERS", "PRIVATE_HEADERS", "iso_utc", "json_response", "preflight_response", "stream_headers"]

CORS_HEADERS = {
    "access-control-allow-origin": "*",
    "access-control-expose-headers": ", ".join(h.EXPOSED),
}
# Admin answers and the config page (SPEC §14): never cached (they hold hints, settings and, once,
# a client token) and the page's address never leaks to another origin.
PRIVATE_HEADERS = {"cache-control": "no-store", "referrer-policy": "no-referrer"}
_HEADER_LIST = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+(?:\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*")
_PREFLIGHT_HEADERS = {
    **CORS_HEADERS,
    "access-control-allow-methods": "GET, POST, PUT, DELETE, OPTIONS",
    "access-control-allow-headers": "authorization, content-type, x-api-key, x-goog-api-key",
    "access-control-max-age": "86400",
}


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> JsResponse:
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return respond(text, status, {"content-type": "application/json", **CORS_HEADERS, **(headers or {})})


def preflight_response(requested_headers: str | None) -> JsResponse:
    """204 for a CORS preflight. The headers a browser asks for are allowed as asked (OpenAI's
    browser SDK sends ``x-stainless-*`` and ``openai-*`` ones); tokens still decide access."""
    headers = dict(_PREFLIGHT_HEADERS)
    if requested_headers and _HEADER_LIST.fullmatch(requested_headers):
        headers["access-control-allow-headers"] = requested_headers
    return respond(None, 204, headers)


def stream_headers(media_type: str, extra: dict[str, str]) -> dict[str, str]:
    """Fresh headers for a relayed stream of ``media_type``; never the upstream's (SPEC §2.6)."""
    return {"content-type": media_type, "cache-control": "no-cache", **CORS_HEADERS, **extra}


def iso_utc(epoch_s: float) -> str:
    """An answer's time stamp in ISO 8601, UTC, ``Z``-suffixed (Anthropic's and Ollama's)."""
    return datetime.fromtimestamp(epoch_s, UTC).isoformat().replace("+00:00", "Z")
