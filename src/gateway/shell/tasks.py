"""Starting work that outlives its handler: a stream's relay, given to ``waitUntil``."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from pyodide.webloop import PyodideTask

__all__ = ["start"]

T = TypeVar("T")


def start(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """``coro`` as a task of the running loop that runs at once, up to its first real wait
    (Python 3.12's eager start), instead of after a turn of the event loop: a turn costs Pyodide
    about 0.1 ms of CPU. (Pyodide's loop drops ``create_task``'s ``eager_start``, and its
    ``create_task`` fails with a task factory set, so the task is made here, of the loop's own
    kind; its failure is reported by ``waitUntil``.)"""
    return PyodideTask(coro, loop=asyncio.get_running_loop(), eager_start=True)
