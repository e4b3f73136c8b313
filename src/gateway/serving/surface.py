"""The one route driver every translated surface plugs into (SPEC §12).

A surface's handler reads its request, translates it into an OpenAI chat body (pure, in
``gateway.surfaces``) and hands it here as a ``Plan``. ``serve`` runs it through the same chain,
fallback loop, cooldowns, probes and budget as ``/v1/chat/completions`` and answers in the
surface's own shape: a translated answer, a translated stream (the relay feeds the translator
after the first upstream event, so integrity, stall and disconnect handling stay in one place),
or the surface's error body. ``speaks`` renders every ``GatewayError`` of a handler in that shape.

``embed`` serves the translated embeddings of Gemini and Ollama (their routes build the OpenAI body
and render the vectors).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from gateway import meter
from gateway.answers import json_response
from gateway.call import Call
from gateway.core.classify import error_message
from gateway.core.clients import Caller
from gateway.core.config import Config
from gateway.core.counting import USAGE_TAIL_BYTES, Tokens, estimate_text, usage_of
from gateway.core.kinds import Kind
from gateway.core.outcome import CallerError, Served
from gateway.errors import GatewayError, InvalidRequestError, ProviderError, RoutingError
from gateway.serving.body import read_json, validate
from gateway.serving.relay import relay_stream
from gateway.serving.rescue import rescuer
from gateway.serving.routing import exhausted_error, route, routed_via, routing_headers, trail_headers
from gateway.shell.http import JsResponse
from gateway.shell.stream import OpenedStream
from gateway.surfaces.chat import Answer, read_answer
from gateway.surfaces.contract import StreamTranslator, compact, estimate_tokens
from gateway.surfaces.embeddings import Vectors, read_vectors
from gateway.upstream.openai import EMBEDDINGS, JsonBody
from gateway.wire import headers as h
from gateway.wire.chat import ChatRequest

__all__ = [
    "Embedded",
    "ErrorRenderer",
    "Plan",
    "embed",
    "error_answer",
    "read_object",
    "refusal_error",
    "serve",
    "speaks",
    "speaks_as",
    "upstream_message",
]

# (status, OpenAI-style error type, message) -> the surface's error body.
ErrorRenderer = Callable[[int, str, str], Any]
Handler = Callable[[Call], Awaitable[JsResponse]]


@dataclass(frozen=True, slots=True)
class Plan:
    """What a surface asks of the router. ``answer(answer, served_model)`` builds the
    non-streamed body; ``translator(served_model, input_estimate)`` the stream translator
    (``input_estimate``: the prompt's ``estimate_tokens``, for a surface that announces it before
    the upstream's usage comes)."""

    chat: dict[str, Any]
    stream: bool
    answer: Callable[[Answer, str], Any]
    translator: Callable[[str, int], StreamTranslator]
    render_error: ErrorRenderer


def error_answer(render_error: ErrorRenderer | None, exc: GatewayError) -> JsResponse:
    """``exc`` in the surface's shape; ``None``: the gateway's own OpenAI body, ``code``, ``param``,
    ``retryAtMs`` and ``cooldowns`` included (the Responses API speaks OpenAI's errors)."""
    body = exc.body() if render_error is None else render_error(exc.status, exc.type, exc.message)
    return json_response(body, exc.status, exc.headers)


def speaks(render_error: ErrorRenderer | None) -> Callable[[Handler], Handler]:
    """A handler whose errors answer in the surface's shape (with their status and headers);
    ``None`` keeps the gateway's own OpenAI error body."""
    return speaks_as(lambda _call: render_error)


def speaks_as(choose: Callable[[Call], ErrorRenderer | None]) -> Callable[[Handler], Handler]:
    """As ``speaks``, for a route whose shape depends on the request (``/v1/models``)."""

    def decorate(handler: Handler) -> Handler:
        @wraps(handler)
        async def handle(call: Call) -> JsResponse:
            try:
                return await handler(call)
            except GatewayError as exc:
                return error_answer(choose(call), exc)

        return handle

    return decorate


def upstream_message(body: str) -> str:
    """The message of an upstream's error body (``classify.error_message``), else its text."""
    return error_message(body) or body.strip()[:500] or "The upstream refused the request."


async def read_object(call: Call, config: Config) -> dict[str, Any]:
    """The request's JSON object, read once within the body limit; 400 if it is not an object."""
    _, data = await read_json(call.request, config.settings.max_body_bytes)
    if not isinstance(data, dict):
        raise InvalidRequestError("The request body must be a JSON object.", param="body")
    return data


async def _answer(call: Call, served: Served, plan: Plan, headers: dict[str, str]) -> JsResponse:
    text = await served.handle.text()
    try:
        body = json.loads(text)
    except ValueError as exc:
        meter.end(call, broken=True)
        raise ProviderError(f"{headers[h.ROUTED_VIA]}: the upstream's answer is not JSON.") from exc
    answer = read_answer(body)
    if call.count is not None:
        if answer.input_tokens or answer.output_tokens:
            call.count.report(Tokens.stated(answer.input_tokens, answer.output_tokens, answer.cached_tokens))
        else:
            call.count.report(None, estimate_text(len(answer.text.encode()) + len(answer.reasoning.encode())))
    return json_response(plan.answer(answer, served.candidate.model), headers=headers)


async def _stream(
    call: Call,
    config: Config,
    served: Served,
    plan: Plan,
    headers: dict[str, str],
    input_estimate: int,
    caller: Caller,
) -> JsResponse:
    translator = plan.translator(served.candidate.model, input_estimate)
    rescue = rescuer(call, config, plan.chat, plan.stream, caller, served, input_estimate)
    return await relay_stream(call, config, served, headers, translator, rescue)


async def serve(call: Call, config: Config, plan: Plan, caller: Caller) -> JsResponse:
    """Route ``plan.chat`` and answer in the surface's shape (see the module doc); ``caller``:
    what ``require_api`` returned."""
    chat = validate(ChatRequest, plan.chat)
    text = compact(plan.chat)
    result = await route(call, config, JsonBody(text.encode(), plan.chat), chat.model, plan.stream, caller)
    if isinstance(result, Served):
        headers = routing_headers(result)
        if isinstance(result.handle, OpenedStream):
            return await _stream(call, config, result, plan, headers, estimate_tokens(plan.chat, text), caller)
        return await _answer(call, result, plan, headers)
    if isinstance(result, CallerError):
        return error_answer(plan.render_error, refusal_error(result))
    raise exhausted_error(result)


def refusal_error(result: CallerError) -> RoutingError:
    """The upstream's own refusal of the caller's request (a 4xx, SPEC §4) as an error a translated
    surface renders in its shape: its status, its message, and the routing headers."""
    observed = result.observed
    status = observed.status or 400
    headers = {h.ROUTED_VIA: routed_via(result.candidate), **trail_headers(result.trail, result.passed)}
    type_, code = (
        ("invalid_request_error", "invalid_request") if status < 500 else ("provider_error", "upstream_failed")
    )
    return RoutingError(status, type_, code, upstream_message(observed.body), headers=headers)


@dataclass(frozen=True, slots=True)
class Embedded:
    """A translated embeddings request's result: the vectors, the model that served them, and the
    routing headers to answer with."""

    vectors: Vectors
    model: str
    headers: dict[str, str]


async def embed(call: Call, config: Config, caller: Caller, body: dict[str, Any]) -> Embedded:
    """Route the OpenAI embeddings ``body`` (a surface's translation) and read the vectors, one
    per input. Raises ``GatewayError``s for the surface to render: the upstream's own 4xx with its
    status, 502 for an answer that holds no vectors or not one per input, and the honest error
    when nothing served."""
    raw = compact(body).encode()
    result = await route(
        call, config, JsonBody(raw, body), body.get("model"), False, caller, EMBEDDINGS, Kind.EMBEDDING
    )
    if isinstance(result, CallerError):
        raise refusal_error(result)
    if not isinstance(result, Served):
        raise exhausted_error(result)
    headers = routing_headers(result)
    text = await result.handle.text()
    inputs = body["input"]
    try:
        vectors = read_vectors(json.loads(text))
    except (ValueError, RecursionError, struct.error) as exc:
        meter.end(call, broken=True)
        raise ProviderError(f"{headers[h.ROUTED_VIA]}: the upstream's answer holds no embeddings.") from exc
    if len(vectors.vectors) != (len(inputs) if isinstance(inputs, list) else 1):
        meter.end(call, broken=True)
        raise ProviderError(f"{headers[h.ROUTED_VIA]}: the upstream's answer holds another number of embeddings.")
    if call.count is not None:
        call.count.report(usage_of(text[-USAGE_TAIL_BYTES:].encode()))
    return Embedded(vectors, result.candidate.model, headers)
