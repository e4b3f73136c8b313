"""OpenAI Responses output (SPEC §12.3): the ``response`` object and its SSE stream.

What a chat answer becomes, shared by ``responses.from_chat`` and the stream translator here:

- ``output`` holds, in this order as they happen: a ``reasoning`` item for the provider's reasoning
  text (``content: [{"type": "reasoning_text"}]``, ``summary: []``: it is the raw reasoning, not a
  summary), a ``message`` item with one ``output_text`` part (none when the text is empty) and one
  ``function_call`` item per tool call. A call to a tool the request offered inside a ``namespace``
  tool names its namespace again (``names``, from ``responses.tool_names``) so Codex can route it.
- the status follows the finish reason (``FINISH_STATUS``); ``usage`` carries the upstream's counts.
- ids derive from the upstream's completion id: ``resp_<id>``, items ``msg_<id>_<n>``,
  ``rs_<id>_<n>``, ``fc_<id>_<n>`` (``n`` the output index). ``created_at`` comes from the caller.

Stream (``ResponsesStream``), every event ``event: <type>`` + ``data: {"type", "sequence_number",
…}``, numbers from 0: ``response.created`` and ``response.in_progress`` (empty output), then per item
``response.output_item.added``; text as ``content_part.added`` / ``output_text.delta`` /
``output_text.done`` / ``content_part.done``; reasoning the same with ``reasoning_text``; calls as
``function_call_arguments.delta`` / ``.done``; each item ends with ``output_item.done`` carrying the
whole item (Codex reads the items from these events only). The answer ends with
``response.completed`` holding the whole response, also when it stopped on length (status
``incomplete`` inside: Codex treats a ``response.incomplete`` event as a failure). A failure ends
it with ``response.failed`` (status ``failed``, ``error.code`` ``server_error``) and nothing else.

Rules of the state machine: at most one message-or-reasoning item is open at a time (a switch
between text and reasoning closes one and opens the next). Tool calls stay open until the finish
reason, so providers that interleave the fragments of parallel calls still give valid events:
each call is its own item and every fragment names its ``output_index``. Items close at the finish
reason; ``response.completed`` waits for ``end()`` because usage often comes after it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from gateway.surfaces.chat import (
    Finish,
    Reasoning,
    Text,
    ToolArgs,
    ToolStart,
    UpstreamError,
    Usage,
)
from gateway.surfaces.contract import DecodedStream, Plan, Spliced, compact, utf8

__all__ = [
    "FINISH_STATUS",
    "ResponsesStream",
    "call_arguments",
    "call_item",
    "message_item",
    "reasoning_item",
    "response_id_base",
    "response_object",
    "usage_object",
]

# Upstream finish_reason → (response status, incomplete_details.reason); others → completed.
FINISH_STATUS: dict[str, tuple[str, str | None]] = {
    "stop": ("completed", None),
    "tool_calls": ("completed", None),
    "function_call": ("completed", None),
    "length": ("incomplete", "max_output_tokens"),
    "content_filter": ("incomplete", "content_filter"),
}

# Item ids are written into event templates unescaped, so they keep only these characters.
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]+")
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # str fast path


def response_id_base(upstream_id: str) -> str:
    """The upstream completion id, reduced to characters safe in ids (``gw`` when empty)."""
    return _UNSAFE_ID.sub("_", upstream_id)[:96] or "gw"


def _status(reason: str) -> tuple[str, str | None]:
    return FINISH_STATUS.get(reason, ("completed", None))


def call_arguments(arguments: str) -> str:
    """A call's arguments as sent; ``{}`` for none (several providers send "", Codex parses it)."""
    return arguments if arguments.strip() else "{}"


def usage_object(input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> dict[str, Any]:
    """The Responses usage: ``input_tokens`` includes the ``cached_tokens`` (SPEC §12.3)."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached_tokens},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def message_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": []}
    return {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": [part]}


def reasoning_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    content = [{"type": "reasoning_text", "text": text}]
    return {"id": item_id, "type": "reasoning", "summary": [], "content": content, "status": status}


def call_item(
    item_id: str, call_id: str, name: str, arguments: str, status: str, names: Mapping[str, tuple[str, str]]
) -> dict[str, Any]:
    item = {"id": item_id, "type": "function_call", "status": status, "arguments": arguments, "call_id": call_id}
    if name in names:  # a function of a namespace tool: its own name and its namespace
        namespace, name = names[name]
        item["namespace"] = namespace
    item["name"] = name
    return item


def response_object(
    response_id: str,
    created_at: int,
    model: str,
    *,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    incomplete_reason: str | None = None,
    error: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The ``response`` object, with every field the openai SDK's ``Response`` model requires."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "error": error,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "instructions": None,
        "metadata": {},
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "temperature": None,
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "usage": usage,
    }


# The tail of a delta event after its delta value; output text deltas carry (empty) logprobs.
_TEXT_TAIL = ',"logprobs":[],"sequence_number":'
_PLAIN_TAIL = ',"sequence_number":'
# What follows an event's sequence number.
_EVENT_END = "}\n\n"


class _Item:
    """An open output item: its kind, place, id, and the text or arguments so far."""

    __slots__ = ("call_id", "head", "id", "index", "kind", "name", "parts", "tail")

    def __init__(self, kind: str, index: int, item_id: str, head: str, call_id: str = "", name: str = "") -> None:
        self.kind = kind
        self.index = index
        self.id = item_id
        self.head = head  # the delta event up to its "delta" value
        self.tail = _TEXT_TAIL if kind == "message" else _PLAIN_TAIL  # after it, to the number
        self.call_id = call_id
        self.name = name
        self.parts: list[str] = []


_DELTA_TYPES = {
    "message": "response.output_text.delta",
    "reasoning": "response.reasoning_text.delta",
    "function_call": "response.function_call_arguments.delta",
}
_ID_PREFIX = {"message": "msg_", "reasoning": "rs_", "function_call": "fc_"}


def _delta_head(kind: str, item_id: str, index: int) -> str:
    kind_type = _DELTA_TYPES[kind]
    content = '"content_index":0,' if kind != "function_call" else ""
    return (
        f'event: {kind_type}\ndata: {{"type":"{kind_type}","item_id":"{item_id}",'
        f'"output_index":{index},{content}"delta":'
    )


class ResponsesStream(DecodedStream):
    """OpenAI chat SSE in, Responses SSE out (see the module doc; contract.StreamTranslator).

    ``model`` is the model that serves, ``created_at`` the response's Unix time in seconds,
    ``names`` the flattened namespace functions (``responses.tool_names``)."""

    media_type = "text/event-stream"

    def __init__(self, model: str, created_at: int = 0, names: Mapping[str, tuple[str, str]] | None = None) -> None:
        self._model = model
        self._created_at = created_at
        self._names: Mapping[str, tuple[str, str]] = names or {}
        super().__init__()
        self._seq = 0
        self._base = ""  # set by the prologue
        self._started = False
        self._over = False
        self._open: _Item | None = None  # the open message or reasoning item
        self._calls: dict[int, _Item] = {}  # open calls by the decoder's call position
        self._done: dict[int, dict[str, Any]] = {}  # closed items by output index
        self._next = 0
        self._reason = ""
        self._usage = (0, 0, 0)

    def feed(self, data: bytes) -> bytes:
        if self._over:
            return b""
        events = self._decoder.feed(data)
        if not self._started and not events and not self._decoder.id:
            return b""  # the first chunk is not complete yet: its id names the response
        out: list[str] = []
        if not self._started:
            self._prologue(out)
        for event in events:
            kind = type(event)
            if kind is Text or kind is Reasoning:
                wanted = "message" if kind is Text else "reasoning"
                item = self._open
                if item is None or item.kind != wanted:
                    item = self._open_text(wanted, out)
                item.parts.append(event.text)
                out.append(item.head + _encode(event.text) + item.tail + str(self._seq) + _EVENT_END)
                self._seq += 1
            elif kind is ToolArgs:
                item = self._calls.get(event.index)
                if item is not None:  # fragments of an unknown or closed call cannot be placed
                    item.parts.append(event.fragment)
                    out.append(item.head + _encode(event.fragment) + _PLAIN_TAIL + str(self._seq) + _EVENT_END)
                    self._seq += 1
            elif kind is ToolStart:
                self._open_call(event, out)
            elif kind is Finish:
                self._reason = event.reason
                self._close_all(out)
            elif kind is Usage:
                self._usage = (event.input_tokens, event.output_tokens, event.cached_tokens)
            elif kind is UpstreamError:
                self._fail(event.message, out)
                break
        return utf8("".join(out))

    def plan(self) -> Plan | None:
        """The open message or reasoning item's deltas and the open calls' arguments, each an
        event numbered on from ``_seq``."""
        if self._over or not self._started or not self._spliceable():
            return None
        item = self._open
        pieces = (item.head, item.tail) if item is not None else None
        keys = ((self._key(position), call) for position, call in self._calls.items())
        args = tuple((key, call.head, _PLAIN_TAIL) for key, call in keys if key is not None)
        return Plan(
            "each",
            text=pieces if item is not None and item.kind == "message" else None,
            reasoning=pieces if item is not None and item.kind == "reasoning" else None,
            args=args,
            counter=(self._seq, _EVENT_END),
        )

    def _absorb(self, spliced: Spliced) -> None:
        self._seq += spliced.units
        if self._open is not None and (spliced.texts or spliced.reasonings):
            self._open.parts.append(spliced.text or spliced.reasoning)  # one of them: one item is open
        for position, joined in self._positions(spliced):
            self._calls[position].parts.append(joined)

    def end(self) -> bytes:
        if self._over:
            return b""
        out: list[str] = []
        if not self._started:
            self._prologue(out)
        self._close_all(out)
        self._over = True
        status, incomplete = _status(self._reason or "stop")
        response = self._response(status, incomplete_reason=incomplete)
        self._emit(out, "response.completed", '"response":' + compact(response))
        return utf8("".join(out))

    def fail(self, message: str, code: str = "stream_interrupted") -> bytes:
        if self._over:
            return b""
        out: list[str] = []
        self._fail(message, out)
        return utf8("".join(out))

    # -- events ---------------------------------------------------------------------------

    def _emit(self, out: list[str], event_type: str, fields: str) -> None:
        out.append(f'event: {event_type}\ndata: {{"type":"{event_type}",{fields},"sequence_number":{self._seq}}}\n\n')
        self._seq += 1

    def _response(self, status: str, **extra: Any) -> dict[str, Any]:
        output = [self._done[index] for index in sorted(self._done)]
        return response_object(
            f"resp_{self._base}",
            self._created_at,
            self._model,
            status=status,
            output=output,
            usage=usage_object(*self._usage),
            **extra,
        )

    def _prologue(self, out: list[str]) -> None:
        self._started = True
        self._base = response_id_base(self._decoder.id)
        response = response_object(
            f"resp_{self._base}", self._created_at, self._model, status="in_progress", output=[], usage=None
        )
        body = '"response":' + compact(response)
        self._emit(out, "response.created", body)
        self._emit(out, "response.in_progress", body)

    def _fail(self, message: str, out: list[str]) -> None:
        if not self._started:
            self._prologue(out)
        self._over = True
        error = {"code": "server_error", "message": message}
        self._emit(out, "response.failed", '"response":' + compact(self._response("failed", error=error)))

    def _new_item(self, kind: str) -> tuple[int, str]:
        index = self._next
        self._next += 1
        return index, f"{_ID_PREFIX[kind]}{self._base}_{index}"

    def _open_text(self, kind: str, out: list[str]) -> _Item:
        if self._open is not None:
            self._close(self._open, "completed", out)
        index, item_id = self._new_item(kind)
        item = self._open = _Item(kind, index, item_id, _delta_head(kind, item_id, index))
        if kind == "message":
            added = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
            part = '{"type":"output_text","text":"","annotations":[]}'
        else:
            added = {"id": item_id, "type": "reasoning", "summary": [], "content": [], "status": "in_progress"}
            part = '{"type":"reasoning_text","text":""}'
        self._emit(out, "response.output_item.added", f'"output_index":{index},"item":{compact(added)}')
        place = f'"item_id":"{item_id}","output_index":{index},"content_index":0'
        self._emit(out, "response.content_part.added", f'{place},"part":{part}')
        return item

    def _open_call(self, event: ToolStart, out: list[str]) -> None:
        if self._open is not None:
            self._close(self._open, "completed", out)
            self._open = None
        if event.index in self._calls:
            return  # the decoder starts each call once; a repeated position is ignored
        index, item_id = self._new_item("function_call")
        head = _delta_head("function_call", item_id, index)
        self._calls[event.index] = _Item("function_call", index, item_id, head, event.call_id, event.name)
        added = call_item(item_id, event.call_id, event.name, "", "in_progress", self._names)
        self._emit(out, "response.output_item.added", f'"output_index":{index},"item":{compact(added)}')

    def _close_all(self, out: list[str]) -> None:
        """Close every open item, in output order, with the status the finish reason gives."""
        status = "incomplete" if _status(self._reason)[0] == "incomplete" else "completed"
        items = list(self._calls.values())
        if self._open is not None:
            items.append(self._open)
        for item in sorted(items, key=lambda open_item: open_item.index):
            self._close(item, status, out)
        self._open = None
        self._calls.clear()

    def _close(self, item: _Item, status: str, out: list[str]) -> None:
        text = "".join(item.parts)
        place = f'"item_id":"{item.id}","output_index":{item.index}'
        if item.kind == "function_call":
            arguments = call_arguments(text)
            done = call_item(item.id, item.call_id, item.name, arguments, status, self._names)
            fields = f'{place},"name":{_encode(done["name"])},"arguments":{_encode(arguments)}'
            self._emit(out, "response.function_call_arguments.done", fields)
        else:
            encoded = _encode(text)
            if item.kind == "message":
                text_done = f'{place},"content_index":0,"text":{encoded},"logprobs":[]'
                self._emit(out, "response.output_text.done", text_done)
                part = f'{{"type":"output_text","text":{encoded},"annotations":[]}}'
                done = message_item(item.id, text, status)
            else:
                self._emit(out, "response.reasoning_text.done", f'{place},"content_index":0,"text":{encoded}')
                part = f'{{"type":"reasoning_text","text":{encoded}}}'
                done = reasoning_item(item.id, text, status)
            self._emit(out, "response.content_part.done", f'{place},"content_index":0,"part":{part}')
        self._emit(out, "response.output_item.done", f'"output_index":{item.index},"item":{compact(done)}')
        self._done[item.index] = done
