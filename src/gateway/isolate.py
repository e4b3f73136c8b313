"""Isolate memory: what one Worker isolate keeps between requests (PLATFORM-NOTES §3.4).

Created on the first request, never at import (the deploy snapshot must hold no state), and
safe to lose at any time: everything here is rebuilt from D1 and env. While D1 fails, what is here
is what the isolate serves from (SPEC §18).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from gateway.core.config import Config, ConfigCache, build_config
from gateway.core.hop import DEPLOYMENT_ID_KEY
from gateway.core.limits import LimitMemory
from gateway.core.loop import Clock
from gateway.core.pinbook import PinBook
from gateway.core.rescue import RescueLog
from gateway.core.settings import SETTINGS
from gateway.core.state import RouterState
from gateway.core.subrequests import SUBREQUESTS
from gateway.core.usage import UsageBook
from gateway.errors import StorageError
from gateway.shell import d1

__all__ = ["CLOCK", "Isolate", "current", "load_config", "now_ms"]

logger = logging.getLogger("fllmapi")

# The env names the snapshot reads: the settings' variables and the three secrets.
_ENV_NAMES = (*(s.env for s in SETTINGS), "API_TOKEN", "ADMIN_TOKEN", "ENCRYPTION_KEY")


@dataclass
class Isolate:
    configs: ConfigCache = field(default_factory=ConfigCache)
    router: RouterState = field(default_factory=RouterState)  # cooldowns and speed memory
    limits: LimitMemory = field(default_factory=LimitMemory)  # what it knows of rate windows
    pins: PinBook = field(default_factory=PinBook)  # OpenRouter pins (SPEC §15)
    usage: UsageBook = field(default_factory=UsageBook)  # counts not yet written (SPEC §17)
    rescues: RescueLog = field(default_factory=RescueLog)  # broken streams rescue was on for (SPEC §16)
    refreshing: bool = False  # a request is reading the configuration from D1
    # The draws of the reliable and balanced strategies (SPEC §19): seeded at the first request.
    draws: random.Random = field(default_factory=random.Random)
    # Names this isolate's usage rows (SPEC §17): drawn at the first request, never at import.
    id: str = field(default_factory=lambda: secrets.token_hex(6))

    def draw(self, alpha: float, beta: float) -> float:
        """A draw from Beta(alpha, beta)."""
        return self.draws.betavariate(alpha, beta)


_current: Isolate | None = None


def current() -> Isolate:
    global _current
    if _current is None:
        _current = Isolate()
    return _current


def now_ms() -> int:
    return int(time.time() * 1000)


async def _sleep(ms: int) -> None:
    await asyncio.sleep(ms / 1000)


# The fallback loop's clock: the wall clock (Workers advance it across I/O).
CLOCK = Clock(now_ms, _sleep)


def _env_values(env: Any) -> dict[str, str]:
    values = {}
    for name in _ENV_NAMES:
        value = getattr(env, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # a JSON number in wrangler's "vars"
        elif hasattr(value, "to_py"):
            value = value.to_py()  # a JSON object in wrangler's "vars" (MODEL_ALIASES) comes as JS
        if isinstance(value, dict):
            value = json.dumps(value)  # read back as the env var's JSON text
        if isinstance(value, str) and value:
            values[name] = value
    return values


async def _deployment_id(db: Any, rows: dict[str, str]) -> str:
    """This deployment's id for the loop guard (``core/hop.py``): the D1 row, made on the first
    request of a new deployment (a random id, drawn at request time, never at import)."""
    stored = rows.get(DEPLOYMENT_ID_KEY)
    if stored:
        return stored
    return await d1.claim_setting(db, DEPLOYMENT_ID_KEY, secrets.token_hex(8))


async def load_config(env: Any) -> Config:
    """The isolate's snapshot (``_snapshot``), whose ``subrequest_limit`` becomes the current
    request's limit (``core/subrequests.py``)."""
    config = await _snapshot(env)
    SUBREQUESTS.get().limit = config.settings.subrequest_limit
    return config


async def _snapshot(env: Any) -> Config:
    """The isolate's snapshot (``ConfigCache``): cached for its TTL (no D1 query); then current
    while D1's configuration stamp is unchanged (one row, and the OpenRouter pins, read); else
    read whole in one batch (plus one more, once per deployment, to make its id). When D1 fails,
    the last snapshot serves, however old, and D1 is asked again a TTL later (SPEC §18); with
    none yet, ``StorageError`` (503, naming D1)."""
    state = current()
    configs = state.configs
    now = now_ms()
    config = configs.get(now)
    if config is not None:
        return config
    generation = configs.generation
    last = configs.last
    if last is not None and configs.stamp is not None and state.refreshing:
        # One read at a time: a D1 that hangs holds one request, not every one. (Not after an
        # admin write here, whose effect the caller may be waiting for.)
        return last
    state.refreshing = True
    try:
        if configs.stamp is not None and last is not None:
            stamp, pins = await d1.check_config(env.DB)
            state.pins.merge_stored(pins)
            if stamp == configs.stamp:
                configs.confirm(now, generation)
                return last
        providers, rows, clients, pins, stamp = await d1.load_config_rows(env.DB)
        state.pins.merge_stored(pins)
        rows[DEPLOYMENT_ID_KEY] = await _deployment_id(env.DB, rows)
    except StorageError as exc:
        if last is None:
            # Before any token check: the caller learns that D1 failed, not what D1 said (the log
            # and the admin status say that).
            logger.warning("D1 failed with no configuration to serve from: %s", exc.message)
            raise StorageError(
                "D1 failed to read the configuration, and this isolate has none to serve from yet: "
                "it serves again once D1 answers."
            ) from exc
        configs.hold(now, generation)
        logger.warning("D1 failed; serving the configuration read %d s ago", (now - last.loaded_at_ms) // 1000)
        return last
    finally:
        state.refreshing = False
    config = build_config(providers, rows, _env_values(env), now, clients)
    configs.put(config, generation, stamp)
    return config
