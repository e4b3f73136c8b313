"""A request's subrequest counter (SPEC §18, ``core/subrequests.py``): the room it leaves, and the
counter each request (and each task it starts) sees."""

from __future__ import annotations

import asyncio

import pytest

from gateway.core import rules
from gateway.core.subrequests import SUBREQUESTS, Subrequests, begin

KEPT = rules.SUBREQUESTS_RESERVED


@pytest.mark.parametrize(
    ("limit", "used", "count", "room"),
    [
        pytest.param(50, 0, 1, True, id="fresh"),
        pytest.param(50, 50 - KEPT - 1, 1, True, id="the-last-one-that-fits"),
        pytest.param(50, 50 - KEPT, 1, False, id="only-the-reserve-left"),
        pytest.param(50, 50 - KEPT - 1, 2, False, id="two-do-not-fit-where-one-does"),
        pytest.param(50, 60, 1, False, id="already-past"),
        pytest.param(1, 0, 1, False, id="a-limit-below-the-reserve"),
        pytest.param(10_000, 9_000, 100, True, id="paid-plan"),
    ],
)
def test_room_keeps_the_reserve(limit, used, count, room):
    assert Subrequests(limit, used).room(count) is room


@pytest.mark.parametrize(("limit", "used", "left"), [(50, 1, 50 - KEPT - 1), (50, 49, 0), (3, 0, 3 - KEPT)])
def test_left_is_what_room_allows(limit, used, left):
    counter = Subrequests(limit, used)

    assert counter.left() == left
    assert counter.room(left) or left == 0
    assert not counter.room(left + 1)


def test_the_default_limit_is_the_free_plans():
    assert Subrequests().limit == rules.DEFAULT_SUBREQUEST_LIMIT == 50


def test_each_request_counts_apart_and_its_tasks_count_on_its_counter():
    """Each request runs in a task of its own (workerd's Python entry awaits the handler as one);
    ``begin`` there gives it a counter that the tasks it starts (a relay, ``waitUntil`` work) add
    to, and that another request running at the same time never sees."""

    async def fetch(n: int, started: asyncio.Event, go: asyncio.Event) -> Subrequests:
        counter = begin()
        SUBREQUESTS.get().used += 1  # a D1 read
        started.set()
        await go.wait()  # the other request runs meanwhile
        for _ in range(n):
            SUBREQUESTS.get().used += 1  # fetches
        await asyncio.ensure_future(_flush())  # work handed on, as to waitUntil
        return counter

    async def _flush() -> None:
        SUBREQUESTS.get().used += 1

    async def main() -> tuple[Subrequests, Subrequests, Subrequests]:
        outside = SUBREQUESTS.get()
        before = outside.used
        a_started, b_started, go = asyncio.Event(), asyncio.Event(), asyncio.Event()
        a = asyncio.ensure_future(fetch(3, a_started, go))
        b = asyncio.ensure_future(fetch(10, b_started, go))
        await a_started.wait()
        await b_started.wait()
        go.set()
        counted = await asyncio.gather(a, b)
        assert outside.used == before  # nothing leaked out of the requests
        return counted[0], counted[1], SUBREQUESTS.get()

    a, b, outside = asyncio.run(main())

    assert (a.used, b.used) == (1 + 3 + 1, 1 + 10 + 1)
    assert outside is not a and outside is not b
