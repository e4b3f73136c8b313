"""core/d1health.py: what the admin API and the page say of D1 (SPEC §18)."""

from __future__ import annotations

from gateway.core.d1health import D1Health


def test_d1_is_fine_until_a_query_fails():
    assert D1Health().as_json() == {"ok": True, "failing_since": None, "error": None}


def test_failing_keeps_its_first_moment_and_the_newest_error():
    health = D1Health()

    health.failed(1_000, "D1_ERROR: timeout")
    health.failed(5_000, "D1 DB exceeded its daily row limit")

    assert health.as_json() == {"ok": False, "failing_since": 1_000, "error": "D1 DB exceeded its daily row limit"}


def test_an_answer_ends_the_failure():
    health = D1Health()
    health.failed(1_000, "D1_ERROR: timeout")

    health.answered()

    assert health.ok and health.as_json()["failing_since"] is None
