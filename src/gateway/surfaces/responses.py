"""OpenAI Responses, ``POST /v1/responses`` (SPEC §12.3): request → OpenAI chat body, answer back.

Request rules (``to_chat``):

- ``instructions`` → one system message first. ``input`` a string → one user message, or a list of
  items: ``message`` (``type`` may be absent) with a string or parts (``input_text``,
  ``output_text``, ``refusal`` → text; ``input_image`` → ``image_url`` with its ``detail``;
  ``input_file`` → a ``file`` part), roles by ``ROLES``; ``function_call`` items → ``tool_calls``
  of the assistant message before them (consecutive calls make one message; ``id``/``status``
  ignored); ``function_call_output`` → ``tool`` messages (images in a list output follow the tool
  messages as one user message, chat tool messages being text only); ``custom_tool_call`` and its
  output likewise (its ``input`` as ``{"input": …}``); ``reasoning`` and other output items carry
  nothing a chat upstream can take and are dropped.
- ``tools``: ``function`` tools → chat functions (``strict`` kept when true); a ``namespace`` tool
  (Codex CLI) is flattened into its functions, named by ``flat_name``; built-in and ``custom``
  tools are dropped. ``tool_choice`` by ``TOOL_CHOICES``, a named function, or ``allowed_tools``'
  mode; dropped when no tool is left. ``max_output_tokens`` → ``max_tokens``; ``temperature``,
  ``top_p``, ``stream`` (then ``stream_options.include_usage``); ``text.format`` json_object /
  json_schema (with its ``schema``, else 400) → ``response_format``.
- ``previous_response_id``, ``conversation`` and ``item_reference`` items → 400: the gateway keeps
  no state. Everything else (``store``, ``metadata``, ``client_metadata``, ``reasoning``,
  ``include``, ``parallel_tool_calls``, ``prompt_cache_key``, ``service_tier``, …) is ignored.
  Wrong types → ``InvalidRequestError`` naming the field.

The answer (``from_chat``) and the stream are built in ``responses_stream``; errors use OpenAI's
own shape (``render_error``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gateway.errors import InvalidRequestError
from gateway.surfaces.chat import Answer
from gateway.surfaces.responses_stream import (
    FINISH_STATUS,
    ResponsesStream,
    call_arguments,
    call_item,
    message_item,
    reasoning_item,
    response_id_base,
    response_object,
    usage_object,
)

__all__ = [
    "DEFAULT_NAMESPACE",
    "ROLES",
    "TOOL_CHOICES",
    "ResponsesStream",
    "flat_name",
    "from_chat",
    "render_error",
    "to_chat",
    "tool_names",
]

ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
TOOL_CHOICES = {"auto": "auto", "none": "none", "required": "required"}
_TEXT_PARTS = {"input_text": "text", "output_text": "text", "text": "text", "refusal": "refusal"}
# Codex's namespace for its top-level functions: a call in it needs no namespace (codex ToolName).
DEFAULT_NAMESPACE = "functions"
_EMPTY_SCHEMA = {"type": "object", "properties": {}}
_NO_STATE = "The gateway keeps no state: send the whole conversation in input instead of {what}."


def _fail(message: str, param: str) -> InvalidRequestError:
    return InvalidRequestError(message, param=param)


def flat_name(namespace: str | None, name: str) -> str:
    """A namespace function's chat name: its own in Codex's default namespace; else the namespace
    joined to it as Codex prints it (``mcp__srv__`` + ``read``), with ``__`` when the namespace
    does not end in ``_`` (chat names allow letters, digits, ``_`` and ``-`` only)."""
    if not namespace or namespace == DEFAULT_NAMESPACE:
        return name
    return f"{namespace}{name}" if namespace.endswith("_") else f"{namespace}__{name}"


def _function(tool: dict[str, Any], namespace: str | None, path: str) -> tuple[str, dict[str, Any]]:
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise _fail("A function tool needs a name.", f"{path}.name")
    parameters = tool.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise _fail("A function's parameters must be a JSON schema object.", f"{path}.parameters")
    function: dict[str, Any] = {"name": flat_name(namespace, name), "parameters": parameters or _EMPTY_SCHEMA}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    if tool.get("strict") is True:
        function["strict"] = True
    return name, {"type": "function", "function": function}


def _tools(raw: Any) -> tuple[list[dict[str, Any]], dict[str, tuple[str, str]]]:
    """Chat tools and the namespace functions among them (chat name → (namespace, name))."""
    if raw is None:
        return [], {}
    if not isinstance(raw, list):
        raise _fail("tools must be a list.", "tools")
    tools: dict[str, dict[str, Any]] = {}  # by chat name: the first of a repeated name wins
    names: dict[str, tuple[str, str]] = {}
    for i, tool in enumerate(raw):
        if not isinstance(tool, dict):
            raise _fail("Each tool must be an object.", f"tools[{i}]")
        if tool.get("type") == "function":
            _, chat = _function(tool, None, f"tools[{i}]")
            tools.setdefault(chat["function"]["name"], chat)
        elif tool.get("type") == "namespace":
            namespace = tool.get("name")
            if not isinstance(namespace, str) or not isinstance(tool.get("tools"), list):
                raise _fail("A namespace tool needs a name and a list of tools.", f"tools[{i}]")
            for j, child in enumerate(tool["tools"]):
                if isinstance(child, dict) and child.get("type", "function") == "function":
                    name, chat = _function(child, namespace, f"tools[{i}].tools[{j}]")
                    flat = chat["function"]["name"]
                    if flat not in tools:
                        tools[flat] = chat
                        if namespace != DEFAULT_NAMESPACE:
                            names[flat] = (namespace, name)
        # built-in tools (web_search, file_search, local_shell, …) and custom tools: dropped
    return list(tools.values()), names


def tool_names(body: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Chat name → (namespace, name) of the functions ``to_chat`` flattened out of the request's
    ``namespace`` tools (Codex's default namespace excluded); give it to ``from_chat`` and
    ``ResponsesStream`` so the calls name their namespace again. Call after ``to_chat``."""
    return _tools(body.get("tools"))[1]


def _tool_choice(raw: Any) -> Any:
    if isinstance(raw, str):
        if raw not in TOOL_CHOICES:
            raise _fail("tool_choice must be auto, none, required or a tool.", "tool_choice")
        return TOOL_CHOICES[raw]
    if not isinstance(raw, dict):
        raise _fail("tool_choice must be a string or an object.", "tool_choice")
    if raw.get("type") == "function":
        if not isinstance(raw.get("name"), str):
            raise _fail("A function tool_choice needs a name.", "tool_choice.name")
        namespace = raw.get("namespace") if isinstance(raw.get("namespace"), str) else None
        return {"type": "function", "function": {"name": flat_name(namespace, raw["name"])}}
    if raw.get("type") == "allowed_tools" and raw.get("mode") in TOOL_CHOICES:
        return raw["mode"]
    return "auto"  # a built-in tool was asked for; it is not offered upstream


def _number(body: Mapping[str, Any], field: str) -> float | None:
    value = body.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(f"{field} must be a number.", field)
    return value


def _response_format(text: Any) -> dict[str, Any] | None:
    if text is None:
        return None
    if not isinstance(text, dict):
        raise _fail("text must be an object.", "text")
    fmt = text.get("format")
    if not isinstance(fmt, dict) or fmt.get("type") not in ("json_object", "json_schema"):
        return None
    if fmt["type"] == "json_object":
        return {"type": "json_object"}
    if not isinstance(fmt.get("schema"), dict):
        # An empty schema would let the upstream answer anything while the caller expects a shape.
        raise _fail("A json_schema text.format needs its schema, a JSON schema object.", "text.format.schema")
    schema: dict[str, Any] = {"name": fmt.get("name") or "response", "schema": fmt["schema"]}
    for key in ("description", "strict"):
        if key in fmt:
            schema[key] = fmt[key]
    return {"type": "json_schema", "json_schema": schema}


def to_chat(body: Any) -> dict[str, Any]:
    """The OpenAI chat body for a Responses request (rules in the module doc)."""
    if not isinstance(body, dict):
        raise _fail("The request body must be a JSON object.", "body")
    for field, what in (("previous_response_id", "a previous response id"), ("conversation", "a conversation")):
        if body.get(field) is not None:
            raise _fail(_NO_STATE.format(what=what), field)
    if "model" in body and not isinstance(body["model"], str):
        raise _fail("model must be a string.", "model")
    chat: dict[str, Any] = {"messages": _messages(body)}
    if "model" in body:
        chat["model"] = body["model"]
    tools, _ = _tools(body.get("tools"))
    if tools:
        chat["tools"] = tools
        if body.get("tool_choice") is not None:
            chat["tool_choice"] = _tool_choice(body["tool_choice"])
    limit = body.get("max_output_tokens")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise _fail("max_output_tokens must be a positive integer.", "max_output_tokens")
        chat["max_tokens"] = limit
    for field in ("temperature", "top_p"):
        value = _number(body, field)
        if value is not None:
            chat[field] = value
    response_format = _response_format(body.get("text"))
    if response_format is not None:
        chat["response_format"] = response_format
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise _fail("stream must be a boolean.", "stream")
    chat["stream"] = bool(stream)
    if stream:
        chat["stream_options"] = {"include_usage": True}
    return chat


def _messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise _fail("instructions must be a string.", "instructions")
    if instructions:
        messages.append({"role": "system", "content": instructions})
    raw = body.get("input")
    if isinstance(raw, str):
        messages.append({"role": "user", "content": raw})
        return messages
    if not isinstance(raw, list):
        raise _fail("input must be a string or a list of items.", "input")
    images: list[dict[str, Any]] = []  # images of tool outputs, sent after the tool messages
    for i, item in enumerate(raw):
        path = f"input[{i}]"
        if not isinstance(item, dict):
            raise _fail("Each input item must be an object.", path)
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind in ("function_call_output", "custom_tool_call_output"):
            messages.append(_tool_output(item, path, images))
            continue
        if images:
            messages.append({"role": "user", "content": images})
            images = []
        if kind == "message":
            messages.append(_message(item, path))
        elif kind in ("function_call", "custom_tool_call"):
            _call(item, path, messages)
        elif kind == "item_reference":
            raise _fail(_NO_STATE.format(what="an item reference"), path)
        elif kind is None:
            raise _fail("An input item needs a type or a role.", f"{path}.type")
    if images:
        messages.append({"role": "user", "content": images})
    if not messages:
        raise _fail("input must hold at least one item.", "input")
    return messages


def _image(part: dict[str, Any], path: str) -> dict[str, Any]:
    url = part.get("image_url") or part.get("file_id")
    if not isinstance(url, str):
        raise _fail("An input_image needs an image_url or a file_id.", f"{path}.image_url")
    image: dict[str, Any] = {"url": url}
    if isinstance(part.get("detail"), str):
        image["detail"] = part["detail"]
    return {"type": "image_url", "image_url": image}


def _parts(content: Any, path: str) -> list[dict[str, Any]]:
    """Chat content parts of a Responses content list; unknown part types are dropped."""
    if not isinstance(content, list):
        raise _fail("content must be a string or a list of parts.", path)
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        if not isinstance(part, dict):
            raise _fail("Each content part must be an object.", f"{path}[{j}]")
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            text = part.get(_TEXT_PARTS[kind])
            if not isinstance(text, str):
                raise _fail(f"A {kind} part needs its text.", f"{path}[{j}].{_TEXT_PARTS[kind]}")
            parts.append({"type": "text", "text": text})
        elif kind == "input_image":
            parts.append(_image(part, f"{path}[{j}]"))
        elif kind == "input_file":
            file = {k: part[k] for k in ("file_data", "file_id", "filename") if isinstance(part.get(k), str)}
            if file:
                parts.append({"type": "file", "file": file})
    return parts


def _text_of(parts: list[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if p["type"] == "text")


def _message(item: dict[str, Any], path: str) -> dict[str, Any]:
    role = ROLES.get(item.get("role"))  # type: ignore[arg-type]
    if role is None:
        raise _fail("role must be user, assistant, system or developer.", f"{path}.role")
    content = item.get("content")
    if isinstance(content, str):
        return {"role": role, "content": content}
    parts = _parts(content, f"{path}.content")
    if role == "user" and (len(parts) != 1 or parts[0]["type"] != "text"):
        return {"role": role, "content": parts}
    return {"role": role, "content": _text_of(parts)}  # system and assistant take text only


def _call(item: dict[str, Any], path: str, messages: list[dict[str, Any]]) -> None:
    call_id, name = item.get("call_id"), item.get("name")
    if not isinstance(call_id, str) or not call_id:
        raise _fail("A function_call item needs its call_id.", f"{path}.call_id")
    if not isinstance(name, str) or not name:
        raise _fail("A function_call item needs its name.", f"{path}.name")
    if item.get("type") == "custom_tool_call":
        arguments = json.dumps({"input": item.get("input") or ""}, ensure_ascii=False)
    else:
        arguments = item.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    namespace = item.get("namespace") if isinstance(item.get("namespace"), str) else None
    function = {"name": flat_name(namespace, name), "arguments": arguments}
    call = {"id": call_id, "type": "function", "function": function}
    last = messages[-1] if messages else None
    if last is not None and last["role"] == "assistant":  # consecutive calls: one assistant turn
        last.setdefault("tool_calls", []).append(call)
    else:
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})


def _tool_output(item: dict[str, Any], path: str, images: list[dict[str, Any]]) -> dict[str, Any]:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise _fail("A function_call_output item needs its call_id.", f"{path}.call_id")
    output = item.get("output")
    if isinstance(output, dict) and isinstance(output.get("content"), str):  # {content, success}
        output = output["content"]
    if isinstance(output, str):
        text = output
    elif output is None:
        text = ""
    else:
        parts = _parts(output, f"{path}.output")
        text = _text_of(parts)
        images.extend(p for p in parts if p["type"] == "image_url")
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def from_chat(
    answer: Answer, model: str, created_at: int = 0, names: Mapping[str, tuple[str, str]] | None = None
) -> dict[str, Any]:
    """The ``response`` object of a non-streamed answer (items as in ``responses_stream``)."""
    base = response_id_base(answer.id)
    status, incomplete = FINISH_STATUS.get(answer.finish_reason, ("completed", None))
    item_status = "incomplete" if status == "incomplete" else "completed"
    output: list[dict[str, Any]] = []
    if answer.reasoning:
        output.append(reasoning_item(f"rs_{base}_{len(output)}", answer.reasoning, item_status))
    if answer.text:
        output.append(message_item(f"msg_{base}_{len(output)}", answer.text, item_status))
    for call in answer.tool_calls:
        item_id = f"fc_{base}_{len(output)}"
        arguments = call_arguments(call.arguments)
        output.append(call_item(item_id, call.call_id, call.name, arguments, item_status, names or {}))
    usage = usage_object(answer.input_tokens, answer.output_tokens, answer.cached_tokens)
    return response_object(
        f"resp_{base}", created_at, model, status=status, output=output, usage=usage, incomplete_reason=incomplete
    )


def render_error(status: int, type_: str, message: str) -> dict[str, Any]:
    """OpenAI's error body; ``code`` repeats the type (``model_not_found``, ``rate_limit_error``…).
    The status is the driver's to set."""
    return {"error": {"message": message, "type": type_, "param": None, "code": type_}}
