"""Anthropic Messages (SPEC §12.2): ``POST /v1/messages`` and ``/v1/messages/count_tokens``.

Request → OpenAI chat body (``to_chat``):

- ``system`` (a string or text blocks, joined by a blank line) → the first ``system`` message;
  a ``system``-role message inside ``messages`` (Claude Code sends them) stays a system message in
  its place.
- content blocks: ``text``; ``image`` (``base64`` → a data URL, ``url`` → the URL) → ``image_url``
  parts; ``tool_use`` (assistant) → ``tool_calls`` with ``input`` as a JSON string; ``tool_result``
  → one ``tool`` message each, in order, before the user text of the same turn, its content (a
  string or text blocks) as text, ``is_error`` kept as an ``Error: `` prefix, its images moved to
  that user turn. ``thinking``, ``redacted_thinking``, ``document`` and other kinds are dropped;
  ``cache_control`` is ignored. Text-only content becomes a string (blocks joined by a blank line).
- ``tools`` → function tools (a missing or empty ``input_schema`` → ``{"type":"object",
  "properties":{}}``); server tools (a ``type`` other than ``custom``, e.g. ``web_search_…``) are
  dropped, as the upstream cannot run them. ``tool_choice`` per ``TOOL_CHOICES`` (``tool`` → that
  function; ``disable_parallel_tool_use`` → ``parallel_tool_calls: false``), dropped when no tool is left.
- ``max_tokens`` (not required), ``temperature``, ``top_p``, ``stop_sequences`` → ``stop``,
  ``stream`` (with ``stream_options.include_usage``). ``metadata``, ``thinking``, ``top_k`` and
  unknown fields are ignored. A wrong type → 400 ``invalid_request_error`` naming the field.

Answer (``from_chat``): ``thinking`` (from reasoning text), ``text`` (never empty), ``tool_use``
blocks (``input`` the parsed arguments; arguments that are not a JSON object → ``{}``), the stop
reason per ``STOP_REASONS``. Errors (``render_error``): ``ERROR_TYPES`` by HTTP status.
The stream translator is ``AnthropicStream`` (``anthropic_stream``).
"""

from __future__ import annotations

import json
from typing import Any

from gateway.errors import InvalidRequestError
from gateway.surfaces.anthropic_stream import STOP_REASONS, AnthropicStream, message_id, stop_reason, usage
from gateway.surfaces.chat import Answer
from gateway.surfaces.contract import compact, estimate_tokens

__all__ = [
    "ERROR_TYPES",
    "STOP_REASONS",
    "TOOL_CHOICES",
    "AnthropicStream",
    "count_tokens",
    "from_chat",
    "render_error",
    "to_chat",
]

# Anthropic tool_choice.type → OpenAI tool_choice ("tool" names a function, below).
TOOL_CHOICES: dict[str, str] = {"auto": "auto", "any": "required", "none": "none"}

# HTTP status → Anthropic error type; other 4xx → invalid_request_error, other 5xx → api_error.
ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    508: "api_error",
    529: "overloaded_error",
}

_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def _invalid(param: str, message: str) -> InvalidRequestError:
    return InvalidRequestError(f"{param}: {message}", param=param)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _string(block: dict[str, Any], key: str, path: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise _invalid(f"{path}.{key}", "must be a string")
    return value


# -- request -------------------------------------------------------------------------------


def to_chat(body: Any) -> dict[str, Any]:
    """An Anthropic Messages request → the OpenAI chat completions body (see the module doc)."""
    return _to_chat(body, at_least_one=True)


def count_tokens(body: Any) -> dict[str, int]:
    """``/v1/messages/count_tokens``: an estimate from the translated request, no upstream call.
    Validated as ``/v1/messages``, except that an empty ``messages`` list counts too."""
    return {"input_tokens": estimate_tokens(_to_chat(body, at_least_one=False))}


def _to_chat(body: Any, at_least_one: bool) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidRequestError("the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _invalid("model", "a model name is required")
    messages = body.get("messages")
    if not isinstance(messages, list) or (at_least_one and not messages):
        raise _invalid("messages", "must be a non-empty list")
    out: list[dict[str, Any]] = []
    if body.get("system") is not None:
        system = _system_text(body["system"], "system")
        if system:
            out.append({"role": "system", "content": system})
    for i, message in enumerate(messages):
        _message(message, f"messages.{i}", out)
    chat: dict[str, Any] = {"model": model, "messages": out}
    _options(body, chat)
    _tools(body, chat)
    return chat


def _system_text(value: Any, path: str) -> str:
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise _invalid(path, "must be a string or a list of text blocks")
    texts = []
    for j, block in enumerate(value):
        if not isinstance(block, dict):
            raise _invalid(f"{path}.{j}", "must be a content block")
        if block.get("type") == "text":
            texts.append(_string(block, "text", f"{path}.{j}"))
    return "\n\n".join(texts)


def _message(message: Any, path: str, out: list[dict[str, Any]]) -> None:
    if not isinstance(message, dict):
        raise _invalid(path, "must be an object with role and content")
    role = message.get("role")
    content = message.get("content")
    if role == "system":
        out.append({"role": "system", "content": _system_text(content, f"{path}.content")})
        return
    if role not in ("user", "assistant"):
        raise _invalid(f"{path}.role", "must be user, assistant or system")
    if isinstance(content, str):
        out.append({"role": role, "content": content})
        return
    if not isinstance(content, list):
        raise _invalid(f"{path}.content", "must be a string or a list of content blocks")
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for j, block in enumerate(content):
        where = f"{path}.content.{j}"
        if not isinstance(block, dict):
            raise _invalid(where, "must be a content block")
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": _string(block, "text", where)})
        elif kind == "image":
            parts.append(_image(block, where))
        elif kind == "tool_result":
            out.append(_tool_result(block, where, parts))
        elif kind == "tool_use":
            calls.append(_tool_use(block, where))
        elif not isinstance(kind, str):
            raise _invalid(f"{where}.type", "must be a string")
        # thinking, redacted_thinking, document, server tool blocks …: nothing to send upstream
    if role == "assistant":
        text = "\n\n".join(p["text"] for p in parts if p["type"] == "text")
        if calls:
            out.append({"role": "assistant", "content": text or None, "tool_calls": calls})
        elif text:
            out.append({"role": "assistant", "content": text})
    elif parts:
        if any(p["type"] != "text" for p in parts):
            out.append({"role": "user", "content": parts})
        else:
            out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})


def _image(block: dict[str, Any], path: str) -> dict[str, Any]:
    source = block.get("source")
    if not isinstance(source, dict):
        raise _invalid(f"{path}.source", "must be an object")
    kind = source.get("type")
    if kind == "base64":
        media = _string(source, "media_type", f"{path}.source")
        url = f"data:{media};base64,{_string(source, 'data', f'{path}.source')}"
    elif kind == "url":
        url = _string(source, "url", f"{path}.source")
    else:
        raise _invalid(f"{path}.source.type", "only base64 and url images are supported")
    return {"type": "image_url", "image_url": {"url": url}}


def _tool_use(block: dict[str, Any], path: str) -> dict[str, Any]:
    arguments = block.get("input", {})
    if not isinstance(arguments, dict):
        raise _invalid(f"{path}.input", "must be an object")
    return {
        "id": _string(block, "id", path),
        "type": "function",
        "function": {"name": _string(block, "name", path), "arguments": compact(arguments)},
    }


def _tool_result(block: dict[str, Any], path: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    content = block.get("content")
    if content is None or isinstance(content, str):
        text = content or ""
    elif isinstance(content, list):
        texts = []
        for k, item in enumerate(content):
            where = f"{path}.content.{k}"
            if not isinstance(item, dict):
                raise _invalid(where, "must be a content block")
            if item.get("type") == "text":
                texts.append(_string(item, "text", where))
            elif item.get("type") == "image":  # a tool message carries text only
                parts.append(_image(item, where))
        text = "\n\n".join(texts)
    else:
        raise _invalid(f"{path}.content", "must be a string or a list of content blocks")
    if block.get("is_error") is True:
        text = f"Error: {text}" if text else "Error"
    return {"role": "tool", "tool_call_id": _string(block, "tool_use_id", path), "content": text}


def _options(body: dict[str, Any], chat: dict[str, Any]) -> None:
    max_tokens = body.get("max_tokens")
    if max_tokens is not None:
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise _invalid("max_tokens", "must be a positive integer")
        chat["max_tokens"] = max_tokens
    for name in ("temperature", "top_p"):
        value = body.get(name)
        if value is not None:
            if not _is_number(value):
                raise _invalid(name, "must be a number")
            chat[name] = value
    stops = body.get("stop_sequences")
    if stops is not None:
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise _invalid("stop_sequences", "must be a list of strings")
        if stops:
            chat["stop"] = stops
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise _invalid("stream", "must be a boolean")
    if stream:
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}


def _tools(body: dict[str, Any], chat: dict[str, Any]) -> None:
    tools = body.get("tools")
    if tools is None:
        return
    if not isinstance(tools, list):
        raise _invalid("tools", "must be a list")
    functions = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise _invalid(f"tools.{i}", "must be an object")
        if tool.get("type") not in (None, "custom"):
            continue  # a server tool (web search, code execution …): the upstream cannot run it
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise _invalid(f"tools.{i}.name", "must be a non-empty string")
        function: dict[str, Any] = {"name": name}
        description = tool.get("description")
        if isinstance(description, str) and description:
            function["description"] = description
        function["parameters"] = _schema(tool.get("input_schema"), f"tools.{i}.input_schema")
        functions.append({"type": "function", "function": function})
    if not functions:
        return
    chat["tools"] = functions
    choice = body.get("tool_choice")
    if choice is None:
        return
    if not isinstance(choice, dict):
        raise _invalid("tool_choice", "must be an object")
    kind = choice.get("type")
    if kind == "tool":
        chat["tool_choice"] = {"type": "function", "function": {"name": _string(choice, "name", "tool_choice")}}
    elif kind in TOOL_CHOICES:
        chat["tool_choice"] = TOOL_CHOICES[kind]
    else:
        raise _invalid("tool_choice.type", "must be auto, any, tool or none")
    if choice.get("disable_parallel_tool_use") is True and kind != "none":
        chat["parallel_tool_calls"] = False


def _schema(schema: Any, path: str) -> dict[str, Any]:
    """A JSON schema every upstream accepts: always an object with ``type`` and ``properties``."""
    if schema is None or schema == {}:
        return dict(_EMPTY_SCHEMA, properties={})
    if not isinstance(schema, dict):
        raise _invalid(path, "must be a JSON schema object")
    if "type" not in schema:
        schema = {"type": "object", **schema}
    if schema.get("type") == "object" and "properties" not in schema:
        schema = {**schema, "properties": {}}
    return schema


# -- answer --------------------------------------------------------------------------------


def _input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def from_chat(answer: Answer, model: str) -> dict[str, Any]:
    """A non-streamed OpenAI answer → an Anthropic ``message``; ``model`` served it."""
    content: list[dict[str, Any]] = []
    if answer.reasoning:
        content.append({"type": "thinking", "thinking": answer.reasoning, "signature": ""})
    if answer.text:
        content.append({"type": "text", "text": answer.text})
    for call in answer.tool_calls:
        content.append({"type": "tool_use", "id": call.call_id, "name": call.name, "input": _input(call.arguments)})
    return {
        "id": message_id(answer.id),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(answer.finish_reason, bool(answer.tool_calls)),
        "stop_sequence": None,
        "usage": usage(answer.input_tokens, answer.output_tokens, answer.cached_tokens),
    }


def render_error(status: int, type_: str, message: str) -> dict[str, Any]:
    """The Anthropic error body for an error of that HTTP status (the driver sets the status)."""
    kind = ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}
