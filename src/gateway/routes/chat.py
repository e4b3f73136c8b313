"""``POST /v1/chat/completions`` (SPEC §2–§4): authenticate, validate, build the chain, run the
fallback loop, and answer with what served it — or honestly with why nothing did."""

from __future__ import annotations

from gateway import isolate
from gateway.call import Call
from gateway.core.outcome import Served
from gateway.serving.auth import require_api
from gateway.serving.body import read_json, validate
from gateway.serving.forward import answer
from gateway.serving.rescue import rescuer
from gateway.serving.routing import input_estimate, route
from gateway.shell.http import JsResponse
from gateway.shell.stream import OpenedStream
from gateway.upstream.openai import JsonBody
from gateway.wire.chat import ChatRequest

__all__ = ["chat_completions"]


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
