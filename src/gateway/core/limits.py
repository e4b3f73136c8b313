"""Rate limits and the failed-auth lock (SPEC §14, §18): what is counted, in which window, and what
an isolate decides alone.

Rules:
- Every limit counts in fixed windows of ``RATE_WINDOW_MS`` (UTC minutes): a window starts at
  ``now - now % RATE_WINDOW_MS`` and its counts start again at 0.
- Three counters, by key: ``ip:<ip>`` (``ip_rpm``: every /v1 request that reaches the token
  check), ``client:<id>`` (a named client's ``rpm``; ``client:default`` is the API token's,
  ``default_client_rpm``) and ``authfail:<ip>`` (failed token checks, ``auth_fail_limit``).
  A limit of 0 or None is off: nothing is counted for it.
- Counted in the isolate, reported to D1 in shares (the free plan's D1 budget, SPEC §18): each
  isolate counts its own units of a window in memory and adds them to the key's D1 row only once
  ``report_share(limit)`` of them (half the limit) are unreported; D1 answers the window's count
  across isolates, and the isolate then knows what the others had reported. A unit is allowed
  while what the isolate knows (the others' units at its last report, plus its own) is under the
  limit; the request over it is refused (429) and not counted, so a refused caller writes nothing.
- So a key served by one isolate is limited exactly, with no D1 query until half its limit and
  then one a window; a key served by several isolates in one window may pass its limit by the
  units the others have not reported yet (under half the limit each). A caller far below half its
  limits costs no D1 query at all.
- The lock: once ``authfail:<ip>`` reached its limit, every request from that IP is refused until
  the window ends, before any token is compared, on the API and the admin API alike. Another
  isolate learns of the lock at its own next report for that IP.
- When D1 cannot answer, nothing changes but the reach: the isolate keeps counting (its own
  units are then all it knows) and asks D1 again no sooner than ``RATE_REPORT_RETRY_MS`` later.
- The caller's IP is ``CF-Connecting-IP`` (Cloudflare sets it; a caller cannot, except on a local
  runtime, which keeps a caller's own and only fills in a missing one); without it,
  the one caller ``unknown``. An IPv6 caller is its /64: one host commonly holds a whole /64, so
  counting addresses would give it endless fresh windows (and endless rows).
- Only a presented token can fail a check: a request without one is refused (401) without being
  counted, so a keyless health check or app cannot lock its address out. The same wrong token from
  one IP counts once per window in an isolate (a page or an SDK sending it on several requests at
  once is one mistake, not several guesses).
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from functools import lru_cache

from gateway.core import rules

__all__ = [
    "UNKNOWN_IP",
    "LimitMemory",
    "Verdict",
    "authfail_key",
    "caller_ip",
    "client_key",
    "ip_key",
    "report_share",
    "window_start",
]

UNKNOWN_IP = "unknown"
# Longer than any IPv6 text: a header that long is not an address, and would bloat keys.
_MAX_IP_CHARS = 64
# Callers whose IP is remembered per isolate (``caller_ip``): a caller sends many requests, and an
# IPv6 address's /64 costs about 22 us of Pyodide CPU to work out (``ipaddress``; issue 39).
_IPS_KEPT = 1024


def window_start(now_ms: int) -> int:
    """The start of the window ``now_ms`` falls in."""
    return now_ms - now_ms % rules.RATE_WINDOW_MS


@lru_cache(maxsize=_IPS_KEPT)
def caller_ip(header: str | None) -> str:
    """The caller's IP from ``CF-Connecting-IP``; ``unknown`` when it is missing or not an
    address's text."""
    ip = (header or "").strip()
    if not ip or len(ip) > _MAX_IP_CHARS or not all(c.isalnum() or c in ".:" for c in ip):
        return UNKNOWN_IP
    if ":" not in ip:
        return ip
    try:
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    except ValueError:
        return UNKNOWN_IP


def ip_key(ip: str) -> str:
    return f"ip:{ip}"


def authfail_key(ip: str) -> str:
    return f"authfail:{ip}"


def client_key(client_id: int | None) -> str:
    """The counter of a named client, or of the API token's default client (None)."""
    return "client:default" if client_id is None else f"client:{client_id}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One counter's answer for one request: ``count`` requests counted in the window (this one
    included when ``allowed``), of ``limit``, until ``reset_at_ms``."""

    limit: int
    count: int
    reset_at_ms: int
    allowed: bool

    @property
    def remaining(self) -> int:
        return max(self.limit - self.count, 0)

    def retry_after_s(self, now_ms: int) -> int:
        """Whole seconds until the window ends (at least 1: ``Retry-After: 0`` invites a loop)."""
        return max(math.ceil((self.reset_at_ms - now_ms) / rules.SECOND_MS), 1)

    def header_values(self, now_ms: int) -> tuple[str, str, str]:
        """``X-RateLimit-Limit``, ``-Remaining`` and ``-Reset`` of a limited client's answer;
        ``Reset`` in seconds from now, as ``Retry-After`` counts."""
        return str(self.limit), str(self.remaining), str(self.retry_after_s(now_ms))


@dataclass(slots=True)
class _Window:
    """One key's window as the isolate knows it."""

    reset_ms: int
    limit: int  # the limit it was last counted against
    mine: int = 0  # units this isolate counted
    reported: int = 0  # of ``mine``, in D1's count
    others: int = 0  # the other isolates' units in D1's count at the last report

    @property
    def known(self) -> int:
        return self.others + self.mine


def report_share(limit: int) -> int:
    """Unreported units of a key that make the isolate report them: half its limit, at least 1."""
    return max(math.ceil(limit / rules.RATE_REPORT_DIVISOR), 1)


class LimitMemory:
    """What one isolate counts and knows of windows (see the module's rules)."""

    def __init__(self, max_entries: int = rules.RATE_MEMORY_MAX_ENTRIES) -> None:
        self._max_entries = max_entries
        self._windows: dict[str, _Window] = {}
        self._failed: dict[str, int] = {}  # "ip token-digest" -> counted until (ms)
        self._quiet_until = 0  # no report before this (D1 failed)

    def _window(self, key: str, now_ms: int) -> _Window | None:
        """The key's window holding ``now_ms`` (a changed limit keeps the window's counts)."""
        window = self._windows.get(key)
        if window is None or window.reset_ms <= now_ms:
            return None
        return window

    def full(self, key: str, limit: int, now_ms: int) -> Verdict | None:
        """The refusal for ``key`` when what the isolate knows fills ``limit`` (no counting)."""
        window = self._window(key, now_ms)
        if window is None or window.known < limit:
            return None
        return Verdict(limit, limit, window.reset_ms, allowed=False)

    def count(self, key: str, limit: int, now_ms: int) -> tuple[Verdict, int]:
        """Count one unit of ``key`` if its window has room: the verdict, and the units to report
        to D1 now (0: none; else ``reported`` takes D1's answer)."""
        refused = self.full(key, limit, now_ms)
        if refused is not None:
            return refused, 0
        window = self._window(key, now_ms)
        if window is None:
            self._make_room(now_ms)
            window = self._windows[key] = _Window(window_start(now_ms) + rules.RATE_WINDOW_MS, limit)
        window.limit = limit
        window.mine += 1
        verdict = Verdict(limit, window.known, window.reset_ms, allowed=True)
        unreported = window.mine - window.reported
        if unreported < report_share(limit) or now_ms < self._quiet_until:
            return verdict, 0
        window.reported = window.mine  # in flight: the next request never sends these again
        return verdict, unreported

    def reported(self, key: str, now_ms: int, total: int | None) -> None:
        """D1's answer to the report that ``count`` asked for at ``now_ms``: the window's count
        after it, or None when D1 failed (no report is asked for ``RATE_REPORT_RETRY_MS``, a
        window: the units stay counted here, and their window ends before D1 is asked again)."""
        if total is None:
            self._quiet_until = now_ms + rules.RATE_REPORT_RETRY_MS
            return
        window = self._window(key, now_ms)
        if window is not None and window.reset_ms == window_start(now_ms) + rules.RATE_WINDOW_MS:
            window.others = max(total - window.reported, window.others)

    def note_failure(self, ip: str, digest: str, now_ms: int) -> bool:
        """A failed token check from ``ip`` with the token whose digest is ``digest``. True when it
        is to be counted (not counted in this window yet)."""
        key = f"{ip} {digest}"
        if self._failed.get(key, 0) > now_ms:
            return False
        self._make_room(now_ms)
        self._failed[key] = window_start(now_ms) + rules.RATE_WINDOW_MS
        return True

    def _make_room(self, now_ms: int) -> None:
        """Bound the memory: past ``max_entries`` (callers from many IPs), expired entries go;
        if every entry is live, all go but the full windows (a locked IP stays locked), and if
        those alone fill it, they go too (forgetting loses this window's unreported counts)."""
        if self._size() < self._max_entries:
            return
        self._windows = {k: w for k, w in self._windows.items() if w.reset_ms > now_ms}
        self._failed = {k: v for k, v in self._failed.items() if v > now_ms}
        if self._size() >= self._max_entries:
            self._windows = {k: w for k, w in self._windows.items() if w.known >= w.limit}
            self._failed.clear()
        if self._size() >= self._max_entries:
            self._windows.clear()

    def _size(self) -> int:
        return len(self._windows) + len(self._failed)
