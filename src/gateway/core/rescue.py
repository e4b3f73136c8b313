"""Rescue of a stream cut mid-answer (SPEC §16): whether, and how.

Rules:
- Whether (``eligibility``): only when rescue is on (``rescue_enabled``: the client's own
  ``stream_rescue``, else the setting), for a streamed request of one choice that forces no tool
  and asks for no JSON, whose stream broke by a transport fault (cut, truncated, stalled, an
  in-band provider error; never the gateway's own failure) after sending only text and reasoning
  (no tool call) and before any ``finish_reason`` (``error`` is OpenRouter's in-band failure, not
  an end). The answer says why, for the log line.
- How (``plan_rescue``): the original chat body, untouched, plus the partial answer. A platform
  documented to continue a trailing assistant message (``PREFILLS``) gets it as one, flagged;
  every other gets it as an assistant turn followed by a user turn asking to continue exactly
  after the partial's last words. Nothing is added to or removed from the other messages (no
  system prompt). Nothing sent yet (reasoning only) → the original request again.
- Where: the continuation is joined to the partial by ``core/seam.py``'s ``Seam``.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from gateway.core import rules
from gateway.core.sse import Fault

__all__ = [
    "CONTINUE_INSTRUCTION",
    "PREFILLS",
    "Eligibility",
    "Method",
    "Prefill",
    "Refusal",
    "RescueLog",
    "RescueRecord",
    "RescueRequest",
    "Streamed",
    "continue_instruction",
    "eligibility",
    "plan_rescue",
    "prefill_of",
    "request_refusal",
    "rescue_enabled",
]

# --- Whether -------------------------------------------------------------------------------


class Refusal(StrEnum):
    """Why a broken stream is not rescued (the log line's words)."""

    OFF = "rescue is off"
    NOT_STREAMED = "not a streamed request"
    SEVERAL_CHOICES = "several choices asked"
    FORCED_TOOL = "the request forces a tool call"
    STRUCTURED = "the request asks for JSON output"
    LENGTH = "the answer stopped at its length limit"
    CONTENT_FILTER = "the answer was stopped by the content filter"
    FINISHED = "the answer had finished"
    TOOL_CALL = "a tool call had started"
    GATEWAY_FAULT = "the gateway itself failed"


@dataclass(slots=True)
class Streamed:
    """What the caller was sent of the answer before the break; the relay notes each piece as it
    forwards it. ``text`` is the answer's visible text: the partial a rescue continues."""

    reasoning: bool = False
    tool_call: bool = False
    finish_reason: str | None = None
    _pieces: list[str] = field(default_factory=list, init=False, repr=False)

    def add_text(self, text: str) -> None:
        self._pieces.append(text)

    @property
    def text(self) -> str:
        return "".join(self._pieces)


@dataclass(frozen=True, slots=True)
class Eligibility:
    """``allowed``: the stream may be rescued; ``reason``: the ``Fault`` rescued, else the
    ``Refusal`` — both for the log line."""

    allowed: bool
    reason: str


def rescue_enabled(setting: bool, client: bool | None) -> bool:
    """The client's own ``stream_rescue`` when it has one, else the ``stream_rescue`` setting."""
    return setting if client is None else client


def eligibility(enabled: bool, body: Mapping[str, Any], streamed: Streamed, fault: Fault) -> Eligibility:
    """Whether a stream of the chat request ``body`` that broke by ``fault`` after sending
    ``streamed`` may be rescued (the module's rules); the first refusal that applies, in the
    order of ``Refusal``, is the reason."""
    refusal = _refusal(enabled, body, streamed, fault)
    return Eligibility(False, refusal) if refusal is not None else Eligibility(True, fault)


def request_refusal(enabled: bool, body: Mapping[str, Any]) -> Refusal | None:
    """The refusal that applies to the request ``body`` whatever its stream sends (the first of
    ``OFF`` to ``STRUCTURED``), or None: such a stream may be rescued should it break."""
    n = body.get("n")
    checks = (
        (not enabled, Refusal.OFF),
        (body.get("stream") is not True, Refusal.NOT_STREAMED),
        (isinstance(n, int) and not isinstance(n, bool) and n > 1, Refusal.SEVERAL_CHOICES),
        (_forces_tool(body), Refusal.FORCED_TOOL),
        (_structured(body), Refusal.STRUCTURED),
    )
    return next((refusal for applies, refusal in checks if applies), None)


def _refusal(enabled: bool, body: Mapping[str, Any], streamed: Streamed, fault: Fault) -> Refusal | None:
    refusal = request_refusal(enabled, body)
    if refusal is not None:
        return refusal
    ended = streamed.finish_reason not in (None, "", "error")  # "error": OpenRouter's in-band failure
    checks = (
        (streamed.finish_reason == "length", Refusal.LENGTH),
        (streamed.finish_reason == "content_filter", Refusal.CONTENT_FILTER),
        (ended, Refusal.FINISHED),
        (streamed.tool_call, Refusal.TOOL_CALL),
        (fault is Fault.GATEWAY, Refusal.GATEWAY_FAULT),
    )
    return next((refusal for applies, refusal in checks if applies), None)


def _forces_tool(body: Mapping[str, Any]) -> bool:
    choice = body.get("tool_choice")
    if choice in ("required", "any"):  # "any" is Mistral's spelling, passed through as it is
        return True
    if isinstance(choice, Mapping):
        if choice.get("type") == "allowed_tools":
            allowed = choice.get("allowed_tools")
            return isinstance(allowed, Mapping) and allowed.get("mode") == "required"
        return True  # a named function (or custom tool)
    return isinstance(body.get("function_call"), Mapping)  # the legacy form of a named function


def _structured(body: Mapping[str, Any]) -> bool:
    fmt = body.get("response_format")
    return isinstance(fmt, Mapping) and fmt.get("type") in ("json_object", "json_schema")


# --- How -----------------------------------------------------------------------------------


class Method(StrEnum):
    """How the rescue request carries the partial. For ``PREFIX`` and ``PARTIAL`` the value is
    the key set to true on the trailing assistant message."""

    RETRY = "retry"  # nothing of the answer was sent: the original request again
    PREFIX = "prefix"
    PARTIAL = "partial"
    REASK = "re-ask"  # an assistant turn, then a user turn asking to continue


@dataclass(frozen=True, slots=True)
class Prefill:
    """A platform documented to continue a trailing assistant message flagged by ``method``:
    recognised by its preset id or one of its ``hosts``. ``base_url``: where the feature is
    served when not at every base URL of those hosts (then only the hosts are recognised, so a
    key never goes to a host its provider does not name)."""

    platform: str
    method: Method
    hosts: tuple[str, ...]
    base_url: str | None = None


PREFILLS: tuple[Prefill, ...] = (
    # api-docs.deepseek.com, "Chat Prefix Completion (Beta)": only under base_url .../beta.
    Prefill("deepseek", Method.PREFIX, ("api.deepseek.com",), "https://api.deepseek.com/beta"),
    # docs.mistral.ai: an assistant message with "prefix": true is the start of the answer.
    Prefill("mistral", Method.PREFIX, ("api.mistral.ai",)),
    # platform.kimi.ai, "Partial Mode"; no preset, so its hosts are what recognises it.
    Prefill("moonshot", Method.PARTIAL, ("api.moonshot.ai", "api.moonshot.cn")),
)

CONTINUE_INSTRUCTION = (
    'Your reply was cut off after "{tail}". Continue exactly from there, without repeating '
    "anything or adding a preamble."
)


@dataclass(frozen=True, slots=True)
class RescueRequest:
    """The rescue's chat ``body`` (a new dict; the original is shared, never changed) and the
    ``base_url`` to send it to (the provider's, or where its platform serves prefills)."""

    method: Method
    body: dict[str, Any]
    base_url: str


def prefill_of(platform: str, base_url: str) -> Prefill | None:
    """The ``PREFILLS`` entry of a provider with this ``platform`` id and ``base_url``, or None."""
    host = urlsplit(base_url).hostname or ""
    name = platform.strip().lower()
    for prefill in PREFILLS:
        if host in prefill.hosts or (prefill.base_url is None and name == prefill.platform):
            return prefill
    return None


def plan_rescue(body: Mapping[str, Any], partial: str, platform: str, base_url: str) -> RescueRequest:
    """The request that continues ``partial`` (the answer's text the caller has) on a provider of
    ``platform`` at ``base_url``, by the method of the module's rules."""
    if not partial.strip():
        return RescueRequest(Method.RETRY, dict(body), base_url)
    messages = list(body.get("messages") or ())
    prefill = prefill_of(platform, base_url)
    if prefill is not None:
        turn = {"role": "assistant", "content": partial, prefill.method.value: True}
        rescue_body = {**body, "messages": [*messages, turn]}
        return RescueRequest(prefill.method, rescue_body, prefill.base_url or base_url)
    turns = [
        {"role": "assistant", "content": partial},
        {"role": "user", "content": continue_instruction(partial)},
    ]
    return RescueRequest(Method.REASK, {**body, "messages": [*messages, *turns]}, base_url)


def continue_instruction(partial: str) -> str:
    """The re-ask's user turn: ``CONTINUE_INSTRUCTION`` quoting the partial's last
    ``RESCUE_QUOTE_WORDS`` words, at most ``RESCUE_QUOTE_MAX_CHARS`` characters of them, as they
    are (trailing whitespace included); ``…`` opens a quote that does not start the partial."""
    window_at = max(0, len(partial) - rules.RESCUE_QUOTE_MAX_CHARS)
    window = partial[window_at:]
    words = [m.start() for m in re.finditer(r"\S+", window)]
    begin = words[-rules.RESCUE_QUOTE_WORDS] if len(words) > rules.RESCUE_QUOTE_WORDS else 0
    tail = window[begin:]
    cut = partial[: window_at + begin].strip() != ""
    return CONTINUE_INSTRUCTION.format(tail=("…" if cut else "") + tail)


# --- Said ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RescueRecord:
    """One broken stream that rescue was on for, as the admin status shows it. ``cut``: the broken
    stream's ``provider/model``; ``fault``: how it broke; ``outcome``: ``rescued``, ``refused``
    (no rescue tried: ``reason`` says why) or ``failed`` (tried: ``reason`` says what ended it);
    ``by``/``method``: who continued it and how; ``trail``: the rescue's own failed attempts
    (``X-Fallback-Trail``'s form); ``wait_ms``: from the break to the rescue's first event."""

    at_ms: int
    request_id: str | None
    cut: str
    fault: str
    outcome: str
    reason: str | None = None
    by: str | None = None
    method: str | None = None
    trail: str | None = None
    wait_ms: int | None = None

    def json(self) -> dict[str, Any]:
        return asdict(self)


class RescueLog:
    """The isolate's last ``RESCUES_KEPT`` records, newest first."""

    def __init__(self) -> None:
        self._records: deque[RescueRecord] = deque(maxlen=rules.RESCUES_KEPT)

    def add(self, record: RescueRecord) -> None:
        self._records.appendleft(record)

    def recent(self) -> list[RescueRecord]:
        return list(self._records)
