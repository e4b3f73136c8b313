"""Rate limits and the failed-auth lock (SPEC §14): what is counted, in which window, and what an
isolate may decide without asking D1.

Rules:
- Every limit counts in fixed windows of ``RATE_WINDOW_MS`` (UTC minutes): a window starts at
  ``now - now % RATE_WINDOW_MS`` and its counts start again at 0.
- Three counters, by key: ``ip:<ip>`` (``ip_rpm``: every /v1 request that reaches the token
  check), ``client:<id>`` (a named client's ``rpm``; ``client:default`` is the API token's,
  ``default_client_rpm``) and ``authfail:<ip>`` (failed token checks, ``auth_fail_limit``).
  A limit of 0 or None is off: nothing is counted for it.
- A counter counts a request only while it is under its limit; the request over it is refused
  (429) and not counted, so a refused caller writes nothing.
- Leases: an ``ip:`` or ``client:`` counter is counted in D1 by a lease of ``lease_size`` units at
  once (a tenth of what is left of the window, at least 1); the isolate spends the lease's units on
  the key's next requests without asking D1 (``spend``). The counts in D1 include every unit
  leased, so a window never admits more than its limit across isolates; a lease an isolate holds
  unspent when the window ends is lost, so with several isolates serving one caller a window may
  admit up to a tenth fewer per isolate. Failed token checks are counted one by one.
- The lock: once ``authfail:<ip>`` reached its limit, every request from that IP is refused until
  the window ends, before any token is compared, on the API and the admin API alike.
- The caller's IP is ``CF-Connecting-IP`` (Cloudflare sets it; a caller cannot, except on a local
  runtime, which keeps a caller's own and only fills in a missing one); without it,
  the one caller ``unknown``. An IPv6 caller is its /64: one host commonly holds a whole /64, so
  counting addresses would give it endless fresh windows (and endless rows).
- Only a presented token can fail a check: a request without one is refused (401) without being
  counted, so a keyless health check or app cannot lock its address out. The same wrong token from
  one IP counts once per window in an isolate (a page or an SDK sending it on several requests at
  once is one mistake, not several guesses).
- ``LimitMemory`` is what one isolate remembers so a warm request asks D1 nothing it knows:
  keys at their limit (refused locally until their window ends) and IPs checked and found not
  locked (trusted for ``AUTH_LOCK_RECHECK_MS``). Losing it costs a D1 query, never correctness
  of a count.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass

from gateway.core import rules

__all__ = [
    "UNKNOWN_IP",
    "LimitMemory",
    "Verdict",
    "authfail_key",
    "caller_ip",
    "client_key",
    "ip_key",
    "window_start",
]

UNKNOWN_IP = "unknown"
# Longer than any IPv6 text: a header that long is not an address, and would bloat keys.
_MAX_IP_CHARS = 64


def window_start(now_ms: int) -> int:
    """The start of the window ``now_ms`` falls in."""
    return now_ms - now_ms % rules.RATE_WINDOW_MS


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

    @classmethod
    def of(cls, limit: int, counted: int | None, now_ms: int) -> Verdict:
        """The verdict of a conditional count: ``counted`` is the new count, or None when the
        counter was already at ``limit`` and refused to count."""
        reset = window_start(now_ms) + rules.RATE_WINDOW_MS
        if counted is None:
            return cls(limit, limit, reset, allowed=False)
        return cls(limit, counted, reset, allowed=True)

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


class LimitMemory:
    """What one isolate knows about windows without asking D1 (see the module's rules)."""

    def __init__(self, max_entries: int = rules.RATE_MEMORY_MAX_ENTRIES) -> None:
        self._max_entries = max_entries
        self._full: dict[str, tuple[int, int]] = {}  # key -> (limit, reset_at_ms)
        self._open: dict[str, int] = {}  # ip -> trusted until (ms)
        self._failed: dict[str, int] = {}  # "ip token-digest" -> counted until (ms)
        self._leases: dict[str, tuple[int, int, int, int]] = {}  # key -> (limit, reset, count, left)
        self._swept_window = -1

    def full(self, key: str, limit: int, now_ms: int) -> Verdict | None:
        """The refusal for ``key`` when it is known to be at ``limit`` in the current window."""
        known = self._full.get(key)
        if known is None or known[0] != limit or known[1] <= now_ms:
            return None
        return Verdict(limit, limit, known[1], allowed=False)

    def note(self, key: str, verdict: Verdict, now_ms: int) -> None:
        """Remember ``key`` as full when ``verdict`` leaves nothing of its window."""
        if verdict.remaining == 0:
            self._make_room(now_ms)
            self._full[key] = (verdict.limit, verdict.reset_at_ms)

    def spend(self, key: str, limit: int, now_ms: int) -> Verdict | None:
        """This request's unit of ``key``'s lease, or None when the isolate holds none left in
        this window for this limit (D1 is asked for a new lease)."""
        lease = self._leases.get(key)
        if lease is None or lease[0] != limit or lease[1] <= now_ms or lease[3] <= 0:
            return None
        _, reset, count, left = lease
        self._leases[key] = (limit, reset, count, left - 1)
        return Verdict(limit, count - (left - 1), reset, allowed=True)

    def lease_size(self, key: str, limit: int, now_ms: int) -> int:
        """How many units to lease: a tenth of what the isolate last knew was left of the window
        (all of it when it knows nothing), at least 1."""
        lease = self._leases.get(key)
        known = limit
        if lease is not None and lease[0] == limit and lease[1] > now_ms:
            known = limit - lease[2] + lease[3]
        return max(math.ceil(known / rules.RATE_LEASE_DIVISOR), 1)

    def grant(self, key: str, limit: int, now_ms: int, answer: tuple[int, int] | None) -> Verdict:
        """The verdict of D1's answer to a lease of ``key``: ``(count, granted)`` after it, or
        None when the window was full. Units granted join what the isolate still holds (requests
        in flight at once each lease, and none of it may be lost: D1 counted it), and the request
        spends one, from a lease that came back meanwhile if D1 had none left."""
        reset = window_start(now_ms) + rules.RATE_WINDOW_MS
        lease = self._leases.get(key)
        count, left = limit, 0
        if lease is not None and lease[0] == limit and lease[1] > now_ms:
            count, left = lease[2], lease[3]
        if answer is not None and answer[1] > 0:
            count, left = answer[0], left + answer[1]
        if left <= 0:
            verdict = Verdict.of(limit, None, now_ms)
        else:
            self._make_room(now_ms)
            self._leases[key] = (limit, reset, count, left - 1)
            verdict = Verdict(limit, count - (left - 1), reset, allowed=True)
        self.note(key, verdict, now_ms)
        return verdict

    def lock_open(self, ip: str, now_ms: int) -> bool:
        """True when ``ip`` was found not locked out less than ``AUTH_LOCK_RECHECK_MS`` ago."""
        return self._open.get(ip, 0) > now_ms

    def note_open(self, ip: str, now_ms: int) -> None:
        self._make_room(now_ms)
        self._open[ip] = now_ms + rules.AUTH_LOCK_RECHECK_MS

    def note_failure(self, ip: str, digest: str, now_ms: int) -> bool:
        """A failed token check from ``ip`` with the token whose digest is ``digest``: its next
        valid token asks D1 again. True when it is to be counted (not counted in this window yet)."""
        self._open.pop(ip, None)
        key = f"{ip} {digest}"
        if self._failed.get(key, 0) > now_ms:
            return False
        self._make_room(now_ms)
        self._failed[key] = window_start(now_ms) + rules.RATE_WINDOW_MS
        return True

    def sweep_due(self, now_ms: int) -> bool:
        """True once per window: time for the D1 batch to drop windows that ended (rows
        otherwise stay, one per IP ever seen)."""
        start = window_start(now_ms)
        if start == self._swept_window:
            return False
        self._swept_window = start
        return True

    def _make_room(self, now_ms: int) -> None:
        """Bound the memory: past ``max_entries`` (callers from many IPs), expired entries go;
        if every entry is live, all go (forgetting costs D1 queries, never a wrong count)."""
        if self._size() < self._max_entries:
            return
        self._full = {k: v for k, v in self._full.items() if v[1] > now_ms}
        self._open = {k: v for k, v in self._open.items() if v > now_ms}
        self._failed = {k: v for k, v in self._failed.items() if v > now_ms}
        self._leases = {k: v for k, v in self._leases.items() if v[1] > now_ms}
        if self._size() >= self._max_entries:
            self._full.clear()
            self._open.clear()
            self._failed.clear()
            self._leases.clear()

    def _size(self) -> int:
        return len(self._full) + len(self._open) + len(self._failed) + len(self._leases)
