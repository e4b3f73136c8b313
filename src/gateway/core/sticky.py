"""Sticky conversations: a conversation's next turn goes first where its last turn was served
(SPEC §19), so the platform's prompt cache that made that turn cheap and fast serves the next.

Rules:
- A conversation is named (``conversation_name``) by a SHA-256 of the caller's client id and its
  ``x-session-id`` header when sent, else of the client id and the text of the conversation's
  first user message (the same for every turn of it, and apart for two clients): a name is the
  same size whatever the caller sends.
- Only a request whose messages already hold an assistant turn looks its conversation up
  (``continues``); every served request records what served it (``Conversations.served``).
- A target is (provider id, key id, model), kept ``STICKY_TTL_MS`` after the turn it served; the map
  holds at most ``STICKY_KEPT`` conversations, the one idle longest going first.
- Where the chain puts the target, and what passes it over (cooling, at cap, unfit), is
  ``core/chain.py``'s.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.core import rules

__all__ = ["Conversations", "Target", "continues", "conversation_name"]


@dataclass(frozen=True, slots=True)
class Target:
    """What served a conversation's last turn; ``key_id`` 0 when no key was chosen."""

    provider_id: int
    key_id: int
    model: str


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (part.get("text") for part in content if isinstance(part, dict))
        return "\n".join(text for text in texts if isinstance(text, str))
    return ""


def _digest(client_id: int, text: str) -> str:
    return hashlib.sha256(f"{client_id}\0{text}".encode(errors="surrogatepass")).hexdigest()


def conversation_name(session_id: str | None, client_id: int, messages: Sequence[Any]) -> str | None:
    """The conversation's name, or None when there is nothing to name it by (no session id and no
    user message with text)."""
    if session_id:
        return "session:" + _digest(client_id, session_id)
    for message in messages:
        if isinstance(message, Mapping) and message.get("role") == "user":
            text = _text(message.get("content"))
            return "first:" + _digest(client_id, text) if text else None
    return None


def continues(messages: Sequence[Any]) -> bool:
    """The messages already hold an assistant turn."""
    return any(isinstance(m, Mapping) and m.get("role") == "assistant" for m in messages)


class Conversations:
    """The target of each conversation this isolate served, newest last."""

    __slots__ = ("_targets",)

    def __init__(self) -> None:
        self._targets: OrderedDict[str, tuple[Target, int]] = OrderedDict()

    def target(self, name: str, now_ms: int) -> Target | None:
        """What served the conversation's last turn, if that was within ``STICKY_TTL_MS``."""
        kept = self._targets.get(name)
        if kept is None:
            return None
        target, at_ms = kept
        if now_ms - at_ms > rules.STICKY_TTL_MS:
            del self._targets[name]
            return None
        return target

    def served(self, name: str, target: Target, now_ms: int) -> None:
        self._targets[name] = (target, now_ms)
        self._targets.move_to_end(name)
        while len(self._targets) > rules.STICKY_KEPT:
            self._targets.popitem(last=False)

    def forget_provider(self, provider_id: int) -> None:
        for name in [n for n, (t, _) in self._targets.items() if t.provider_id == provider_id]:
            del self._targets[name]
