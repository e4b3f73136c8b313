"""Ollama's API (SPEC §12.5) in front of the one router: requests, answers, listings, errors.

Rules of this surface (the stream translator is ``ollama_stream.OllamaStream``):

- ``POST /api/chat`` → ``chat_to_chat``; ``POST /api/generate`` → ``generate_to_chat`` (``system``
  then ``prompt`` as one user turn). ``stream`` defaults to **true**. A ``:latest`` suffix on the
  model name is dropped; otherwise ``model`` stays as the client sent it (the driver routes it).
- Messages: roles system/user/assistant/tool (Ollama lower-cases roles; so do we). ``images``
  (base64) → ``image_url`` data-URL parts of a user message, the type read from the first bytes
  (``_IMAGE_MAGIC``, PNG when unknown); images on other roles are dropped (OpenAI takes them only
  from users). Assistant ``tool_calls`` (arguments an object) → OpenAI calls with JSON-text
  arguments; an id the client kept (``id``, Ollama ≥ 0.12) is reused, else ``call_<n>`` in order of
  the conversation. A ``tool`` message answers the pending call with its ``tool_call_id``, else the
  first unanswered one named ``tool_name``, else the first unanswered one; a tool message with no
  call to answer becomes a user message naming the tool (an OpenAI upstream refuses orphans).
  Assistant ``thinking`` is dropped.
- ``tools`` are already OpenAI function tools. ``format: "json"`` → ``json_object``, a JSON schema →
  ``json_schema``. ``options`` per ``_OPTIONS``; ``num_predict`` ≤ 0 (Ollama's "no limit") sets no
  ``max_tokens``. ``keep_alive``, ``think``, ``raw``, ``template``, ``context``, ``suffix`` and
  unknown fields are ignored. Wrong types → ``InvalidRequestError`` naming the field.
- Answers: ``chat_from_chat`` / ``generate_from_chat``: ``done: true``, ``done_reason`` per
  ``_DONE_REASONS`` (``stop`` otherwise), the token counts, durations 0 (there is no clock here),
  tool calls with ``arguments`` as an object, reasoning as ``thinking``.
- Errors: ``{"error": "<message>"}`` whatever the status (ollama-python raises ``ResponseError``
  with it). The listings are ``ollama_models``'.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.errors import InvalidRequestError
from gateway.surfaces.chat import Answer, ToolCall

__all__ = [
    "chat_from_chat",
    "chat_to_chat",
    "done_reason",
    "generate_from_chat",
    "generate_to_chat",
    "ollama_tool_call",
    "render_error",
    "show_model",
]

_LATEST = ":latest"
_ROLES = frozenset({"system", "user", "assistant", "tool"})
# OpenAI finish_reason → Ollama done_reason; anything else (tool_calls, content_filter) → "stop",
# as Ollama itself ends a turn with tool calls.
_DONE_REASONS = {"stop": "stop", "length": "length"}
# Ollama option → (OpenAI field, kind). Kinds: "number", "int", "stops".
_OPTIONS = {
    "temperature": ("temperature", "number"),
    "top_p": ("top_p", "number"),
    "top_k": ("top_k", "int"),
    "num_predict": ("max_tokens", "int"),
    "seed": ("seed", "int"),
    "presence_penalty": ("presence_penalty", "number"),
    "frequency_penalty": ("frequency_penalty", "number"),
    "stop": ("stop", "stops"),
}
# First characters of the base64 of each image type's magic bytes; the first match wins.
_IMAGE_MAGIC = {
    "iVBORw0KGgo": "image/png",
    "/9j/": "image/jpeg",
    "R0lGOD": "image/gif",
    "UklGR": "image/webp",
}
_DEFAULT_IMAGE = "image/png"


# ----------------------------------------------------------------------------------------------
# Requests


def chat_to_chat(body: Any) -> dict[str, Any]:
    """``POST /api/chat`` body → an OpenAI chat completions body (see the module rules).

    Raises ``InvalidRequestError`` (param = the field's path) for a missing model, messages that
    are not a non-empty list, or a field of the wrong type."""
    body = _object(body, "body")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequestError("messages must be a non-empty list", param="messages")
    chat = _base(body)
    chat["messages"] = _messages(messages)
    tools = body.get("tools")
    if tools is not None:
        converted = _tools(tools)
        if converted:
            chat["tools"] = converted
    return _finish(chat, body)


def generate_to_chat(body: Any) -> dict[str, Any]:
    """``POST /api/generate`` body → an OpenAI chat body: ``system`` as a system message, then
    ``prompt`` (and ``images``) as one user message, even when the prompt is empty."""
    body = _object(body, "body")
    chat = _base(body)
    system = _string(body.get("system"), "system")
    prompt = _string(body.get("prompt"), "prompt")
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": _with_images(prompt, body.get("images"), "images")})
    chat["messages"] = messages
    return _finish(chat, body)


def show_model(body: Any) -> str:
    """The model a ``POST /api/show`` asks about (``model``, or the older ``name``), ``:latest``
    dropped. Raises ``InvalidRequestError`` when neither is a non-empty string."""
    body = _object(body, "body")
    name = body.get("model") or body.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidRequestError("model is required", param="model")
    return name[: -len(_LATEST)] if name.endswith(_LATEST) else name


def _base(body: dict[str, Any]) -> dict[str, Any]:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequestError("model is required", param="model")
    if model.endswith(_LATEST):
        model = model[: -len(_LATEST)]
    return {"model": model}


def _finish(chat: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """Options, format and stream, shared by chat and generate."""
    options = body.get("options")
    if options is not None:
        for name, value in _object(options, "options").items():
            rule = _OPTIONS.get(name)
            if rule is None or value is None:
                continue  # num_ctx, repeat_penalty, … have no OpenAI field
            field, kind = rule
            value = _option(value, kind, f"options.{name}")
            if field == "max_tokens" and value <= 0:
                continue  # -1: no limit, -2: fill the context
            chat[field] = value
    response_format = _format(body.get("format"))
    if response_format is not None:
        chat["response_format"] = response_format
    stream = body.get("stream", True)
    if stream is None:
        stream = True
    if not isinstance(stream, bool):
        raise InvalidRequestError("stream must be a boolean", param="stream")
    chat["stream"] = stream
    if stream:
        chat["stream_options"] = {"include_usage": True}
    return chat


def _option(value: Any, kind: str, param: str) -> Any:
    if kind == "stops":
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and all(isinstance(s, str) for s in value):
            return value
        raise InvalidRequestError(f"{param} must be a list of strings", param=param)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidRequestError(f"{param} must be a number", param=param)
    if kind == "int":
        if value != int(value):
            raise InvalidRequestError(f"{param} must be an integer", param=param)
        return int(value)
    return value


def _format(value: Any) -> dict[str, Any] | None:
    if value is None or value == "":
        return None
    if value == "json":
        return {"type": "json_object"}
    if isinstance(value, dict):
        return {"type": "json_schema", "json_schema": {"name": "response", "schema": value}}
    raise InvalidRequestError('format must be "json" or a JSON schema object', param="format")


def _messages(messages: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: list[list[str]] = []  # [call id, name] of the last assistant turn, not yet answered
    count = 0  # calls seen so far: the n of a derived id "call_<n>"
    for i, message in enumerate(messages):
        message = _object(message, f"messages[{i}]")
        role = message.get("role")
        role = role.lower() if isinstance(role, str) else role
        if role not in _ROLES:
            raise InvalidRequestError("role must be one of system, user, assistant, tool", param=f"messages[{i}].role")
        content = _string(message.get("content"), f"messages[{i}].content")
        if role == "tool":
            out.append(_tool_result(message, content, pending, i))
            continue
        pending = []
        if role == "user":
            images = message.get("images")
            out.append({"role": "user", "content": _with_images(content, images, f"messages[{i}].images")})
        elif role == "system":
            out.append({"role": "system", "content": content})
        else:
            calls = message.get("tool_calls")
            converted = _assistant_calls(calls, count, i) if calls else []
            if converted:
                count += len(converted)
                pending = [[c["id"], c["function"]["name"]] for c in converted]
                out.append({"role": "assistant", "content": content or None, "tool_calls": converted})
            else:
                out.append({"role": "assistant", "content": content})
    return out


def _assistant_calls(calls: Any, count: int, i: int) -> list[dict[str, Any]]:
    if not isinstance(calls, list):
        raise InvalidRequestError("tool_calls must be a list", param=f"messages[{i}].tool_calls")
    converted = []
    for j, call in enumerate(calls):
        param = f"messages[{i}].tool_calls[{j}]"
        function = _object(_object(call, param).get("function"), f"{param}.function")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidRequestError("a tool call needs a function name", param=f"{param}.function.name")
        arguments = function.get("arguments")
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id = f"call_{count + j}"
        converted.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
    return converted


def _tool_result(message: dict[str, Any], content: str, pending: list[list[str]], i: int) -> dict[str, Any]:
    wanted_id = message.get("tool_call_id")
    name = message.get("tool_name") or message.get("name")
    match = next((c for c in pending if c[0] == wanted_id), None)
    if match is None and isinstance(name, str) and name:
        match = next((c for c in pending if c[1] == name), None)
    if match is None and pending:
        match = pending[0]
    if match is None:
        label = name if isinstance(name, str) and name else "tool"
        return {"role": "user", "content": f"[{label} result]\n{content}"}
    pending.remove(match)
    return {"role": "tool", "tool_call_id": match[0], "content": content}


def _tools(tools: Any) -> list[dict[str, Any]]:
    if not isinstance(tools, list):
        raise InvalidRequestError("tools must be a list", param="tools")
    out = []
    for i, tool in enumerate(tools):
        function = _object(_object(tool, f"tools[{i}]").get("function"), f"tools[{i}].function")
        if not isinstance(function.get("name"), str) or not function["name"]:
            raise InvalidRequestError("a tool needs a function name", param=f"tools[{i}].function.name")
        function = dict(function)
        if not isinstance(function.get("parameters"), dict):
            function["parameters"] = {"type": "object", "properties": {}}
        out.append({"type": "function", "function": function})
    return out


def _with_images(text: str, images: Any, param: str) -> str | list[dict[str, Any]]:
    """The user content: plain text, or text and image parts when there are images."""
    if images is None or images == []:
        return text
    if not isinstance(images, list) or not all(isinstance(image, str) and image for image in images):
        raise InvalidRequestError("images must be a list of base64 strings", param=param)
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for image in images:
        url = image if image.startswith("data:") else f"data:{_image_type(image)};base64,{image}"
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _image_type(data: str) -> str:
    for prefix, mime in _IMAGE_MAGIC.items():
        if data.startswith(prefix):
            return mime
    return _DEFAULT_IMAGE


def _object(value: Any, param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidRequestError(f"{param} must be an object", param=param)
    return value


def _string(value: Any, param: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidRequestError(f"{param} must be a string", param=param)
    return value


# ----------------------------------------------------------------------------------------------
# Answers


def done_reason(finish_reason: str) -> str:
    """Ollama's ``done_reason`` for an OpenAI ``finish_reason``."""
    return _DONE_REASONS.get(finish_reason, "stop")


def ollama_tool_call(call: ToolCall, index: int) -> dict[str, Any]:
    """A call as Ollama sends it: ``arguments`` an object ({} when the text is not a JSON object,
    e.g. cut by ``length``), the upstream's id and the call's position kept for newer clients."""
    try:
        arguments = json.loads(call.arguments) if call.arguments else {}
    except ValueError:
        arguments = {}
    if not isinstance(arguments, dict):
        arguments = {}
    return {"id": call.call_id, "function": {"index": index, "name": call.name, "arguments": arguments}}


def _metrics(answer: Answer) -> dict[str, Any]:
    return {
        "done": True,
        "done_reason": done_reason(answer.finish_reason),
        "total_duration": 0,
        "load_duration": 0,
        "prompt_eval_count": answer.input_tokens,
        "prompt_eval_duration": 0,
        "eval_count": answer.output_tokens,
        "eval_duration": 0,
    }


def chat_from_chat(answer: Answer, model: str, created_at: str) -> dict[str, Any]:
    """A non-streamed ``/api/chat`` answer; ``model`` served it, ``created_at`` is ISO 8601."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.text}
    if answer.reasoning:
        message["thinking"] = answer.reasoning
    if answer.tool_calls:
        message["tool_calls"] = [ollama_tool_call(c, i) for i, c in enumerate(answer.tool_calls)]
    return {"model": model, "created_at": created_at, "message": message, **_metrics(answer)}


def generate_from_chat(answer: Answer, model: str, created_at: str) -> dict[str, Any]:
    """A non-streamed ``/api/generate`` answer; ``context`` is empty (the gateway keeps none)."""
    out: dict[str, Any] = {"model": model, "created_at": created_at, "response": answer.text}
    if answer.reasoning:
        out["thinking"] = answer.reasoning
    if answer.tool_calls:
        out["tool_calls"] = [ollama_tool_call(c, i) for i, c in enumerate(answer.tool_calls)]
    out.update(_metrics(answer))
    out["context"] = []
    return out


def render_error(status: int, type_: str, message: str) -> dict[str, Any]:
    """Ollama's error body, the same for every status: ``{"error": "<message>"}``."""
    return {"error": message or type_ or f"error {status}"}
