"""``POST /v1/chat/completions`` (SPEC §2–§4): authenticate, validate, build the chain, run the
fallback loop, and answer with what served it — or honestly with why nothing did."""

from __future__ import annotations

import asyncio

from gateway import isolate
from gateway.core.chain import build_chain
from gateway.core.loop import run_loop
from gateway.core.outcome import CallerError, Exhausted, Served
from gateway.core.trail import Trail, attempts_header, header_safe, trail_header
from gateway.errors import RoutingError
from gateway.responses import CORS_HEADERS, sse_headers
from gateway.routes import Call
from gateway.routes.auth import require_api
from gateway.routes.body import read_json, validate
from gateway.shell.http import JsResponse, respond
from gateway.shell.stream import OpenedStream, Relay
from gateway.upstream.openai import ChatBody, OpenAIUpstream
from gateway.wire import headers as h
from gateway.wire.chat import ChatRequest
from gateway.wire.cooldowns import cooldown_json

__all__ = ["chat_completions"]


def _trail_headers(trail: Trail) -> dict[str, str]:
    attempts, text = attempts_header(trail), trail_header(trail)
    return {h.FALLBACK_ATTEMPTS: attempts, h.FALLBACK_TRAIL: text} if attempts and text else {}


def _served(call: Call, served: Served, stream_stall_ms: int) -> JsResponse:
    candidate = served.candidate
    routing = {h.ROUTED_VIA: header_safe(f"{candidate.provider.name}/{candidate.model}")}
    if served.degraded_from is not None:
        routing[h.FALLBACK_FROM] = header_safe(served.degraded_from)
    routing |= _trail_headers(served.trail)
    if isinstance(served.handle, OpenedStream):
        relay = Relay(served.handle, stream_stall_ms, routing[h.ROUTED_VIA])
        # The pump outlives the handler: the answer's body is fed while the caller reads it.
        call.ctx.waitUntil(asyncio.ensure_future(relay.run()))
        return respond(relay.readable, 200, sse_headers(routing))
    answer = served.handle
    content_type = answer.header("content-type") or "application/json"
    return respond(answer.body, answer.status, {"content-type": content_type, **CORS_HEADERS, **routing})


def _caller_error(result: CallerError) -> JsResponse:
    """The upstream's own 4xx, passed through as it is (SPEC §4: the caller's fault)."""
    observed = result.observed
    content_type = observed.headers.get("content-type", "application/json")
    headers = {"content-type": content_type, **CORS_HEADERS, **_trail_headers(result.trail)}
    candidate = result.candidate
    headers[h.ROUTED_VIA] = header_safe(f"{candidate.provider.name}/{candidate.model}")
    return respond(observed.body, observed.status or 400, headers)


def _exhausted(result: Exhausted) -> RoutingError:
    now_ms = isolate.now_ms()
    extra: dict[str, object] = {}
    headers = _trail_headers(result.trail)
    if result.retry_at_ms is not None:
        extra["retryAtMs"] = result.retry_at_ms
        headers[h.RETRY_AFTER] = str(result.retry_after_s(now_ms))
    if result.cooldowns:
        extra["cooldowns"] = [cooldown_json(c, now_ms) for c in result.cooldowns]
    return RoutingError(result.status, result.type, result.code, result.message, extra=extra, headers=headers)


async def chat_completions(call: Call) -> JsResponse:
    config = await isolate.load_config(call.env)
    hops = require_api(call.request, config)
    raw, data = await read_json(call.request, config.settings.max_body_bytes)
    chat = validate(ChatRequest, data)
    state = isolate.current().router
    chain = build_chain(list(config.enabled_providers), chat.model, state, isolate.now_ms())
    attempt = OpenAIUpstream(config, ChatBody(raw, data), chat.streaming, hops)
    result = await run_loop(chain, attempt, settings=config.settings, state=state, clock=isolate.CLOCK)
    if isinstance(result, Served):
        return _served(call, result, config.settings.stream_stall_ms)
    if isinstance(result, CallerError):
        return _caller_error(result)
    raise _exhausted(result)
