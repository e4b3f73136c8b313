"""Usage buckets, the latency histogram and the isolate's book of hours (SPEC §17, §18)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gateway.core import rules
from gateway.core.usage import (
    COLUMNS,
    LATENCY_EDGES_MS,
    BucketKey,
    Event,
    Histogram,
    Taken,
    Tally,
    UsageBook,
    hour_of,
)  # fmt: skip
from support.factories import T0
from support.usage_parts import decode_buckets, decode_events

HOUR = rules.HOUR_MS
INTERVAL_MS = 10 * rules.MINUTE_MS
MIGRATIONS = Path(__file__).resolve().parents[3] / "migrations"
MIGRATION = MIGRATIONS / "0010_usage_parts.sql"


def key(model: str = "m", at: int = T0, client: int = 0, provider: int = 1, key_id: int = 101) -> BucketKey:
    return BucketKey(hour_of(at), client, provider, key_id, model, "chat")


def book() -> UsageBook:
    return UsageBook(INTERVAL_MS)


def event(at: int, message: str = "") -> Event:
    return Event(at, 0, 1, 101, "m", "chat", "timeout", None, message)


def parts(taken: Taken) -> dict[int, dict[BucketKey, Tally]]:
    """What each part of ``taken`` would replace its hour's row with, decoded."""
    return {p.hour_ms: decode_buckets(p.hour_ms, p.buckets) for p in taken.parts}


def requests(taken: Taken, at: int = T0, model: str = "m") -> int:
    return parts(taken)[hour_of(at)][key(model, at)].requests


def served(first_byte_ms: int, total_ms: int, tokens: tuple[int, int] = (10, 5), failovers: int = 0) -> Tally:
    tally = Tally(requests=1, successes=1, failovers=failovers, tokens_in=tokens[0], tokens_out=tokens[1])
    tally.first_byte.add(first_byte_ms)
    tally.ends.add(total_ms)
    return tally


def test_hours_start_at_the_utc_hour():
    start = 1_700_002_800_000  # 2023-11-14 23:00:00 UTC
    assert hour_of(start) == hour_of(start + HOUR - 1) == start
    assert hour_of(start + HOUR) == start + HOUR


@pytest.mark.parametrize(
    ("ms", "bin_"),
    [
        (0, 0),
        (25, 0),
        (26, 1),
        (1_000, 7),
        (1_001, 8),
        (60_000, len(LATENCY_EDGES_MS) - 1),
        (60_001, len(LATENCY_EDGES_MS)),
    ],
)
def test_a_sample_lands_in_the_bin_whose_upper_edge_holds_it(ms, bin_):
    histogram = Histogram()
    histogram.add(ms)

    assert histogram.counts.index(1) == bin_


def test_quantiles_interpolate_inside_the_bin():
    histogram = Histogram()
    for _ in range(100):
        histogram.add(300)  # the (200, 350] bin

    assert histogram.quantile(0.5) == pytest.approx(200 + 150 * 0.5)
    assert histogram.quantile(0.95) == pytest.approx(200 + 150 * 0.95)


def test_quantiles_across_bins():
    histogram = Histogram()
    for ms, count in ((40, 50), (900, 45), (4_000, 5)):
        for _ in range(count):
            histogram.add(ms)

    assert histogram.quantile(0.5) == pytest.approx(50)  # the 50th sample ends the (25, 50] bin
    assert histogram.quantile(0.95) == pytest.approx(1_000)  # the 95th sample is the (750, 1000] bin's last
    assert histogram.quantile(0.96) == pytest.approx(3_000 + 2_000 * 1 / 5)  # the first of five above 3000


def test_the_open_last_bin_answers_its_lower_edge_and_no_sample_answers_none():
    histogram = Histogram()
    assert histogram.quantile(0.5) is None
    histogram.add(120_000)
    assert histogram.quantile(0.5) == LATENCY_EDGES_MS[-1]


def test_tallies_merge_by_adding():
    one = served(100, 900, failovers=1)
    one.errors["rate_limited"] = 1
    other = served(2_000, 9_000)
    other.errors.update({"rate_limited": 2, "timeout": 1})
    other.streams_cut, other.estimated_out = 1, 40

    one.merge(other)

    assert (one.requests, one.successes, one.failovers, one.streams_cut) == (2, 2, 1, 1)
    assert one.errors == {"rate_limited": 3, "timeout": 1}
    assert (one.tokens_in, one.tokens_out, one.estimated_out) == (20, 10, 40)
    assert one.first_byte.total == one.ends.total == 2


def test_the_book_keeps_one_bucket_per_hour_and_dimension():
    counts = book()
    for at, model in ((T0, "m"), (T0 + 1_000, "m"), (T0, "n"), (T0 + HOUR, "m")):
        counts.add(key(model, at), served(100, 500))

    taken = parts(counts.take(T0 + HOUR))

    assert {(k.model, hour - hour_of(T0)) for hour, buckets in taken.items() for k in buckets} == {
        ("m", 0),
        ("n", 0),
        ("m", HOUR),
    }
    assert taken[hour_of(T0)][key("m", T0)].requests == 2


def test_an_hour_is_written_whole_each_time_so_a_write_replaces_the_row_with_every_count_so_far():
    counts = book()
    counts.add(key(), served(100, 500))
    first = counts.take(T0)
    counts.written(first, T0)
    counts.add(key(), served(100, 500))

    second = counts.take(T0 + INTERVAL_MS)

    assert requests(first) == 1 and requests(second) == 2  # cumulative: the second replaces the first
    assert second.seq > first.seq
    assert len(second.parts) == 1  # one row per hour, however many buckets


def test_a_write_is_due_once_per_interval_and_only_when_an_hour_changed():
    counts = book()
    assert not counts.due(T0)  # nothing counted
    counts.add(key(), served(100, 500))
    counts.written(counts.take(T0), T0)
    assert not counts.due(T0 + INTERVAL_MS)  # nothing changed since

    counts.add(key(), served(100, 500))
    assert not counts.take(T0 + INTERVAL_MS - 1)  # too soon: kept
    counts.interval_ms = rules.MINUTE_MS  # the setting changed
    assert counts.due(T0 + rules.MINUTE_MS)


def test_a_failed_write_loses_nothing_and_the_next_write_carries_the_hour_again():
    counts = book()
    counts.add(key(), served(100, 500))
    counts.take(T0)  # D1 failed: never confirmed
    counts.add(key(), served(200, 700))  # counted meanwhile

    assert requests(counts.take(T0 + INTERVAL_MS)) == 2


def test_a_write_confirmed_twice_or_late_counts_nothing_twice():
    counts = book()
    counts.add(key(), served(100, 500))
    first = counts.take(T0)
    counts.add(key(), served(100, 500))
    second = counts.take(T0, force=True)
    counts.written(second, T0)
    counts.written(first, T0)  # the older write's answer came last: the hour stays written as of the newer
    counts.written(second, T0)

    assert not counts.take(T0 + INTERVAL_MS, force=True)  # nothing left to write
    assert requests(second) == 2


def test_an_hour_over_and_written_is_dropped_and_a_late_count_goes_to_the_oldest_hour_held():
    counts = book()
    counts.add(key(at=T0), served(100, 500))
    counts.add(key(at=T0 + HOUR), served(100, 500))
    counts.written(counts.take(T0 + HOUR), T0 + HOUR)
    assert counts.hours() == [hour_of(T0 + HOUR)]

    counts.add(key(at=T0), served(100, 500))  # a stream routed in the hour that is over, ended now

    taken = counts.take(T0 + HOUR, force=True)
    assert [p.hour_ms for p in taken.parts] == [hour_of(T0 + HOUR)]  # never a part replacing T0's row
    assert parts(taken)[hour_of(T0 + HOUR)][key(at=T0 + HOUR)].requests == 2


def test_an_hour_not_yet_written_is_kept_after_it_ends():
    counts = book()
    counts.add(key(at=T0), served(100, 500))
    counts.take(T0)  # failed

    counts.add(key(at=T0 + HOUR), served(100, 500))
    counts.written(Taken(99, ()), T0 + HOUR)

    assert counts.hours() == [hour_of(T0), hour_of(T0 + HOUR)]
    assert [p.hour_ms for p in counts.take(T0 + HOUR + INTERVAL_MS).parts] == counts.hours()


def test_while_d1_fails_the_book_keeps_a_bounded_number_of_hours_and_names_those_it_dropped():
    counts = book()
    kept = rules.USAGE_HOURS_KEPT
    for h in range(kept + 2):
        counts.add(key(at=T0 + h * HOUR), served(100, 500))

    assert len(counts.hours()) == kept and counts.hours()[0] == hour_of(T0 + 2 * HOUR)
    taken = counts.take(T0 + (kept + 2) * HOUR)
    assert taken.dropped == (hour_of(T0), hour_of(T0 + HOUR))
    assert len(taken.parts) == kept
    counts.add(key(at=T0), served(100, 500))  # a late count for a dropped hour: never a new part of it
    assert hour_of(T0) not in counts.hours()
    assert not counts.take(T0 + (kept + 3) * HOUR).dropped  # named once


def test_an_hour_keeps_its_newest_events_and_each_event_lands_in_its_hour():
    counts = book()
    per_hour = rules.USAGE_EVENTS_PER_HOUR
    for i in range(per_hour + 5):
        counts.note(event(T0 + i, f"e{i}"))
    counts.note(event(T0 + HOUR, "next hour"))

    taken = {p.hour_ms: decode_events(p.events) for p in counts.take(T0).parts}

    assert [e.message for e in taken[hour_of(T0)]] == [f"e{i}" for i in range(5, per_hour + 5)]
    assert [e.message for e in taken[hour_of(T0 + HOUR)]] == ["next hour"]


def test_an_hour_holds_a_bounded_number_of_buckets_the_rest_counted_as_other():
    counts = book()
    for i in range(rules.USAGE_BUCKETS_PER_HOUR + 3):
        counts.add(key(f"m{i}"), served(100, 500))

    [buckets] = parts(counts.take(T0)).values()

    assert len(buckets) == rules.USAGE_BUCKETS_PER_HOUR + 1
    assert buckets[key(rules.USAGE_OTHER_MODEL)].requests == 3


def test_an_admin_read_takes_the_book_before_the_interval_is_over():
    counts = book()
    counts.add(key(), served(100, 500))
    counts.written(counts.take(T0), T0)
    counts.add(key(), served(100, 500))

    assert not counts.take(T0 + 1)
    assert requests(counts.take(T0 + 1, force=True)) == 2


def test_a_part_holds_every_count_and_reads_back_as_the_same_tally():
    tally = served(120, 4_000, tokens=(30, 7), failovers=1)
    tally.errors.update({"timeout": 2, "caller_error": 1})
    tally.cached_in, tally.estimated_out = 5, 3
    counts = book()
    counts.add(key(), tally)
    counts.add(key("quiet"), Tally(requests=1))
    [part] = counts.take(T0).parts

    assert decode_buckets(part.hour_ms, part.buckets) == {key(): tally, key("quiet"): Tally(requests=1)}
    assert '[0,1,101,"quiet","chat",1]' in part.buckets  # trailing zeros left out


def _migrated() -> sqlite3.Connection:
    """A database as every migration, applied in order, leaves it (as ``wrangler d1 migrations
    apply`` does)."""
    db = sqlite3.connect(":memory:")
    for path in sorted(MIGRATIONS.glob("*.sql")):
        db.executescript(path.read_text())
    return db


# The statement shell/d1.py sends to write parts (its ``_UPSERT_PARTS``, for one part).
UPSERT_PART = (
    "INSERT INTO usage_parts (hour_ms, isolate, seq, buckets, events) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (hour_ms, isolate) DO UPDATE SET seq = excluded.seq, buckets = excluded.buckets, "
    "events = excluded.events WHERE excluded.seq > usage_parts.seq"
)


def test_the_migrated_schema_holds_one_part_per_hour_and_isolate():
    db = _migrated()

    info = db.execute("PRAGMA table_info(usage_parts)")
    columns = {name: (kind, not_null, pk) for _, name, kind, not_null, _, pk in info}
    assert columns == {"hour_ms": ("INTEGER", 1, 1), "isolate": ("TEXT", 1, 2), "seq": ("INTEGER", 1, 0),
                       "buckets": ("TEXT", 1, 0), "events": ("TEXT", 1, 0)}  # fmt: skip
    [(_, index, unique, origin, _)] = db.execute("PRAGMA index_list(usage_parts)")
    assert (unique, origin) == (1, "pk")
    assert [name for _, _, name in db.execute(f"PRAGMA index_info({index})")] == ["hour_ms", "isolate"]
    [(_, _, _, _, without_rowid, _)] = db.execute("PRAGMA table_list(usage_parts)")
    assert without_rowid == 1
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "usage_buckets" not in tables and "usage_events" not in tables


def test_a_part_is_replaced_by_a_newer_write_only():
    db = _migrated()
    hour = hour_of(T0)
    db.execute(UPSERT_PART, (hour, "a", 2, '[[0,1,101,"m","chat",2]]', "[]"))
    db.execute(UPSERT_PART, (hour, "b", 1, "[]", "[]"))  # another isolate's part of the same hour

    db.execute(UPSERT_PART, (hour, "a", 1, '[[0,1,101,"m","chat",1]]', "[]"))  # an older write, late
    assert db.execute("SELECT seq, buckets FROM usage_parts WHERE isolate = 'a'").fetchall() == [
        (2, '[[0,1,101,"m","chat",2]]')
    ]
    db.execute(UPSERT_PART, (hour, "a", 3, '[[0,1,101,"m","chat",3]]', "[]"))
    assert db.execute("SELECT seq, buckets FROM usage_parts WHERE isolate = 'a'").fetchall() == [
        (3, '[[0,1,101,"m","chat",3]]')
    ]
    assert db.execute("SELECT COUNT(*) FROM usage_parts").fetchone() == (2,)
    # Without the upsert, a second row of an hour and isolate is refused, and so is a part without counts.
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO usage_parts VALUES (?, 'a', 4, '[]', '[]')", (hour,))
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO usage_parts VALUES (?, 'c', 1, NULL, '[]')", (hour,))


def _old_database() -> sqlite3.Connection:
    """A database as the migrations before 0010 left it."""
    db = sqlite3.connect(":memory:")
    for path in sorted(MIGRATIONS.glob("*.sql")):
        if path.name < MIGRATION.name:
            db.executescript(path.read_text())
    return db


def test_the_migration_moves_the_old_buckets_and_events_into_parts_per_hour():
    db = _old_database()
    tally = served(120, 70_000, tokens=(30, 7), failovers=1)
    tally.errors["timeout"] = 2
    rows = [
        (hour_of(T0), 0, 1, 101, "m", "chat", tally),
        (hour_of(T0), 3, 1, 101, "m", "chat", Tally(requests=4)),
        (hour_of(T0) + HOUR, 0, 0, 0, "x", "anthropic", Tally(requests=1)),
    ]
    for hour, *dims, counts in rows:
        db.execute(
            f"INSERT INTO usage_buckets (hour_ms, client_id, provider_id, key_id, model, surface, "
            f"{', '.join(COLUMNS)}) VALUES ({', '.join('?' * (6 + len(COLUMNS)))})",
            (hour, *dims, *counts.values()),
        )
    old_events = [(T0 + 5, "first"), (T0 + 9, "second"), (T0 + 2 * HOUR, "alone in its hour")]
    for at, message in old_events:
        db.execute(
            "INSERT INTO usage_events (at_ms, client_id, provider_id, key_id, model, surface, class, status, "
            "message) VALUES (?, 0, 1, 101, 'm', 'chat', 'timeout', NULL, ?)",
            (at, message),
        )

    db.executescript(MIGRATION.read_text())

    stored = {
        hour: (decode_buckets(hour, buckets), decode_events(events))
        for hour, isolate, buckets, events in db.execute("SELECT hour_ms, isolate, buckets, events FROM usage_parts")
        if isolate == "migrated"
    }
    assert stored[hour_of(T0)][0] == {
        BucketKey(hour_of(T0), 0, 1, 101, "m", "chat"): tally,
        BucketKey(hour_of(T0), 3, 1, 101, "m", "chat"): Tally(requests=4),
    }
    assert stored[hour_of(T0) + HOUR][0] == {
        BucketKey(hour_of(T0) + HOUR, 0, 0, 0, "x", "anthropic"): Tally(requests=1)
    }
    assert [e.message for e in stored[hour_of(T0)][1]] == ["first", "second"]
    assert stored[hour_of(T0 + 2 * HOUR)] == ({}, [event(T0 + 2 * HOUR, "alone in its hour")])
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "usage_buckets" not in tables and "usage_events" not in tables
