"""The attempt trail of one request and its two headers (SPEC §4, original server §2.9).

- ``X-Fallback-Attempts``: the number of failed attempts; absent when none failed.
- ``X-Fallback-Trail``: ``provider/model: class`` per failed attempt (``provider#<key id>/model:
  class`` when the provider has several keys, SPEC §13), joined by ``"; "``; at
  most ``TRAIL_MAX_ENTRIES`` entries, then ``; +N more``; at most ``TRAIL_MAX_CHARS`` characters
  (whole entries are dropped into the ``+N more`` count until it fits).
- Pairs the chain passed over before any fetch (SPEC §19: a model that cannot serve the request,
  a key at its free-tier cap) follow the failed attempts as ``provider/model: skipped:
  <reason>``, so the limits drop them first; they are not attempts, so ``X-Fallback-Attempts``
  leaves them out, and the trail is sent with them alone.
- Header values must be ASCII (RFC 9110 §5.5): anything but printable ASCII, control characters
  included, is percent-encoded as UTF-8.
- In the trail, ``;`` separates entries: a ``;`` in a provider or model name is written ``%3B``
  (and a ``%`` is written ``%25``, so every name reads back unambiguously).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from gateway.core import rules
from gateway.core.classify import Failure
from gateway.core.providers import Provider, ProviderKey

__all__ = ["Pass", "Trail", "TrailEntry", "attempts_header", "header_safe", "named_key_id", "trail_header"]

_PRINTABLE_ASCII = "".join(chr(code) for code in range(0x20, 0x7F))


@dataclass(frozen=True, slots=True)
class TrailEntry:
    """One failed attempt: the provider's name, the model, and what went wrong; ``key_id``: the
    key it used, when the provider has several (else None: the key needs no name). For the usage
    counts (SPEC §17): ``provider_id``, ``used_key_id`` (the key it used, 0 for none) and
    ``at_ms``, when it failed."""

    provider: str
    model: str
    failure: Failure
    key_id: int | None = None
    provider_id: int = 0
    used_key_id: int = 0
    at_ms: int = 0

    @property
    def where(self) -> str:
        """``provider`` or ``provider#<key id>``."""
        return self.provider if self.key_id is None else f"{self.provider}#{self.key_id}"

    @property
    def label(self) -> str:
        """``provider/model: class``, as in the trail header and the exhaustion message."""
        return f"{self.where}/{self.model}: {self.failure.kind}"


Trail = tuple[TrailEntry, ...]


@dataclass(frozen=True, slots=True)
class Pass:
    """A pair passed over before any fetch (SPEC §19): ``need`` is what it lacks (``context``,
    ``vision``, ``tools``, ``json``; ``window``: its window for the context) or ``cap`` (every
    usable key at its free-tier cap, until ``until_ms``); ``reason`` says it with its figures
    (``context 8192 < ~21000``)."""

    provider: str
    model: str
    need: str
    reason: str
    until_ms: int | None = None
    window: int | None = None

    @property
    def label(self) -> str:
        return f"{self.provider}/{self.model}: skipped: {self.reason}"


def named_key_id(provider: Provider, key: ProviderKey | None) -> int | None:
    """The id by which a message names ``key`` of ``provider``: only when the provider has more
    than one key (SPEC §13), else None (the provider's name says it all). The one rule for the
    trail and the all-cooled message alike."""
    return key.id if key is not None and len(provider.keys) > 1 else None


def header_safe(text: str) -> str:
    """``text`` as a header value: printable ASCII kept, everything else percent-encoded."""
    if text.isascii() and text.isprintable():
        return text
    return quote(text, safe=_PRINTABLE_ASCII)


def attempts_header(trail: Trail) -> str | None:
    """The ``X-Fallback-Attempts`` value, or None when no attempt failed."""
    return str(len(trail)) if trail else None


def _in_trail(name: str) -> str:
    return header_safe(name.replace("%", "%25").replace(";", "%3B"))


def _trail_label(entry: TrailEntry) -> str:
    key = "" if entry.key_id is None else f"#{entry.key_id}"
    return f"{_in_trail(entry.provider)}{key}/{_in_trail(entry.model)}: {entry.failure.kind}"


def trail_header(trail: Trail, passed: tuple[Pass, ...] = ()) -> str | None:
    """The ``X-Fallback-Trail`` value, or None when nothing was passed over and no attempt failed."""
    if not trail and not passed:
        return None
    every = [
        *(_trail_label(entry) for entry in trail),
        *(f"{_in_trail(p.provider)}/{_in_trail(p.model)}: skipped: {p.reason}" for p in passed),
    ]
    labels = every[: rules.TRAIL_MAX_ENTRIES]
    hidden = len(every) - len(labels)
    while True:
        more = f"+{hidden} more" if hidden else ""
        text = "; ".join([*labels, more] if more else labels)
        if len(text) <= rules.TRAIL_MAX_CHARS:
            return text
        labels.pop()
        hidden += 1
