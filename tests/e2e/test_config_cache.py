"""The configuration snapshot (SPEC §2.3): zero D1 queries on a warm hot path, re-read after an
admin write, never cached while no provider exists. D1 statements are counted from the local
runtime's trace (LOCAL_RUNTIME_TRACE_D1)."""

from __future__ import annotations

BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "x"}]}


def test_warm_requests_make_no_d1_query(gateway, api, add_provider):
    add_provider()
    api.post("/chat/completions", json=BODY).raise_for_status()  # fills the snapshot
    before = len(gateway.d1_statements())

    for _ in range(5):
        api.post("/chat/completions", json=BODY).raise_for_status()

    assert gateway.d1_statements()[before:] == []


def test_cold_request_reads_the_configuration_in_one_batch(gateway, admin, api, add_provider):
    add_provider()  # an admin write: the snapshot is dropped
    before = len(gateway.d1_statements())

    api.post("/chat/completions", json=BODY).raise_for_status()

    assert gateway.d1_statements()[before:].count("batch") == 1


def test_admin_write_is_seen_by_the_next_request(api, admin, add_provider):
    provider = add_provider(name="before")
    assert api.post("/chat/completions", json=BODY).headers["x-routed-via"] == "before/fake-model"

    admin.put(f"/providers/{provider['id']}", json={"name": "after"}).raise_for_status()

    assert api.post("/chat/completions", json=BODY).headers["x-routed-via"] == "after/fake-model"


def test_empty_provider_list_is_never_cached(gateway, api, admin):
    # An admin write first: it drops whatever an earlier test left this isolate holding (a snapshot
    # held through a D1 failure serves, however old, for a minute).
    admin.put("/settings", json={"stream_rescue": None}).raise_for_status()
    api.post("/chat/completions", json=BODY)
    before = len(gateway.d1_statements())

    api.post("/chat/completions", json=BODY)
    api.post("/chat/completions", json=BODY)

    assert gateway.d1_statements()[before:].count("batch") == 2
