"""``GET /``: the config page. A placeholder until the config-page issue builds the real one."""

from __future__ import annotations

from gateway.routes import Call
from gateway.shell.http import JsResponse, respond

__all__ = ["config_page"]

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>fllmapi-worker</title></head>
<body><h1>fllmapi-worker</h1>
<p>The gateway is running. Point an OpenAI client at <code>/v1</code>; manage it with the admin API
under <code>/api/admin</code>. The config page comes next.</p></body></html>
"""


async def config_page(call: Call) -> JsResponse:
    return respond(_PAGE, 200, {"content-type": "text/html; charset=utf-8"})
