"""Gemini (SPEC §12.4): ``/v1beta/models…`` and, for the google-genai SDK's default, ``/v1/models…``.

The token may also come in ``?key=``; ``:streamGenerateContent`` streams SSE with ``?alt=sse``
and a JSON array without it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway import isolate
from gateway.answers import json_response
from gateway.call import Call
from gateway.core.clients import Caller
from gateway.core.config import Config
from gateway.serving.auth import require_api
from gateway.serving.catalog import caller_catalog, embedding_models, gemini_model
from gateway.serving.surface import Plan, embed, read_object, serve, speaks
from gateway.shell.http import JsResponse
from gateway.surfaces import embeddings, gemini, models
from gateway.surfaces.embeddings import Vectors

__all__ = [
    "batch_embed_contents",
    "count_tokens",
    "embed_content",
    "generate_content",
    "get_model",
    "list_models",
    "stream_generate_content",
]


async def _authorized(call: Call) -> tuple[Config, Caller]:
    config = await isolate.load_config(call.env)
    return config, await require_api(call, config, query_key=True)


@speaks(gemini.render_error)
async def list_models(call: Call) -> JsResponse:
    config, caller = await _authorized(call)
    ids = [model for model, _ in caller_catalog(config, caller)]
    return json_response(models.gemini_models(ids, embedding_models(config)))


@speaks(gemini.render_error)
async def get_model(call: Call) -> JsResponse:
    config, caller = await _authorized(call)
    return json_response(gemini_model(config, caller, call.params["model"]))


async def _generate(call: Call, stream: bool) -> JsResponse:
    config, caller = await _authorized(call)
    model = call.params["model"]
    chat = gemini.to_chat(await read_object(call, config), model, stream)
    sse = call.request.query_param("alt") == "sse"
    plan = Plan(
        chat, stream, gemini.from_chat, lambda model, _: gemini.GeminiStream(model, sse=sse), gemini.render_error
    )
    return await serve(call, config, plan, caller)


@speaks(gemini.render_error)
async def generate_content(call: Call) -> JsResponse:
    return await _generate(call, stream=False)


@speaks(gemini.render_error)
async def stream_generate_content(call: Call) -> JsResponse:
    return await _generate(call, stream=True)


@speaks(gemini.render_error)
async def count_tokens(call: Call) -> JsResponse:
    config, _ = await _authorized(call)
    return json_response(gemini.count_tokens(await read_object(call, config), call.params["model"]))


async def _embed(
    call: Call, translate: Callable[[Any, str], dict[str, Any]], render: Callable[[Vectors], Any]
) -> JsResponse:
    config, caller = await _authorized(call)
    body = translate(await read_object(call, config), call.params["model"])
    embedded = await embed(call, config, caller, body)
    return json_response(render(embedded.vectors), headers=embedded.headers)


@speaks(gemini.render_error)
async def embed_content(call: Call) -> JsResponse:
    return await _embed(call, embeddings.gemini_embed_request, embeddings.gemini_embed_answer)


@speaks(gemini.render_error)
async def batch_embed_contents(call: Call) -> JsResponse:
    return await _embed(call, embeddings.gemini_batch_request, embeddings.gemini_batch_answer)
