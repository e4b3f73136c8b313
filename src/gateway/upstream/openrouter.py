"""OpenRouter upstream pinning at the attempt (SPEC §15). The decisions are ``core/pinning.py``'s;
this module fetches a model's endpoints, sends the pinned request and writes the pin to D1.

- ``PinnedUpstream`` is the request's attempt: a candidate on OpenRouter (``is_openrouter``) whose
  body has no ``provider`` object of the caller's is sent with the model's locked slug
  (``provider: {"order": [slug], "allow_fallbacks": false}``); any other candidate goes to the
  plain OpenAI attempt. A body with the caller's own ``provider`` is the caller's choice: sent as
  it is, and its outcomes never touch the pin.
- A model with no candidates is scored before its request is forwarded (at most
  ``OPENROUTER_SCORE_TIMEOUT_MS``); failing that, the request goes unpinned and requests do not
  fetch again for ``OPENROUTER_CANDIDATES_FRESH_MS`` (``PinBook.scoring_failed``).
- A 429 of the pinned slug is retried in place after each of ``OPENROUTER_429_RETRY_MS`` while the
  request's budget allows (switching loses the prompt cache); then the loop's rules apply.
- A timeout, 5xx or bad stream start counts against the locked slug (``pin_after_fault``; not a
  timeout the request's budget cut short); a delivery resets the count. Such a fault, and
  OpenRouter's 404 for a slug that cannot take the request (``_pin_refused``: tools it lacks, the
  account's data policy), are then retried at once unpinned, in the same attempt: OpenRouter's own
  routing serves that request, as it did before pinning, instead of the whole provider cooling
  down for one upstream's hiccup. Only when that fails too do the loop's rules apply.
- Subrequests (SPEC §18): the loop checked room for the attempt's one fetch; every fetch beyond it
  (a first scoring, a 429 retry, the unpinned retry) is made only when the request's counter has
  room for it, else left out (a model not scored goes unpinned this once, without counting as a
  failed scoring).
- D1 writes (a lock taken or moved, a first scoring, a due renewal) go to ``waitUntil``: the answer
  never waits for them. A failed write is logged; the next change writes the whole row again.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any
from urllib.parse import quote

from gateway import isolate
from gateway.core import rules
from gateway.core.attempt import Candidate, Defect, Delivered, Observed, Outcome
from gateway.core.config import Config
from gateway.core.endpoint_scores import Ranked, rank_endpoints
from gateway.core.hop import Hops
from gateway.core.pinning import (
    Pin,
    is_openrouter,
    pin_after_fault,
    pin_after_success,
    pin_for_request,
    pin_refreshed,
    provider_field,
    renewal_due,
)
from gateway.core.subrequests import SUBREQUESTS
from gateway.errors import StorageError
from gateway.shell import d1, http
from gateway.upstream.openai import CHAT, Endpoint, JsonBody, OpenAIUpstream, send_upstream

__all__ = ["PinnedUpstream", "fetch_ranked", "write_pin"]

logger = logging.getLogger("fllmapi")

# What counts against a locked slug: the upstream could not serve (not a refusal of the caller's).
_FAULT_DEFECTS = frozenset({Defect.TIMEOUT, Defect.NETWORK, Defect.NOT_SSE, Defect.EMPTY_STREAM, Defect.ERROR_EVENT})


def endpoints_url(origin: str, model: str) -> str:
    return f"{origin}/api/v1/models/{quote(model, safe='/:')}/endpoints"


async def fetch_ranked(origin: str, model: str, now_ms: int, timeout_ms: int) -> tuple[Ranked, ...]:
    """``model``'s endpoints from OpenRouter's public endpoints API, ranked; ``()`` when the API
    cannot be read in ``timeout_ms`` or no endpoint counts."""
    answer = await http.send("GET", endpoints_url(origin, model), {"accept": "application/json"}, timeout_ms)
    if isinstance(answer, Defect):
        return ()
    text = await answer.text()
    answer.disarm()
    if answer.timed_out or not 200 <= answer.status < 300:
        return ()
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError):
        return ()
    return rank_endpoints(payload, now_ms)


async def write_pin(db: Any, pin: Pin, *, whole: bool) -> None:
    """Write ``pin``: the whole row, or only its renewal; a D1 failure is logged, not raised."""
    try:
        await (d1.save_pin(db, pin) if whole else d1.renew_pin(db, pin))
    except StorageError:
        logger.warning("OpenRouter pin of %s not saved: D1 failed", pin.model)


def _fault(outcome: Outcome) -> bool:
    if isinstance(outcome, Delivered):
        return False
    return outcome.defect in _FAULT_DEFECTS or (outcome.status or 0) >= 500


def _rate_limited(outcome: Outcome) -> bool:
    return isinstance(outcome, Observed) and outcome.status == 429


def _pin_refused(outcome: Outcome) -> bool:
    """OpenRouter's 404 when the pinned slug cannot take this request (``allow_fallbacks`` is
    off): "No endpoints found that support tool use", "…matching your data policy", "No allowed
    providers…". Not the endpoint's fault, and not a retired model."""
    if not isinstance(outcome, Observed) or outcome.status != 404:
        return False
    text = outcome.body.lower()
    return "endpoints" in text or "providers" in text


def _cut_short(candidate: Candidate, outcome: Outcome, timeout_ms: int) -> bool:
    """A timeout of an attempt the request's budget had cut below the provider's own timeout: the
    budget's end, not the endpoint's fault."""
    nominal_ms = candidate.provider.timeout_ms or rules.DEFAULT_ATTEMPT_TIMEOUT_MS
    return isinstance(outcome, Observed) and outcome.defect is Defect.TIMEOUT and timeout_ms < nominal_ms


class PinnedUpstream:
    """``attempt(candidate, timeout_ms)`` with OpenRouter pinning (see the module doc); ``env`` and
    ``ctx`` are the Worker's bindings and context, ``deadline_ms`` the end of the request's
    budget. ``env.DB`` is read only when a pin is written: the SDK wraps a binding anew for each
    request, about 40 µs of isolate CPU (issue 39), which most requests, on no OpenRouter
    provider, would spend for nothing."""

    def __init__(
        self,
        config: Config,
        body: JsonBody,
        stream: bool,
        hops: Hops,
        env: Any,
        ctx: Any,
        deadline_ms: int,
        endpoint: Endpoint = CHAT,
    ) -> None:
        self._plain = OpenAIUpstream(config, body, stream, hops, endpoint)
        self._endpoint = endpoint
        self._config = config
        self._body = body
        self._stream = stream
        self._hops = hops
        self._env = env
        self._ctx = ctx
        self._deadline_ms = deadline_ms
        settings = config.settings
        self._on = bool(settings.openrouter_pinning) and "provider" not in body.data
        self._origin = settings.openrouter_origin
        self._idle_ms = settings.openrouter_lock_idle_ms
        self._subrequests = SUBREQUESTS.get()

    async def __call__(self, candidate: Candidate, timeout_ms: int) -> Outcome:
        provider = candidate.provider
        if not self._on or not is_openrouter(provider.platform, provider.base_url, self._origin):
            return await self._plain(candidate, timeout_ms)
        started_ms = isolate.now_ms()
        slug = await self._slug(candidate.model, timeout_ms)
        timeout_ms -= isolate.now_ms() - started_ms  # the first scoring's time is the attempt's
        if slug is None or timeout_ms <= 0:
            return await self._plain(candidate, max(timeout_ms, 1))
        body = self._body.with_provider(candidate.model, provider_field(slug))
        outcome = await self._send(candidate, body, timeout_ms)
        for wait_ms in rules.OPENROUTER_429_RETRY_MS:
            left_ms = self._deadline_ms - isolate.now_ms() - wait_ms
            if not _rate_limited(outcome) or left_ms <= 0 or not self._subrequests.room():
                break
            await isolate.CLOCK.sleep(wait_ms)
            outcome = await self._send(candidate, body, min(timeout_ms, left_ms))
        self._after(candidate, slug, outcome, timeout_ms)
        if _fault(outcome) or _pin_refused(outcome):
            # What OpenRouter did before pinning: its own choice of upstream serves this one
            # request (the cache is lost once), rather than the whole provider cooling down.
            left_ms = min(timeout_ms, self._deadline_ms - isolate.now_ms())
            if left_ms > 0 and self._subrequests.room():
                outcome = await self._plain(candidate, left_ms)
        return outcome

    async def _send(self, candidate: Candidate, body: bytes | str, timeout_ms: int) -> Outcome:
        payload = (body, "application/json")
        return await send_upstream(
            self._config, candidate, self._endpoint, payload, self._stream, timeout_ms, self._hops
        )

    async def _slug(self, model: str, timeout_ms: int) -> str | None:
        """The slug this request is pinned to (scoring a new model first), or None: unpinned."""
        book = isolate.current().pins
        now_ms = isolate.now_ms()
        before = book.get(model) or Pin(model)
        pin = before
        # The scoring fetch and the request's own must both fit.
        if not pin.candidates and not book.scoring_failed(model, now_ms) and self._subrequests.room(2):
            ranked = await fetch_ranked(self._origin, model, now_ms, min(rules.OPENROUTER_SCORE_TIMEOUT_MS, timeout_ms))
            if not ranked:
                book.note_scoring_failed(model, now_ms)
            now_ms = isolate.now_ms()
            pin = pin_refreshed(pin, ranked, now_ms)
        pin = pin_for_request(pin, now_ms, self._idle_ms)
        self._keep(before, pin)
        return pin.lock_slug

    def _after(self, candidate: Candidate, slug: str, outcome: Outcome, timeout_ms: int) -> None:
        model = candidate.model
        book = isolate.current().pins
        before = book.get(model) or Pin(model)
        if isinstance(outcome, Delivered):
            self._keep(before, pin_after_success(before, slug))
        elif _fault(outcome) and not _cut_short(candidate, outcome, timeout_ms):
            self._keep(before, pin_after_fault(before, slug, isolate.now_ms(), self._idle_ms))

    def _keep(self, before: Pin, pin: Pin) -> None:
        """Hold ``pin`` in the isolate and write it when it changed what D1 must know."""
        book = isolate.current().pins
        written = book.written(pin.model)
        renew = renewal_due(written, pin, self._idle_ms)
        if pin == before and not renew:
            return
        book.put(pin)
        whole = (
            pin.lock_slug != before.lock_slug
            or pin.candidates != before.candidates
            or pin.cooled != before.cooled
            or written is None
        )
        if whole or renew:
            book.mark_written(pin)
            self._ctx.waitUntil(asyncio.ensure_future(write_pin(self._env.DB, pin, whole=whole)))
