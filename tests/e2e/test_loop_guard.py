"""The loop guard (issue 8): ``X-Fllmapi-Hop`` on every upstream request, 508 ``loop_detected``
for a request that comes back, a looping provider cooled after one attempt, and the admin API
refusing the gateway's own origin as a base_url."""

from __future__ import annotations

import re

import httpx
import pytest

HOP = "x-fllmapi-hop"
OTHER = "fedcba9876543210"
BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "x"}]}


def own_mark(api: httpx.Client, upstream) -> str:
    """This deployment's id, as its first forwarded request carries it."""
    api.post("/chat/completions", json=BODY).raise_for_status()
    mark = upstream.requests[-1].headers[HOP]
    assert re.fullmatch(r"[0-9a-f]{16}", mark), mark
    return mark


def test_every_upstream_request_carries_this_deployments_mark(api, add_provider, upstream):
    add_provider()
    mark = own_mark(api, upstream)

    api.post("/chat/completions", json=BODY).raise_for_status()

    assert upstream.requests[-1].headers[HOP] == mark  # the same id every time


def test_a_mark_of_another_deployment_is_forwarded_with_this_one_added(api, add_provider, upstream):
    add_provider()
    mark = own_mark(api, upstream)

    api.post("/chat/completions", json=BODY, headers={HOP: OTHER}).raise_for_status()

    assert upstream.requests[-1].headers[HOP] == f"{OTHER}, {mark}"


@pytest.mark.parametrize("marks", ["{own}", f"{OTHER}, {{own}}", "a, b, c, d, e"], ids=["own", "own-later", "5-hops"])
def test_a_request_that_passed_here_or_too_many_gateways_is_508(api, add_provider, upstream, marks):
    add_provider()
    hops = marks.format(own=own_mark(api, upstream))
    sent = len(upstream.requests)

    response = api.post("/chat/completions", json=BODY, headers={HOP: hops})

    assert response.status_code == 508
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "loop_detected")
    assert "X-Fllmapi-Hop" in error["message"]
    assert len(upstream.requests) == sent  # refused before any upstream call


def test_four_hops_are_still_served(api, add_provider, upstream):
    add_provider()

    response = api.post("/chat/completions", json=BODY, headers={HOP: "a, b, c, d"})

    assert response.status_code == 200
    assert upstream.requests[-1].headers[HOP].startswith("a, b, c, d, ")


def self_provider(gateway, admin, **fields):
    """A provider whose base_url is this gateway under another name (localhost for 127.0.0.1, so
    the admin API's own-origin check does not see it), keyed with the API token."""
    body = {
        "name": "self",
        "base_url": gateway.url.replace("127.0.0.1", "localhost") + "/v1",
        "api_key": gateway.api_token,
        "models": ["fake-model"],
        **fields,
    }
    response = admin.post("/providers", json=body)
    assert response.status_code == 201, response.text
    return response.json()["provider"]


def test_a_provider_leading_back_to_the_gateway_is_one_attempt_then_cooled(gateway, admin, api):
    self_provider(gateway, admin)

    response = api.post("/chat/completions", json=BODY)

    assert response.status_code == 508
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("provider_error", "loop_detected")
    assert response.headers["x-fallback-attempts"] == "1"
    assert response.headers["x-fallback-trail"] == "self/fake-model: loop_detected"
    (cooldown,) = admin.get("/status").json()["cooldowns"]
    assert (cooldown["name"], cooldown["source"], cooldown["lastStatus"]) == ("self", "loop", 508)
    assert cooldown["remainingMs"] > 23 * 3600 * 1000
    assert gateway.api_token not in response.text

    again = api.post("/chat/completions", json=BODY)

    assert again.status_code == 429  # cooling down: not called again
    assert "x-fallback-attempts" not in again.headers


def test_a_looping_provider_is_skipped_for_the_next_one(gateway, admin, api, add_provider, upstream):
    self_provider(gateway, admin, priority=1)
    add_provider(name="real", priority=2)

    response = api.post("/chat/completions", json=BODY)

    assert response.status_code == 200
    assert response.headers["x-routed-via"] == "real/fake-model"
    assert response.headers["x-fallback-trail"] == "self/fake-model: loop_detected"


@pytest.mark.parametrize("path", ["/v1", "", "/"])
def test_admin_api_refuses_the_gateways_own_origin_as_base_url(gateway, admin, path):
    body = {"name": "self", "base_url": gateway.url + path, "api_key": "k", "models": ["m"]}

    response = admin.post("/providers", json=body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["param"], error["code"]) == ("base_url", "invalid_request")
    assert "own address" in error["message"]


def test_admin_api_refuses_an_edit_to_the_gateways_own_origin(gateway, admin, add_provider):
    provider = add_provider()

    response = admin.put(f"/providers/{provider['id']}", json={"base_url": gateway.url + "/v1"})

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "base_url"
