"""Stream pacing (SPEC §18, issue 39) on workerd: a translated answer goes out in batches on the
``stream_pacing`` schedule, whole and in order, and no event waits past the schedule's hold, on
every surface under each pacing.

The answer here is the hard case: a model typing fast for a second (a batch's read is sized by
that pace), then slowing to one piece every ~0.4 s, where a read sized by the old pace would hold
its pieces for many seconds: the relay's deadline takes them from its spare branch instead
(src/gateway/shell/paced.mjs). A hold is measured from outside, from when the fake upstream wrote
a piece to when the caller read it (``support.holds``); a little slack covers the loopback and a
busy test machine, far less than what a missed deadline would cost.
"""

from __future__ import annotations

import httpx
import pytest

from gateway.core.pacing import Pacing, hold_ms
from support.holds import Holds, paced_answer, read_timed
from support.surfaces import SURFACES
from support.upstream import UPSTREAM_KEY

# Fast: one piece every 20 ms for a second; then slow: one every ~0.4 s.
FAST, SLOW, SLOW_GAP_S = 50, 6, 0.38
# What a busy machine adds to a hold that keeps the schedule (a missed deadline adds seconds).
SLACK_MS = 300

by_surface = pytest.mark.parametrize("surface", SURFACES, ids=lambda s: s.id)
by_pacing = pytest.mark.parametrize("pacing", list(Pacing), ids=str)


@pytest.fixture
def paced(admin, gateway, upstream):
    admin.post(
        "/providers", json={"name": "typing", "base_url": upstream.base_url, "api_key": UPSTREAM_KEY, "models": ["m"]}
    ).raise_for_status()
    with httpx.Client(base_url=gateway.url, timeout=60) as client:
        yield client


@by_pacing
@by_surface
def test_a_model_that_slows_reaches_the_caller_whole_in_order_and_on_schedule(
    paced, admin, gateway, upstream, surface, pacing
):
    admin.put("/settings", json={"stream_pacing": pacing.value}).raise_for_status()
    answer = paced_answer(FAST + SLOW, 0.02, pauses={FAST + i: SLOW_GAP_S for i in range(SLOW)})
    upstream.queue(answer)

    reads = read_timed(paced, surface.path("m", True), surface.body("m", True), surface.headers(gateway.api_token))
    reading = surface.read_stream(b"".join(data for _at, data in reads))
    holds = Holds.of(reads, answer.sent)

    assert (reading.problems, reading.finished) == ([], True)
    assert reading.text == "".join(f" t{i}" for i in range(FAST + SLOW))  # whole, in order
    assert sorted(holds.held) == list(range(FAST + SLOW))
    late = holds.over(lambda since: hold_ms(pacing, int(since)) + SLACK_MS, answer.sent)
    assert late == {}, f"held past the {pacing} schedule (ms over it, by piece)"
    if pacing is not Pacing.LIVE:  # batched: the fast second's 50 pieces in a handful of writes
        fast = [at for at, _data in reads if at < answer.sent[FAST]]
        assert len(fast) <= 2 * 1000 // hold_ms(pacing, 0) + 4


def test_the_pacing_setting_takes_its_three_names_and_refuses_others(admin):
    for name in Pacing:
        admin.put("/settings", json={"stream_pacing": name.value}).raise_for_status()
        assert admin.get("/settings").json()["settings"]["stream_pacing"]["value"] == name.value

    refused = admin.put("/settings", json={"stream_pacing": "fastest"})

    assert refused.status_code == 400
    assert "paced, smooth, live" in refused.json()["error"]["message"]
    setting = admin.get("/settings").json()["settings"]["stream_pacing"]
    assert (setting["value"], setting["choices"]) == ("live", ["paced", "smooth", "live"])
