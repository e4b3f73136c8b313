"""The loop guard (issue 8): ``X-Fllmapi-Hop`` on every upstream request, 508 ``loop_detected``
for a request that comes back, a looping provider cooled after one attempt, and the admin API
refusing a base_url that leads back to the gateway in any spelling of its address
(``core/hop.py``, ``core/hosts.py``).

The tests' gateway runs on 127.0.0.1, which makes it a gateway on the developer's machine: there
only its own port is refused (the fake upstream is another loopback server). A deployed gateway is
seen by calling the admin API under another host name (the Host header the URL is built from):
then every loopback spelling is refused, and its own host on any port."""

from __future__ import annotations

import re

import httpx
import pytest

from support.upstream import Json, PerKey

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


def self_provider(gateway, admin, upstream, **fields):
    """A provider that leads back to the gateway where no spelling check can see it (as a DNS name
    or another proxy would): the fake upstream relays its requests to the gateway as they came,
    hop header included. Keyed with the API token, which is how the relay knows them."""

    def relay(request):
        headers = {k: v for k, v in request.headers.items() if k in ("authorization", "content-type", HOP)}
        answer = httpx.post(f"{gateway.url}/v1/chat/completions", content=request.body, headers=headers, timeout=30)
        return Json(answer.text, answer.status_code)

    upstream.answer_always(PerKey({gateway.api_token: relay}))
    body = {"name": "self", "base_url": upstream.base_url, "api_key": gateway.api_token, "models": ["fake-model"]}
    response = admin.post("/providers", json={**body, **fields})
    assert response.status_code == 201, response.text
    return response.json()["provider"]


def test_a_provider_leading_back_to_the_gateway_is_one_attempt_then_cooled(gateway, admin, api, upstream):
    self_provider(gateway, admin, upstream)

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
    self_provider(gateway, admin, upstream, priority=1)
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


# The gateway's own port under every spelling of a loopback address.
OWN_PORT_SPELLINGS = [
    "http://localhost:{port}/v1",
    "http://LOCALHOST.:{port}/v1",
    "http://gw.localhost:{port}/v1",
    "http://127.1:{port}/v1",
    "http://127.0.1:{port}/v1",
    "http://127.0.0.2:{port}/v1",
    "http://2130706433:{port}/v1",
    "http://0x7f000001:{port}/v1",
    "http://0177.0.0.1:{port}/v1",
    "http://127%2E0%2E0%2E1:{port}/v1",
    "http://[::1]:{port}/v1",
    "http://[::ffff:127.0.0.1]:{port}/v1",
    "http://0.0.0.0:{port}/v1",
    "http://[::]:{port}/v1",
    "https://127.0.0.1:{port}/v1",
    "http:///127.0.0.1:{port}/v1",
    "http://127.0.0.1:{port}\\.example.com/v1",
]


def _port(gateway) -> int:
    return int(gateway.url.rsplit(":", 1)[1])


def _refused(response, says: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["param"], error["type"], error["code"]) == ("base_url", "invalid_request_error", "invalid_request")
    assert says in error["message"]


@pytest.mark.parametrize("spelling", OWN_PORT_SPELLINGS)
def test_every_spelling_of_the_gateways_own_address_is_refused(gateway, admin, add_provider, spelling):
    base_url = spelling.format(port=_port(gateway))
    provider = add_provider()

    created = admin.post("/providers", json={"name": "self", "base_url": base_url, "api_key": "k", "models": ["m"]})
    updated = admin.put(f"/providers/{provider['id']}", json={"base_url": base_url})

    _refused(created, "own address")
    _refused(updated, "own address")


def test_another_local_server_is_a_real_upstream_on_the_developers_machine(admin, add_provider, upstream):
    provider = add_provider()  # the fake upstream: 127.0.0.1, another port

    assert provider["base_url"] == upstream.base_url


DEPLOYED_HOST = "gw.example.com"
# What a deployed gateway refuses: every loopback spelling on any port, and its own host.
DEPLOYED_REFUSALS = [
    ("http://127.0.0.1:11434/v1", "loopback"),
    ("http://127.1/v1", "loopback"),
    ("http://2130706433/v1", "loopback"),
    ("http://0x7f000001/v1", "loopback"),
    ("http://0177.0.0.1/v1", "loopback"),
    ("http://[::1]/v1", "loopback"),
    ("http://[::ffff:127.0.0.1]/v1", "loopback"),
    ("http://0.0.0.0/v1", "loopback"),
    ("http://[::]/v1", "loopback"),
    ("http://localhost:8787/v1", "loopback"),
    ("http://api.localhost/v1", "loopback"),
    ("https://gw.example.com/v1", "own address"),
    ("http://GW.Example.COM.:8080/v1", "own address"),
    ("https://gw%2Eexample%2Ecom/v1", "own address"),
    ("http://127.0.0.256/v1", "not a URL"),
]


@pytest.mark.parametrize(("base_url", "says"), DEPLOYED_REFUSALS)
def test_a_deployed_gateway_refuses_every_loopback_spelling_and_its_own_host(admin, add_provider, base_url, says):
    provider = add_provider()
    headers = {"host": DEPLOYED_HOST}
    body = {"name": "self", "base_url": base_url, "api_key": "k", "models": ["m"]}

    created = admin.post("/providers", json=body, headers=headers)
    updated = admin.put(f"/providers/{provider['id']}", json={"base_url": base_url}, headers=headers)

    _refused(created, says)
    _refused(updated, says)


def test_a_deployed_gateway_takes_a_real_upstream(admin):
    body = {"name": "groq", "base_url": "https://api.groq.com/openai/v1", "api_key": "k", "models": ["m"]}

    response = admin.post("/providers", json=body, headers={"host": DEPLOYED_HOST})

    assert response.status_code == 201, response.text
