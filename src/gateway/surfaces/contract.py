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

The relay splices (SPEC §18, ``shell/paced.mjs``): most events of a long answer are the next piece
of text, reasoning or a call's arguments, and what a translator makes of one depends only on its
state, which such an event does not change. So between the events that change the structure
(the prologue, a new block or call, the finish, usage, errors), the relay's JavaScript loop makes
their bytes itself, from the templates of ``plan()``, and calls ``feed`` only for a batch holding
any other event. Before the next ``feed`` (and at the end) it hands back what it spliced,
``absorb(spliced)``, so the translator's state is as if it had fed every batch itself. A
translator whose ``plan()`` is None is fed every batch. The same events in give the same bytes
out either way (tests/unit/surfaces/test_splice.py holds the two side by side).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from gateway.core import rules
from gateway.core.counting import Tokens
from gateway.surfaces.chat import ChatStreamDecoder

__all__ = ["DecodedStream", "Plan", "Spliced", "StreamTranslator", "compact", "estimate_tokens", "sse", "utf8"]


@dataclass(frozen=True, slots=True)
class Plan:
    """What the relay may splice in a translator's present state, and how (see the module doc).

    Each template is the text before and after a delta's JSON string. ``mode``:

    - ``each``: every delta is its own output, ``pre + string + post``; with ``counter`` (a
      number and a text), the number follows ``post``, counting up per output, then the text (a
      Responses event).
    - ``runs``: a batch's deltas are one ``chunk`` (opened by ``chunk[0]``, or ``chunk[1]`` after
      the relay's first, closed by ``chunk[2]``) holding one part per run of deltas of one kind,
      joined: ``pre + string + post``, parts separated by ``,`` (a Gemini chunk).
    - ``fields``: a batch's text and reasoning are each joined into one ``line``:
      ``line[0] + text (or "") + (line[1] + reasoning when any) + line[2]`` (an Ollama line).
    - ``verbatim``: the events go out as they came (the chat stream in whole events).

    ``args``: per call the relay may splice, (its upstream ``index``, pre, post); pre and post None
    when a fragment makes no output and is only handed back. ``escape``: ``gemini`` also escapes
    U+2028, U+2029 and U+0085 in strings (``gemini_stream._dumps``). A delta of a kind the plan
    has no template for is not spliced: its batch is fed."""

    mode: Literal["each", "runs", "fields", "verbatim"]
    text: tuple[str, str] | None = None
    reasoning: tuple[str, str] | None = None
    args: tuple[tuple[int, str | None, str | None], ...] = ()
    counter: tuple[int, str] | None = None
    chunk: tuple[str, str, str] | None = None
    line: tuple[str, str, str] | None = None
    escape: Literal["json", "gemini"] = "json"

    def as_json(self) -> dict[str, Any]:
        """Its fields by name (``json.dumps`` writes the tuples as arrays)."""
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class Spliced:
    """What the relay spliced since it last fed the translator: each kind's deltas joined, with
    their count; the calls' argument fragments joined, by the call's upstream ``index``; the
    outputs it made (``units``: events, chunks or lines, by the plan's mode)."""

    text: str = ""
    texts: int = 0
    reasoning: str = ""
    reasonings: int = 0
    args: dict[int, str] = field(default_factory=dict)
    units: int = 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Spliced:
        """From the relay's record: ``{"text": [joined, count], "reasoning": [joined, count],
        "args": [[index, joined], ...], "units": n}``, every member optional."""
        text, texts = data.get("text") or ("", 0)
        reasoning, reasonings = data.get("reasoning") or ("", 0)
        args = {int(index): joined for index, joined in data.get("args") or ()}
        return cls(text, texts, reasoning, reasonings, args, int(data.get("units") or 0))


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

    def plan(self) -> Plan | None: ...

    def absorb(self, spliced: Spliced, raw: bytes) -> None: ...


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

    def absorb(self, spliced: Spliced, raw: bytes) -> None:
        """Take what the relay spliced (see the module doc); ``raw``: its events as they came,
        which only ``WholeEvents`` keeps."""
        self._absorb(spliced)

    def _absorb(self, spliced: Spliced) -> None:
        raise NotImplementedError

    def _spliceable(self) -> bool:
        """The decoder reads a text chunk as the relay does: the stream's id is known."""
        return bool(self._decoder.id)

    def _key(self, position: int) -> int | None:
        """The upstream ``index`` of call ``position``, when the relay can match it (an int)."""
        return self._decoder.key_of(position)

    def _positions(self, spliced: Spliced) -> list[tuple[int, str]]:
        """The spliced argument fragments by call position."""
        return [(self._decoder.position_of(key), joined) for key, joined in spliced.args.items()]

    @property
    def usage(self) -> Tokens | None:
        """The upstream's usage, once its stream reported it (SPEC §17)."""
        usage = self._decoder.usage
        return None if usage is None else Tokens.stated(usage.input_tokens, usage.output_tokens, usage.cached_tokens)


def utf8(text: str) -> bytes:
    """A translation's bytes. JSON allows a lone surrogate (``"\\ud800"``), which UTF-8 cannot
    encode; here it can only stand inside a JSON string, so it is written back as that escape
    (as the relay's JavaScript writes it) instead of failing the stream."""
    return text.encode("utf-8", "backslashreplace")


# One encoder for every call (``json.dumps`` with options builds a new one each time, twelve times
# for an agent's body), without the cycle check: what it encodes was parsed from JSON or built
# here, and holds no cycle.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)


def compact(value: Any) -> str:
    """JSON as the surfaces send it: compact, UTF-8 kept as is."""
    return _COMPACT.encode(value)


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
