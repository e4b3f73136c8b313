"""Reading just enough of an OpenAI SSE stream to keep the caller from a lie (SPEC §2.6), and the
framing every reader of an SSE stream here shares.

Framing: SSE ends a line with ``\r\n``, ``\n`` or ``\r``, and an event with a blank line.
``normalized`` makes every line end ``\n`` (a last ``\r`` is held back: it may be half of a
``\r\n``), so an event ends at ``\n\n`` (``BLANK``); ``split_events`` cuts a buffer there.
The chat stream decoder, the rescue's watch, these questions and the first event's size all
frame this way.

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

__all__ = [
    "BLANK",
    "TAIL_BYTES",
    "Fault",
    "First",
    "FirstEvent",
    "ended_properly",
    "first_event",
    "first_event_size",
    "normalized",
    "split_events",
    "stream_error_event",
    "whole_events",
]

# How much of a stream's end is kept to judge how it ended: the final chunk and the [DONE] line.
TAIL_BYTES = 2048

# The end of an event, once its lines are ``normalized``.
BLANK = b"\n\n"
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


def normalized(buffer: bytes) -> tuple[bytes, bytes]:
    """A part of a stream with every line ending ``\n``, and what is held back: a last ``\r``,
    which the next bytes may make a ``\r\n`` (prepend it to them)."""
    if b"\r" not in buffer:
        return buffer, b""
    hold = b""
    if buffer.endswith(b"\r"):
        buffer, hold = buffer[:-1], b"\r"
    return _lines(buffer), hold


def _lines(buffer: bytes) -> bytes:
    """A whole buffer with every line ending ``\n`` (a last ``\r`` ends a line either way)."""
    return buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in buffer else buffer


def split_events(buffer: bytes) -> tuple[list[bytes], bytes]:
    """The whole events of a ``normalized`` buffer (without their blank line) and what follows
    the last of them."""
    parts = buffer.split(BLANK)
    rest = parts.pop()
    return parts, rest


def whole_events(data: bytes) -> tuple[bytes, bytes]:
    """A stream's bytes as its whole events, ``normalized``, blank lines kept, and what follows
    them: an unfinished event (with a held ``\r``), to prepend to the bytes that come next."""
    buffer, hold = normalized(data)
    end = buffer.rfind(BLANK)
    if end < 0:
        return b"", buffer + hold
    end += len(BLANK)
    return buffer[:end], buffer[end:] + hold


def first_event_size(head: bytes) -> int:
    """The size in bytes of the first data event in ``head`` (a stream's first bytes; comments and
    blank lines before it are not counted), its blank line included; of ``head`` from its first
    data line when it holds no whole one."""
    start = head.find(b"data:")
    if start < 0:
        return len(head)
    rest = head[start:]
    end = _lines(rest).find(BLANK)
    if end < 0:
        return len(rest)
    size = 0  # the raw bytes of the normalized event: a "\r\n" was one byte of it
    for _ in range(end + len(BLANK)):
        size += 2 if rest[size : size + 2] == b"\r\n" else 1
    return size


def first_event(buffer: bytes) -> FirstEvent | None:
    """The first event carrying data in ``buffer``, or None while none is complete yet."""
    events, _ = split_events(_lines(buffer))
    for event in events:
        data = _data(event)
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
    events = [d for e in _lines(tail).split(BLANK) if (d := _data(e)) is not None]
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
