"""Which key of a provider an attempt uses: round-robin over its usable keys, per isolate
(SPEC §13). Plain isolate memory; the clock is the caller's ``now_ms``.

Rules:
- A key is usable when it is enabled, not cooling down (``Ledger.key_cooldown``) and not in the
  caller's ``exclude`` (keys this request already tried, or found unreadable).
- Each provider remembers the id of the key it handed out last; the next pick is the first
  usable key with a greater id, wrapping around to the first usable one. So keys take turns, and
  a key that comes back from a cooldown, or is added, joins the round in id order.
- Cost: one pass over the provider's keys (``Provider.keys`` is ordered by id).
"""

from __future__ import annotations

from collections.abc import Collection

from gateway.core.ledger import Ledger
from gateway.core.providers import Provider, ProviderKey

__all__ = ["Rotation"]


class Rotation:
    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: dict[int, int] = {}  # provider id -> id of the key handed out last

    def next_key(
        self, provider: Provider, ledger: Ledger, now_ms: int, exclude: Collection[int] = ()
    ) -> ProviderKey | None:
        """The key the next attempt on ``provider`` uses, or None when none is usable."""
        last = self._last.get(provider.id)
        first: ProviderKey | None = None
        for key in provider.keys:
            if not key.enabled or key.id in exclude or ledger.key_cooldown(key.id, now_ms) is not None:
                continue
            if last is None or key.id > last:
                self._last[provider.id] = key.id
                return key
            if first is None:
                first = key
        if first is not None:
            self._last[provider.id] = first.id
        return first

    def forget_provider(self, provider_id: int) -> None:
        self._last.pop(provider_id, None)
