"""OpenAI Responses (SPEC §12.3): ``POST /v1/responses``, stateless."""

from __future__ import annotations

from functools import partial

from gateway import isolate
from gateway.call import Call
from gateway.serving.auth import require_api
from gateway.serving.surface import Plan, read_object, serve, speaks
from gateway.shell.http import JsResponse
from gateway.surfaces import responses

__all__ = ["create_response"]


@speaks(None)  # OpenAI's own API: the gateway's error body as /v1/chat/completions sends it
async def create_response(call: Call) -> JsResponse:
    config = await isolate.load_config(call.env)
    caller = await require_api(call, config)
    body = await read_object(call, config)
    chat = responses.to_chat(body)
    # Functions taken out of a namespace tool go back to the caller under their namespace.
    names = responses.tool_names(body)
    created_at = isolate.now_ms() // 1000
    plan = Plan(
        chat,
        chat.get("stream") is True,
        partial(responses.from_chat, created_at=created_at, names=names),
        lambda model, _: responses.ResponsesStream(model, created_at=created_at, names=names),
        responses.render_error,
    )
    return await serve(call, config, plan, caller)
