"""API and admin tokens (SPEC §2.1, §7): where a caller presents one and how it is compared."""

from __future__ import annotations

import hmac
from collections.abc import Callable

__all__ = ["hint", "presented_token", "token_matches"]

# Both sides are HMAC-ed before the constant-time compare, so neither the length nor a common
# prefix of the expected token leaks through timing. The key only has to be fixed, not secret.
_COMPARE_KEY = b"fllmapi-worker token compare"


def presented_token(header: Callable[[str], str | None], names: tuple[str, ...]) -> str | None:
    """The first non-empty token among the headers ``names``, in order.

    ``Authorization`` must use the Bearer scheme; ``Bearer`` with no token counts as empty.
    """
    for name in names:
        value = (header(name) or "").strip()
        if name == "authorization":
            scheme, _, value = value.partition(" ")
            if scheme.lower() != "bearer":
                continue
            value = value.strip()
        if value:
            return value
    return None


def _digest(value: str) -> bytes:
    return hmac.digest(_COMPARE_KEY, value.encode(), "sha256")


def token_matches(presented: str | None, expected: str | None) -> bool:
    """Constant-time equality; False when either side is missing or empty."""
    if not presented or not expected:
        return False
    return hmac.compare_digest(_digest(presented), _digest(expected))


def hint(secret: str | None) -> str | None:
    """A masked hint: first 4 + ``...`` + last 4, ``****`` for 8 characters or fewer."""
    if not secret:
        return None
    return "****" if len(secret) <= 8 else f"{secret[:4]}...{secret[-4:]}"
