"""``POST /v1/chat/completions`` (SPEC §2–§4): authenticate, validate, build the chain, run the
fallback loop, and answer with what served it — or honestly with why nothing did."""

from __future__ import annotations

from gateway import isolate, meter
from gateway.core.config import Config
from gateway.core.counting import USAGE_TAIL_BYTES, estimate_answer, usage_of
from gateway.core.outcome import CallerError, LoopResult, Served
from gateway.responses import CORS_HEADERS, sse_headers
from gateway.routes import Call
from gateway.routes.auth import require_api
from gateway.routes.body import read_json, validate
from gateway.routes.rescue import LoopRescuer, rescuer
from gateway.routes.routing import exhausted_error, input_estimate, route, routed_via, routing_headers, trail_headers
from gateway.shell import tasks
from gateway.shell.http import JsResponse, respond, tail_bytes
from gateway.shell.stream import OpenedStream, Relay
from gateway.shell.translation import TranslatedRelay
from gateway.surfaces.passthrough import ChatPassThrough
from gateway.upstream.openai import JsonBody
from gateway.wire import headers as h
from gateway.wire.chat import ChatRequest

__all__ = ["answer", "chat_completions"]

# The front doors whose non-streamed answers are read for their usage (SPEC §17).
_USAGE_SURFACES = frozenset({"chat", "completions", "embeddings"})
# An answer without usage is estimated by its text up to this size; a larger one counts none.
_ESTIMATE_MAX_BYTES = 1024 * 1024


async def _served(call: Call, config: Config, served: Served, rescue: LoopRescuer | None) -> JsResponse:
    routing = routing_headers(served)
    if isinstance(served.handle, OpenedStream):
        opened = served.handle
        stall_ms = config.settings.stream_stall_ms
        on_end = meter.stream_ended(call, opened.head)
        relay: Relay | TranslatedRelay
        if rescue is None:
            relay = Relay(opened, stall_ms, routing[h.ROUTED_VIA], routing[h.REQUEST_ID], on_end)
        else:
            # Rescue on (SPEC §16): relayed as the translated surfaces are, event by whole event,
            # so that a cut leaves no half event before the rescue's chunks.
            key = served.candidate.key
            secret = config.key_memo.plain(key) if key is not None else None
            relay = TranslatedRelay(
                opened, stall_ms, routing[h.ROUTED_VIA], ChatPassThrough(), secret, routing[h.REQUEST_ID], on_end,
                rescue,
            )
        # The pump outlives the handler: the answer's body is fed while the caller reads it.
        call.ctx.waitUntil(tasks.start(relay.run()))
        meter.hand_over(call)
        return respond(relay.readable, 200, sse_headers(routing))
    answer = served.handle
    content_type = answer.header("content-type") or "application/json"
    body = answer.body
    if body is not None and call.visit is not None and _states_usage(call.visit.surface, content_type):
        # Read whole, as the caller would wait for it anyway; only its end is copied into Python,
        # for the usage it states (SPEC §17), and the buffer is answered as it came.
        read = await answer.buffered()
        if read is not None:
            body, size = read
            tokens = usage_of(tail_bytes(body, size, USAGE_TAIL_BYTES))
            estimate = 0 if tokens is not None or size > _ESTIMATE_MAX_BYTES else estimate_answer(tail_bytes(body, size, size))
            call.visit.report(tokens, estimate)
    return respond(body, answer.status, {"content-type": content_type, **CORS_HEADERS, **routing})


def _states_usage(surface: str, content_type: str) -> bool:
    """An answer that states its tokens: a JSON chat, completion or embeddings answer (an image's
    or a transcription's is not worth reading)."""
    return surface in _USAGE_SURFACES and "json" in content_type


def _caller_error(result: CallerError) -> JsResponse:
    """The upstream's own 4xx, passed through as it is (SPEC §4: the caller's fault)."""
    observed = result.observed
    content_type = observed.headers.get("content-type", "application/json")
    headers = {"content-type": content_type, **CORS_HEADERS, **trail_headers(result.trail)}
    headers[h.ROUTED_VIA] = routed_via(result.candidate)
    return respond(observed.body, observed.status or 400, headers)


async def answer(call: Call, config: Config, result: LoopResult, rescue: LoopRescuer | None = None) -> JsResponse:
    """The caller's answer to a forwarded request (its body untranslated): what served it, the
    stream relayed or the body streamed through with the upstream's content type; the upstream's
    own 4xx as it is; or the honest error when nothing served. ``rescue``: a chat stream's, when
    rescue is on for it (SPEC §16)."""
    if isinstance(result, Served):
        return await _served(call, config, result, rescue)
    if isinstance(result, CallerError):
        return _caller_error(result)
    raise exhausted_error(result)


async def chat_completions(call: Call) -> JsResponse:
    config = await isolate.load_config(call.env)
    caller = await require_api(call, config)
    raw, data = await read_json(call.request, config.settings.max_body_bytes)
    chat = validate(ChatRequest, data)
    body = JsonBody(raw, data)
    result = await route(call, config, body, chat.model, chat.streaming, caller)
    rescue = None
    if isinstance(result, Served) and isinstance(result.handle, OpenedStream):
        rescue = rescuer(call, config, data, chat.streaming, caller, result, input_estimate(body))
    return await answer(call, config, result, rescue)
