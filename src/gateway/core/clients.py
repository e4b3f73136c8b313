"""Named client tokens and the caller of a /v1 request (SPEC §14).

Rules:
- A client token is ``fk-`` plus 32 random bytes (drawn by the admin route, never at import). It is
  stored only as ``token_hash``: the hex SHA-256 of its text. A plain hash suffices because the
  token carries 256 bits of entropy, so nobody can search for a preimage, and it needs no secret
  of its own: a keyed hash (HMAC with ``ENCRYPTION_KEY``) would tie every client token to that key,
  and rotating it would silently revoke them all.
- The snapshot holds the enabled clients in a dict keyed by that hash: finding the caller is one
  hash and one dict lookup, whatever the number of clients, and no D1 query. The found entry is
  then compared with ``hmac.compare_digest`` (``core/tokens.py``'s habit). Timing can at most tell
  how a hash of the presented text relates to stored hashes, which says nothing about a token.
- A disabled client is left out of the dict: its token is refused like any unknown one.
- ``models`` (None: every model) is the client's allow-list: a named model outside it is refused
  (``model_refused``), and ``auto`` only chains the providers' models that are in it
  (``restrict_providers``).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from gateway.core.hop import Hops
from gateway.core.providers import Provider

__all__ = [
    "TOKEN_PREFIX",
    "Caller",
    "Client",
    "clients_by_hash",
    "find_client",
    "model_refused",
    "restrict_catalog",
    "restrict_providers",
    "token_hash",
]

TOKEN_PREFIX = "fk-"


@dataclass(frozen=True, slots=True)
class Client:
    """A ``clients`` row; ``models`` None: every model; ``stream_rescue`` None: the setting
    ``stream_rescue`` decides (SPEC §16)."""

    id: int
    name: str
    token_hash: str
    token_hint: str
    rpm: int | None
    models: tuple[str, ...] | None
    enabled: bool
    created_at: int
    updated_at: int
    stream_rescue: bool | None = None


@dataclass(frozen=True, slots=True)
class Caller:
    """Who called a /v1 surface: the hop list of the loop guard and the named client (None: the
    API token, the default client)."""

    hops: Hops = Hops()
    client: Client | None = None

    @property
    def models(self) -> tuple[str, ...] | None:
        """The models this caller may use; None: every model."""
        return None if self.client is None else self.client.models

    @property
    def stream_rescue(self) -> bool | None:
        """This caller's own stream rescue switch (SPEC §16); None: the setting ``stream_rescue``
        decides, as it always does for the API token."""
        return None if self.client is None else self.client.stream_rescue


def token_hash(token: str) -> str:
    """The stored form of a client token: hex SHA-256 of its UTF-8 text."""
    return hashlib.sha256(token.encode()).hexdigest()


def clients_by_hash(clients: Iterable[Client]) -> dict[str, Client]:
    """The lookup table of a snapshot: enabled clients by ``token_hash``."""
    return {c.token_hash: c for c in clients if c.enabled}


def find_client(table: Mapping[str, Client], presented: str | None) -> Client | None:
    """The enabled client whose token is ``presented``, or None (missing, unknown, disabled)."""
    if not presented:
        return None
    digest = token_hash(presented)
    client = table.get(digest)
    if client is None or not hmac.compare_digest(client.token_hash, digest):
        return None
    return client


def model_refused(allowed: tuple[str, ...] | None, model: str | None, auto: bool) -> bool:
    """True when a caller limited to ``allowed`` names ``model`` outside it (``auto`` never is)."""
    return allowed is not None and not auto and model not in allowed


def restrict_providers(providers: Iterable[Provider], allowed: tuple[str, ...] | None) -> list[Provider]:
    """``providers`` with only the models in ``allowed`` (None: unchanged); a provider left with
    no model stays listed with none, and the chain leaves it out."""
    if allowed is None:
        return list(providers)
    keep = frozenset(allowed)
    return [replace(p, models=tuple(m for m in p.models if m in keep)) for p in providers]


def restrict_catalog(catalog: list[tuple[str, str]], allowed: tuple[str, ...] | None) -> list[tuple[str, str]]:
    """A model listing's ``(model, owner)`` entries a caller limited to ``allowed`` may see."""
    if allowed is None:
        return catalog
    keep = frozenset(allowed)
    return [entry for entry in catalog if entry[0] in keep]
