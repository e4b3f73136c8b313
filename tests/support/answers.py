"""OpenAI chat answers for the fake upstream to send: text, tool calls, reasoning, usage and faults,
each as a non-streamed ``Json`` step or an SSE ``Sse`` step shaped as real providers stream them.

A stream is: a first chunk with the role, ``reasoning_content`` deltas, ``content`` deltas, then per
tool call one chunk with its ``id``/``name`` and empty arguments followed by the arguments in
fragments (OpenAI's ``tool_calls`` deltas, keyed by ``index``), a chunk with ``finish_reason``, and a
usage chunk with no choices (as ``stream_options.include_usage`` gives). ``cut`` stops such a stream
after some events with a connection reset and no ``[DONE]``.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass
from typing import Any

from support.upstream import Json, Sse, delta_chunk

__all__ = ["Call", "answer", "completion_with", "cut", "server_error", "split", "stream_events"]

_call_ids = itertools.count(1)


@dataclass(frozen=True)
class Call:
    """A tool call the fake model makes: ``arguments`` as a dict (sent as JSON) or a raw string."""

    name: str
    arguments: dict[str, Any] | str
    id: str = ""

    @property
    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)

    def with_id(self) -> Call:
        """This call with an id: its own, else a fresh one unique in the test session (agents check
        that the ids of a conversation differ)."""
        return self if self.id else Call(self.name, self.arguments, f"call_fake_{next(_call_ids)}")


def split(text: str, pieces: int) -> list[str]:
    """``text`` in at most ``pieces`` non-empty consecutive fragments."""
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _finish(calls: list[Call], finish_reason: str | None) -> str:
    return finish_reason or ("tool_calls" if calls else "stop")


def _usage(usage: tuple[int, ...]) -> dict[str, Any]:
    """(prompt, completion) tokens, and a third figure: the prompt tokens read from a cache."""
    prompt, completion = usage[:2]
    counts: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if len(usage) > 2:
        counts["prompt_tokens_details"] = {"cached_tokens": usage[2]}
    return counts


def completion_with(
    model: str,
    text: str | None = None,
    calls: list[Call] = (),  # type: ignore[assignment]
    reasoning: str | None = None,
    finish_reason: str | None = None,
    usage: tuple[int, ...] = (11, 7),
) -> dict[str, Any]:
    """A ``chat.completion`` body: ``text`` (None: ``content`` null), ``calls`` as ``tool_calls``."""
    calls = [c.with_id() for c in calls]
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}} for c in calls
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(calls, finish_reason)}],
        "usage": _usage(usage),
    }


def stream_events(
    model: str,
    text: str | None = None,
    calls: list[Call] = (),  # type: ignore[assignment]
    reasoning: str | None = None,
    finish_reason: str | None = None,
    usage: tuple[int, ...] | None = (11, 7),
    pieces: int = 3,
) -> list[dict[str, Any]]:
    """The chunks of a streamed answer (see the module docstring); text, reasoning and each call's
    arguments arrive in ``pieces`` fragments. ``usage`` None: no usage chunk."""
    calls = [c.with_id() for c in calls]
    events = [delta_chunk(model, {"role": "assistant", "content": ""})]
    events += [delta_chunk(model, {"reasoning_content": part}) for part in split(reasoning or "", pieces)]
    events += [delta_chunk(model, {"content": part}) for part in split(text or "", pieces)]
    for index, call in enumerate(calls):
        opening = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        events.append(delta_chunk(model, {"tool_calls": [opening]}))
        events += [
            delta_chunk(model, {"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            for part in split(call.arguments_json, pieces)
        ]
    events.append(delta_chunk(model, {}, _finish(calls, finish_reason)))
    if usage is not None:
        events.append({**delta_chunk(model, {}), "choices": [], "usage": _usage(usage)})
    return events


def answer(model: str, *, stream: bool, **content: Any) -> Json | Sse:
    """The step answering a request the way it asked (``stream``), with ``content`` as for
    ``completion_with`` / ``stream_events``."""
    if stream:
        return Sse(stream_events(model, **content))
    content.pop("pieces", None)
    return Json(completion_with(model, **content))


def cut(
    model: str, text: str = "Hello, this answer is cut short", after: int = 3, held: threading.Event | None = None
) -> Sse:
    """A stream that sends its role chunk and ``after`` - 1 text fragments, then resets the
    connection: no ``finish_reason``, no ``[DONE]``. ``held``: the reset waits for it (a test
    sets it once its client got the text: a reset discards what the gateway has not read yet)."""
    events = stream_events(model, text=text, usage=None, pieces=8)[:after]
    return Sse(events, done=False, reset=True, gates={} if held is None else {len(events): held})


def server_error(status: int = 500, message: str = "the fake upstream failed") -> Json:
    """An error answered before any stream starts."""
    return Json({"error": {"message": message, "type": "server_error"}}, status)
