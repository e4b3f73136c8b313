"""The configuration snapshot: providers, effective settings and tokens, held in isolate memory.

Rules (SPEC §2.3, §5.2, §7):
- A snapshot is built from the D1 rows and the Worker's env in one step and is immutable.
- It is reused for ``CONFIG_TTL_MS``; an admin write invalidates it in the isolate that served it.
- A snapshot with no provider is never kept: the next request reads D1 again.
- Settings are resolved by ``core/settings.py``'s rules.
- Tokens: the ``api_token``/``admin_token`` rows win over the ``API_TOKEN``/``ADMIN_TOKEN`` secrets.
- ``env`` is the Worker's variables as strings (settings' names, the tokens, ``ENCRYPTION_KEY``).
- The deployment id of the loop guard (``hop``) is the D1 row ``deployment_id``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from gateway.core import rules
from gateway.core.clients import Client, clients_by_hash, restrict_providers
from gateway.core.hop import DEPLOYMENT_ID_KEY
from gateway.core.keyring import KeyMemo
from gateway.core.kinds import Kind
from gateway.core.providers import Provider
from gateway.core.settings import Settings, SettingValue, resolve_settings

__all__ = ["TOKEN_KEYS", "Config", "ConfigCache", "build_config"]

# D1 `settings` rows that hold tokens rather than routing settings.
TOKEN_KEYS = ("api_token", "admin_token")


@dataclass(frozen=True, slots=True)
class Config:
    """One consistent view of the configuration. ``providers`` are in priority order (ties by id).

    ``key_memo`` remembers decrypted provider keys (``core/keyring.py``), so a warm request, and a
    warm admin listing, do no WebCrypto work. ``token_rows``: which of ``TOKEN_KEYS`` came from a
    D1 row (else the token is the env secret's). ``clients``: the enabled named clients by token
    hash (``core/clients.py``), so finding a caller makes no D1 query.
    """

    providers: tuple[Provider, ...]
    settings: Settings
    setting_values: Mapping[str, SettingValue]
    api_token: str | None
    admin_token: str | None
    loaded_at_ms: int
    encryption_key: str | None = field(default=None, repr=False)
    deployment_id: str | None = None
    token_rows: frozenset[str] = frozenset()
    clients: Mapping[str, Client] = field(default_factory=dict, repr=False)
    key_memo: KeyMemo = field(default_factory=KeyMemo, compare=False, repr=False)
    # Views of ``providers`` derived once per snapshot, not per request (``providers_for``).
    _views: dict[object, tuple[Provider, ...]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def enabled_providers(self) -> tuple[Provider, ...]:
        """Enabled providers that hold at least one enabled key."""
        view = self._views.get(None)
        if view is None:
            view = self._views[None] = tuple(p for p in self.providers if p.enabled and p.enabled_keys)
        return view

    def providers_for(self, allowed: tuple[str, ...] | None, kind: Kind = Kind.CHAT) -> tuple[Provider, ...]:
        """``enabled_providers`` with only their models of ``kind`` (SPEC §12.6) that are in
        ``allowed`` (a named client's allow-list, ``core/clients.py``; None: every model),
        remembered per (list, kind) for this snapshot."""
        view = self._views.get((allowed, kind))
        if view is None:
            providers = restrict_providers(self.enabled_providers, allowed)
            view = tuple(replace(p, models=tuple(m for m in p.models if p.kind_of(m) is kind)) for p in providers)
            self._views[(allowed, kind)] = view
        return view


def build_config(
    providers: list[Provider],
    rows: Mapping[str, str],
    env: Mapping[str, str],
    now_ms: int,
    clients: Iterable[Client] = (),
) -> Config:
    """The snapshot for these D1 rows (providers, settings, clients) and env values."""
    settings, values = resolve_settings(rows, env)
    return Config(
        providers=tuple(sorted(providers, key=lambda p: (p.priority, p.id))),
        settings=settings,
        setting_values=values,
        api_token=rows.get("api_token") or env.get("API_TOKEN") or None,
        admin_token=rows.get("admin_token") or env.get("ADMIN_TOKEN") or None,
        loaded_at_ms=now_ms,
        encryption_key=env.get("ENCRYPTION_KEY") or None,
        deployment_id=rows.get(DEPLOYMENT_ID_KEY) or None,
        token_rows=frozenset(key for key in TOKEN_KEYS if rows.get(key)),
        clients=clients_by_hash(clients),
    )


class ConfigCache:
    """The isolate's snapshot (SPEC §2.3, §18); the clock is the caller's ``now_ms``.

    - ``get`` answers the snapshot while it was confirmed less than ``ttl_ms`` ago: read from D1,
      or found current by the configuration's stamp (``confirm``). A snapshot without providers
      is never served from the cache (SPEC §2.3: empty lists are never cached).
    - While D1 fails (``hold``), ``get`` answers the last snapshot read, however old (empty or
      not), and D1 is asked again ``ttl_ms`` later.
    - ``stamp`` is the configuration stamp the last snapshot was read at; None when only a whole
      read will do (none yet, or an admin write of this isolate since).
    - ``generation`` counts invalidations: a snapshot read from D1 while an admin write
      invalidated the cache may predate that write, so ``put`` and ``confirm`` refuse it.
    """

    def __init__(self, ttl_ms: int = rules.CONFIG_TTL_MS) -> None:
        self._ttl_ms = ttl_ms
        self._config: Config | None = None
        self._last: Config | None = None  # the last snapshot read: for D1 failures, and its keys
        self._confirmed_ms = 0
        self._held_until_ms = 0
        self.stamp: int | None = None
        self.generation = 0

    def get(self, now_ms: int) -> Config | None:
        """The snapshot to serve without asking D1, or None."""
        if self._config is not None and now_ms - self._confirmed_ms < self._ttl_ms:
            return self._config
        if self._last is not None and now_ms < self._held_until_ms:
            return self._last
        return None

    @property
    def last(self) -> Config | None:
        """The last snapshot read, however old."""
        return self._last

    def put(self, config: Config, generation: int, stamp: int) -> None:
        """Keep ``config``, read at ``stamp`` when the cache was at ``generation``, unless the
        cache was invalidated since. A kept snapshot inherits its predecessor's decrypted keys
        under the same ``ENCRYPTION_KEY`` (``core/keyring.py``)."""
        if generation != self.generation:
            return
        previous = self._last
        if previous is not None and previous.encryption_key == config.encryption_key:
            keys = (k for p in config.providers for k in p.keys)
            config.key_memo.inherit(previous.key_memo, keys)
        self._config = config if config.providers else None
        self._last = config
        self._confirmed_ms = config.loaded_at_ms
        self._held_until_ms = 0
        self.stamp = stamp

    def confirm(self, now_ms: int, generation: int) -> None:
        """D1's stamp was unchanged at ``now_ms``: the snapshot is current for another TTL."""
        if generation == self.generation:
            self._confirmed_ms = now_ms
            self._held_until_ms = 0

    def hold(self, now_ms: int, generation: int) -> None:
        """D1 failed at ``now_ms``: the last snapshot serves, and D1 is asked again a TTL later,
        unless an admin write landed since the read began (D1 answered it: read again)."""
        if generation == self.generation:
            self._held_until_ms = now_ms + self._ttl_ms

    def invalidate(self) -> None:
        """An admin write of this isolate landed: the next request reads D1 whole (a snapshot
        held through a D1 failure included: D1 answered the write)."""
        self._config = None
        self._held_until_ms = 0
        self.stamp = None
        self.generation += 1
