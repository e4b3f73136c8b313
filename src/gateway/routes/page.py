"""``GET /``: the config page. A placeholder until the config-page issue builds the real one."""

from __future__ import annotations

from typing import Any

from gateway.shell.http import IncomingRequest, JsResponse, respond

__all__ = ["config_page"]

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>fllmapi-worker</title></head>
<body><h1>fllmapi-worker</h1>
<p>The gateway is running. Point an OpenAI client at <code>/v1</code>; manage it with the admin API
under <code>/api/admin</code>. The config page comes next.</p></body></html>
"""


async def config_page(request: IncomingRequest, env: Any, params: dict[str, str]) -> JsResponse:
    return respond(_PAGE, 200, {"content-type": "text/html; charset=utf-8"})
