"""The route table's edges: unknown paths, wrong methods, the page (SPEC §8)."""

from __future__ import annotations

import httpx


def test_unknown_path_is_a_json_404(gateway):
    response = httpx.get(f"{gateway.url}/v2/nothing")

    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


def test_wrong_method_is_405(gateway):
    response = httpx.get(f"{gateway.url}/v1/chat/completions")

    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_root_serves_the_page(gateway):
    response = httpx.get(f"{gateway.url}/")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
