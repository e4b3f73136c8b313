"""The route table's edges: unknown paths, wrong methods, ``HEAD`` (SPEC §8)."""

from __future__ import annotations

import httpx
import pytest


def test_unknown_path_is_a_json_404(gateway):
    response = httpx.get(f"{gateway.url}/v2/nothing")

    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


def test_wrong_method_is_405(gateway):
    response = httpx.get(f"{gateway.url}/v1/chat/completions")

    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert response.headers["allow"] == "OPTIONS, POST"


@pytest.mark.parametrize("method", ["PATCH", "PROPFIND", "TRACE"])
@pytest.mark.parametrize(
    ("path", "allow"),
    [
        ("/v1/chat/completions", "OPTIONS, POST"),
        ("/v1/models", "GET, HEAD, OPTIONS"),
        ("/api/admin/providers/1", "DELETE, OPTIONS, PUT"),
    ],
)
def test_any_other_method_on_a_known_path_is_405_with_allow(gateway, method, path, allow):
    response = httpx.request(method, f"{gateway.url}{path}")

    assert response.status_code == 405, response.text
    assert response.headers["allow"] == allow
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "method_not_allowed")


def test_a_method_the_runtime_does_not_know_never_reaches_the_worker_and_is_not_500(gateway):
    # workerd answers 501 "Unrecognized request method" itself.
    response = httpx.request("FOO", f"{gateway.url}/v1/chat/completions")

    assert response.status_code == 501


def test_a_lower_case_method_is_read_as_its_upper_case_name(gateway):
    # The fetch standard normalises get/post/put/delete/head/options before the Worker sees them.
    response = httpx.request("get", f"{gateway.url}/v1/chat/completions")

    assert response.status_code == 405


def test_head_is_the_get_answer_without_its_body(gateway):
    headers = {"authorization": f"Bearer {gateway.api_token}"}
    got = httpx.get(f"{gateway.url}/v1/models", headers=headers)

    response = httpx.head(f"{gateway.url}/v1/models", headers=headers)

    assert got.status_code == response.status_code == 200
    assert response.content == b""
    assert response.headers["content-type"] == got.headers["content-type"]
    assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    ("path", "status"),
    [("/v1/models", 401), ("/api/admin/settings", 401), ("/v1/chat/completions", 405), ("/v2/nothing", 404)],
)
def test_a_refused_head_has_the_get_status_and_no_body(gateway, path, status):
    response = httpx.head(f"{gateway.url}{path}")

    assert response.status_code == status
    assert response.content == b""


def test_head_on_an_admin_route_keeps_the_admin_headers(gateway):
    headers = {"authorization": f"Bearer {gateway.admin_token}"}

    response = httpx.head(f"{gateway.url}/api/admin/settings", headers=headers)

    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["cache-control"] == "no-store"
