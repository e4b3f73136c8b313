"""The client protocols of SPEC §12 seen from the wire, for tests/e2e/test_surfaces.py.

A ``Surface`` knows how a client of one protocol asks (path, headers carrying the token its own
way, body) and how to read what comes back, whole or streamed, into one neutral ``Reading``: the
text, the tool calls with their arguments parsed, the model the answer names, whether the
surface's *normal end* was seen, and the message of the surface's *error end* if any. The readers
also note what breaks the protocol's own rules (``problems``), so a malformed stream fails the
test that reads it.

Surfaces (``SURFACES``): Anthropic Messages, OpenAI Responses, Gemini with ``?alt=sse`` (under
``/v1beta``), Gemini's JSON-array stream (no ``alt``, under ``/v1``, the google-genai SDK's
default), Ollama ``/api/chat`` and ``/api/generate`` (streamed by default: their streamed requests
leave ``stream`` out).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SURFACES", "Reading", "Surface"]


@dataclass
class Reading:
    """What an answer or a stream said, whatever the surface spoke.

    ``finished``: the surface's normal end (Anthropic ``message_stop``, Responses
    ``response.completed``, a Gemini chunk with ``finishReason``, Ollama ``"done": true``; for a
    non-streamed answer, its completed form). ``error``: the message of the surface's error end, or
    None, and ``error_kind`` the kind it names. ``problems``: breaches of the protocol's own rules
    the reader noticed, anything sent after the normal or the error end included."""

    text: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)  # (name, parsed arguments)
    call_ids: list[str] = field(default_factory=list)
    model: str | None = None
    finished: bool = False
    error: str | None = None
    error_kind: str | None = None
    stop: str | None = None  # the surface's own stop/finish reason
    problems: list[str] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)


def _loads(text: str, reading: Reading, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        reading.problems.append(f"{what} is not JSON: {text[:200]!r}")
        return None


def _arguments(text: str) -> Any:
    """Streamed call arguments, parsed when whole (a cut stream may leave them unfinished)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _sse_blocks(raw: bytes) -> list[tuple[str | None, str | None, str]]:
    """(event name, data, raw block) of every blank-line separated block of an SSE body."""
    text = raw.decode().replace("\r\n", "\n")
    blocks = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[6:] if line[5:6] == " " else line[5:])
        blocks.append((name, "\n".join(data) if data else None, block))
    return blocks


class Surface:
    """One client protocol. Subclasses fill in the request and the readers."""

    id: str = ""
    # The model name a client of this protocol sends by default, which no provider declares.
    foreign_model: str = ""
    tools_supported = True
    stream_media_type = "text/event-stream"
    # The kind a mid-stream error end names (None: the surface's error end carries none).
    stream_error_kind: str | None = None

    # -- requests ------------------------------------------------------------------------------

    def path(self, model: str, stream: bool) -> str:
        raise NotImplementedError

    def headers(self, token: str | None) -> dict[str, str]:
        """The headers carrying ``token`` the way this protocol's clients do (None: no token)."""
        return {} if token is None else {"authorization": f"Bearer {token}"}

    def body(
        self,
        model: str,
        stream: bool,
        text: str = "Hello",
        system: str | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """A request; ``tools`` as (name, description, JSON schema) dicts."""
        raise NotImplementedError

    def invalid_body(self) -> tuple[dict[str, Any], str]:
        """A request with one field of the wrong type, and that field's name."""
        raise NotImplementedError

    # -- answers -------------------------------------------------------------------------------

    def read_answer(self, body: Any) -> Reading:
        raise NotImplementedError

    def read_stream(self, raw: bytes) -> Reading:
        raise NotImplementedError

    def read_error(self, status: int, body: Any) -> tuple[str | None, str]:
        """(the error's kind, its message), checking the surface's error shape; kind is None
        where the shape has none (Ollama)."""
        raise NotImplementedError

    # The error kinds this surface names for a status (None: the shape carries no kind).
    error_kinds: dict[int, str | None] = {}

    def __repr__(self) -> str:
        return self.id


def _schema_tools_openai(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t["description"], "parameters": t["schema"]},
        }
        for t in tools
    ]


# --- Anthropic Messages (SPEC §12.2) ------------------------------------------------------------


class Anthropic(Surface):
    id = "anthropic"
    foreign_model = "claude-3-5-haiku"
    stream_error_kind = "api_error"
    error_kinds = {
        400: "invalid_request_error",
        401: "authentication_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        502: "api_error",
        503: "overloaded_error",
    }

    def path(self, model: str, stream: bool) -> str:
        return "/v1/messages"

    def headers(self, token: str | None) -> dict[str, str]:
        headers = {"anthropic-version": "2023-06-01"}
        return headers if token is None else {**headers, "x-api-key": token}

    def body(self, model, stream, text="Hello", system=None, tools=None):
        body: dict[str, Any] = {"model": model, "max_tokens": 256, "messages": [{"role": "user", "content": text}]}
        if stream:
            body["stream"] = True
        if system is not None:
            body["system"] = system
        if tools:
            body["tools"] = [
                {"name": t["name"], "description": t["description"], "input_schema": t["schema"]} for t in tools
            ]
        return body

    def invalid_body(self):
        return {"model": "m", "max_tokens": 16, "messages": "Hello"}, "messages"

    def read_answer(self, body):
        reading = Reading(events=[body])
        if body.get("type") != "message" or body.get("role") != "assistant":
            reading.problems.append(f"not a message: {body}")
        for block in body.get("content", []):
            if block["type"] == "text":
                reading.text += block["text"]
            elif block["type"] == "tool_use":
                reading.calls.append((block["name"], block["input"]))
                reading.call_ids.append(block["id"])
        reading.model = body.get("model")
        reading.stop = body.get("stop_reason")
        reading.finished = reading.stop is not None
        return reading

    def read_stream(self, raw):
        reading = Reading()
        blocks: dict[int, dict[str, Any]] = {}
        open_index = None
        for name, data, _block in _sse_blocks(raw):
            event = _loads(data or "", reading, f"event {name}")
            if not isinstance(event, dict):
                continue
            reading.events.append(event)
            if event.get("type") != name:
                reading.problems.append(f"event {name} carries type {event.get('type')}")
            kind = event.get("type")
            if reading.finished or reading.error is not None:
                reading.problems.append(f"{kind} after the stream's end")
            if kind == "message_start":
                reading.model = event["message"]["model"]
            elif kind == "content_block_start":
                if event["index"] != len(blocks) or open_index is not None:
                    reading.problems.append(f"block {event['index']} started out of order")
                open_index = event["index"]
                blocks[open_index] = {**event["content_block"], "json": ""}
            elif kind == "content_block_delta":
                if event["index"] != open_index:
                    reading.problems.append(f"delta for block {event['index']}, open is {open_index}")
                delta, target = event["delta"], blocks.get(event["index"], {})
                if delta["type"] == "text_delta":
                    reading.text += delta["text"]
                elif delta["type"] == "input_json_delta":
                    if target.get("type") != "tool_use":
                        reading.problems.append("input_json_delta outside a tool_use block")
                    target["json"] = target.get("json", "") + delta["partial_json"]
            elif kind == "content_block_stop":
                if event["index"] != open_index:
                    reading.problems.append(f"stop of block {event['index']}, open is {open_index}")
                open_index = None
            elif kind == "message_delta":
                reading.stop = event["delta"]["stop_reason"]
            elif kind == "message_stop":
                reading.finished = True
            elif kind == "error":
                reading.error_kind = event["error"]["type"]
                reading.error = event["error"]["message"]
        for block in blocks.values():
            if block["type"] == "tool_use":
                reading.calls.append((block["name"], _arguments(block["json"]) if block["json"] else block["input"]))
                reading.call_ids.append(block["id"])
        return reading

    def read_error(self, status, body):
        assert body["type"] == "error", body
        return body["error"]["type"], body["error"]["message"]


# --- OpenAI Responses (SPEC §12.3) --------------------------------------------------------------


class Responses(Surface):
    id = "responses"
    foreign_model = "gpt-5-codex"
    stream_error_kind = "server_error"  # response.failed's error.code
    error_kinds = {
        400: "invalid_request_error",
        401: "authentication_error",
        413: "invalid_request_error",
        429: "rate_limit_error",
        502: "provider_error",
        503: "service_unavailable",
    }

    def path(self, model, stream):
        return "/v1/responses"

    def body(self, model, stream, text="Hello", system=None, tools=None):
        body: dict[str, Any] = {"model": model, "input": text}
        if stream:
            body["stream"] = True
        if system is not None:
            body["instructions"] = system
        if tools:
            body["tools"] = [
                {"type": "function", "name": t["name"], "description": t["description"], "parameters": t["schema"]}
                for t in tools
            ]
        return body

    def invalid_body(self):
        return {"model": "m", "input": "Hello", "tools": "get_weather"}, "tools"

    def _read_response(self, response: dict[str, Any], reading: Reading) -> None:
        reading.model = response.get("model")
        reading.stop = response.get("status")
        for item in response.get("output", []):
            if item["type"] == "message":
                reading.text += "".join(p["text"] for p in item["content"] if p["type"] == "output_text")
            elif item["type"] == "function_call":
                reading.calls.append((item["name"], json.loads(item["arguments"])))
                reading.call_ids.append(item["call_id"])

    def read_answer(self, body):
        reading = Reading(events=[body])
        if body.get("object") != "response":
            reading.problems.append(f"not a response: {body}")
        self._read_response(body, reading)
        reading.finished = body.get("status") in ("completed", "incomplete")  # incomplete: stopped on length
        return reading

    def read_stream(self, raw):
        reading = Reading()
        items: dict[int, dict[str, Any]] = {}
        completed = None
        for name, data, _ in _sse_blocks(raw):
            event = _loads(data or "", reading, f"event {name}")
            if not isinstance(event, dict):
                continue
            if event.get("type") != name:
                reading.problems.append(f"event {name} carries type {event.get('type')}")
            if event.get("sequence_number") != len(reading.events):
                reading.problems.append(f"{name} has sequence_number {event.get('sequence_number')}")
            if reading.finished or reading.error is not None:
                reading.problems.append(f"{name} after the stream's end")
            reading.events.append(event)
            kind = event.get("type")
            if kind == "response.created":
                reading.model = event["response"]["model"]
            elif kind == "response.output_item.added":
                items[event["output_index"]] = {**event["item"], "streamed": ""}
            elif kind == "response.output_text.delta":
                reading.text += event["delta"]
            elif kind == "response.function_call_arguments.delta":
                items[event["output_index"]]["streamed"] += event["delta"]
            elif kind == "response.function_call_arguments.done":
                if items[event["output_index"]]["streamed"] != event["arguments"]:
                    reading.problems.append("function_call_arguments.done differs from its deltas")
            elif kind == "response.completed":
                reading.finished = True
                completed = event["response"]
                reading.stop = completed["status"]
            elif kind == "response.failed":
                response = event["response"]
                if response.get("status") != "failed":
                    reading.problems.append(f"response.failed with status {response.get('status')}")
                reading.error_kind = response["error"].get("code")
                reading.error = response["error"]["message"]
        for item in sorted(items.items()):
            if item[1]["type"] == "function_call":
                reading.calls.append((item[1]["name"], _arguments(item[1]["streamed"])))
                reading.call_ids.append(item[1]["call_id"])
        if completed is not None:
            whole = Reading()
            self._read_response(completed, whole)
            if (whole.text, whole.calls) != (reading.text, reading.calls):
                reading.problems.append("response.completed differs from the streamed deltas")
        return reading

    def read_error(self, status, body):
        error = body["error"]
        assert isinstance(error, dict) and isinstance(error["message"], str), body
        return error["type"], error["message"]


# --- Gemini (SPEC §12.4) ------------------------------------------------------------------------


class Gemini(Surface):
    id = "gemini-sse"
    foreign_model = "gemini-2.5-pro"
    stream_error_kind = "INTERNAL"
    prefix = "/v1beta"
    sse = True
    error_kinds = {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        404: "NOT_FOUND",
        413: "INVALID_ARGUMENT",
        429: "RESOURCE_EXHAUSTED",
        502: "INTERNAL",
        503: "UNAVAILABLE",
    }

    def path(self, model, stream):
        if not stream:
            return f"{self.prefix}/models/{model}:generateContent"
        return f"{self.prefix}/models/{model}:streamGenerateContent" + ("?alt=sse" if self.sse else "")

    def headers(self, token):
        return {} if token is None else {"x-goog-api-key": token}

    def body(self, model, stream, text="Hello", system=None, tools=None):
        body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": text}]}]}
        if system is not None:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        if tools:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {"name": t["name"], "description": t["description"], "parameters": t["schema"]} for t in tools
                    ]
                }
            ]
        return body

    def invalid_body(self):
        return {"contents": "Hello"}, "contents"

    def _read_chunk(self, chunk: dict[str, Any], reading: Reading) -> None:
        if reading.finished:
            reading.problems.append("a chunk after the one with finishReason")
        reading.model = chunk.get("modelVersion", reading.model)
        for candidate in chunk.get("candidates", []):
            for part in candidate.get("content", {}).get("parts", []):
                if "text" in part and not part.get("thought"):
                    if not part["text"]:
                        reading.problems.append("an empty text part")
                    reading.text += part["text"]
                elif "functionCall" in part:
                    call = part["functionCall"]
                    if not isinstance(call.get("args"), dict):
                        reading.problems.append(f"functionCall args not an object: {call}")
                    reading.calls.append((call["name"], call["args"]))
                    reading.call_ids.append(call.get("id"))
            if candidate.get("finishReason"):
                reading.finished = True
                reading.stop = candidate["finishReason"]

    def _read_item(self, item: Any, reading: Reading) -> None:
        if not isinstance(item, dict):
            reading.problems.append(f"not an object: {item!r}")
            return
        if reading.error is not None:
            reading.problems.append("something after the error")
        reading.events.append(item)
        if "error" in item:
            error = item["error"]
            reading.error, reading.error_kind = error["message"], error["status"]
            if not isinstance(error.get("code"), int):
                reading.problems.append(f"error without a code: {error}")
        else:
            self._read_chunk(item, reading)

    def read_answer(self, body):
        reading = Reading(events=[body])
        self._read_chunk(body, reading)
        return reading

    def read_stream(self, raw):
        reading = Reading()
        if not self.sse:
            items = _loads(raw.decode(), reading, "the JSON-array stream")
            if not isinstance(items, list):
                reading.problems.append("the stream is not a JSON array")
                items = []
            for item in items:
                self._read_item(item, reading)
        else:
            for _, data, block in _sse_blocks(raw):
                # A mid-stream error is written bare, outside any data: line, as the real API does.
                self._read_item(_loads(data if data is not None else block, reading, "a chunk"), reading)
        return reading

    def read_error(self, status, body):
        error = body["error"]
        assert error["code"] == status, body
        return error["status"], error["message"]


class GeminiArray(Gemini):
    id = "gemini-array"
    prefix = "/v1"
    sse = False
    stream_media_type = "application/json"


# --- Ollama (SPEC §12.5) ------------------------------------------------------------------------


class OllamaChat(Surface):
    id = "ollama-chat"
    foreign_model = "llama3.2"
    error_kinds = {400: None, 401: None, 404: None, 413: None, 429: None, 502: None, 503: None}
    route = "/api/chat"
    stream_media_type = "application/x-ndjson"

    def path(self, model, stream):
        return self.route

    def body(self, model, stream, text="Hello", system=None, tools=None):
        messages = [{"role": "system", "content": system}] if system is not None else []
        body: dict[str, Any] = {"model": model, "messages": [*messages, {"role": "user", "content": text}]}
        if not stream:
            body["stream"] = False  # streamed is Ollama's default: a streamed request leaves it out
        if tools:
            body["tools"] = _schema_tools_openai(tools)
        return body

    def invalid_body(self):
        return {"model": "m", "messages": "Hello"}, "messages"

    def _read_line(self, line: dict[str, Any], reading: Reading) -> None:
        if reading.finished or reading.error is not None:
            reading.problems.append("a line after the last one")
        reading.events.append(line)
        if "error" in line:
            reading.error = line["error"]
            if not isinstance(reading.error, str):
                reading.problems.append(f"error is not a string: {line}")
            return
        reading.model = line.get("model", reading.model)
        message = line.get("message") or {}
        reading.text += message.get("content") or line.get("response") or ""
        for call in message.get("tool_calls") or line.get("tool_calls") or []:
            reading.calls.append((call["function"]["name"], call["function"]["arguments"]))
            reading.call_ids.append(call.get("id"))
        if line.get("done") is True:
            reading.finished = True
            reading.stop = line.get("done_reason")

    def read_answer(self, body):
        reading = Reading()
        self._read_line(body, reading)
        return reading

    def read_stream(self, raw):
        reading = Reading()
        if not raw.endswith(b"\n"):
            reading.problems.append("the last line is not terminated")
        for line in raw.decode().split("\n"):
            if not line:
                continue
            parsed = _loads(line, reading, "a line")
            if isinstance(parsed, dict):
                self._read_line(parsed, reading)
        return reading

    def read_error(self, status, body):
        assert set(body) == {"error"} and isinstance(body["error"], str), body
        return None, body["error"]


class OllamaGenerate(OllamaChat):
    id = "ollama-generate"
    route = "/api/generate"
    tools_supported = False  # /api/generate takes no tools

    def body(self, model, stream, text="Hello", system=None, tools=None):
        body: dict[str, Any] = {"model": model, "prompt": text}
        if system is not None:
            body["system"] = system
        if not stream:
            body["stream"] = False
        return body

    def invalid_body(self):
        return {"model": "m", "prompt": 5}, "prompt"


SURFACES: list[Surface] = [Anthropic(), Responses(), Gemini(), GeminiArray(), OllamaChat(), OllamaGenerate()]
