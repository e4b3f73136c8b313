"""Ollama (SPEC §12.5): ``/api/version``, ``/api/tags``, ``/api/show``, ``/api/chat``,
``/api/generate``. Streams are NDJSON and on by default; the API token is required here too."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from gateway import isolate
from gateway.answers import iso_utc, json_response
from gateway.call import Call
from gateway.errors import NotFoundError
from gateway.serving import surface
from gateway.serving.auth import require_api
from gateway.serving.catalog import caller_catalog
from gateway.serving.surface import Embedded, Plan, read_object, serve, speaks
from gateway.shell.http import JsResponse
from gateway.surfaces import embeddings as surface_embeddings
from gateway.surfaces import ollama, ollama_models
from gateway.surfaces.ollama_stream import OllamaStream

__all__ = ["chat", "embed", "embeddings", "generate", "show", "tags", "version"]


@speaks(ollama.render_error)
async def version(call: Call) -> JsResponse:
    return json_response(ollama_models.version_body())


@speaks(ollama.render_error)
async def tags(call: Call) -> JsResponse:
    config = await isolate.load_config(call.env)
    caller = await require_api(call, config)
    return json_response(ollama_models.tags_body([model for model, _ in caller_catalog(config, caller)]))


@speaks(ollama.render_error)
async def show(call: Call) -> JsResponse:
    config = await isolate.load_config(call.env)
    caller = await require_api(call, config)
    model = ollama.show_model(await read_object(call, config))
    if model not in {m for m, _ in caller_catalog(config, caller)}:
        raise NotFoundError(f"model '{model}' not found", code="model_not_found")
    return json_response(ollama_models.show_body(model))


async def _run(call: Call, mode: str) -> JsResponse:
    config = await isolate.load_config(call.env)
    caller = await require_api(call, config)
    data = await read_object(call, config)
    chat = ollama.chat_to_chat(data) if mode == "chat" else ollama.generate_to_chat(data)
    created_at = iso_utc(isolate.now_ms() / 1000)
    answer = ollama.chat_from_chat if mode == "chat" else ollama.generate_from_chat
    plan = Plan(
        chat,
        chat.get("stream") is True,
        partial(answer, created_at=created_at),
        lambda model, _: OllamaStream(model, created_at=created_at, mode=mode),
        ollama.render_error,
    )
    return await serve(call, config, plan, caller)


@speaks(ollama.render_error)
async def chat(call: Call) -> JsResponse:
    return await _run(call, "chat")


@speaks(ollama.render_error)
async def generate(call: Call) -> JsResponse:
    return await _run(call, "generate")


async def _embed(
    call: Call, translate: Callable[[Any], dict[str, Any]], render: Callable[[Embedded], Any]
) -> JsResponse:
    config = await isolate.load_config(call.env)
    caller = await require_api(call, config)
    body = translate(await read_object(call, config))
    embedded = await surface.embed(call, config, caller, body)
    return json_response(render(embedded), headers=embedded.headers)


@speaks(ollama.render_error)
async def embed(call: Call) -> JsResponse:
    return await _embed(
        call,
        surface_embeddings.ollama_embed_request,
        lambda e: surface_embeddings.ollama_embed_answer(e.vectors, e.model),
    )


@speaks(ollama.render_error)
async def embeddings(call: Call) -> JsResponse:
    return await _embed(
        call,
        surface_embeddings.ollama_embeddings_request,
        lambda e: surface_embeddings.ollama_embeddings_answer(e.vectors),
    )
