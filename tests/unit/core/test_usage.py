"""Usage buckets and the latency histogram (SPEC §17)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.core import rules
from gateway.core.usage import COLUMNS, LATENCY_EDGES_MS, BucketKey, Event, Histogram, Tally, UsageBook, hour_of
from support.factories import T0

HOUR = rules.HOUR_MS
FLUSH_INTERVAL_MS = rules.USAGE_FLUSH_INTERVAL_MS
MIGRATION = Path(__file__).resolve().parents[3] / "migrations" / "0006_usage.sql"


def key(model: str = "m", at: int = T0, client: int = 0, provider: int = 1, key_id: int = 101) -> BucketKey:
    return BucketKey(hour_of(at), client, provider, key_id, model, "chat")


def served(first_byte_ms: int, total_ms: int, tokens: tuple[int, int] = (10, 5), failovers: int = 0) -> Tally:
    tally = Tally(requests=1, successes=1, failovers=failovers, tokens_in=tokens[0], tokens_out=tokens[1])
    tally.first_byte.add(first_byte_ms)
    tally.total.add(total_ms)
    return tally


def test_hours_start_at_the_utc_hour():
    start = 1_700_002_800_000  # 2023-11-14 23:00:00 UTC
    assert hour_of(start) == hour_of(start + HOUR - 1) == start
    assert hour_of(start + HOUR) == start + HOUR


@pytest.mark.parametrize(
    ("ms", "bin_"),
    [(0, 0), (25, 0), (26, 1), (1_000, 7), (1_001, 8), (60_000, len(LATENCY_EDGES_MS) - 1), (60_001, len(LATENCY_EDGES_MS))],
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
    assert one.first_byte.total == one.total.total == 2


def test_the_book_keeps_one_bucket_per_hour_and_dimension():
    book = UsageBook()
    for at, model in ((T0, "m"), (T0 + 1_000, "m"), (T0, "n"), (T0 + HOUR, "m")):
        book.add(key(model, at), served(100, 500))

    taken = book.take(T0 + HOUR).buckets

    assert {(k.model, k.hour_ms - hour_of(T0)) for k in taken} == {("m", 0), ("n", 0), ("m", HOUR)}
    assert taken[key("m", T0)].requests == 2


def test_a_flush_takes_everything_at_most_once_a_minute():
    book = UsageBook()
    assert not book.due(T0)  # nothing to write
    book.add(key(), served(100, 500))
    assert len(book.take(T0).buckets) == 1 and len(book) == 0

    book.add(key(), served(100, 500))
    assert not book.take(T0 + FLUSH_INTERVAL_MS - 1)  # too soon: kept
    assert len(book) == 1
    assert len(book.take(T0 + FLUSH_INTERVAL_MS).buckets) == 1


def test_a_failed_flush_gives_its_buckets_back_merged_with_the_new_counts():
    book = UsageBook()
    book.add(key(), served(100, 500))
    taken = book.take(T0)
    book.add(key(), served(200, 700))  # counted while the flush ran

    book.give_back(taken)

    assert book.take(T0 + FLUSH_INTERVAL_MS).buckets[key()].requests == 2


def test_the_book_keeps_the_newest_200_events_and_gives_back_what_a_flush_could_not_write():
    book = UsageBook()
    for i in range(rules.USAGE_EVENTS_KEPT + 5):
        book.note(Event(T0 + i, 0, 1, 0, "m", "chat", "timeout", None, ""))
    taken = book.take(T0)
    assert len(taken.events) == rules.USAGE_EVENTS_KEPT and taken.events[0].at_ms == T0 + 5

    book.note(Event(T0 + 999, 0, 1, 0, "m", "chat", "timeout", None, "new"))
    book.give_back(taken)
    kept = book.take(T0, force=True).events
    assert len(kept) == rules.USAGE_EVENTS_KEPT and kept[-1].message == "new"


def test_an_admin_read_takes_the_book_before_the_minute_is_over():
    book = UsageBook()
    book.add(key(), served(100, 500))
    book.take(T0)
    book.add(key(), served(100, 500))

    assert not book.take(T0 + 1)
    assert book.take(T0 + 1, force=True).buckets[key()].requests == 1


def test_a_row_holds_every_count_and_reads_back_as_the_same_tally():
    tally = served(120, 4_000, tokens=(30, 7), failovers=1)
    tally.errors.update({"timeout": 2, "caller_error": 1})
    tally.cached_in, tally.estimated_out = 5, 3

    again = Tally.from_row(dict(zip(COLUMNS, tally.values(), strict=True)))

    assert again == tally


def test_the_migration_has_a_column_for_every_count():
    sql = MIGRATION.read_text()
    table = sql[sql.index("CREATE TABLE usage_buckets") : sql.index(") WITHOUT ROWID")]
    table = "\n".join(line.split("--")[0] for line in table.splitlines())
    declared = [name for name in table.replace(",", "\n").split() if name in COLUMNS or name.startswith(("err_", "fb_", "end_"))]
    assert sorted(declared) == sorted(COLUMNS)
    assert len(COLUMNS) + 6 <= 100  # D1: at most 100 columns per table
