"""``GET /``: the config page (SPEC §8.1; the page itself is ``gateway.routes.page_html``).

The page is answered with a Content-Security-Policy that admits its one inline script and its one
inline style by hash and lets it talk only to the Worker: even a value that slipped into the DOM
as markup could neither run a script nor load anything (defence in depth; the page renders every
value as text). It may not be framed, and it is not cached, so a deploy takes effect at once.
"""

from __future__ import annotations

import base64
import hashlib
import re

from gateway.responses import PRIVATE_HEADERS
from gateway.routes import Call
from gateway.routes.page_html import PAGE
from gateway.shell.http import JsResponse, respond

__all__ = ["HEADERS", "config_page"]


def _inline_hash(tag: str) -> str:
    """The CSP source of the page's one inline ``<tag>`` element: ``'sha256-…'`` of its text."""
    [body] = re.findall(rf"<{tag}>(.*?)</{tag}>", PAGE, flags=re.DOTALL)
    digest = hashlib.sha256(body.encode()).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


_POLICY = "; ".join(
    (
        "default-src 'none'",
        f"script-src {_inline_hash('script')}",
        f"style-src {_inline_hash('style')}",
        "connect-src 'self'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)

HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": _POLICY,
    # CSP's frame-ancestors, and the older header for browsers that do not read it.
    "x-frame-options": "DENY",
    **PRIVATE_HEADERS,
}


async def config_page(call: Call) -> JsResponse:
    return respond(PAGE, 200, HEADERS)
