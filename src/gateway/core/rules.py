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
# The largest body Cloudflare lets reach a Worker on the Free and Pro plans ("100 MB",
# developers.cloudflare.com/workers/platform/limits/, read as decimal megabytes: the smaller
# reading, so no accepted value is one the edge answers 413 before the Worker sees it). The
# max_body_bytes setting is bounded by it.
PLATFORM_MAX_BODY_BYTES = 100 * 1000 * 1000
# The largest integer a setting may hold: JS numbers (D1 binds, JSON readers) are exact up to here.
MAX_SETTING_INTEGER = 2**53 - 1
# Audio and image uploads (SPEC §12.6): the size OpenAI's upload endpoints accept; their body limit
# is the larger of this and the setting.
UPLOAD_LIMIT_BYTES = 25 * 1024 * 1024

# --- Candidate chain and fallback loop (SPEC §3, §4) ---
MAX_CANDIDATES = 12
DEFAULT_ATTEMPT_TIMEOUT_MS = 15 * SECOND_MS
TOTAL_BUDGET_MS = 45 * SECOND_MS
DEFAULT_SAME_MODEL_RETRY_MAX_MS = 3 * SECOND_MS
DEFAULT_MAX_CONSECUTIVE_FAILS = 0  # 0 = breaker off
# Keys one step tries after key-scoped failures (SPEC §13), the first try included; the keys left
# cool down or take the next request. (With one same-model retry per step, MAX_CANDIDATES *
# (MAX_KEY_TRIES + 1) attempts plus D1 can pass the free plan's subrequests: the loop stops before
# the limit, below.)
MAX_KEY_TRIES = 3
# How long the ledger remembers an admin write's reset of a provider or key: it only has to
# outlast the attempts already under way, and none runs past the request's budget (each attempt's
# timeout is clamped to what is left of it); twice that is slack for timers that fire late.
FORGET_HOLD_MS = 2 * TOTAL_BUDGET_MS

# --- Subrequests (SPEC §18, core/subrequests.py) ---
# A Workers request may make this many subrequests on the free plan (fetches and D1 queries, its
# waitUntil work included), 10,000 on a paid plan (developers.cloudflare.com/workers/platform/
# limits/); the subrequest_limit setting's default and range (below 10, the reserve and a request's
# own D1 queries would leave no attempt).
DEFAULT_SUBREQUEST_LIMIT = 50
SUBREQUEST_LIMIT_MIN = 10
SUBREQUEST_LIMIT_MAX = 10_000
# Kept back at every check, for what comes after it unchecked: the usage flush (one D1 batch that
# waitUntil runs once the answer is done, gateway/meter.py), and an OpenRouter pin write the last
# attempt queued for waitUntil, not yet run (so not yet counted) when the next attempt is checked.
SUBREQUESTS_RESERVED = 2

# --- Streams (SPEC §2.6) ---
DEFAULT_STREAM_STALL_MS = 60 * SECOND_MS
# The stall setting is clamped to this range: the watchdog wakes four times per period, so a tiny
# period would burn CPU, and setTimeout cannot wait longer than about 24 days.
STREAM_STALL_MIN_MS = 250
STREAM_STALL_MAX_MS = 10 * MINUTE_MS

# --- Stream pacing (SPEC §18, core/pacing.py) ---
# paced: no event waits longer than PACED_EARLY_HOLD_MS during the answer's first PACED_EARLY_MS,
# then PACED_HOLD_MS; smooth: SMOOTH_HOLD_MS throughout. A wake of the isolate is what a relay
# pays for, so a 20 s answer costs ~30 wakes paced, ~200 smooth.
PACED_EARLY_MS = 2 * SECOND_MS
PACED_EARLY_HOLD_MS = 200
PACED_HOLD_MS = SECOND_MS
SMOOTH_HOLD_MS = 100

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
# A provider whose answer says the request looped back to a gateway it already passed (508): its
# base_url leads back here. Permanent until the provider is edited (an edit clears its cooldowns).
LOOP_COOLDOWN_MS = DAY_MS
# The ceiling setting is clamped to this range; it caps heuristic, credit, tier and loop cooldowns.
COOLDOWN_CEILING_MIN_MS = MINUTE_MS
COOLDOWN_CEILING_MAX_MS = DAY_MS
DEFAULT_COOLDOWN_CEILING_MS = DAY_MS
CEILING_CAPPED_SOURCES = frozenset({"heuristic", "credit", "tier", "loop"})

# What a failed attempt means when no wording in the body says more (SPEC §5.1, §13):
# status (or transport defect) -> (trail class, cooldown scope, cooldown source, cooldown ms).
# Scope (SPEC §13): "key" cools the key the attempt used (a bad, spent or unentitled key: another
# key of the provider may work), "provider" the whole provider (the platform is down or loops),
# "model" the (provider, model) pair (404 strikes), "none" nothing.
# 429 is not here: its cooldown depends on what the answer says (Retry-After, quota wording); every
# 429 is scope RATE_LIMIT_SCOPE.
# 410 Gone is read as "model retired", like 404. 508 Loop Detected (RFC 5842 §7.2) is what a gateway
# answers a request that already passed through it (the loop guard, ``core/hop.py``): the provider
# leads back into a loop, whatever its body says. Any other 5xx, and any status outside 4xx, is
# SERVER_ERROR_RULE; any other 4xx is the caller's fault.
STATUS_RULES: dict[int, tuple[str, str, str | None, int]] = {
    401: ("auth", "key", "heuristic", AUTH_COOLDOWN_MS),
    402: ("out_of_credits", "key", "credit", CREDIT_COOLDOWN_MS),
    403: ("forbidden", "key", "tier", TIER_COOLDOWN_MS),
    404: ("model_not_found", "model", "model", MODEL_COOLDOWN_MS),
    408: ("timeout", "provider", "heuristic", TRANSIENT_COOLDOWN_MS),
    410: ("model_not_found", "model", "model", MODEL_COOLDOWN_MS),
    508: ("loop_detected", "provider", "loop", LOOP_COOLDOWN_MS),
}
RATE_LIMIT_SCOPE = "key"
SERVER_ERROR_RULE: tuple[str, str, str | None, int] = ("upstream_error", "provider", "heuristic", TRANSIENT_COOLDOWN_MS)
DEFECT_RULES: dict[str, tuple[str, str, str | None, int]] = {
    "network": ("network", "provider", "heuristic", TRANSIENT_COOLDOWN_MS),
    "timeout": ("timeout", "provider", "heuristic", TRANSIENT_COOLDOWN_MS),
    "not_sse": ("invalid_stream", "provider", "heuristic", TRANSIENT_COOLDOWN_MS),
    "empty_stream": ("invalid_stream", "provider", "heuristic", TRANSIENT_COOLDOWN_MS),
    "error_event": ("invalid_stream", "provider", "heuristic", TRANSIENT_COOLDOWN_MS),
    # No upstream call was made: nothing to cool down (SPEC §7).
    "key_unreadable": ("key_unreadable", "none", None, 0),
}
# How much of an upstream error body classification and redaction read (CPU bound, SPEC §1):
# well above the answer's cut, so a secret straddling the cut is still seen whole.
ERROR_TEXT_SCAN_CHARS = 4096
# Redaction: a run of key characters is a secret when one of its -/_ segments is at least this
# long and mixes letters and digits (a model id's segments are shorter).
SECRET_SEGMENT_MIN_CHARS = 16
# How deep a JSON error body is searched for a stated retry delay (Gemini nests it 3 levels down).
RETRY_DELAY_MAX_DEPTH = 6

# --- Loop guard (``hop``) ---
# A request that already passed through more gateways than this is refused (508 loop_detected),
# even when none of them is this one: it bounds a chain of gateways whose marks cannot be compared.
MAX_HOPS = 4

# --- Rate limits (SPEC §14, ``core/limits.py``) ---
# Every limit counts requests in fixed windows of this length (UTC minutes).
RATE_WINDOW_MS = MINUTE_MS
DEFAULT_AUTH_FAIL_LIMIT = 10
# An isolate reports a key's units to D1 once this fraction of its limit is unreported
# (``core/limits.py``): a caller below half its limit in an isolate costs no D1 query, one above
# it one a window; a key served by several isolates may pass its limit by what they hold unreported.
RATE_REPORT_DIVISOR = 2
# After D1 failed to take a report, the isolate counts alone this long before it asks again.
RATE_REPORT_RETRY_MS = MINUTE_MS
# What an isolate remembers of windows (keys counted, wrong tokens) before it drops expired ones.
RATE_MEMORY_MAX_ENTRIES = 10_000

# --- Half-open probes (SPEC §5.3, §5.4) ---
PROBE_TIMEOUT_MS = 5 * SECOND_MS
# A probe still marked in flight this long after it began was abandoned (its request went away).
PROBE_STALE_MS = 2 * PROBE_TIMEOUT_MS
PROBE_READY_FRACTION = 0.5
# After the n-th failed probe in a row the next waits PROBE_DEFER_BASE_MS * 2**(n-1), capped.
PROBE_DEFER_BASE_MS = 30 * SECOND_MS
PROBE_DEFER_MAX_MS = 15 * MINUTE_MS
PROBED_SOURCES = frozenset({"heuristic"})
# "Clear and verify" sends at most this many probes, in priority order (the rest are reported as
# not probed): each probe is a subrequest, the free plan allows 50 per request, and a fetch past
# the limit fails like a network fault, which would cool a healthy provider. The margin is slack
# for whatever else the request calls.
MAX_VERIFY_PROBES = 40

# --- Speed and success memory (SPEC §6) ---
EMA_ALPHA = 0.3
# A model whose success average is at least this counts as reliable and is ordered by speed ahead
# of models with no data; below it, it goes after them.
EMA_RELIABLE_MIN = 0.5

# --- Answers (SPEC §4) ---
TRAIL_MAX_ENTRIES = 10
TRAIL_MAX_CHARS = 1024
UPSTREAM_MESSAGE_MAX_CHARS = 200
# Reset times in messages: seconds below the first bound, minutes below the second, else hours.
ETA_SECONDS_BELOW_MS = 90 * SECOND_MS
ETA_MINUTES_BELOW_MS = 90 * MINUTE_MS

# --- OpenRouter pinning (SPEC §15, core/endpoint_scores.py, core/pinning.py) ---
# Share of an implicit-caching endpoint's input assumed read from its cache (seed 003): a pinned
# long conversation re-reads its prefix, so nearly all input is billed at input_cache_read.
OPENROUTER_HIT_RATE = 0.98
# An implicit-caching endpoint's score is multiplied by this, so "cheap but uncached" cannot drown
# the cache's advantage while price still ranks the caching endpoints (seed 003).
OPENROUTER_CACHE_BONUS = 2
# Added to the weighted price (USD per token): a free endpoint's score stays finite, and free
# endpoints are then ranked by throughput (seed 003).
OPENROUTER_PRICE_EPSILON = 1e-6
# An endpoint whose uptime_last_30m (percent) is below this is not counted; absent: counted.
OPENROUTER_MIN_UPTIME = 90
# The weighted price's shares (seed 003): the output price weighs more than the input price.
OPENROUTER_INPUT_WEIGHT = 0.4
OPENROUTER_OUTPUT_WEIGHT = 0.6
# A lock idle this long is replaced by the current candidate; traffic renews it, so a long
# session never changes upstream midway (the openrouter_lock_idle_ms setting's default).
DEFAULT_OPENROUTER_LOCK_IDLE_MS = 30 * MINUTE_MS
# A model seen for the first time is scored before its request is forwarded, within this; past
# it the request goes unpinned.
OPENROUTER_SCORE_TIMEOUT_MS = 3 * SECOND_MS
# Candidates younger than this are reused instead of fetched again.
OPENROUTER_CANDIDATES_FRESH_MS = 10 * MINUTE_MS
# A 429 of the pinned endpoint is retried in place after these waits before the normal rules:
# switching upstream loses the cache, and a 429 usually passes within seconds.
OPENROUTER_429_RETRY_MS = (1 * SECOND_MS, 2 * SECOND_MS)
# Consecutive faults (timeout, stall, 5xx, bad stream) of the locked endpoint that cool it for
# the model and move the lock at once.
OPENROUTER_FAULTS_TO_MOVE = 3
OPENROUTER_ENDPOINT_COOLDOWN_MS = 30 * MINUTE_MS
# A renewal is written to D1 only once the lock's end moved half the idle time past the written
# one, and at most this far: one renewal write per model per isolate in that time (SPEC §18's D1
# budget: 96 a day per isolate with the default 30 min idle, not the 288 of every 5 min).
OPENROUTER_RENEW_WRITE_MS = 15 * MINUTE_MS
# Models one cron run re-scores (the stalest first): each is a subrequest, and a Worker invocation
# may make 50 on the free plan; the rest wait for the next run.
OPENROUTER_CRON_MAX_MODELS = 40
# Endpoint fetches the cron keeps open at once: a Worker invocation holds at most 6 connections,
# and a fetch queued behind them would spend its 3 s timeout waiting.
OPENROUTER_CRON_CONCURRENCY = 5
# The bill seed 003 compares a pinned endpoint with the model's official one on: this much input
# (OPENROUTER_HIT_RATE of it read from the cache) and output.
OPENROUTER_ESTIMATE_INPUT_TOKENS = 10_000_000
OPENROUTER_ESTIMATE_OUTPUT_TOKENS = 1_000_000

# --- Usage and health (SPEC §17, core/usage.py) ---
# A token is about this many characters (or UTF-8 bytes) of text: every estimate of a count the
# upstream did not state (count_tokens, message_start, the usage of an answer without one).
CHARS_PER_TOKEN = 4
# An isolate writes its usage at most this often, by default (the setting usage_flush_minutes, within
# USAGE_FLUSH_MINUTES_RANGE): no D1 write per request. SPEC §18's budget chose it: each write is one
# row per hour written (core/usage.py), so 10 isolates busy all day write 10 x 144 rows at 10 minutes.
DEFAULT_USAGE_FLUSH_MINUTES = 10
USAGE_FLUSH_MINUTES_RANGE = (1, 60)
# Usage older than this is deleted by the cron.
USAGE_KEEP_MS = 30 * DAY_MS
# Failures an isolate keeps per hour (its newest; those before are still counted by class), and
# the most GET /api/admin/events lists, the newest of the parts of the last USAGE_EVENTS_READ_MS.
USAGE_EVENTS_PER_HOUR = 50
USAGE_EVENTS_KEPT = 200
USAGE_EVENTS_READ_MS = 7 * DAY_MS
# Hours an isolate keeps unwritten while D1 fails: past it the oldest goes (memory stays bounded).
USAGE_HOURS_KEPT = 24
# Buckets an isolate keeps in one hour; past it a new bucket's model is counted as USAGE_OTHER_MODEL
# (a caller may ask for any model name, and an hour is one D1 row: D1 rows hold at most 2 MB).
USAGE_BUCKETS_PER_HOUR = 2_000
USAGE_OTHER_MODEL = "(other)"

# --- Rescue of a cut stream (SPEC §16, core/rescue.py, core/seam.py) ---
# The most continuation text the seam holds back before it decides (after the continuation's
# leading whitespace, itself held up to as much): the first rescued byte waits for at most this.
# A verbatim repeat of the partial still under way past it is followed without holding text.
SEAM_HOLDBACK_CHARS = 64
# A continuation that begins with the partial's last characters has them trimmed only from this
# many on: a shorter match is taken for chance ("10" then "0 items"), the whole partial excepted.
SEAM_MIN_OVERLAP_CHARS = 4
# A continuation whose opening matches the partial's opening this far (case and whitespace
# aside), yet is not an exact repeat of it, restarts the answer: refused.
SEAM_RESTART_MIN_CHARS = 8
# A continuation whose opening is found this far anywhere in the partial (case and whitespace
# aside), yet does not run exactly to the partial's end, repeats it: refused. Shorter shared
# openings are common phrases, joined as they are.
SEAM_REPEAT_MIN_CHARS = 20
# The re-ask quotes the partial's last words: this many at most, cut to this many characters.
RESCUE_QUOTE_WORDS = 6
RESCUE_QUOTE_MAX_CHARS = 60
# While a rescue request is in flight, the caller's stream gets a keep-alive (an SSE comment, or
# Anthropic's ping) at once and then this often, so no client or proxy takes the wait for a dead
# connection.
RESCUE_KEEPALIVE_MS = 5_000
# The rescues an isolate remembers for the admin status (newest first).
RESCUES_KEPT = 20

# --- A router that knows its models (SPEC §19) ---
# A request's answer is estimated at its max_tokens, at most this many (the original server's
# #470: a large max_tokens is a ceiling, not what the answer uses), and this many when it sets none.
OUTPUT_ESTIMATE_DEFAULT = 1_000
OUTPUT_ESTIMATE_MAX = 2_000
# Learned context windows an isolate keeps (per provider and model); past it the oldest goes.
LEARNED_WINDOWS_KEPT = 1_000
# Free-tier counts an isolate keeps (per key and model); past it, counts of a past day go first.
FREE_TIER_COUNTS_KEPT = 4_000
# A conversation sticks to what served its last turn for this long after it (SPEC §19).
STICKY_TTL_MS = 30 * MINUTE_MS
# Conversations an isolate remembers; past it the one idle longest goes.
STICKY_KEPT = 1_000
# The balanced strategy's weights: sampled reliability, and speed.
BALANCED_RELIABILITY_WEIGHT = 2 / 3
# Speed as a score from 1 (first byte within the first bound) down to 0 (at the second or
# later), linear between; a pair never measured scores SPEED_SCORE_UNKNOWN (the original's).
SPEED_SCORE_FAST_MS = 300
SPEED_SCORE_SLOW_MS = 5_000
SPEED_SCORE_UNKNOWN = 0.6
