"""The rate limits of one request (SPEC §14, ``core/limits.py``), counted in D1.

- An IP the isolate knows to be locked out is refused before any token is compared
  (``refuse_if_locked``); a failed token check is counted (``failed``), and refused with 429 once
  the IP is locked; an admitted caller is counted against ``ip_rpm`` and its client's rpm and
  checked against the lock (``admit``) in one D1 batch, or none when the isolate holds a lease
  of each count (``core/limits.py``) and checked the IP recently.
- The limiter fails open: when D1 cannot count, the request is served without limits (and the log
  says so); the callers (``routes/auth.py``) enforce tokens, revocation and model lists all the same.
"""

from __future__ import annotations

import logging

from gateway import isolate
from gateway.core.clients import Client, token_hash
from gateway.core.config import Config
from gateway.core.limits import Verdict, authfail_key, caller_ip, client_key, ip_key, window_start
from gateway.errors import RateLimitedError, StorageError
from gateway.routes import Call
from gateway.shell import d1
from gateway.wire import headers as h

__all__ = ["Limits"]

logger = logging.getLogger("fllmapi")


class Limits:
    """The limits of one request from one IP (``core/limits.py``), counted in D1."""

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
        counts: list[tuple[str, int, int]] = []
        lock = authfail_key(self._ip)
        if self._fail_limit and self._memory.note_failure(self._ip, token_hash(token), self._now):
            counts.append((lock, self._fail_limit, 1))
        ip = ip_key(self._ip)
        if api and self._ip_rpm and self._from_memory(ip, self._ip_rpm) is None:
            counts.append(self._lease(ip, self._ip_rpm))
        answer = await self._ask([], counts) if counts else None
        if answer is None:
            return
        for (key, limit, _), counted in zip(counts, answer[1], strict=True):
            verdict = self._memory.grant(key, limit, self._now, counted)
            if key == lock and not verdict.allowed:
                raise self._locked(verdict)

    async def admit(self, client: Client | None, *, api: bool) -> dict[str, str]:
        """Check the lock and count an admitted caller; the ``X-RateLimit-*`` headers of a
        limited client's answers. Raises ``RateLimitedError`` (429)."""
        lock = authfail_key(self._ip)
        reads = [lock] if self._fail_limit and not self._memory.lock_open(self._ip, self._now) else []
        limited: list[tuple[str, int]] = []
        if api and self._ip_rpm:
            limited.append((ip_key(self._ip), self._ip_rpm))
        rpm = self._default_rpm if client is None else client.rpm
        if api and rpm:
            limited.append((client_key(None if client is None else client.id), rpm))
        verdicts: dict[str, Verdict] = {}
        counts: list[tuple[str, int, int]] = []
        for key, limit in limited:
            known = self._from_memory(key, limit)
            if known is not None:
                verdicts[key] = known
            else:
                counts.append(self._lease(key, limit))
        if reads or counts:
            answer = await self._ask(reads, counts)
            if answer is None:
                return {}
            read, counted = answer
            if reads:
                if read[0] >= self._fail_limit:
                    verdict = Verdict.of(self._fail_limit, None, self._now)
                    self._memory.note(lock, verdict, self._now)
                    raise self._locked(verdict)
                self._memory.note_open(self._ip, self._now)
            for (key, limit, _), result in zip(counts, counted, strict=True):
                verdicts[key] = self._memory.grant(key, limit, self._now, result)
        headers: dict[str, str] = {}
        for key, _ in limited:
            verdict = verdicts[key]
            if key.startswith("ip:"):
                if not verdict.allowed:
                    raise self._ip_limited(verdict)
            elif not verdict.allowed:
                raise self._client_limited(verdict, client)
            else:
                headers = self._headers(verdict)
        return headers

    def _from_memory(self, key: str, limit: int) -> Verdict | None:
        """What the isolate knows of ``key`` without D1: its refusal when the window is full, else
        a unit of its lease; None when D1 must be asked."""
        return self._memory.full(key, limit, self._now) or self._memory.spend(key, limit, self._now)

    def _lease(self, key: str, limit: int) -> tuple[str, int, int]:
        """The count to ask D1 for: a lease of ``key``'s window."""
        return key, limit, self._memory.lease_size(key, limit, self._now)

    async def _ask(
        self, reads: list[str], counts: list[tuple[str, int, int]]
    ) -> tuple[list[int], list[tuple[int, int] | None]] | None:
        """The D1 batch, or None when D1 cannot answer: the limits fail open."""
        sweep = self._memory.sweep_due(self._now)
        try:
            return await d1.count_windows(self._env.DB, window_start(self._now), reads, counts, sweep=sweep)
        except StorageError:
            logger.warning("rate limits not applied: D1 could not count this request (failing open)")
            return None

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
            f"This address is limited to {verdict.limit} requests per minute (ip_rpm); try again in "
            f"{wait} s.",
            headers=self._retry(verdict),
        )

    def _client_limited(self, verdict: Verdict, client: Client | None) -> RateLimitedError:
        wait = verdict.retry_after_s(self._now)
        who = "The API token" if client is None else f"Client '{client.name}'"
        return RateLimitedError(
            f"{who} is limited to {verdict.limit} requests per minute; try again in {wait} s.",
            headers={**self._retry(verdict), **self._headers(verdict)},
        )
