"""API and admin tokens (SPEC §2.1, §7): where a caller presents one and how it is compared."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from functools import lru_cache

__all__ = ["hint", "presented_token", "token_matches"]

# Both sides are HMAC-ed before the constant-time compare, so neither the length nor a common
# prefix of the expected token leaks through timing. The key only has to be fixed, not secret.
_COMPARE_KEY = b"fllmapi-worker token compare"
# The expected tokens are the snapshot's API and admin tokens (and, across a change, the ones
# before): their digests are made once per isolate, not twice per request (issue 39). Only
# expected tokens are kept; a caller's token is digested anew each time.
_EXPECTED_KEPT = 8


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


_expected_digest = lru_cache(maxsize=_EXPECTED_KEPT)(_digest)


def token_matches(presented: str | None, expected: str | None) -> bool:
    """Constant-time equality; False when either side is missing or empty."""
    if not presented or not expected:
        return False
    return hmac.compare_digest(_digest(presented), _expected_digest(expected))


def hint(secret: str | None) -> str | None:
    """A masked hint: first 4 + ``...`` + last 4, ``****`` for 8 characters or fewer."""
    if not secret:
        return None
    return "****" if len(secret) <= 8 else f"{secret[:4]}...{secret[-4:]}"
