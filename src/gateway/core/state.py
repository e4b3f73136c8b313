"""The routing memory of one isolate: the cooldown ledger and the speed memory, kept together
because an admin write must drop a provider from both at once (SPEC §5.2, §8.2).

The shell creates one lazily on the first request and keeps it for the isolate's life
(PLATFORM-NOTES §3.4); another isolate holds its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.core.ledger import Ledger
from gateway.core.memory import Memory

__all__ = ["RouterState"]


@dataclass(frozen=True, slots=True)
class RouterState:
    ledger: Ledger = field(default_factory=Ledger)
    memory: Memory = field(default_factory=Memory)

    def forget_provider(self, provider_id: int, now_ms: int) -> None:
        """The provider was edited or deleted at ``now_ms``: drop its cooldowns, ladder, strikes,
        probe deferral and speed memory."""
        self.ledger.forget_provider(provider_id, now_ms)
        self.memory.forget_provider(provider_id)
