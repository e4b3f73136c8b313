"""A request's subrequests, end to end (SPEC §18, issue 30): with 12 candidates of 3 keys each all
failing, the fallback loop stops before the Workers plan's limit (setting ``subrequest_limit``)
with an honest 503, and no provider cools down for an attempt that was not made; a raised limit
lets the loop go on to its usual answer.

Every 429 here asks for no wait (``Retry-After: 0``) and the request names its model, so each
candidate costs its 3 keys plus one same-model retry: 48 fetches for the whole chain, which with the
configuration's D1 read passes 50.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from gateway.core.rules import SUBREQUESTS_RESERVED
from support.upstream import FakeUpstream, Json

CANDIDATES, KEYS = 12, 3
UNCAPPED = CANDIDATES * (KEYS + 1)  # what the loop makes when nothing stops it


def ask(api: httpx.Client) -> httpx.Response:
    return api.post("/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "x"}]})


def key_of(provider: int, key: int) -> str:
    return f"sk-subrequests-p{provider:02d}-k{key}-0000"


@pytest.fixture
def twelve(admin: httpx.Client, upstream: FakeUpstream) -> dict[str, str]:
    """12 providers of 3 keys each, all declaring ``m``, whose every answer is a 429 asking for no
    wait; the provider's name by each of its keys."""
    owner = {}
    for n in range(1, CANDIDATES + 1):
        keys = [key_of(n, k) for k in range(1, KEYS + 1)]
        body = {"name": f"P{n:02d}", "base_url": upstream.base_url, "api_keys": keys, "models": ["m"], "priority": n}
        response = admin.post("/providers", json=body)
        assert response.status_code == 201, response.text
        owner |= dict.fromkeys(keys, f"P{n:02d}")
    upstream.answer_always(Json({"error": {"message": "slow down"}}, 429, {"retry-after": "0"}))
    return owner


def cooling(admin: httpx.Client) -> list[dict[str, Any]]:
    return admin.get("/status").json()["cooldowns"]


def test_twelve_candidates_of_three_keys_all_failing_stop_before_the_free_plans_limit(api, admin, upstream, twelve):
    response = ask(api)

    assert response.status_code == 503
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("service_unavailable", "subrequest_limit")
    assert "the Workers plan allows 50 per request (setting subrequest_limit" in error["message"]
    # What the usual answer would have said of the attempts made is kept.
    assert "All providers are rate-limited or out of quota after" in error["message"]
    assert "P01#" in error["message"]
    made = len(upstream.requests)
    # The configuration's D1 read counts too, and the reserve is kept for the work after the answer.
    assert made <= 50 - SUBREQUESTS_RESERVED - 1 < UNCAPPED
    counted = int(re.search(r"stopped after (\d+) subrequests", error["message"]).group(1))
    assert made < counted <= 50 - SUBREQUESTS_RESERVED
    assert int(response.headers["x-fallback-attempts"]) == made
    # Only what was asked cools: each cooldown is a key the upstream saw.
    tried = {twelve[k] for k in upstream.keys_used()}
    cooled = {c["name"] for c in cooling(admin)}
    assert cooled and cooled <= tried


def test_a_candidate_the_limit_left_out_does_not_cool(api, admin, upstream, twelve):
    admin.put("/settings", json={"subrequest_limit": 20}).raise_for_status()

    response = ask(api)

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "subrequest_limit"
    assert "allows 20 per request" in response.json()["error"]["message"]
    made = len(upstream.requests)
    assert made <= 20 - SUBREQUESTS_RESERVED
    tried = {twelve[k] for k in upstream.keys_used()}
    untried = set(twelve.values()) - tried
    assert untried  # the chain went further than the limit let it
    assert {c["name"] for c in cooling(admin)} == tried


def test_a_raised_limit_lets_the_loop_reach_its_usual_answer(api, admin, upstream, twelve):
    settings = admin.put("/settings", json={"SUBREQUEST_LIMIT": 1000}).json()["settings"]
    assert settings["subrequest_limit"]["value"] == 1000

    response = ask(api)

    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limit_exceeded"
    assert len(upstream.requests) == UNCAPPED
    assert len({c["name"] for c in cooling(admin)}) == CANDIDATES


def test_the_limit_is_a_setting_with_the_free_plans_default(admin):
    setting = admin.get("/settings").json()["settings"]["subrequest_limit"]

    assert setting["value"] == 50 and setting["source"] == "default"
    refused = admin.put("/settings", json={"subrequest_limit": 10_001})
    assert refused.status_code == 400
    assert "an integer from 10 to 10000" in refused.json()["error"]["message"]
