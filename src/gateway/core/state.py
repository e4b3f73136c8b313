"""The routing memory of one isolate: the cooldown ledger, the speed memory and the key
rotation, kept together because an admin write must drop a provider from all at once (SPEC §5.2,
§8.2, §13).

The shell creates one lazily on the first request and keeps it for the isolate's life
(PLATFORM-NOTES §3.4); another isolate holds its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.core.ledger import Ledger
from gateway.core.memory import Memory
from gateway.core.rotation import Rotation

__all__ = ["RouterState"]


@dataclass(frozen=True, slots=True)
class RouterState:
    ledger: Ledger = field(default_factory=Ledger)
    memory: Memory = field(default_factory=Memory)
    rotation: Rotation = field(default_factory=Rotation)

    def forget_provider(self, provider_id: int, now_ms: int) -> None:
        """The provider was edited or deleted at ``now_ms``: drop its cooldowns (its keys' too),
        ladders, strikes, probe deferrals, speed memory and place in the key rotation."""
        self.ledger.forget_provider(provider_id, now_ms)
        self.memory.forget_provider(provider_id)
        self.rotation.forget_provider(provider_id)

    def forget_key(self, key_id: int, now_ms: int) -> None:
        """The key was enabled, disabled or deleted at ``now_ms``: drop its cooldown, ladder and
        probe state."""
        self.ledger.forget_key(key_id, now_ms)
