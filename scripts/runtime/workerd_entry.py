"""The workerd runtime's main module when the D1 trace is on (LOCAL_RUNTIME_TRACE_D1=1, the
end-to-end tests and the benchmarks; workerd.mjs): the Worker's own ``Default`` from ``entry.py``,
whose ``env.DB`` prints to stderr

- each D1 statement prepared as ``[d1] <sql>``, and ``[d1] batch`` for each batch
  (tests/support/runtime.py reads them);
- after each batch the rows it wrote as D1 bills them, ``[d1-rows] N`` (scripts/bench_usage_rows);
- after every D1 execution, a batch or one statement's ``run``/``all``/``first``/``raw``, what D1
  bills for it, ``[d1-billed] read=R written=W statements=S by=B``, and for each of its statements
  ``[d1-stmt] read=R written=W by=B <sql's first words>`` (Miniflare's ``meta.rows_read`` and
  ``meta.rows_written``: index rows included; ``B`` is the simulated isolate whose request made
  it, ``cron`` for a Cron Trigger's run, ``-`` for anything else);
- once a simulated isolate's request and all of its ``waitUntil`` work are done, what it made of
  D1, ``[d1-request] isolate=K calls=C statements=S read=R written=W`` (``[d1-cron] …`` for a
  Cron Trigger's run): scripts/bench_d1_day.py reads these.

It also simulates several isolates in one runtime (``_Isolates``): a request carrying
``X-Dev-Isolate: K`` is served with isolate memory number K (the header is removed before the
Worker sees it). It also makes D1 fail on demand (``d1fault.py``, whose control route it answers
before the Worker's routes). Dev only: wrangler deploys ``src/entry.py``, and this file is never in
``src/``.
"""

import asyncio
import contextvars
import sys

import _local_d1fault as d1fault
import js
from pyodide.ffi import to_js
from workers import Request

import entry
from gateway import isolate


def _rows_written(result) -> int:
    meta = getattr(result, "meta", None)
    return int(getattr(meta, "rows_written", 0) or 0) if meta is not None else 0


def _field(value, name):
    """``value.name`` or ``value[name]`` (D1's results cross as JS objects or Python dicts), None."""
    found = getattr(value, name, None)
    if found is None:
        try:
            found = value[name]
        except (KeyError, TypeError, IndexError, AttributeError):
            return None
    return found


def _billed(result) -> tuple[int, int]:
    """The rows read and written D1 bills for one statement's result."""
    meta = _field(result, "meta")
    if meta is None:
        return 0, 0
    return int(_field(meta, "rows_read") or 0), int(_field(meta, "rows_written") or 0)


class _Tally:
    """What one request (or cron run) made of D1, its ``waitUntil`` work included."""

    def __init__(self, by: str) -> None:
        self.by = by  # the simulated isolate's number, or "cron"
        self.calls = self.statements = self.read = self.written = 0
        self.pending: list = []  # the awaitables given to waitUntil, not yet awaited

    def add(self, billed: list[tuple[int, int]]) -> None:
        self.calls += 1
        self.statements += len(billed)
        self.read += sum(r for r, _ in billed)
        self.written += sum(w for _, w in billed)

    def line(self) -> str:
        counts = f"calls={self.calls} statements={self.statements} read={self.read} written={self.written}"
        return f"[d1-cron] {counts}" if self.by == "cron" else f"[d1-request] isolate={self.by} {counts}"

    async def report_when_done(self) -> None:
        """Print the tally once every awaitable given to waitUntil is done (each may add more)."""
        while self.pending:
            try:
                await self.pending.pop(0)
            except Exception:  # noqa: BLE001, S110 - its failure is waitUntil's to report
                pass
        print(self.line(), file=sys.stderr)


_TALLY: contextvars.ContextVar = contextvars.ContextVar("dev_d1_tally", default=None)


def _bill(sqls: list[str], results) -> None:
    billed = [_billed(result) for result in results]
    tally = _TALLY.get()
    by = "-" if tally is None else tally.by
    for sql, (read, written) in zip(sqls, billed, strict=False):
        print(f"[d1-stmt] read={read} written={written} by={by} {' '.join(sql.split())[:200]}", file=sys.stderr)
    total_read, total_written = sum(r for r, _ in billed), sum(w for _, w in billed)
    print(f"[d1-billed] read={total_read} written={total_written} statements={len(billed)} by={by}", file=sys.stderr)
    if tally is not None:
        tally.add(billed)


class _TracedStatement:
    """A prepared D1 statement that reports what each execution was billed."""

    def __init__(self, statement, sql: str) -> None:
        self.statement = statement
        self.sql = sql

    def bind(self, *values):
        return _TracedStatement(self.statement.bind(*values), self.sql)

    async def run(self, *args):
        result = await self.statement.run(*args)
        _bill([self.sql], [result])
        return result

    async def all(self, *args):
        result = await self.statement.all(*args)
        _bill([self.sql], [result])
        return result

    async def first(self, column=None):
        # D1's first() runs the whole query and returns its first row without the meta; all() is
        # the same query, billed the same, and keeps it.
        result = await self.statement.all()
        _bill([self.sql], [result])
        rows = _field(result, "results")
        row = rows[0] if rows is not None and len(rows) else None
        return row if row is None or column is None else _field(row, column)

    async def raw(self, *args):
        # raw() returns no meta: counted as a statement, its rows unknown (the Worker uses none).
        result = await self.statement.raw(*args)
        _bill([self.sql], [None])
        return result

    def __getattr__(self, name):
        return getattr(self.statement, name)


class _TracedD1:
    """``env.DB`` as the Worker sees it, printing what it runs."""

    def __init__(self, db):
        self._db = db

    def prepare(self, sql):
        print(f"[d1] {sql}", file=sys.stderr)
        return _TracedStatement(self._db.prepare(sql), sql)

    async def batch(self, statements):
        print("[d1] batch", file=sys.stderr)
        statements = list(statements)
        results = await self._db.batch([getattr(s, "statement", s) for s in statements])
        print(f"[d1-rows] {sum(_rows_written(result) for result in results)}", file=sys.stderr)
        _bill([getattr(s, "sql", "?") for s in statements], list(results))
        return results

    def __getattr__(self, name):
        return getattr(self._db, name)


class _TracedEnv:
    def __init__(self, env):
        self._env = env

    def __getattr__(self, name):
        value = getattr(self._env, name)
        return _TracedD1(d1fault.FaultyD1(value, self._env)) if name == "DB" else value


class _TalliedContext:
    """``ctx`` as the Worker sees it: what it gives to ``waitUntil`` is also awaited by the
    request's tally before it reports."""

    def __init__(self, ctx) -> None:
        self._ctx = ctx

    def waitUntil(self, awaitable) -> None:  # noqa: N802 - the JS name
        tally = _TALLY.get()
        if tally is not None:
            if asyncio.isfuture(awaitable) or asyncio.iscoroutine(awaitable):
                awaitable = asyncio.ensure_future(awaitable)
            tally.pending.append(awaitable)
        self._ctx.waitUntil(awaitable)

    def untallied_wait_until(self, awaitable) -> None:
        self._ctx.waitUntil(awaitable)

    def __getattr__(self, name):
        return getattr(self._ctx, name)


class _Isolates:
    """Several isolates' memories in one runtime, a simulation of production's many isolates
    (scripts/bench_d1_day.py): ``X-Dev-Isolate: K`` selects memory K for the request.

    ``gateway.isolate.current()`` is replaced by one that answers the request's memory, held in a
    context variable: asyncio copies the context into every task a request starts, so work that
    outlives the answer (a usage flush or a pin write given to ``waitUntil``, a stream's relay)
    reads and writes the memory of the isolate that started it, even while other requests are
    served. Requests without the header, and the cron, use the runtime's own memory. Limit: only
    what the Worker keeps in ``Isolate`` is per simulated isolate; module-level state elsewhere
    (the request-id prefix, the imported encryption key) is shared, as is the runtime's CPU."""

    HEADER = "x-dev-isolate"

    def __init__(self) -> None:
        self._memories: dict[int, isolate.Isolate] = {}
        self._selected: contextvars.ContextVar = contextvars.ContextVar("dev_isolate", default=None)
        self._own_current = isolate.current

    def install(self) -> None:
        isolate.current = self.current

    def current(self) -> isolate.Isolate:
        selected = self._selected.get()
        return self._own_current() if selected is None else selected

    def select_own(self) -> None:
        self._selected.set(None)

    def select(self, request: Request) -> tuple[Request, str | None]:
        """The request without the header, with its isolate selected, and the isolate's label;
        the request as it is and None when it names none (the runtime's own memory serves it)."""
        value = request.js_object.headers.get(self.HEADER)
        if value is None or not str(value).isdigit():
            self.select_own()
            return request, None
        number = int(str(value))
        if number not in self._memories:
            self._memories[number] = isolate.Isolate()
        self._selected.set(self._memories[number])
        headers = js.Headers.new(request.js_object.headers)
        headers.delete(self.HEADER)
        init = to_js({"headers": headers}, dict_converter=js.Object.fromEntries)
        return Request(js.Request.new(request.js_object, init)), str(number)


_ISOLATES = _Isolates()
_ISOLATES.install()


class Default(entry.Default):
    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.env = _TracedEnv(self.env)
        self.ctx = _TalliedContext(self.ctx)

    async def fetch(self, request):
        fault = await d1fault.answer(request, self.env)
        if fault is not None:
            return fault
        request, label = _ISOLATES.select(request)
        if label is None:  # not a simulated isolate's request: nothing tallied
            _TALLY.set(None)
            return await super().fetch(request)
        tally = _Tally(label)
        _TALLY.set(tally)
        response = await super().fetch(request)
        self.ctx.untallied_wait_until(asyncio.ensure_future(tally.report_when_done()))
        return response

    async def scheduled(self, controller):
        _ISOLATES.select_own()
        tally = _Tally("cron")
        _TALLY.set(tally)
        await super().scheduled(controller)
        await tally.report_when_done()
