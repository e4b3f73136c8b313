"""The configuration snapshot: providers, effective settings and tokens, held in isolate memory.

Rules (SPEC §2.3, §5.2, §7):
- A snapshot is built from the D1 rows and the Worker's env in one step and is immutable.
- It is reused for ``CONFIG_TTL_MS``; an admin write invalidates it in the isolate that served it.
- A snapshot with no provider is never kept: the next request reads D1 again.
- For each setting the D1 row wins over the env var, which wins over the default; a value that is
  not valid is skipped so the next source applies. Numbers out of a clamped range are clamped
  when read; the admin API refuses them instead (``Setting.accept``).
- Three kinds of setting share one interface (``read`` stored text, ``accept`` an admin API value,
  ``refusal``, ``to_json``, ``to_row``): integers (``Setting``), the model alias table
  (``AliasesSetting``, a JSON object; ``core/aliases.py``), compiled here, once per snapshot, and
  an origin (``OriginSetting``: where OpenRouter's endpoints API is, SPEC §15).
- A setting has two names: its D1 key (``stream_stall_ms``) and its env var (``STREAM_STALL_MS``);
  the admin API takes either (``SETTINGS_BY_NAME``).
- Tokens: the ``api_token``/``admin_token`` rows win over the ``API_TOKEN``/``ADMIN_TOKEN`` secrets.
- ``env`` is the Worker's variables as strings (settings' names, the tokens, ``ENCRYPTION_KEY``).
- The deployment id of the loop guard (``hop``) is the D1 row ``deployment_id``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit
from dataclasses import dataclass, field, replace
from typing import Literal

from gateway.core import rules
from gateway.core.aliases import NO_ALIASES, Aliases, alias_problem, compile_aliases
from gateway.core.clients import Client, clients_by_hash, restrict_providers
from gateway.core.hop import DEPLOYMENT_ID_KEY
from gateway.core.keyring import KeyMemo
from gateway.core.kinds import Kind
from gateway.core.providers import Provider, ProviderKey, SealedKey

__all__ = [
    "AliasesSetting",
    "DEFAULT_OPENROUTER_ORIGIN",
    "OriginSetting",
    "AnySetting",
    "Config",
    "ConfigCache",
    "Provider",
    "ProviderKey",
    "SETTINGS",
    "SETTINGS_BY_KEY",
    "SETTINGS_BY_NAME",
    "SealedKey",
    "Setting",
    "Settings",
    "SettingValue",
    "TOKEN_KEYS",
    "build_config",
    "origin_of",
    "parse_setting",
    "resolve_settings",
]

Source = Literal["d1", "env", "default"]

# What a setting's text must look like to be read as an integer (ASCII digits only: str.isdigit
# also admits "²", which int() refuses).
_INTEGER = re.compile(r"-?[0-9]+")

# D1 `settings` rows that hold tokens rather than routing settings.
TOKEN_KEYS = ("api_token", "admin_token")


@dataclass(frozen=True, slots=True)
class Setting:
    """A user-overridable integer: D1 row ``key``, env var ``env``, ``default``.

    ``clamp`` bounds the value (out-of-range numbers are clamped, not rejected); without it, any
    integer from ``minimum`` to ``maximum`` is valid, and a stored or env value above ``maximum``
    is read as ``maximum`` (the admin API refuses it). ``null_is_off``: a limit that 0 turns off,
    which an admin API ``null`` turns off too (SPEC §14) instead of restoring the env var or the
    default.
    """

    key: str
    env: str
    default: int
    minimum: int = 0
    maximum: int = rules.MAX_SETTING_INTEGER
    clamp: tuple[int, int] | None = None
    null_is_off: bool = False

    @property
    def bounds(self) -> tuple[int, int]:
        """The lowest and highest value the admin API accepts."""
        return self.clamp if self.clamp is not None else (self.minimum, self.maximum)

    @property
    def expected(self) -> str:
        """What a valid value is, in words (for the admin API's 400)."""
        low, high = self.bounds
        return f"an integer from {low} to {high}"

    def read(self, raw: object) -> int | None:
        """The value of a D1 row or env var (clamped), or None when it is not valid."""
        return parse_setting(self, raw)

    def accept(self, value: object) -> int | None:
        """The value of an admin API write (never clamped), or None when it is refused: a JSON
        number only, so ``"5"`` is refused like any other wrong type."""
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        return parse_setting(self, value, clamp=False)

    def refusal(self, value: object) -> str:
        """Why ``accept`` refused ``value``."""
        if isinstance(value, str):
            return f"{self.expected} is expected, as a JSON number, not a string"
        return f"{self.expected} is expected"

    def to_json(self, value: int) -> int:
        return value

    def to_row(self, value: int) -> str:
        return str(value)


@dataclass(frozen=True, slots=True)
class AliasesSetting:
    """The model alias table (``core/aliases.py``): a JSON object, stored as JSON text in the D1
    row; the env var holds the same JSON. Text that is not a valid table is not valid."""

    key: str
    env: str
    default: Aliases = NO_ALIASES
    null_is_off = False

    def read(self, raw: object) -> Aliases | None:
        if not isinstance(raw, str):
            return None
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        return self.accept(value)

    def accept(self, value: object) -> Aliases | None:
        if alias_problem(value) is not None:
            return None
        return compile_aliases(value)  # type: ignore[arg-type]  # alias_problem checked it

    def refusal(self, value: object) -> str:
        return alias_problem(value) or "a JSON object of pattern → model id is expected"

    def to_json(self, value: Aliases) -> dict[str, str]:
        return value.as_json()

    def to_row(self, value: Aliases) -> str:
        return json.dumps(value.as_json(), ensure_ascii=False, separators=(",", ":"))


# Where OpenRouter's endpoints API lives (SPEC §15); a setting, so tests point it at a fake.
DEFAULT_OPENROUTER_ORIGIN = "https://openrouter.ai"


def origin_of(value: object) -> str | None:
    """``value`` as an origin (``scheme://host[:port]``, lower-cased host), or None unless it is
    an http(s) URL with a host and nothing else (no credentials, path, query or fragment)."""
    if not isinstance(value, str):
        return None
    try:
        url = urlsplit(value.strip())
        url.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return None
    if url.scheme not in ("http", "https") or not url.hostname or "@" in url.netloc:
        return None
    if url.path not in ("", "/") or url.query or url.fragment:
        return None
    return f"{url.scheme}://{url.netloc.lower()}"


@dataclass(frozen=True, slots=True)
class OriginSetting:
    """An origin (``origin_of``), stored and given as its text."""

    key: str
    env: str
    default: str = DEFAULT_OPENROUTER_ORIGIN
    null_is_off = False

    def read(self, raw: object) -> str | None:
        return origin_of(raw)

    def accept(self, value: object) -> str | None:
        return origin_of(value)

    def refusal(self, value: object) -> str:
        return "an origin such as https://openrouter.ai (scheme and host, no path) is expected"

    def to_json(self, value: str) -> str:
        return value

    def to_row(self, value: str) -> str:
        return value


AnySetting = Setting | AliasesSetting | OriginSetting


SETTINGS: tuple[AnySetting, ...] = (
    Setting(
        "routing_cooldown_ceiling_ms",
        "COOLDOWN_CEILING_MS",
        rules.DEFAULT_COOLDOWN_CEILING_MS,
        clamp=(rules.COOLDOWN_CEILING_MIN_MS, rules.COOLDOWN_CEILING_MAX_MS),
    ),
    Setting(
        "max_consecutive_upstream_fails",
        "MAX_CONSECUTIVE_UPSTREAM_FAILS",
        rules.DEFAULT_MAX_CONSECUTIVE_FAILS,
    ),
    Setting("same_model_retry_max_ms", "SAME_MODEL_RETRY_MAX_MS", rules.DEFAULT_SAME_MODEL_RETRY_MAX_MS),
    Setting(
        "stream_stall_ms",
        "STREAM_STALL_MS",
        rules.DEFAULT_STREAM_STALL_MS,
        clamp=(rules.STREAM_STALL_MIN_MS, rules.STREAM_STALL_MAX_MS),
    ),
    Setting(
        "max_body_bytes",
        "MAX_BODY_BYTES",
        rules.DEFAULT_MAX_BODY_BYTES,
        minimum=1,
        maximum=rules.PLATFORM_MAX_BODY_BYTES,
    ),
    AliasesSetting("model_aliases", "MODEL_ALIASES"),
    # Rate limits (SPEC §14, ``core/limits.py``): requests (or failed token checks) per minute; 0 is off.
    Setting("default_client_rpm", "DEFAULT_CLIENT_RPM", 0, null_is_off=True),
    Setting("ip_rpm", "IP_RPM", 0, null_is_off=True),
    Setting("auth_fail_limit", "AUTH_FAIL_LIMIT", rules.DEFAULT_AUTH_FAIL_LIMIT, null_is_off=True),
    # OpenRouter pinning (SPEC §15, ``core/pinning.py``): 1 on, 0 off.
    Setting("openrouter_pinning", "OPENROUTER_PINNING", 1, clamp=(0, 1)),
    Setting(
        "openrouter_lock_idle_ms",
        "OPENROUTER_LOCK_IDLE_MS",
        rules.DEFAULT_OPENROUTER_LOCK_IDLE_MS,
        clamp=(rules.MINUTE_MS, rules.DAY_MS),
    ),
    OriginSetting("openrouter_origin", "OPENROUTER_ORIGIN"),
    # Stream rescue (SPEC §16): 1 on, 0 off (opt-in); a client's own switch wins (``Caller``).
    Setting("stream_rescue", "STREAM_RESCUE", 0, clamp=(0, 1)),
    # The Workers plan's subrequests per request (SPEC §18, ``core/subrequests.py``).
    Setting(
        "subrequest_limit",
        "SUBREQUEST_LIMIT",
        rules.DEFAULT_SUBREQUEST_LIMIT,
        clamp=(rules.SUBREQUEST_LIMIT_MIN, rules.SUBREQUEST_LIMIT_MAX),
    ),
    # Usage (SPEC §17, §18): how often an isolate writes its counts to D1, in minutes.
    Setting(
        "usage_flush_minutes",
        "USAGE_FLUSH_MINUTES",
        rules.DEFAULT_USAGE_FLUSH_MINUTES,
        clamp=rules.USAGE_FLUSH_MINUTES_RANGE,
    ),
)
SETTINGS_BY_KEY = {s.key: s for s in SETTINGS}
# Both names of every setting: the D1 key and the env var.
SETTINGS_BY_NAME = {**SETTINGS_BY_KEY, **{s.env: s for s in SETTINGS}}


def parse_setting(setting: Setting, raw: object, *, clamp: bool = True) -> int | None:
    """The value of ``raw`` for ``setting``, or None when it is not valid.

    Accepts ints and decimal strings (D1 stores text, env vars are strings; the admin API's
    ``Setting.accept`` takes ints only); booleans and fractions are not valid. Out of a clamped
    setting's range, or above ``maximum``, the value is clamped, or with ``clamp=False`` not valid;
    below ``minimum`` it is not valid.
    """
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        value = raw
    elif isinstance(raw, str) and _INTEGER.fullmatch(raw.strip()):
        value = int(raw.strip())
    else:
        return None
    if setting.clamp is not None:
        low, high = setting.clamp
        if not clamp:
            return value if low <= value <= high else None
        return min(max(value, low), high)
    if value < setting.minimum or (not clamp and value > setting.maximum):
        return None
    return min(value, setting.maximum)


@dataclass(frozen=True, slots=True)
class SettingValue:
    """The effective value (``int``; ``Aliases`` for ``model_aliases``; ``str`` for an origin) and
    where it came from."""

    value: int | Aliases | str
    source: Source


@dataclass(frozen=True, slots=True)
class Settings:
    """Effective routing settings, resolved once per snapshot; the core receives this, never env."""

    routing_cooldown_ceiling_ms: int = rules.DEFAULT_COOLDOWN_CEILING_MS
    max_consecutive_upstream_fails: int = rules.DEFAULT_MAX_CONSECUTIVE_FAILS
    same_model_retry_max_ms: int = rules.DEFAULT_SAME_MODEL_RETRY_MAX_MS
    stream_stall_ms: int = rules.DEFAULT_STREAM_STALL_MS
    max_body_bytes: int = rules.DEFAULT_MAX_BODY_BYTES
    model_aliases: Aliases = NO_ALIASES
    default_client_rpm: int = 0
    ip_rpm: int = 0
    auth_fail_limit: int = rules.DEFAULT_AUTH_FAIL_LIMIT
    openrouter_pinning: int = 1
    openrouter_lock_idle_ms: int = rules.DEFAULT_OPENROUTER_LOCK_IDLE_MS
    openrouter_origin: str = DEFAULT_OPENROUTER_ORIGIN
    stream_rescue: int = 0
    subrequest_limit: int = rules.DEFAULT_SUBREQUEST_LIMIT
    usage_flush_minutes: int = rules.DEFAULT_USAGE_FLUSH_MINUTES


def resolve_settings(
    rows: Mapping[str, str], env: Mapping[str, str]
) -> tuple[Settings, dict[str, SettingValue]]:
    """Effective settings and, per key, the value and the source it came from."""
    resolved: dict[str, SettingValue] = {}
    for setting in SETTINGS:
        candidates: tuple[tuple[object, Source], ...] = (
            (rows.get(setting.key), "d1"),
            (env.get(setting.env), "env"),
        )
        for raw, source in candidates:
            value = setting.read(raw) if raw is not None else None
            if value is not None:
                resolved[setting.key] = SettingValue(value, source)
                break
        else:
            resolved[setting.key] = SettingValue(setting.default, "default")
    settings = Settings(**{key: sv.value for key, sv in resolved.items()})
    return settings, resolved


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
