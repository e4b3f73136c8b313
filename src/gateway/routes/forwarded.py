"""The rest of the OpenAI surface (SPEC §12.6): embeddings, legacy completions, audio and images.

Each endpoint routes only to models of its kind (``core/kinds.py``) through the same chain,
fallback loop, cooldowns, probes, budget, trail headers and token check as chat, and forwards the
caller's body untouched (only ``model`` is replaced when another model serves): JSON bodies are
parsed once, uploads (``multipart/form-data``) stay in JS (``shell/multipart.py``). Answers come
back as the upstream sent them, streamed through (audio included); a completions stream is relayed
as a chat stream is. Uploads may be as large as the upstreams accept (``UPLOAD_LIMIT_BYTES``) or the
body limit setting, whichever is larger.

``embed`` serves the translated embeddings of Gemini and Ollama (their routes build the OpenAI body
and render the vectors).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from gateway import isolate, meter
from gateway.core import rules
from gateway.core.clients import Caller
from gateway.core.config import Config
from gateway.core.counting import USAGE_TAIL_BYTES, usage_of
from gateway.core.kinds import Kind
from gateway.core.outcome import CallerError, Served
from gateway.errors import InvalidRequestError, ProviderError
from gateway.routes import Call
from gateway.routes.auth import require_api
from gateway.routes.body import read_json, read_upload, validate
from gateway.routes.chat import answer
from gateway.routes.routing import exhausted_error, route, routing_headers
from gateway.routes.surface import refusal_error
from gateway.shell.http import JsResponse
from gateway.shell.multipart import parse_form, require_multipart
from gateway.surfaces.contract import compact
from gateway.surfaces.embeddings import Vectors, read_vectors
from gateway.upstream.openai import EMBEDDINGS, Endpoint, JsonBody
from gateway.wire import headers as h
from gateway.wire.openai import CompletionRequest, EmbeddingsRequest, ImageRequest, OpenAIRequest, SpeechRequest

__all__ = [
    "Embedded",
    "audio_speech",
    "audio_transcriptions",
    "audio_translations",
    "completions",
    "embed",
    "embeddings",
    "image_edits",
    "image_generations",
    "image_variations",
]

Handler = Callable[[Call], Awaitable[JsResponse]]


def _json_door(endpoint: Endpoint, kind: Kind, wire: type[OpenAIRequest]) -> Handler:
    """A handler for a JSON endpoint whose body ``wire`` validates."""

    async def handle(call: Call) -> JsResponse:
        config = await isolate.load_config(call.env)
        caller = await require_api(call, config)
        raw, data = await read_json(call.request, config.settings.max_body_bytes)
        request = validate(wire, data)
        body = JsonBody(raw, data)
        result = await route(call, config, body, request.model, request.streaming, caller, endpoint, kind)
        return await answer(call, config, result)

    return handle


def _upload_door(endpoint: Endpoint, kind: Kind, required: tuple[str, ...]) -> Handler:
    """A handler for a ``multipart/form-data`` upload that must hold the ``required`` fields."""

    async def handle(call: Call) -> JsResponse:
        config = await isolate.load_config(call.env)
        caller = await require_api(call, config)
        limit = max(config.settings.max_body_bytes, rules.UPLOAD_LIMIT_BYTES)
        content_type = require_multipart(call.request.header("content-type"))
        form = await parse_form(await read_upload(call.request, limit), content_type)
        for field in required:
            if not form.has(field):
                raise InvalidRequestError(f"The upload has no '{field}' field.", param=field)
        result = await route(call, config, form, form.model, False, caller, endpoint, kind)
        return await answer(call, config, result)

    return handle


embeddings = _json_door(EMBEDDINGS, Kind.EMBEDDING, EmbeddingsRequest)
completions = _json_door(Endpoint("/completions"), Kind.CHAT, CompletionRequest)
audio_speech = _json_door(Endpoint("/audio/speech", accept="*/*"), Kind.SPEECH, SpeechRequest)
image_generations = _json_door(Endpoint("/images/generations"), Kind.IMAGE, ImageRequest)
audio_transcriptions = _upload_door(Endpoint("/audio/transcriptions", accept="*/*"), Kind.TRANSCRIPTION, ("file",))
audio_translations = _upload_door(Endpoint("/audio/translations", accept="*/*"), Kind.TRANSCRIPTION, ("file",))
image_edits = _upload_door(Endpoint("/images/edits"), Kind.IMAGE, ("image", "prompt"))
image_variations = _upload_door(Endpoint("/images/variations"), Kind.IMAGE, ("image",))


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
    result = await route(call, config, JsonBody(raw, body), body.get("model"), False, caller, EMBEDDINGS, Kind.EMBEDDING)
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
        meter.ended(call, broken=True)
        raise ProviderError(f"{headers[h.ROUTED_VIA]}: the upstream's answer holds no embeddings.") from exc
    if len(vectors.vectors) != (len(inputs) if isinstance(inputs, list) else 1):
        meter.ended(call, broken=True)
        raise ProviderError(f"{headers[h.ROUTED_VIA]}: the upstream's answer holds another number of embeddings.")
    if call.visit is not None:
        call.visit.report(usage_of(text[-USAGE_TAIL_BYTES:].encode()))
    return Embedded(vectors, result.candidate.model, headers)
