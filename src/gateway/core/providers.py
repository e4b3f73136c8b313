"""Providers and their keys as the snapshot holds them (SPEC §13): plain values, with no rule of
their own beyond which key serves when none was chosen. Here, not in ``core/config.py``, so that
the modules the snapshot is built from (``core/clients.py``, ``core/keyring.py``) can name them
without importing the snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gateway.core.kinds import Kind, kind_of
from gateway.core.modelfacts import NO_FACTS, Facts

__all__ = ["Provider", "ProviderKey", "SealedKey"]


@dataclass(frozen=True, slots=True)
class SealedKey:
    """A provider key as stored: AES-256-GCM hex ciphertext, 16-byte IV and 16-byte tag."""

    ciphertext: str
    iv: str
    tag: str


@dataclass(frozen=True, slots=True)
class ProviderKey:
    """One key of a provider (SPEC §13): the ``provider_keys`` row's id, its sealed value, and
    whether it may be used."""

    id: int
    sealed: SealedKey
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class Provider:
    """A provider and its keys, ordered by key id (a provider holds at least one; one with no
    enabled key serves nothing and is left out of every chain)."""

    id: int
    name: str
    platform: str
    base_url: str
    models: tuple[str, ...]
    priority: int
    timeout_ms: int | None
    enabled: bool
    keys: tuple[ProviderKey, ...]
    created_at: int
    updated_at: int
    # The kinds its ``models`` entries declare (SPEC §12.6); a model not named here has the kind
    # its id suggests (``core/kinds.py``).
    kinds: tuple[tuple[str, Kind], ...] = ()
    # What its ``models`` entries set (SPEC §19): the admin's facts, and the ``/models`` listing's
    # as stored with them; ``facts``: both joined with ``caps`` and the presets'
    # (``capabilities.static_facts``).
    declared: Mapping[str, Facts] = field(default_factory=dict, hash=False)
    listed: Mapping[str, Facts] = field(default_factory=dict, hash=False)
    # The provider's own free-tier caps, for each cap a model's entry does not set.
    caps: Facts = NO_FACTS
    facts: Mapping[str, Facts] = field(default_factory=dict, hash=False)

    def kind_of(self, model: str) -> Kind:
        return kind_of(model, dict(self.kinds))

    def facts_of(self, model: str) -> Facts:
        """What is known of ``model`` here (its learned window aside)."""
        return self.facts.get(model, NO_FACTS)

    @property
    def enabled_keys(self) -> tuple[ProviderKey, ...]:
        return tuple(k for k in self.keys if k.enabled)

    @property
    def default_key(self) -> ProviderKey | None:
        """The key used when none was chosen (admin reads, model lists): the first enabled one,
        else the first one."""
        return next((k for k in self.keys if k.enabled), self.keys[0] if self.keys else None)
