"""What every surface shares: the stream translator's contract, SSE framing, token estimates.

A stream translator is an h11-style state machine (STYLE §3): bytes of the upstream's OpenAI chat
stream in, bytes of the surface's own stream out, no I/O and no clock. The relay drives it:

1. ``feed(data)`` for every read of the upstream, the bytes read before the first event included;
   the first call also returns the surface's prologue (``message_start``, ``response.created`` …).
2. when the upstream closes: ``complete`` says whether the answer reached its end (a
   ``finish_reason`` or ``[DONE]``); then ``end()`` for the surface's normal end, else ``fail()``.
   ``done`` (``[DONE]`` was read) ends the stream at once with ``end()``: an upstream may keep its
   connection open after its last event.
3. ``fail(message)`` when the stream cannot go on (cut, stall, an error event): the surface's own
   error event and never its normal end. After ``fail`` or ``end`` everything returns ``b""``.

``usage`` is the upstream's own count once its stream reported it, for the usage buckets.
"""

from __future__ import annotations

import json
import math
from typing import Any, Protocol

from gateway.core import rules
from gateway.core.counting import Tokens
from gateway.surfaces.chat import ChatStreamDecoder

__all__ = ["DecodedStream", "StreamTranslator", "compact", "estimate_tokens", "sse"]


class StreamTranslator(Protocol):
    media_type: str  # the content type of the translated stream

    @property
    def complete(self) -> bool: ...

    @property
    def done(self) -> bool: ...

    @property
    def usage(self) -> Tokens | None: ...

    def feed(self, data: bytes) -> bytes: ...

    def end(self) -> bytes: ...

    def fail(self, message: str, code: str = "stream_interrupted") -> bytes: ...

    def keep_alive(self) -> bytes: ...


class DecodedStream:
    """What every surface's translator shares: the reader of the upstream's stream
    (``self._decoder``) and what it says of the answer's end (``complete``, ``done``)."""

    media_type: str

    def __init__(self) -> None:
        self._decoder = ChatStreamDecoder()

    @property
    def complete(self) -> bool:
        return self._decoder.finished

    @property
    def done(self) -> bool:
        return self._decoder.done

    def keep_alive(self) -> bytes:
        """What keeps the caller's stream alive while a rescue is in flight (SPEC §16): an SSE
        comment, which every SSE reader skips; nothing for a stream that is not SSE (NDJSON, a
        JSON array), where a comment would break the parse."""
        return b": keep-alive\n\n" if self.media_type == "text/event-stream" else b""

    @property
    def usage(self) -> Tokens | None:
        """The upstream's usage, once its stream reported it (SPEC §17)."""
        usage = self._decoder.usage
        return None if usage is None else Tokens.stated(usage.input_tokens, usage.output_tokens, usage.cached_tokens)


def compact(value: Any) -> str:
    """JSON as the surfaces send it: compact, UTF-8 kept as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def sse(event: str | None, data: Any) -> str:
    """One SSE event: ``event:`` line when named, one ``data:`` line of compact JSON."""
    body = data if isinstance(data, str) else compact(data)
    return f"event: {event}\ndata: {body}\n\n" if event else f"data: {body}\n\n"


# Characters per token of the estimate; English text averages about four (OpenAI's rule of thumb).


# The fields of a chat body that are its prompt: what the estimate counts.
_PROMPT_FIELDS = frozenset({"messages", "tools"})


def estimate_tokens(chat: dict[str, Any], text: str | None = None) -> int:
    """An estimate of the prompt tokens of an OpenAI chat body (count_tokens, countTokens, and
    Anthropic's ``message_start``): the characters of its ``messages`` and ``tools`` as compact
    JSON over four, rounded up; at least 1. No upstream call. ``text``: ``compact(chat)`` when the
    caller made it already; the prompt's length is then that text's less the other fields', so
    the large part is never encoded twice."""
    if text is None:
        size = len(compact({k: v for k, v in chat.items() if k in _PROMPT_FIELDS}))
    else:
        # compact(d) is "{" + the members joined by "," + "}", a member being key ":" value.
        others = [k for k in chat if k not in _PROMPT_FIELDS]
        size = len(text) - sum(len(compact(k)) + len(compact(chat[k])) + 2 for k in others)
        if len(others) == len(chat):
            size = 2  # "{}": no prompt field at all
    return max(1, math.ceil(size / rules.CHARS_PER_TOKEN))
