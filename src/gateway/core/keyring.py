"""Decrypted provider keys, remembered in isolate memory (SPEC §7, §13).

Rules:
- Decrypting one key costs about 0.3 ms of CPU in Pyodide (WebCrypto through the FFI; issue 10
  review, M6) against the free plan's 10 ms per request, and a provider may hold ``MAX_KEYS``
  keys: a key is decrypted once, then its plain text (or the fact that it cannot be decrypted)
  is remembered by key id.
- An entry holds the sealed value it was made from and is used only for that same value, so a
  row changed behind the gateway's back (a hand-run ``UPDATE``) is decrypted again.
- A snapshot's memo is handed on to the next snapshot made under the same ``ENCRYPTION_KEY``,
  for the keys the new one still holds (``ConfigCache.put``): an admin write drops the snapshot,
  and the listing the config page loads right after it would otherwise decrypt every key again.
- The plain texts never leave isolate memory: answers show hints only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from gateway.core.providers import ProviderKey, SealedKey

__all__ = ["KeyMemo", "Opener"]

# Decrypts one sealed key: its plain text, or None when it cannot be decrypted.
Opener = Callable[[SealedKey], Awaitable[str | None]]


class KeyMemo:
    """Plain texts by key id; None for a key that cannot be decrypted."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[SealedKey, str | None]] = {}

    def known(self, key: ProviderKey) -> bool:
        """True when ``key`` (this id with this sealed value) was decrypted, or tried."""
        entry = self._entries.get(key.id)
        return entry is not None and entry[0] == key.sealed

    def plain(self, key: ProviderKey) -> str | None:
        """The remembered plain text of ``key``; None when unknown or undecryptable."""
        return self._entries[key.id][1] if self.known(key) else None

    def remember(self, key: ProviderKey, plain: str | None) -> None:
        self._entries[key.id] = (key.sealed, plain)

    async def open(self, keys: Iterable[ProviderKey], opener: Opener) -> dict[int, str | None]:
        """Each key's plain text by id (None: it cannot be decrypted); ``opener`` is called
        only for keys not remembered yet."""
        plains: dict[int, str | None] = {}
        for key in keys:
            if not self.known(key):
                self.remember(key, await opener(key.sealed))
            plains[key.id] = self._entries[key.id][1]
        return plains

    def inherit(self, previous: KeyMemo, keys: Iterable[ProviderKey]) -> None:
        """Take ``previous``'s entries for ``keys`` (those made from the same sealed values)."""
        for key in keys:
            if previous.known(key) and not self.known(key):
                self._entries[key.id] = previous._entries[key.id]

    def __len__(self) -> int:
        return len(self._entries)
