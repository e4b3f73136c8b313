"""A scriptable fake of the OpenRouter origin on 127.0.0.1 (SPEC §15): its endpoints API and its chat.

The gateway is pointed at it with ``OPENROUTER_ORIGIN = fake.origin``; a provider on it has
``base_url = fake.base_url`` (origin + ``/api/v1``).

``GET /api/v1/models/{model}/endpoints`` (the model may hold ``/`` and ``:``, sent plain or
percent-encoded) answers ``{"data": {"id", "name", "endpoints": [...]}}`` with the endpoints set by
``set_endpoints`` (each built by ``endpoint``), a 404 for a model never set; ``fail_endpoints``
makes it answer an error status, ``hang_endpoints`` makes it answer nothing. Every fetch is counted
per model (``endpoint_fetches``), whatever it was answered.

``POST /api/v1/chat/completions`` is answered by the slug the gateway pinned, the first entry of
``body["provider"]["order"]`` (None when the request is not pinned): the next step queued for that
slug (``queue_for``), else the step set with ``always_for``, else a successful completion, JSON or
SSE (``"stream": true``), whose content is ``"served by <slug>"`` (``"served by unpinned"``) and
whose model is the requested one. Steps are upstream.py's ``Json``/``Sse``/``Hang``/``Reset``, or a
callable that gets the ``Call`` and returns one (e.g. ``upstream.PerKey``). ``pinned_slugs`` lists
the slug of each chat request, in order.

Every request is recorded as a ``Call`` (method, path, headers, parsed JSON body) in ``requests``;
``chat_requests`` keeps the chat ones. ``reset`` forgets everything and lets every held step go on.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

from support.upstream import FakeUpstream, Hang, Json, Reset, ScriptedServer, Sse, _held_steps, chunk, completion

__all__ = ["Call", "FakeOpenRouter", "endpoint", "pinned_slug"]

API = "/api/v1"
CHAT_PATH = f"{API}/chat/completions"
_ENDPOINTS_PREFIX = f"{API}/models/"
_ENDPOINTS_SUFFIX = "/endpoints"


def endpoint(
    slug: str,
    *,
    prompt: str = "0.000001",
    completion: str = "0.000002",
    cache_read: str = "0.0000001",
    caching: bool = True,
    throughput: float | None = 50.0,
    status: int = 0,
    uptime: float | None = 99.0,
    overrides: list[dict[str, Any]] | None = None,
    tag: str | None = None,
) -> dict[str, Any]:
    """One entry of an endpoints answer, in OpenRouter's shape. Prices are strings in USD per
    token; ``overrides`` (``{"utc_start", "utc_end", "prompt", …}``) go into ``pricing`` when given;
    ``tag`` defaults to the slug (e.g. ``tag="deepinfra/fp8"`` for slug ``deepinfra``)."""
    pricing: dict[str, Any] = {"prompt": prompt, "completion": completion, "input_cache_read": cache_read}
    if overrides is not None:
        pricing["overrides"] = overrides
    return {
        "name": slug.title(),
        "provider_name": slug.title(),
        "tag": tag or slug,
        "status": status,
        "uptime_last_30m": uptime,
        "supports_implicit_caching": caching,
        "pricing": pricing,
        "throughput_last_30m": None if throughput is None else {"p50": throughput},
        "context_length": 131072,
    }


def pinned_slug(body: Any) -> str | None:
    """The slug a chat body pins (``provider.order[0]``), None when it pins none."""
    provider = body.get("provider") if isinstance(body, dict) else None
    order = provider.get("order") if isinstance(provider, dict) else None
    first = order[0] if isinstance(order, list) and order else None
    return first if isinstance(first, str) else None


@dataclass
class Call:
    """One request the fake received. ``json`` is the parsed body (None when empty or not JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    json: Any = None

    @property
    def is_chat(self) -> bool:
        return self.method == "POST" and self.path.split("?")[0] == CHAT_PATH

    @property
    def model(self) -> str | None:
        return self.json.get("model") if isinstance(self.json, dict) else None

    @property
    def slug(self) -> str | None:
        """The slug the request pins (chat requests), None when unpinned."""
        return pinned_slug(self.json)

    @property
    def key(self) -> str | None:
        """The key the gateway sent (``authorization: Bearer <key>``); None without one."""
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return (token.strip() or None) if scheme.lower() == "bearer" else None


def _is_step(step: Any) -> bool:
    return isinstance(step, (Json, Sse, Hang, Reset))


class FakeOpenRouter(ScriptedServer):
    def __init__(self) -> None:
        self.requests: list[Call] = []
        self._endpoints: dict[str, list[dict[str, Any]]] = {}
        self._fetches: dict[str, int] = defaultdict(int)
        self._endpoints_status: int | None = None
        self._endpoints_hang: Hang | None = None
        super().__init__()

    # -- life cycle -------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """What a provider on this fake has as its ``base_url``."""
        return self.origin + API

    def reset(self) -> None:
        super().reset()
        with self._lock:
            self.requests.clear()
            self._endpoints.clear()
            self._fetches.clear()
            self._endpoints_status = None
            self._endpoints_hang = None

    # -- endpoints API ----------------------------------------------------------------------------

    def set_endpoints(self, model: str, endpoints: list[dict[str, Any]]) -> None:
        """Answer ``GET …/models/{model}/endpoints`` with these entries (see ``endpoint``)."""
        with self._lock:
            self._endpoints[model] = [dict(e) for e in endpoints]

    def endpoint_fetches(self, model: str) -> int:
        """How many times the endpoints of ``model`` were fetched (whatever the answer)."""
        with self._lock:
            return self._fetches.get(model, 0)

    def fail_endpoints(self, status: int | None) -> None:
        """Answer every endpoints fetch with this error status from now on; None: answer again."""
        with self._lock:
            self._endpoints_status = status

    def hang_endpoints(self, hang: bool = True) -> None:
        """Answer no endpoints fetch (until ``hang_endpoints(False)`` or ``reset``)."""
        with self._lock:
            held, self._endpoints_hang = self._endpoints_hang, None
            if hang:
                self._endpoints_hang = held or Hang()
                self._held.append(self._endpoints_hang)
        if held is not None and not hang:
            held.release.set()

    def _endpoints_answer(self, model: str) -> Json | Hang:
        with self._lock:
            self._fetches[model] += 1
            if self._endpoints_hang is not None:
                return self._endpoints_hang
            if self._endpoints_status is not None:
                status = self._endpoints_status
                return Json({"error": {"message": f"fake endpoints API failing with {status}", "code": status}}, status)
            endpoints = self._endpoints.get(model)
        if endpoints is None:
            return Json({"error": {"message": f"No endpoints found for {model}", "code": 404}}, 404)
        return Json({"data": {"id": model, "name": model, "endpoints": endpoints}})

    # -- chat -------------------------------------------------------------------------------------

    def chat_requests(self) -> list[Call]:
        with self._lock:
            return [c for c in self.requests if c.is_chat]

    def pinned_slugs(self) -> list[str | None]:
        """The slug each chat request pinned (None: unpinned), in order."""
        return [c.slug for c in self.chat_requests()]

    def queue_for(self, slug: str | None, *steps: Any) -> None:
        """Answer the next chat requests pinned to ``slug`` (None: unpinned ones) with ``steps``,
        one each, in order."""
        with self._lock:
            self._steps[slug].extend(steps)
            self._held.extend(_held_steps(steps))

    def always_for(self, slug: str | None, step: Any) -> None:
        """Answer every chat request pinned to ``slug`` (None: unpinned ones) that finds no queued
        step with ``step`` (a ``Json`` is copied for each use)."""
        with self._lock:
            self._always[slug] = step
            self._held.extend(_held_steps((step,)))

    def _chat_answer(self, call: Call) -> Any:
        slug = call.slug
        with self._lock:
            queued = self._steps.get(slug)
            step = queued.popleft() if queued else self._always.get(slug)
            # A copy: the writer consumes a Json step's headers.
            step = replace(step, headers=dict(step.headers)) if isinstance(step, Json) else step
        if step is None:
            return _default_answer(call)
        return step if _is_step(step) else step(call)

    # -- HTTP -------------------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self
        # The fake upstream's handler writes the steps (``_answer``: JSON, SSE, hang, reset); its
        # writers only touch ``disconnected`` on the object they are built for (a ScriptedServer).
        writer: type[Any] = FakeUpstream._handler_class(self)  # type: ignore[arg-type]

        class Handler(writer):  # type: ignore[misc, valid-type]
            def _record(self, method: str) -> Call:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                call = Call(method, self.path, {k.lower(): v for k, v in self.headers.items()}, raw, body)
                with fake._lock:
                    fake.requests.append(call)
                return call

            def do_GET(self) -> None:
                self._record("GET")
                path = self.path.split("?")[0]
                if path.startswith(_ENDPOINTS_PREFIX) and path.endswith(_ENDPOINTS_SUFFIX):
                    model = unquote(path[len(_ENDPOINTS_PREFIX) : -len(_ENDPOINTS_SUFFIX)])
                    if model:
                        self._answer(fake._endpoints_answer(model))
                        return
                self._answer(_not_found())

            def do_POST(self) -> None:
                call = self._record("POST")
                self._answer(fake._chat_answer(call) if call.is_chat else _not_found())

        return Handler


def _not_found() -> Json:
    return Json({"error": {"message": "no such route", "code": 404}}, 404)


def _default_answer(call: Call) -> Json | Sse:
    """A successful completion of the requested model naming the slug that served it."""
    model = call.model or "unknown"
    slug = call.slug
    content = f"served by {slug or 'unpinned'}"
    provider = slug.title() if slug else "Unpinned"
    body = call.json if isinstance(call.json, dict) else {}
    if not body.get("stream"):
        return Json({**completion(model, content), "provider": provider})
    events: list[Any] = [
        {**chunk(model, content), "provider": provider},
        {**chunk(model, None, "stop"), "provider": provider},
    ]
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        usage = completion(model)["usage"]
        events.append({**chunk(model), "choices": [], "usage": usage, "provider": provider})
    return Sse(events)
