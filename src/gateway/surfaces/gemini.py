"""Gemini (SPEC §12.4): ``generateContent`` requests → OpenAI chat bodies, answers back, errors.
Pure: no I/O, no clock, no randomness. Answers and streams: ``gemini_stream``; model entries:
``models``.

Request rules (``to_chat``; the model comes from the URL, a ``models/`` prefix stripped):

- ``systemInstruction`` (a Content or a string) → one system message first, its texts joined.
- ``contents``: role ``model`` → an assistant message (texts joined, ``functionCall`` parts →
  ``tool_calls`` with the args as a JSON string); any other role (``user``, ``function``) →
  ``functionResponse`` parts become ``tool`` messages (content: the ``response`` as JSON), in order
  and before a ``user`` message holding the turn's ``text``, ``inlineData`` and ``fileData`` (also
  those nested in a ``functionResponse``): images → ``image_url`` (a data URL or the file's URI),
  text media → text, other media (PDF, audio: Gemini CLI sends what ``read_file`` read) → a text
  note that they were left out, so the conversation can go on. ``thought`` parts are dropped;
  ``thoughtSignature``, ``executableCode`` and unknown parts are ignored.
- Call ids: a part's ``id`` when given (Gemini CLI sends them), else ``call_<name>_<n>`` numbered
  through the conversation; a ``functionResponse`` without an ``id`` takes the id of the first
  unanswered call of its name, as Gemini pairs them by name and order.
- ``tools[].functionDeclarations`` → function tools: ``parametersJsonSchema`` as is, or the Gemini
  ``Schema`` of ``parameters`` as JSON schema (``SCHEMA_KEYS``; upper-case types lower-cased);
  other tools (``googleSearch``, ``codeExecution`` …) dropped.
- ``toolConfig.functionCallingConfig``: ``mode`` via ``TOOL_MODES``; with ``ANY``, one
  ``allowedFunctionNames`` entry → that function, several → only those tools offered.
- ``generationConfig`` via ``GENERATION_FIELDS``; ``candidateCount`` above 1 → 400 (one candidate
  only); ``responseMimeType: application/json`` → ``response_format`` json_object.
- ``thinkingConfig``, ``safetySettings``, ``cachedContent``, ``labels`` and unknown fields ignored.
"""

from __future__ import annotations

import base64
import math
from typing import Any

from gateway.errors import InvalidRequestError
from gateway.surfaces.contract import compact, estimate_tokens
from gateway.surfaces.gemini_stream import FINISH_REASONS, GeminiStream, from_chat

__all__ = [
    "ERROR_STATUSES",
    "FINISH_REASONS",
    "GENERATION_FIELDS",
    "OMITTED",
    "SCHEMA_KEYS",
    "TEXT_MEDIA",
    "TOOL_MODES",
    "GeminiStream",
    "canonical",
    "count_tokens",
    "from_chat",
    "render_error",
    "to_chat",
]

# functionCallingConfig.mode → OpenAI tool_choice (VALIDATED: the model decides, checked: auto).
TOOL_MODES: dict[str, str] = {
    "MODE_UNSPECIFIED": "auto",
    "AUTO": "auto",
    "VALIDATED": "auto",
    "ANY": "required",
    "NONE": "none",
}

# generationConfig field → (OpenAI field, accepted types).
GENERATION_FIELDS: dict[str, tuple[str, tuple[type, ...]]] = {
    "temperature": ("temperature", (int, float)),
    "topP": ("top_p", (int, float)),
    "topK": ("top_k", (int,)),
    "maxOutputTokens": ("max_tokens", (int,)),
    "presencePenalty": ("presence_penalty", (int, float)),
    "frequencyPenalty": ("frequency_penalty", (int, float)),
    "seed": ("seed", (int,)),
}

# Gemini Schema keys kept in the JSON schema (the rest, e.g. propertyOrdering, nullable, example,
# are Gemini's own).
SCHEMA_KEYS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "enum",
        "default",
        "properties",
        "required",
        "items",
        "anyOf",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "minProperties",
        "maxProperties",
    }
)

# HTTP status → google.rpc status name; other 4xx → INVALID_ARGUMENT, other 5xx → INTERNAL.
ERROR_STATUSES: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
    508: "INTERNAL",
}

# Media that are text, passed as text parts; other non-image media are replaced by OMITTED.
TEXT_MEDIA = frozenset({"application/json", "application/xml", "application/x-yaml", "application/javascript"})
OMITTED = "[{what} left out: this gateway passes on text and images only]"


def _invalid(message: str, param: str) -> InvalidRequestError:
    return InvalidRequestError(f"Invalid value at '{param}': {message}", param=param)


def _list(value: Any, param: str) -> list[Any]:
    if not isinstance(value, list):
        raise _invalid("must be a list", param)
    return value


def _items(value: Any, param: str) -> list[Any]:
    """An optional list: absent (None) reads as empty."""
    return [] if value is None else _list(value, param)


def _object(value: Any, param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _invalid("must be an object", param)
    return value


def _string(value: Any, param: str) -> str:
    if not isinstance(value, str):
        raise _invalid("must be a string", param)
    return value


# Values whose keys are the caller's own (schemas, call arguments, results): never renamed.
_OPAQUE = frozenset(
    {
        "args",
        "response",
        "parameters",
        "parametersJsonSchema",
        "responseSchema",
        "responseJsonSchema",
        "metadata",
        "labels",
    }
)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def canonical(value: Any) -> Any:
    """``value`` with Gemini's field names in camelCase. Google's API takes the proto field
    names too (``function_declarations``, ``parameters_json_schema``, ``mime_type``), and the
    google-genai SDK sends some of them so; the caller's own keys (``_OPAQUE``) are kept."""
    if isinstance(value, list):
        return [canonical(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        name = _camel(key) if isinstance(key, str) and "_" in key else key
        out[name] = item if name in _OPAQUE else canonical(item)
    return out


def to_chat(body: dict[str, Any], model: str, stream: bool) -> dict[str, Any]:
    """The OpenAI chat body of a ``generateContent`` request (rules in the module doc); field
    names in camelCase or snake_case (``canonical``).

    Raises ``InvalidRequestError`` naming the field for a request Gemini would refuse."""
    body = canonical(_object(body, "body"))
    chat: dict[str, Any] = {"model": model.removeprefix("models/"), "messages": _messages(body)}
    if stream:
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}
    _tools(body, chat)
    if body.get("generationConfig") is not None:
        _generation(_object(body["generationConfig"], "generationConfig"), chat)
    return chat


def count_tokens(body: dict[str, Any], model: str) -> dict[str, int]:
    """``countTokens``: ``{"totalTokens": n}``, an estimate of the request's tokens (no upstream
    call). ``body`` holds ``contents`` or a whole ``generateContentRequest``."""
    body = canonical(_object(body, "body"))
    if body.get("generateContentRequest") is not None:
        body = _object(body["generateContentRequest"], "generateContentRequest")
    return {"totalTokens": estimate_tokens(to_chat(body, model, False))}


def render_error(status: int, type_: str, message: str) -> dict[str, Any]:
    """Gemini's error body ``{"error": {"code", "message", "status"}}`` for an HTTP status."""
    name = ERROR_STATUSES.get(status) or ("INVALID_ARGUMENT" if status < 500 else "INTERNAL")
    return {"error": {"code": status, "message": message, "status": name}}


def _texts(content: Any, param: str) -> str:
    """The text of a ``systemInstruction``: a string, or a Content's text parts joined."""
    if isinstance(content, str):
        return content
    parts = _items(_object(content, param).get("parts"), f"{param}.parts")
    texts = []
    for i, part in enumerate(parts):
        part = _object(part, f"{param}.parts[{i}]")
        if part.get("text") is not None and not part.get("thought"):
            texts.append(_string(part["text"], f"{param}.parts[{i}].text"))
    return "\n".join(texts)


class _Calls:
    """Pairs function calls and responses by id, or by name and order when ids are missing."""

    def __init__(self) -> None:
        self.derived = 0
        self.open: list[tuple[str, str]] = []  # (name, id) of calls not answered yet

    def call(self, name: str, given: Any) -> str:
        call_id = given if isinstance(given, str) and given else self._derive(name)
        self.open.append((name, call_id))
        return call_id

    def response(self, name: str, given: Any) -> str:
        if isinstance(given, str) and given:
            self.open = [pending for pending in self.open if pending[1] != given]
            return given
        for position, (pending_name, call_id) in enumerate(self.open):
            if pending_name == name:
                del self.open[position]
                return call_id
        return self._derive(name)

    def _derive(self, name: str) -> str:
        self.derived += 1
        return f"call_{name}_{self.derived - 1}"


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if body.get("systemInstruction") is not None:
        system = _texts(body["systemInstruction"], "systemInstruction")
        if system:
            messages.append({"role": "system", "content": system})
    contents = _list(body.get("contents"), "contents")
    if not contents:
        raise _invalid("at least one content is required", "contents")
    calls = _Calls()
    for i, content in enumerate(contents):
        param = f"contents[{i}]"
        content = _object(content, param)
        parts = _items(content.get("parts"), f"{param}.parts")
        if content.get("role") == "model":
            _model_turn(parts, param, calls, messages)
        else:
            _user_turn(parts, param, calls, messages)
    if not messages:
        raise _invalid("no content to send (only thoughts or unsupported parts)", "contents")
    return messages


def _model_turn(parts: list[Any], param: str, calls: _Calls, messages: list[dict[str, Any]]) -> None:
    texts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        where = f"{param}.parts[{j}]"
        part = _object(part, where)
        if part.get("thought"):
            continue
        if part.get("text") is not None:
            texts.append(_string(part["text"], f"{where}.text"))
        elif part.get("functionCall") is not None:
            call = _object(part["functionCall"], f"{where}.functionCall")
            name = _string(call.get("name"), f"{where}.functionCall.name")
            args = call.get("args")
            arguments = "{}" if args is None else compact(_object(args, f"{where}.functionCall.args"))
            tool_calls.append(
                {
                    "id": calls.call(name, call.get("id")),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            )
    if not texts and not tool_calls:
        return
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    messages.append(message)


def _user_turn(parts: list[Any], param: str, calls: _Calls, messages: list[dict[str, Any]]) -> None:
    content: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        where = f"{param}.parts[{j}]"
        part = _object(part, where)
        if part.get("thought"):
            continue
        if part.get("functionResponse") is not None:
            result = _object(part["functionResponse"], f"{where}.functionResponse")
            name = _string(result.get("name"), f"{where}.functionResponse.name")
            response = result.get("response")
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": calls.response(name, result.get("id")),
                    "content": compact(response if response is not None else {}),
                }
            )
            # Media a tool returned (Gemini CLI's read_file on an image) go in the turn's user message.
            nested = _items(result.get("parts"), f"{where}.functionResponse.parts")
            for k, inner in enumerate(nested):
                inner_where = f"{where}.functionResponse.parts[{k}]"
                _media(_object(inner, inner_where), inner_where, content)
        elif part.get("text") is not None:
            content.append({"type": "text", "text": _string(part["text"], f"{where}.text")})
        else:
            _media(part, where, content)
    if not content:
        return
    if all(item["type"] == "text" for item in content):
        messages.append({"role": "user", "content": "\n".join(item["text"] for item in content)})
    else:
        messages.append({"role": "user", "content": content})


def _media(part: dict[str, Any], where: str, content: list[dict[str, Any]]) -> None:
    """``inlineData``/``fileData``: an image → ``image_url``; text data → its text; other media
    (PDF, audio…) → a note saying it was left out, so a conversation holding one still goes on."""
    if part.get("inlineData") is not None:
        data = _object(part["inlineData"], f"{where}.inlineData")
        mime = _string(data.get("mimeType"), f"{where}.inlineData.mimeType")
        payload = _string(data.get("data"), f"{where}.inlineData.data")
        if mime.startswith("image/"):
            content.append({"type": "image_url", "image_url": {"url": f"data:{mime};base64,{payload}"}})
        elif mime.startswith("text/") or mime in TEXT_MEDIA:
            try:
                text = base64.b64decode(payload, validate=True).decode("utf-8", errors="replace")
            except ValueError:
                raise _invalid("must be base64", f"{where}.inlineData.data") from None
            content.append({"type": "text", "text": text})
        else:
            content.append({"type": "text", "text": OMITTED.format(what=f"{mime} data")})
    elif part.get("fileData") is not None:
        data = _object(part["fileData"], f"{where}.fileData")
        uri = _string(data.get("fileUri"), f"{where}.fileData.fileUri")
        mime = data.get("mimeType")
        if isinstance(mime, str) and mime and not mime.startswith("image/"):
            content.append({"type": "text", "text": OMITTED.format(what=f"{mime} file {uri}")})
        else:
            content.append({"type": "image_url", "image_url": {"url": uri}})


def _schema(schema: Any) -> Any:
    """A Gemini ``Schema`` as JSON schema: upper-case types lower-cased, Gemini-only keys dropped."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in SCHEMA_KEYS:
            continue
        if key == "type":
            if isinstance(value, str) and value.upper() != "TYPE_UNSPECIFIED":
                out["type"] = value.lower()
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {name: _schema(sub) for name, sub in value.items()}
        elif key == "items":
            out["items"] = _schema(value)
        elif key == "anyOf" and isinstance(value, list):
            out["anyOf"] = [_schema(sub) for sub in value]
        else:
            out[key] = value
    return out


def _tools(body: dict[str, Any], chat: dict[str, Any]) -> None:
    tools: list[dict[str, Any]] = []
    for i, tool in enumerate(_items(body.get("tools"), "tools")):
        tool = _object(tool, f"tools[{i}]")
        declarations = _items(tool.get("functionDeclarations"), f"tools[{i}].functionDeclarations")
        for j, declaration in enumerate(declarations):
            where = f"tools[{i}].functionDeclarations[{j}]"
            declaration = _object(declaration, where)
            function: dict[str, Any] = {"name": _string(declaration.get("name"), f"{where}.name")}
            if declaration.get("description") is not None:
                function["description"] = _string(declaration["description"], f"{where}.description")
            if declaration.get("parametersJsonSchema") is not None:
                function["parameters"] = _object(declaration["parametersJsonSchema"], f"{where}.parametersJsonSchema")
            elif declaration.get("parameters") is not None:
                function["parameters"] = _schema(_object(declaration["parameters"], f"{where}.parameters"))
            else:
                function["parameters"] = {"type": "object", "properties": {}}
            tools.append({"type": "function", "function": function})
    config = body.get("toolConfig")
    calling = _object(config, "toolConfig").get("functionCallingConfig") if config is not None else None
    if calling is not None and tools:
        calling = _object(calling, "toolConfig.functionCallingConfig")
        mode = calling.get("mode", "AUTO")
        choice = TOOL_MODES.get(mode.upper()) if isinstance(mode, str) else None
        if choice is None:
            raise _invalid(f"unknown mode {mode!r}", "toolConfig.functionCallingConfig.mode")
        names = _items(calling.get("allowedFunctionNames"), "toolConfig.functionCallingConfig.allowedFunctionNames")
        if choice == "required" and len(names) == 1:
            chat["tool_choice"] = {"type": "function", "function": {"name": names[0]}}
        else:
            if choice == "required" and names:
                tools = [tool for tool in tools if tool["function"]["name"] in names]
            chat["tool_choice"] = choice
    if tools:
        chat["tools"] = tools


def _generation(config: dict[str, Any], chat: dict[str, Any]) -> None:
    for field, (name, types) in GENERATION_FIELDS.items():
        value = config.get(field)
        if value is None:
            continue
        finite = not isinstance(value, float) or math.isfinite(value)
        if isinstance(value, bool) or not isinstance(value, types) or not finite:
            kind = "an integer" if types == (int,) else "a number"
            raise _invalid(f"must be {kind}", f"generationConfig.{field}")
        chat[name] = value
    stops = config.get("stopSequences")
    if stops is not None:
        stops = _list(stops, "generationConfig.stopSequences")
        for k, stop in enumerate(stops):
            _string(stop, f"generationConfig.stopSequences[{k}]")
        if stops:
            chat["stop"] = stops
    count = config.get("candidateCount")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count > 1):
        raise _invalid("only one candidate is supported", "generationConfig.candidateCount")
    if config.get("responseMimeType") == "application/json":
        chat["response_format"] = {"type": "json_object"}
