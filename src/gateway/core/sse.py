"""Reading just enough of an OpenAI SSE stream to keep the caller from a lie (SPEC §2.6).

Two questions, asked of bytes only at the edges of a stream, never per chunk:
- ``first_event``: has the first event with data arrived, and is it content, an error object,
  or ``[DONE]`` (a stream with nothing in it)? Comment-only events (keep-alives such as
  OpenRouter's ``: OPENROUTER PROCESSING``) come before it and do not count.
- ``ended_properly``: looking at the last bytes of a stream that closed, did it end as a
  complete answer — ``data: [DONE]``, or a final chunk with a ``finish_reason`` — or was it cut?
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum, StrEnum

__all__ = ["TAIL_BYTES", "Fault", "First", "FirstEvent", "ended_properly", "first_event", "stream_error_event"]

# How much of a stream's end is kept to judge how it ended: the final chunk and the [DONE] line.
TAIL_BYTES = 2048

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_FINISHED = re.compile(rb'"finish_reason"\s*:\s*"')


class Fault(StrEnum):
    """How a started stream broke; the value is the word the log uses (``stream failed: <fault>``).
    The relays end a stream with their own error event for the first four; the fifth, an error
    event of the upstream's own, ends it as the upstream sent it. A caller who went away is none:
    no one is told, nothing failed."""

    CUT = "cut"  # the upstream stream failed or was cut
    TRUNCATED = "truncated"  # it closed before the answer was complete
    STALLED = "stalled"  # no bytes for a stall period
    GATEWAY = "gateway error"  # the relay itself failed: never rescued
    PROVIDER_ERROR = "provider error"  # an error event in the stream


class First(Enum):
    DATA = "data"  # content: the stream is good to forward
    ERROR = "error"  # the first event is an error object
    DONE = "done"  # [DONE] before any content: an empty stream


@dataclass(frozen=True, slots=True)
class FirstEvent:
    kind: First
    data: str  # the event's data (for ERROR, the error JSON; bounded by the caller's read)


def _data(event: bytes) -> bytes | None:
    """The event's data lines joined (per the SSE spec), or None if it has none."""
    lines = [line for line in event.splitlines() if line.startswith(b"data:")]
    if not lines:
        return None
    return b"\n".join(line[6:] if line.startswith(b"data: ") else line[5:] for line in lines)


def _is_error(data: bytes) -> bool:
    if b'"error"' not in data:  # the common case decides without parsing
        return False
    try:
        parsed = json.loads(data)
    except ValueError:
        return False
    # OpenRouter puts a mid-stream error beside ``choices`` (with finish_reason "error").
    return isinstance(parsed, dict) and bool(parsed.get("error"))


def first_event(buffer: bytes) -> FirstEvent | None:
    """The first event carrying data in ``buffer``, or None while none is complete yet."""
    start = 0
    while (end := _EVENT_END.search(buffer, start)) is not None:
        data = _data(buffer[start : end.start()])
        start = end.end()
        if data is None:
            continue
        if data.strip() == b"[DONE]":
            return FirstEvent(First.DONE, "")
        if _is_error(data):
            return FirstEvent(First.ERROR, data.decode("utf-8", "replace"))
        return FirstEvent(First.DATA, "")
    return None


def ended_properly(tail: bytes) -> bool:
    """True when the stream whose last bytes are ``tail`` ended as a complete answer: its last
    data event is ``[DONE]`` or an error the upstream reported itself, or a ``finish_reason``
    was set near its end."""
    events = [d for e in _EVENT_END.split(tail) if (d := _data(e)) is not None]
    if not events:
        return False
    last = events[-1].strip()
    if last == b"[DONE]" or _is_error(last):
        return True
    return _FINISHED.search(b"".join(events[-3:])) is not None


def stream_error_event(message: str, code: str) -> bytes:
    """The in-band event that ends a stream that can no longer fail over; no ``[DONE]`` follows."""
    body = {"error": {"message": message, "type": "stream_error", "code": code}}
    return f"data: {json.dumps(body, separators=(',', ':'))}\n\n".encode()
