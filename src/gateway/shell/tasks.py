"""Starting work that outlives its handler: a stream's relay, given to ``waitUntil``, and its
stall watchdog, started late."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from pyodide.webloop import PyodideTask

__all__ = ["Later", "start"]

T = TypeVar("T")


def start(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """``coro`` as a task of Pyodide's loop that runs at once, up to its first real wait (Python
    3.12's eager start), instead of after a turn of the event loop: a turn costs Pyodide about
    0.1 ms of CPU. (Pyodide's loop drops ``create_task``'s ``eager_start``, and its
    ``create_task`` fails with a task factory set, so the task is made here, of the loop's own
    kind; its failure is reported by whoever awaits it.) Also from JavaScript's call into Python,
    where no loop is running: Pyodide's is the current one all the same."""
    return PyodideTask(coro, loop=asyncio.get_event_loop(), eager_start=True)


class Later:
    """``work()`` as a task started ``delay_s`` from now: until then a timer, so work that is
    cancelled first (a stream's stall watchdog, when the stream ends before its first look)
    never costs a task. ``cancel()`` stops it, started or not."""

    def __init__(self, delay_s: float, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self._task: asyncio.Task[None] | None = None
        self._timer = asyncio.get_running_loop().call_later(delay_s, self._start, work)

    def _start(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self._task = asyncio.ensure_future(work())

    def cancel(self) -> None:
        self._timer.cancel()
        if self._task is not None:
            self._task.cancel()
