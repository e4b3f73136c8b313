"""The wire form of a cooldown: the SPEC §4 entry of the all-cooled 429 body and of
``GET /api/admin/status`` (camelCase names, as SPEC spells them); ``keyId`` names the key a
key-scoped cooldown cools (SPEC §13), null otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.core.ledger import Cooldown

__all__ = ["cooldown_json"]


def cooldown_json(cooldown: Cooldown, now_ms: int) -> dict[str, Any]:
    return {
        "providerId": cooldown.provider_id,
        "name": cooldown.name,
        "model": cooldown.model,
        "source": cooldown.source,
        "remainingMs": cooldown.remaining_ms(now_ms),
        "lastStatus": cooldown.last_status,
        "lastMessage": cooldown.last_message,
        "keyId": cooldown.key_id,
    }
