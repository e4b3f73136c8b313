"""``POST /v1/chat/completions`` (SPEC §2–§4): authenticate, validate, build the chain, run the
fallback loop, and answer with what served it — or honestly with why nothing did."""

from __future__ import annotations

from gateway import isolate
from gateway.core.config import Config
from gateway.core.outcome import CallerError, LoopResult, Served
from gateway.responses import CORS_HEADERS, sse_headers
from gateway.routes import Call
from gateway.routes.auth import require_api
from gateway.routes.body import read_json, validate
from gateway.routes.routing import exhausted_error, route, routed_via, routing_headers, trail_headers
from gateway.shell import tasks
from gateway.shell.http import JsResponse, respond
from gateway.shell.stream import OpenedStream, Relay
from gateway.upstream.openai import JsonBody
from gateway.wire import headers as h
from gateway.wire.chat import ChatRequest

__all__ = ["answer", "chat_completions"]


def _served(call: Call, served: Served, stream_stall_ms: int) -> JsResponse:
    routing = routing_headers(served)
    if isinstance(served.handle, OpenedStream):
        relay = Relay(served.handle, stream_stall_ms, routing[h.ROUTED_VIA], routing[h.REQUEST_ID])
        # The pump outlives the handler: the answer's body is fed while the caller reads it.
        call.ctx.waitUntil(tasks.start(relay.run()))
        return respond(relay.readable, 200, sse_headers(routing))
    answer = served.handle
    content_type = answer.header("content-type") or "application/json"
    return respond(answer.body, answer.status, {"content-type": content_type, **CORS_HEADERS, **routing})


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
