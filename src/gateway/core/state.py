"""The routing memory of one isolate: the cooldown ledger, the speed memory, the key rotation,
the learned context windows, the free-tier counts and the sticky conversations, kept together
because an admin write must drop a provider from all at once (SPEC §5.2, §8.2, §13, §19).

The shell creates one lazily on the first request and keeps it for the isolate's life
(PLATFORM-NOTES §3.4); another isolate holds its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.core.capabilities import Windows
from gateway.core.freetier import FreeTier
from gateway.core.ledger import Ledger
from gateway.core.memory import Memory
from gateway.core.rotation import Rotation
from gateway.core.sticky import Conversations

__all__ = ["RouterState"]


@dataclass(frozen=True, slots=True)
class RouterState:
    ledger: Ledger = field(default_factory=Ledger)
    memory: Memory = field(default_factory=Memory)
    rotation: Rotation = field(default_factory=Rotation)
    windows: Windows = field(default_factory=Windows)
    # What keys sent: the platforms' own counts, so an edit of the provider keeps them.
    free_tier: FreeTier = field(default_factory=FreeTier)
    conversations: Conversations = field(default_factory=Conversations)

    def forget_provider(self, provider_id: int, now_ms: int) -> None:
        """The provider was edited or deleted at ``now_ms``: drop its cooldowns (its keys' too),
        ladders, strikes, probe deferrals, speed memory, place in the key rotation, learned
        windows and the conversations it served."""
        self.ledger.forget_provider(provider_id, now_ms)
        self.memory.forget_provider(provider_id)
        self.rotation.forget_provider(provider_id)
        self.windows.forget_provider(provider_id)
        self.conversations.forget_provider(provider_id)

    def forget_key(self, key_id: int, now_ms: int) -> None:
        """The key was enabled, disabled or deleted at ``now_ms``: drop its cooldown, ladder and
        probe state."""
        self.ledger.forget_key(key_id, now_ms)
