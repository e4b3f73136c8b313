"""The routing settings (SPEC §5.2, §7): what each is, how its stored text, env var or admin API
value is read, and the effective values of one snapshot.

Rules:
- For each setting the D1 row wins over the env var, which wins over the default; a value that is
  not valid is skipped so the next source applies. Numbers out of a clamped range are clamped
  when read; the admin API refuses them instead (``Setting.accept``).
- Three kinds of setting share one interface (``read`` stored text, ``accept`` an admin API value,
  ``refusal``, ``to_json``, ``to_row``): integers (``Setting``), the model alias table
  (``AliasesSetting``, a JSON object; ``core/aliases.py``), compiled here, once per snapshot, and
  an origin (``OriginSetting``: where OpenRouter's endpoints API is, SPEC §15), and a choice
  among names (``ChoiceSetting``: the routing strategy, SPEC §19; the stream pacing, SPEC §18).
- A setting has two names: its D1 key (``stream_stall_ms``) and its env var (``STREAM_STALL_MS``);
  the admin API takes either (``SETTINGS_BY_NAME``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from gateway.core import rules
from gateway.core.aliases import NO_ALIASES, Aliases, alias_problem, compile_aliases
from gateway.core.pacing import Pacing
from gateway.core.strategy import Strategy

__all__ = [
    "DEFAULT_OPENROUTER_ORIGIN",
    "SETTINGS",
    "SETTINGS_BY_KEY",
    "SETTINGS_BY_NAME",
    "AliasesSetting",
    "AnySetting",
    "ChoiceSetting",
    "OriginSetting",
    "Setting",
    "SettingValue",
    "Settings",
    "Source",
    "origin_of",
    "parse_setting",
    "resolve_settings",
]

Source = Literal["d1", "env", "default"]

# What a setting's text must look like to be read as an integer (ASCII digits only: str.isdigit
# also admits "²", which int() refuses).
_INTEGER = re.compile(r"-?[0-9]+")


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


@dataclass(frozen=True, slots=True)
class ChoiceSetting:
    """One of ``choices``, stored and given as its name (any case, spaces around it ignored)."""

    key: str
    env: str
    choices: tuple[str, ...]
    default: str
    null_is_off = False

    def read(self, raw: object) -> str | None:
        if not isinstance(raw, str):
            return None
        name = raw.strip().lower()
        return name if name in self.choices else None

    def accept(self, value: object) -> str | None:
        return self.read(value)

    def refusal(self, value: object) -> str:
        return "one of " + ", ".join(self.choices) + " is expected"

    def to_json(self, value: str) -> str:
        return value

    def to_row(self, value: str) -> str:
        return value


AnySetting = Setting | AliasesSetting | OriginSetting | ChoiceSetting


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
    # The order of auto's chain (SPEC §19, ``core/strategy.py``).
    ChoiceSetting("routing_strategy", "ROUTING_STRATEGY", tuple(Strategy), Strategy.PRIORITY.value),
    # How long a relayed event may wait for the ones after it (SPEC §18, ``core/pacing.py``).
    ChoiceSetting("stream_pacing", "STREAM_PACING", tuple(Pacing), Pacing.PACED.value),
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
    """The effective value (``int``; ``Aliases`` for ``model_aliases``; ``str`` for an origin or a
    choice) and where it came from."""

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
    routing_strategy: str = Strategy.PRIORITY.value
    stream_pacing: str = Pacing.PACED.value


def resolve_settings(rows: Mapping[str, str], env: Mapping[str, str]) -> tuple[Settings, dict[str, SettingValue]]:
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
