"""core/limits.py: window maths, the caller's address, verdicts and what an isolate remembers
(SPEC §14)."""

from __future__ import annotations

import pytest

from gateway.core import rules
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
from gateway.core.settings import resolve_settings

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
    verdict, _ = LimitMemory().count("client:1", 5, T0 + 15_000)

    assert verdict.allowed and verdict.remaining == 4
    assert verdict.reset_at_ms == T0 + MINUTE
    assert verdict.header_values(T0 + 15_000) == ("5", "4", "45")


def test_a_refused_request_waits_for_the_window_end():
    verdict = Verdict(5, 5, T0 + MINUTE, allowed=False)

    assert verdict.remaining == 0
    assert verdict.retry_after_s(T0 + 59_500) == 1  # rounded up, never 0
    assert verdict.retry_after_s(T0 + 1_000) == 59


def test_an_isolate_alone_counts_a_window_exactly_until_its_end():
    memory = LimitMemory()

    verdicts = [memory.count("client:1", 3, T0 + i)[0] for i in range(4)]

    assert [v.allowed for v in verdicts] == [True, True, True, False]
    assert [v.remaining for v in verdicts] == [2, 1, 0, 0]
    assert memory.full("client:1", 3, T0 + 5) is not None  # refused without counting
    assert memory.full("client:1", 4, T0 + 5) is None  # the limit was raised: room again
    assert memory.count("client:1", 4, T0 + 6)[0].remaining == 0  # the window's 3 still count
    assert memory.count("client:1", 3, T0 + MINUTE)[0].allowed  # a new window


def test_half_a_limit_is_counted_before_the_first_report():
    memory = LimitMemory()

    due = [memory.count("ip:a", 20, T0 + i)[1] for i in range(12)]

    assert rules.RATE_REPORT_DIVISOR == 2
    assert due == [0] * 9 + [10, 0, 0]  # the tenth unit reports all ten, once
    memory.reported("ip:a", T0, 10)
    later = [memory.count("ip:a", 20, T0 + 20 + i)[1] for i in range(8)]
    assert later == [0] * 7 + [10]  # the next ten: units 11 to 20
    assert not memory.count("ip:a", 20, T0 + 30)[0].allowed


def test_a_report_teaches_the_isolate_what_the_others_counted():
    memory = LimitMemory()
    for i in range(5):
        verdict, _ = memory.count("client:1", 10, T0 + i)

    memory.reported("client:1", T0 + 5, 9)  # D1: 9 in the window, 4 of them others'

    assert verdict.remaining == 5
    assert memory.count("client:1", 10, T0 + 6)[0].remaining == 0  # the tenth unit
    assert not memory.count("client:1", 10, T0 + 7)[0].allowed


def test_a_report_answered_after_its_window_ended_changes_nothing():
    memory = LimitMemory()
    for i in range(5):
        memory.count("client:1", 10, T0 + i)

    memory.reported("client:1", T0 + MINUTE, 10)

    assert memory.count("client:1", 10, T0 + MINUTE)[0].remaining == 9


def test_when_d1_fails_the_isolate_counts_alone_and_reports_again_a_minute_later():
    memory = LimitMemory()
    for i in range(3):
        memory.count("ip:a", 6, T0 + i)  # the third is due

    memory.reported("ip:a", T0 + 1, None)

    verdicts = [memory.count("ip:a", 6, T0 + 2 + i) for i in range(4)]
    assert [v.allowed for v, _ in verdicts] == [True, True, True, False]  # 6 in memory: it holds
    assert [d for _, d in verdicts[:3]] == [0, 0, 0]  # no report before the retry time
    retry = T0 + 1 + rules.RATE_REPORT_RETRY_MS
    assert memory.count("ip:b", 6, retry - 1)[1] == 0
    memory.count("ip:b", 6, retry - 1)
    assert memory.count("ip:b", 6, retry)[1] == 3  # asked again


def test_the_same_wrong_token_counts_once_per_window():
    memory = LimitMemory()

    counted = [memory.note_failure("1.2.3.4", d, T0 + i) for i, d in enumerate(["x", "x", "y"])]

    assert counted == [True, False, True]
    assert memory.note_failure("1.2.3.4", "x", T0 + MINUTE)  # a new window
    assert memory.note_failure("5.6.7.8", "x", T0)  # another address


def test_memory_stays_bounded_dropping_expired_entries_first():
    memory = LimitMemory(max_entries=3)
    memory.count("old", 5, T0)
    memory.note_failure("1.2.3.4", "x", T0)
    later = T0 + MINUTE
    memory.count("a", 5, later)

    memory.count("b", 5, later)  # full: the two expired entries go, a stays

    assert memory.count("a", 5, later)[0].remaining == 3
    memory.count("c", 5, later)
    memory.count("d", 5, later)  # full of live entries: all go (their counts start again)
    assert memory.count("a", 5, later)[0].remaining == 4


def test_a_full_window_outlives_a_crowd_of_new_callers():
    memory = LimitMemory(max_entries=3)
    memory.count("authfail:guesser", 1, T0)  # locked: its limit reached

    for ip in ("a", "b", "c"):
        memory.count(f"ip:{ip}", 20, T0)

    assert memory.full("authfail:guesser", 1, T0) is not None


def test_the_limits_are_settings_with_env_names_and_0_is_off():
    settings, values = resolve_settings({"ip_rpm": "20"}, {"AUTH_FAIL_LIMIT": "0", "DEFAULT_CLIENT_RPM": "7"})

    assert (settings.ip_rpm, settings.auth_fail_limit, settings.default_client_rpm) == (20, 0, 7)
    assert values["ip_rpm"].source == "d1" and values["auth_fail_limit"].source == "env"


def test_by_default_only_the_failed_auth_lock_is_on():
    settings, _ = resolve_settings({}, {})

    assert (settings.ip_rpm, settings.default_client_rpm, settings.auth_fail_limit) == (0, 0, 10)
