"""core/limits.py: window maths, the caller's address, verdicts and what an isolate remembers
(SPEC §14)."""

from __future__ import annotations

import pytest

from gateway.core import rules
from gateway.core.config import resolve_settings
from gateway.core.limits import (
    UNKNOWN_IP,
    LimitMemory,
    Verdict,
    authfail_key,
    caller_ip,
    client_key,
    ip_key,
    window_start,
)

MINUTE = rules.RATE_WINDOW_MS
T0 = 1_800_000_000_000  # a window start: a multiple of a minute


@pytest.mark.parametrize(
    ("now", "start"),
    [(T0, T0), (T0 + 1, T0), (T0 + MINUTE - 1, T0), (T0 + MINUTE, T0 + MINUTE)],
)
def test_windows_are_fixed_utc_minutes(now, start):
    assert window_start(now) == start


@pytest.mark.parametrize(
    ("header", "ip"),
    [
        ("203.0.113.7", "203.0.113.7"),
        (" 2001:DB8::1 ", "2001:db8::/64"),
        ("2001:db8::ffff:1", "2001:db8::/64"),
        ("2001:db8:0:1::1", "2001:db8:0:1::/64"),
        ("::ffff:zz", UNKNOWN_IP),
        (None, UNKNOWN_IP),
        ("", UNKNOWN_IP),
        ("1.2.3.4, 5.6.7.8", UNKNOWN_IP),
        ("a" * 65, UNKNOWN_IP),
        ("1.2.3.4\nx", UNKNOWN_IP),
    ],
)
def test_the_caller_is_cf_connecting_ip_or_unknown(header, ip):
    assert caller_ip(header) == ip


def test_each_limit_has_its_own_key():
    assert len({ip_key("1.2.3.4"), authfail_key("1.2.3.4"), client_key(None), client_key(1)}) == 4
    assert client_key(None) != client_key(0)


def test_a_counted_request_leaves_the_rest_of_the_window():
    verdict = Verdict.of(5, 2, T0 + 15_000)

    assert verdict.allowed and verdict.remaining == 3
    assert verdict.reset_at_ms == T0 + MINUTE
    assert verdict.header_values(T0 + 15_000) == ("5", "3", "45")


def test_a_refused_request_waits_for_the_window_end():
    verdict = Verdict.of(5, None, T0 + 59_500)

    assert not verdict.allowed and verdict.remaining == 0
    assert verdict.retry_after_s(T0 + 59_500) == 1  # rounded up, never 0
    assert verdict.retry_after_s(T0 + 1_000) == 59


def test_memory_refuses_a_full_key_until_its_window_ends():
    memory = LimitMemory()
    memory.note("client:1", Verdict.of(2, 2, T0), T0)

    assert memory.full("client:1", 2, T0 + 1).remaining == 0
    assert memory.full("client:1", 3, T0 + 1) is None  # the limit was raised: ask again
    assert memory.full("client:1", 2, T0 + MINUTE) is None


def test_memory_keeps_only_full_keys():
    memory = LimitMemory()
    memory.note("client:1", Verdict.of(3, 2, T0), T0)

    assert memory.full("client:1", 3, T0) is None


def test_an_open_address_is_trusted_for_the_recheck_time_and_forgotten_on_a_failure():
    memory = LimitMemory()
    memory.note_open("1.2.3.4", T0)

    assert memory.lock_open("1.2.3.4", T0 + rules.AUTH_LOCK_RECHECK_MS - 1)
    assert not memory.lock_open("1.2.3.4", T0 + rules.AUTH_LOCK_RECHECK_MS)
    memory.note_failure("1.2.3.4", "digest", T0)
    assert not memory.lock_open("1.2.3.4", T0)


def test_the_same_wrong_token_counts_once_per_window():
    memory = LimitMemory()

    counted = [memory.note_failure("1.2.3.4", d, T0 + i) for i, d in enumerate(["x", "x", "y"])]

    assert counted == [True, False, True]
    assert memory.note_failure("1.2.3.4", "x", T0 + MINUTE)  # a new window
    assert memory.note_failure("5.6.7.8", "x", T0)  # another address


def test_the_sweep_is_due_once_per_window():
    memory = LimitMemory()

    assert [memory.sweep_due(t) for t in (T0, T0 + 10, T0 + MINUTE)] == [True, False, True]


def test_memory_stays_bounded_dropping_expired_entries_first():
    memory = LimitMemory(max_entries=3)
    memory.note_open("old", T0)
    memory.note("client:1", Verdict.of(1, 1, T0), T0)
    later = T0 + MINUTE + rules.AUTH_LOCK_RECHECK_MS
    memory.note_open("a", later)

    memory.note_open("b", later)  # full: the two expired entries go, a stays

    assert memory.lock_open("a", later) and memory.lock_open("b", later)
    memory.note_open("c", later)
    memory.note_open("d", later)  # full of live entries: all go (a D1 query each, later)
    assert memory.lock_open("d", later)
    assert not any(memory.lock_open(ip, later) for ip in "abc")


def test_the_limits_are_settings_with_env_names_and_0_is_off():
    settings, values = resolve_settings({"ip_rpm": "20"}, {"AUTH_FAIL_LIMIT": "0", "DEFAULT_CLIENT_RPM": "7"})

    assert (settings.ip_rpm, settings.auth_fail_limit, settings.default_client_rpm) == (20, 0, 7)
    assert values["ip_rpm"].source == "d1" and values["auth_fail_limit"].source == "env"


def test_by_default_only_the_failed_auth_lock_is_on():
    settings, _ = resolve_settings({}, {})

    assert (settings.ip_rpm, settings.default_client_rpm, settings.auth_fail_limit) == (0, 0, 10)


def test_a_lease_is_a_tenth_of_what_is_left_and_spent_without_asking():
    memory = LimitMemory()
    now = T0 + 5_000

    assert memory.spend("client:1", 100, now) is None
    assert memory.lease_size("client:1", 100, now) == 10
    first = memory.grant("client:1", 100, now, (10, 10))  # D1 counted the 10 units
    spent = [memory.spend("client:1", 100, now) for _ in range(9)]

    assert first.allowed and first.remaining == 99
    assert [v.remaining for v in spent] == list(range(98, 89, -1))
    assert memory.spend("client:1", 100, now) is None  # the lease is used up: ask again
    assert memory.lease_size("client:1", 100, now) == 9  # a tenth of the 90 left


def test_a_lease_belongs_to_its_window_and_limit():
    memory = LimitMemory()
    memory.grant("client:1", 100, T0, (10, 10))

    assert memory.spend("client:1", 50, T0) is None
    assert memory.spend("client:1", 100, T0 + MINUTE) is None


def test_a_partial_grant_and_a_full_window():
    memory = LimitMemory()

    last = memory.grant("ip:a", 10, T0, (10, 1))  # one unit left in D1: granted and spent
    refused = memory.grant("ip:b", 10, T0, None)

    assert last.allowed and last.remaining == 0
    assert memory.full("ip:a", 10, T0) is not None
    assert not refused.allowed and memory.full("ip:b", 10, T0) is not None


def test_leases_taken_at_once_add_up_and_none_is_lost():
    memory = LimitMemory()
    # Three requests in flight at once each asked for 4 units of a limit of 10; D1 granted 4, 4, 2.
    answers = [(4, 4), (8, 4), (10, 2)]

    verdicts = [memory.grant("client:1", 10, T0, answer) for answer in answers]
    spent = [memory.spend("client:1", 10, T0) for _ in range(7)]

    assert all(v.allowed for v in verdicts)
    assert [v.allowed for v in spent] == [True] * 7  # 10 units in all, 3 spent by the askers
    assert memory.spend("client:1", 10, T0) is None
    assert memory.grant("client:1", 10, T0, None).allowed is False


def test_a_request_refused_by_d1_spends_a_lease_that_came_back_meanwhile():
    memory = LimitMemory()
    memory.grant("client:1", 10, T0, (10, 10))  # another request's lease: 9 units left

    late = memory.grant("client:1", 10, T0, None)  # this one found the window full in D1

    assert late.allowed and late.remaining == 8
