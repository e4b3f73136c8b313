"""``POST /v1/chat/completions`` (SPEC §2–§4): authenticate, validate, build the chain, run the
fallback loop, and answer with what served it — or honestly with why nothing did."""

from __future__ import annotations

from collections.abc import Awaitable

from gateway import isolate, meter
from gateway.core.config import Config
from gateway.core.outcome import CallerError, LoopResult, Served
from gateway.core.usage import estimate_answer, usage_of
from gateway.responses import CORS_HEADERS, sse_headers
from gateway.routes import Call
from gateway.routes.auth import require_api
from gateway.routes.body import read_json, validate
from gateway.routes.routing import exhausted_error, route, routed_via, routing_headers, trail_headers
from gateway.shell import tasks
from gateway.shell.http import JsResponse, UpstreamResponse, copied, respond
from gateway.shell.stream import OpenedStream, Relay
from gateway.upstream.openai import JsonBody
from gateway.wire import headers as h
from gateway.wire.chat import ChatRequest

__all__ = ["answer", "chat_completions"]

# A non-streamed JSON answer is read for its usage up to this size (by its content-length).
_USAGE_READ_MAX_BYTES = 1024 * 1024


def _served(call: Call, served: Served, stream_stall_ms: int) -> JsResponse:
    routing = routing_headers(served)
    if isinstance(served.handle, OpenedStream):
        opened = served.handle
        on_end = meter.stream_ended(call, opened.head)
        relay = Relay(opened, stream_stall_ms, routing[h.ROUTED_VIA], routing[h.REQUEST_ID], on_end)
        # The pump outlives the handler: the answer's body is fed while the caller reads it.
        call.ctx.waitUntil(tasks.start(relay.run()))
        return respond(relay.readable, 200, sse_headers(routing))
    answer = served.handle
    content_type = answer.header("content-type") or "application/json"
    body = answer.body
    if body is not None and call.visit is not None and _usage_readable(answer, content_type):
        # The caller's copy goes natively; the other is read after the answer is returned, for
        # the usage the body states (SPEC §17).
        body, read = copied(body)
        call.visit.deferred = True
        call.ctx.waitUntil(tasks.start(_count_answer(call, read)))
    return respond(body, answer.status, {"content-type": content_type, **CORS_HEADERS, **routing})


def _usage_readable(answer: UpstreamResponse, content_type: str) -> bool:
    """A JSON answer small enough to read for its usage (an image's base64 is not worth reading)."""
    if "json" not in content_type:
        return False
    length = answer.header("content-length")
    return length is None or not length.isdigit() or int(length) <= _USAGE_READ_MAX_BYTES


async def _count_answer(call: Call, read: Awaitable[bytes]) -> None:
    data = await read
    tokens = usage_of(data)
    meter.ended(call, tokens, 0 if tokens is not None else estimate_answer(data))


def _caller_error(result: CallerError) -> JsResponse:
    """The upstream's own 4xx, passed through as it is (SPEC §4: the caller's fault)."""
    observed = result.observed
    content_type = observed.headers.get("content-type", "application/json")
    headers = {"content-type": content_type, **CORS_HEADERS, **trail_headers(result.trail)}
    headers[h.ROUTED_VIA] = routed_via(result.candidate)
    return respond(observed.body, observed.status or 400, headers)


def answer(call: Call, config: Config, result: LoopResult) -> JsResponse:
    """The caller's answer to a forwarded request (its body untranslated): what served it, the
    stream relayed or the body streamed through with the upstream's content type; the upstream's
    own 4xx as it is; or the honest error when nothing served."""
    if isinstance(result, Served):
        return _served(call, result, config.settings.stream_stall_ms)
    if isinstance(result, CallerError):
        return _caller_error(result)
    raise exhausted_error(result)


async def chat_completions(call: Call) -> JsResponse:
    config = await isolate.load_config(call.env)
    caller = await require_api(call, config)
    raw, data = await read_json(call.request, config.settings.max_body_bytes)
    chat = validate(ChatRequest, data)
    result = await route(call, config, JsonBody(raw, data), chat.model, chat.streaming, caller)
    return answer(call, config, result)
