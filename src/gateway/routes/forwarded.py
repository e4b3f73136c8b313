"""The rest of the OpenAI surface (SPEC §12.6): embeddings, legacy completions, audio and images.

Each endpoint routes only to models of its kind (``core/kinds.py``) through the same chain,
fallback loop, cooldowns, probes, budget, trail headers and token check as chat, and forwards the
caller's body untouched (only ``model`` is replaced when another model serves): JSON bodies are
parsed once, uploads (``multipart/form-data``) stay in JS (``shell/multipart.py``). Answers come
back as the upstream sent them, streamed through (audio included); a completions stream is relayed
as a chat stream is. Uploads may be as large as the upstreams accept (``UPLOAD_LIMIT_BYTES``) or the
body limit setting, whichever is larger.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from gateway import isolate
from gateway.call import Call
from gateway.core import rules
from gateway.core.kinds import Kind
from gateway.errors import InvalidRequestError
from gateway.serving.auth import require_api
from gateway.serving.body import read_json, read_upload, validate
from gateway.serving.forward import answer
from gateway.serving.routing import route
from gateway.shell.http import JsResponse
from gateway.shell.multipart import parse_form, require_multipart
from gateway.upstream.openai import EMBEDDINGS, Endpoint, JsonBody
from gateway.wire.openai import CompletionRequest, EmbeddingsRequest, ImageRequest, OpenAIRequest, SpeechRequest

__all__ = [
    "audio_speech",
    "audio_transcriptions",
    "audio_translations",
    "completions",
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
