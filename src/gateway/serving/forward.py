"""The answer to a forwarded request (SPEC §2–§4, §12.6): the caller's body went to the upstream
untranslated (chat, and the rest of the OpenAI surface), and so does the answer come back.

What served it answers: its stream relayed (``relay``), or its body streamed through with the
upstream's content type, read whole first when it states the usage (SPEC §17); the upstream's own
4xx is passed through as it is (the caller's fault); when nothing served, the honest error.
"""

from __future__ import annotations

from gateway.answers import CORS_HEADERS
from gateway.call import Call
from gateway.core.config import Config
from gateway.core.counting import USAGE_TAIL_BYTES, estimate_answer, usage_of
from gateway.core.outcome import CallerError, LoopResult, Served
from gateway.serving.relay import relay_stream
from gateway.serving.routing import exhausted_error, routed_via, routing_headers, trail_headers
from gateway.shell.http import JsResponse, respond, tail_bytes
from gateway.shell.rescue import Rescuer
from gateway.shell.stream import OpenedStream
from gateway.wire import headers as h

__all__ = ["answer"]

# The front doors whose non-streamed answers are read for their usage (SPEC §17).
_USAGE_SURFACES = frozenset({"chat", "completions", "embeddings"})
# An answer without usage is estimated by its text up to this size; a larger one counts none.
_ESTIMATE_MAX_BYTES = 1024 * 1024


async def _served(call: Call, config: Config, served: Served, rescue: Rescuer | None) -> JsResponse:
    routing = routing_headers(served)
    if isinstance(served.handle, OpenedStream):
        return await relay_stream(call, config, served, routing, rescue=rescue)
    answer = served.handle
    content_type = answer.header("content-type") or "application/json"
    body = answer.body
    if body is not None and call.count is not None and _states_usage(call.count.surface, content_type):
        # Read whole, as the caller would wait for it anyway; only its end is copied into Python,
        # for the usage it states (SPEC §17), and the buffer is answered as it came.
        read = await answer.buffered()
        if read is not None:
            body, size = read
            tokens = usage_of(tail_bytes(body, size, USAGE_TAIL_BYTES))
            estimate = (
                0 if tokens is not None or size > _ESTIMATE_MAX_BYTES else estimate_answer(tail_bytes(body, size, size))
            )
            call.count.report(tokens, estimate)
    return respond(body, answer.status, {"content-type": content_type, **CORS_HEADERS, **routing})


def _states_usage(surface: str, content_type: str) -> bool:
    """An answer that states its tokens: a JSON chat, completion or embeddings answer (an image's
    or a transcription's is not worth reading)."""
    return surface in _USAGE_SURFACES and "json" in content_type


def _caller_error(result: CallerError) -> JsResponse:
    """The upstream's own 4xx, passed through as it is (SPEC §4: the caller's fault)."""
    observed = result.observed
    content_type = observed.headers.get("content-type", "application/json")
    headers = {"content-type": content_type, **CORS_HEADERS, **trail_headers(result.trail, result.passed)}
    headers[h.ROUTED_VIA] = routed_via(result.candidate)
    return respond(observed.body, observed.status or 400, headers)


async def answer(call: Call, config: Config, result: LoopResult, rescue: Rescuer | None = None) -> JsResponse:
    """The caller's answer to a forwarded request (its body untranslated): what served it, the
    stream relayed or the body streamed through with the upstream's content type; the upstream's
    own 4xx as it is; or the honest error when nothing served. ``rescue``: a chat stream's, when
    rescue is on for it (SPEC §16)."""
    if isinstance(result, Served):
        return await _served(call, config, result, rescue)
    if isinstance(result, CallerError):
        return _caller_error(result)
    raise exhausted_error(result)
