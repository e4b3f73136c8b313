"""Header names the gateway reads and writes (SPEC §2, §4)."""

ROUTED_VIA = "X-Routed-Via"
FALLBACK_FROM = "X-Fallback-From"
FALLBACK_ATTEMPTS = "X-Fallback-Attempts"
FALLBACK_TRAIL = "X-Fallback-Trail"
# Each routed answer's id, named by the Worker's log lines about it (gateway/requestid.py).
REQUEST_ID = "X-Request-Id"
RETRY_AFTER = "Retry-After"
# The loop guard's mark on every upstream request: the deployments it passed through (core/hop.py).
HOP = "X-Fllmapi-Hop"

# Names a conversation, so its turns go where its last turn was served (SPEC §19, ``core/sticky.py``).
SESSION_ID = "x-session-id"

# The caller's address, set by Cloudflare's edge (a caller cannot set it): the rate limits' IP.
CONNECTING_IP = "CF-Connecting-IP"
# A rate-limited client's window (SPEC §14, ``core/limits.py``).
RATE_LIMIT = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")

# Where clients put the API token, in the order they are read: OpenAI, Anthropic, Gemini clients.
TOKEN_HEADERS = ("authorization", "x-api-key", "x-goog-api-key")

# Headers a browser client may read from a cross-origin answer.
EXPOSED = (ROUTED_VIA, FALLBACK_FROM, FALLBACK_ATTEMPTS, FALLBACK_TRAIL, REQUEST_ID, RETRY_AFTER, *RATE_LIMIT)
