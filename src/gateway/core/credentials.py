"""What makes the deployment's credentials usable: the two tokens and ``ENCRYPTION_KEY``.

One rule set, read by everything that judges them: the Worker refuses to serve the admin API
with an unusable admin token (503 naming the variable); an unusable API token turns the default
client off, so ``/v1`` serves named clients only, and answers 503 while there is none (SPEC §14);
the admin API refuses to store an unusable token (``PUT /api/admin/tokens``) and its client list
says whether the default client is on (``default_client_enabled``); the local runtime warns at
start (``problems``), and ``scripts/deploy`` refuses to upload one (it loads this file by path, so
it imports nothing but the standard library).

- A token is unusable when it is not set, is a placeholder (it starts with ``change-me``, as the
  values of ``.dev.vars.example`` do), or is shorter than ``MIN_TOKEN_LENGTH`` characters.
- ``ENCRYPTION_KEY`` is ``KEY_HEX_CHARS`` hex characters: the raw AES-256 key.
- The API token and the admin token must differ.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "KEY_HEX_CHARS",
    "MIN_TOKEN_LENGTH",
    "PLACEHOLDER_PREFIX",
    "default_client_enabled",
    "key_problem",
    "problems",
    "token_problem",
]

MIN_TOKEN_LENGTH = 16
PLACEHOLDER_PREFIX = "change-me"
KEY_HEX_CHARS = 64
_HEX = frozenset("0123456789abcdefABCDEF")


def token_problem(token: str | None) -> str | None:
    """Why ``token`` cannot guard the gateway (``"is not set"``, ``"is a placeholder …"``,
    ``"is shorter than 16 characters"``), or None when it can. Never contains the token."""
    if not token:
        return "is not set"
    if token.strip().lower().startswith(PLACEHOLDER_PREFIX):
        return f"is a placeholder (it starts with '{PLACEHOLDER_PREFIX}')"
    if len(token) < MIN_TOKEN_LENGTH:
        return f"is shorter than {MIN_TOKEN_LENGTH} characters"
    return None


def default_client_enabled(api_token: str | None) -> bool:
    """Whether ``/v1`` accepts the API token itself (the default client, SPEC §14): only a usable
    one. When it is off, the unusable value is refused like any wrong token."""
    return token_problem(api_token) is None


# What each unusable token does to the Worker, for ``problems``: the admin API closes; /v1 keeps
# serving named clients (SPEC §14), so the default client alone is lost.
_CONSEQUENCES = {
    "ADMIN_TOKEN": "the admin API answers 503 (the config page cannot log in)",
    "API_TOKEN": "the default client is off (/v1 serves named clients only, 503 while there is none)",
}


def key_problem(key_hex: str | None) -> str | None:
    """Why ``key_hex`` is not a usable ``ENCRYPTION_KEY``, or None. Never contains the key."""
    if not key_hex:
        return "is not set"
    key = key_hex.strip()
    if len(key) != KEY_HEX_CHARS or not set(key) <= _HEX:
        return f"is not {KEY_HEX_CHARS} hex characters (32 bytes)"
    return None


def problems(env: Mapping[str, str]) -> list[str]:
    """One line per unusable credential in ``env`` (the Worker's variables), naming the variable
    and saying how to fix it; empty when all three are fine."""
    found = []
    for name in ("ADMIN_TOKEN", "API_TOKEN"):
        problem = token_problem(env.get(name))
        if problem:
            found.append(
                f"{name} {problem}: {_CONSEQUENCES[name]} until it is a random secret of {MIN_TOKEN_LENGTH}+ characters"
            )
    if env.get("ADMIN_TOKEN") and env.get("ADMIN_TOKEN") == env.get("API_TOKEN"):
        found.append("ADMIN_TOKEN and API_TOKEN are equal: neither is accepted until they differ")
    problem = key_problem(env.get("ENCRYPTION_KEY"))
    if problem:
        found.append(
            f"ENCRYPTION_KEY {problem}: provider keys cannot be stored or read (500); generate one "
            'with: python3 -c "import secrets; print(secrets.token_hex(32))"'
        )
    return found
