"""Every policy number of the gateway, in one place (SPEC §2–§6).

Times are integer milliseconds. A number changes here, in one line; nothing else restates it.
"""

from __future__ import annotations

SECOND_MS = 1_000
MINUTE_MS = 60 * SECOND_MS
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS

# --- Configuration snapshot (SPEC §2.3) ---
CONFIG_TTL_MS = 60 * SECOND_MS

# --- Request edge (SPEC §2.2) ---
DEFAULT_MAX_BODY_BYTES = 1024 * 1024

# --- Candidate chain and fallback loop (SPEC §3, §4) ---
MAX_CANDIDATES = 12
DEFAULT_ATTEMPT_TIMEOUT_MS = 15 * SECOND_MS
TOTAL_BUDGET_MS = 45 * SECOND_MS
DEFAULT_SAME_MODEL_RETRY_MAX_MS = 3 * SECOND_MS
DEFAULT_MAX_CONSECUTIVE_FAILS = 0  # 0 = breaker off

# --- Streams (SPEC §2.6) ---
DEFAULT_STREAM_STALL_MS = 60 * SECOND_MS

# --- Cooldowns (SPEC §5.1, §5.2) ---
AUTH_COOLDOWN_MS = 5 * MINUTE_MS
CREDIT_COOLDOWN_MS = DAY_MS
TIER_COOLDOWN_MS = DAY_MS
TRANSIENT_COOLDOWN_MS = 90 * SECOND_MS
# A Retry-After above this is authoritative; at or below it, a short-retry hint (ladder).
SHORT_RETRY_MAX_MS = 90 * SECOND_MS
AUTHORITATIVE_COOLDOWN_MAX_MS = DAY_MS
# The 429 ladder: the n-th 429 within the window gets LADDER_MS[min(n, len) - 1].
LADDER_MS = (90 * SECOND_MS, 2 * MINUTE_MS, 10 * MINUTE_MS)
LADDER_WINDOW_MS = HOUR_MS
# Daily quota: until the next 00:00 UTC, never less than this.
QUOTA_MIN_COOLDOWN_MS = MINUTE_MS
# 404 model retired: MODEL_STRIKES within MODEL_STRIKE_WINDOW_MS bench the model.
MODEL_STRIKES = 3
MODEL_STRIKE_WINDOW_MS = 15 * MINUTE_MS
MODEL_COOLDOWN_MS = 10 * MINUTE_MS
# The ceiling setting is clamped to this range; it caps heuristic, credit and tier cooldowns.
COOLDOWN_CEILING_MIN_MS = MINUTE_MS
COOLDOWN_CEILING_MAX_MS = DAY_MS
DEFAULT_COOLDOWN_CEILING_MS = DAY_MS

# --- Half-open probes (SPEC §5.3, §5.4) ---
PROBE_TIMEOUT_MS = 5 * SECOND_MS
PROBE_READY_FRACTION = 0.5
PROBE_DEFER_BASE_MS = 30 * SECOND_MS
PROBE_DEFER_MAX_MS = 15 * MINUTE_MS

# --- Speed and success memory (SPEC §6) ---
EMA_ALPHA = 0.3

# --- Answers (SPEC §4) ---
TRAIL_MAX_ENTRIES = 10
TRAIL_MAX_CHARS = 1024
UPSTREAM_MESSAGE_MAX_CHARS = 200
