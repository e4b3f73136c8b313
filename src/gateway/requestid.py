"""Request ids (issue 19): each routed answer's ``X-Request-Id``, which the Worker's log lines about
that request name too (``wrangler tail``; the local runtime's request line, scripts/runtime/logline.mjs),
so a line can be matched to the answer a client got.

An id is ``<isolate>-<n>``: a few hex characters drawn on the isolate's first id, then how many
ids the isolate has made. The characters are drawn then, never at import: the deploy snapshot forbids
entropy (PLATFORM-NOTES §3.3), and every isolate restored from one snapshot must draw its own. An
id tells requests apart in a log; it is no secret and proves nothing. After the first, an id costs
a counter step and a string join: no entropy and no JS per request.
"""

from __future__ import annotations

import itertools
import secrets

__all__ = ["next_request_id"]

# The isolate's part, in bytes (twice as many hex characters): enough to tell the isolates of one
# log apart, short enough to read.
_ISOLATE_BYTES = 3

_isolate: str | None = None
_count = itertools.count(1)


def next_request_id() -> str:
    """A new id, ``<isolate>-<n>`` (e.g. ``3fa9c1-17``), unique within this isolate."""
    global _isolate
    if _isolate is None:
        _isolate = secrets.token_hex(_ISOLATE_BYTES)
    return f"{_isolate}-{next(_count)}"
