"""The rate limits of one request (SPEC §14, ``core/limits.py``): counted in the isolate, reported
to D1 in shares.

- An IP the isolate knows to be locked out is refused before any token is compared
  (``refuse_if_locked``); a failed token check is counted (``failed``), and refused with 429 once
  the IP is locked; an admitted caller is counted against ``ip_rpm`` and its client's rpm
  (``admit``). None of them asks D1 unless a key's unreported units reached its share; then one
  batch reports them all.
- When D1 cannot take a report, the limits go on in this isolate's memory (and the log says so);
  tokens, revocation and model lists never depend on D1 at all (``serving/auth.py``).
- The cron deletes the rows of windows that ended (``sweep``).
"""

from __future__ import annotations

import logging
from typing import Any

from gateway import isolate
from gateway.call import Call
from gateway.core.clients import Client, token_hash
from gateway.core.config import Config
from gateway.core.limits import Verdict, authfail_key, caller_ip, client_key, ip_key, window_start
from gateway.errors import RateLimitedError, StorageError
from gateway.shell import d1
from gateway.wire import headers as h

__all__ = ["Limits", "sweep"]

logger = logging.getLogger("fllmapi")


class Limits:
    """The limits of one request from one IP (``core/limits.py``)."""

    def __init__(self, call: Call, config: Config) -> None:
        settings = config.settings
        self._env = call.env
        self._fail_limit = settings.auth_fail_limit
        self._ip_rpm = settings.ip_rpm
        self._default_rpm = settings.default_client_rpm
        self._memory = isolate.current().limits
        self._now = isolate.now_ms()
        self._ip = caller_ip(call.request.header(h.CONNECTING_IP))

    def refuse_if_locked(self) -> None:
        """Raise the lock's 429 when this isolate knows the IP is locked out (no D1 query)."""
        if self._fail_limit:
            known = self._memory.full(authfail_key(self._ip), self._fail_limit, self._now)
            if known is not None:
                raise self._locked(known)

    async def failed(self, token: str | None, *, api: bool) -> None:
        """Count a failed check of ``token`` (and, on /v1, the request against ``ip_rpm``); raise
        the lock's 429 when the IP was locked already. No token: nothing to count (a request
        without one guesses nothing)."""
        if not token:
            return
        reports: list[tuple[str, int]] = []
        lock = None
        if self._fail_limit and self._memory.note_failure(self._ip, token_hash(token), self._now):
            lock = self._count(authfail_key(self._ip), self._fail_limit, reports)
        if api and self._ip_rpm:
            self._count(ip_key(self._ip), self._ip_rpm, reports)  # a wrong token is refused anyway
        await self._report(reports)
        if lock is not None and not lock.allowed:
            raise self._locked(lock)

    async def admit(self, client: Client | None, *, api: bool) -> dict[str, str]:
        """Count an admitted caller; the ``X-RateLimit-*`` headers of a limited client's answers.
        Raises ``RateLimitedError`` (429)."""
        limited: list[tuple[str, int]] = []
        if api and self._ip_rpm:
            limited.append((ip_key(self._ip), self._ip_rpm))
        rpm = self._default_rpm if client is None else client.rpm
        if api and rpm:
            limited.append((client_key(None if client is None else client.id), rpm))
        if not limited:
            return {}
        reports: list[tuple[str, int]] = []
        verdicts = [self._count(key, limit, reports) for key, limit in limited]
        await self._report(reports)
        headers: dict[str, str] = {}
        for (key, _), verdict in zip(limited, verdicts, strict=True):
            if key.startswith("ip:"):
                if not verdict.allowed:
                    raise self._ip_limited(verdict)
            elif not verdict.allowed:
                raise self._client_limited(verdict, client)
            else:
                headers = self._headers(verdict)
        return headers

    def _count(self, key: str, limit: int, reports: list[tuple[str, int]]) -> Verdict:
        """Count a unit of ``key``; the units due to D1, if any, join ``reports``."""
        verdict, units = self._memory.count(key, limit, self._now)
        if units:
            reports.append((key, units))
        return verdict

    async def _report(self, reports: list[tuple[str, int]]) -> None:
        """One D1 batch for the due reports; when D1 cannot take it, the isolate counts alone."""
        if not reports:
            return
        totals: list[int | None]
        try:
            totals = list(await d1.report_windows(self._env.DB, window_start(self._now), reports))
        except StorageError:
            logger.warning("rate limits counted in this isolate only: D1 could not take its count")
            totals = [None] * len(reports)
        for (key, _), total in zip(reports, totals, strict=True):
            self._memory.reported(key, self._now, total)

    def _headers(self, verdict: Verdict) -> dict[str, str]:
        return dict(zip(h.RATE_LIMIT, verdict.header_values(self._now), strict=True))

    def _retry(self, verdict: Verdict) -> dict[str, str]:
        return {h.RETRY_AFTER: str(verdict.retry_after_s(self._now))}

    def _locked(self, verdict: Verdict) -> RateLimitedError:
        wait = verdict.retry_after_s(self._now)
        return RateLimitedError(
            f"Too many failed token checks from this address ({verdict.limit} in a minute); every "
            f"request from it is refused for {wait} s.",
            code="too_many_failed_auth",
            headers=self._retry(verdict),
        )

    def _ip_limited(self, verdict: Verdict) -> RateLimitedError:
        wait = verdict.retry_after_s(self._now)
        return RateLimitedError(
            f"This address is limited to {verdict.limit} requests per minute (ip_rpm); try again in {wait} s.",
            headers=self._retry(verdict),
        )

    def _client_limited(self, verdict: Verdict, client: Client | None) -> RateLimitedError:
        wait = verdict.retry_after_s(self._now)
        who = "The API token" if client is None else f"Client '{client.name}'"
        return RateLimitedError(
            f"{who} is limited to {verdict.limit} requests per minute; try again in {wait} s.",
            headers={**self._retry(verdict), **self._headers(verdict)},
        )


async def sweep(db: Any, now_ms: int) -> None:
    """Delete the rows of windows that ended before ``now_ms``'s (the cron; rows otherwise stay,
    one per key ever reported)."""
    await d1.sweep_windows(db, window_start(now_ms))
