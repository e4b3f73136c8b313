"""OpenRouter pinning's admin view and its cron (SPEC §15).

- ``GET /api/admin/openrouter``: per model the lock, the ranked candidates (with prices, caching,
  throughput and when a faulty one cools until), failures, switches and the last refresh; read
  from D1 and merged with what the serving isolate knows (its own renewals and fault counts).
- ``refresh_candidates`` is the Cron Trigger's work: re-score every model seen whose candidates
  are older than ``OPENROUTER_CANDIDATES_FRESH_MS``, the stalest first and at most
  ``OPENROUTER_CRON_MAX_MODELS`` per run (each is a subrequest); it writes candidates, never a lock.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from gateway import isolate
from gateway.answers import json_response
from gateway.call import Call
from gateway.core import rules
from gateway.core.pinning import Pin, candidates_fresh, pin_refreshed, savings_estimate
from gateway.serving.auth import admin_config
from gateway.shell import d1
from gateway.shell.http import JsResponse
from gateway.upstream.openrouter import fetch_ranked

__all__ = ["refresh_candidates", "status"]

logger = logging.getLogger("fllmapi")


def _pin_json(pin: Pin, now_ms: int) -> dict[str, Any]:
    slug = pin.locked(now_ms)
    cooled = {s: t for s, t in pin.cooled.items() if t > now_ms}
    return {
        "model": pin.model,
        "lock": None if slug is None else {"slug": slug, "until": pin.lock_until_ms},
        "candidates": [{**c.as_json(), "cooled_until": cooled.get(c.slug)} for c in pin.candidates],
        "failures": pin.failures,
        "switches": pin.switches,
        "refreshed_at": pin.refreshed_at_ms,
        "estimate": savings_estimate(pin, now_ms),
    }


async def status(call: Call) -> JsResponse:
    config = await admin_config(call)
    book = isolate.current().pins
    book.merge_stored(await d1.load_pins(call.env.DB))
    now_ms = isolate.now_ms()
    settings = config.settings
    return json_response(
        {
            "pinning": bool(settings.openrouter_pinning),
            "origin": settings.openrouter_origin,
            "lock_idle_ms": settings.openrouter_lock_idle_ms,
            "models": [_pin_json(pin, now_ms) for pin in book.pins()],
        }
    )


async def _refresh(db: Any, origin: str, pin: Pin) -> bool:
    ranked = await fetch_ranked(origin, pin.model, isolate.now_ms(), rules.OPENROUTER_SCORE_TIMEOUT_MS)
    if not ranked:
        logger.warning("OpenRouter endpoints of %s could not be scored; its candidates are kept", pin.model)
        return False
    refreshed = pin_refreshed(pin, ranked, isolate.now_ms())
    await d1.save_candidates(db, refreshed)
    isolate.current().pins.merge_stored([refreshed])
    return True


async def refresh_candidates(env: Any) -> int:
    """The cron's run (see the module doc); how many models it re-scored."""
    config = await isolate.load_config(env)
    if not config.settings.openrouter_pinning:
        return 0
    now_ms = isolate.now_ms()
    stale = [pin for pin in await d1.load_pins(env.DB) if not candidates_fresh(pin, now_ms)]
    stale.sort(key=lambda pin: pin.refreshed_at_ms or 0)
    origin = config.settings.openrouter_origin
    gate = asyncio.Semaphore(rules.OPENROUTER_CRON_CONCURRENCY)

    async def refresh(pin: Pin) -> bool:
        async with gate:
            return await _refresh(env.DB, origin, pin)

    return sum(await asyncio.gather(*(refresh(pin) for pin in stale[: rules.OPENROUTER_CRON_MAX_MODELS])))
