"""One request as a handler sees it (``Call``): what ``entry`` hands every handler, and what the
request-level modules (``gateway.meter``, ``gateway.serving``) keep per request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.core.counting import RequestCount
from gateway.shell.http import IncomingRequest

__all__ = ["Call"]


@dataclass(slots=True)
class Call:
    """One request as a handler sees it: the request, the Worker's ``env`` (bindings and
    variables), its ``ctx`` (``waitUntil``) and the path parameters. ``answer_headers``: headers
    every answer to this request carries, errors included (a limited client's ``X-RateLimit-*``),
    set by the auth step and added by ``entry``. ``started_ms``: when it came in; ``count``: its
    usage count once it is routed (``gateway.meter``)."""

    request: IncomingRequest
    env: Any
    ctx: Any
    params: dict[str, str]
    answer_headers: dict[str, str] = field(default_factory=dict)
    started_ms: int = 0
    count: RequestCount | None = None
