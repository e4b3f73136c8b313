"""Anthropic Messages (SPEC §12.2): ``POST /v1/messages`` and ``/v1/messages/count_tokens``."""

from __future__ import annotations

from gateway import isolate
from gateway.answers import json_response
from gateway.call import Call
from gateway.serving.auth import require_api
from gateway.serving.surface import Plan, read_object, serve, speaks
from gateway.shell.http import JsResponse
from gateway.surfaces import anthropic

__all__ = ["count_tokens", "messages"]


@speaks(anthropic.render_error)
async def messages(call: Call) -> JsResponse:
    config = await isolate.load_config(call.env)
    caller = await require_api(call, config)
    chat = anthropic.to_chat(await read_object(call, config))
    stream = chat.get("stream") is True
    plan = Plan(chat, stream, anthropic.from_chat, anthropic.AnthropicStream, anthropic.render_error)
    return await serve(call, config, plan, caller)


@speaks(anthropic.render_error)
async def count_tokens(call: Call) -> JsResponse:
    config = await isolate.load_config(call.env)
    await require_api(call, config)
    return json_response(anthropic.count_tokens(await read_object(call, config)))
