"""The workerd runtime's main module when the D1 trace is on (LOCAL_RUNTIME_TRACE_D1=1, the
end-to-end tests; workerd.mjs): the Worker's own ``Default`` from ``entry.py``, whose ``env.DB``
prints each D1 statement prepared, and ``batch`` for each batch, to stderr as ``[d1] <sql>``
(tests/support/runtime.py reads them), and after each batch the rows it wrote as D1 bills them,
``[d1-rows] N`` (scripts/bench_usage_rows reads them). Dev only: wrangler deploys ``src/entry.py``,
and this file is never in ``src/``. It also makes D1 fail on demand (``d1fault.py``, whose control
route it answers before the Worker's routes).
"""

import sys

import _local_d1fault as d1fault
import entry


def _rows_written(result) -> int:
    meta = getattr(result, "meta", None)
    return int(getattr(meta, "rows_written", 0) or 0) if meta is not None else 0


class _TracedD1:
    """``env.DB`` as the Worker sees it, printing what it runs."""

    def __init__(self, db):
        self._db = db

    def prepare(self, sql):
        print(f"[d1] {sql}", file=sys.stderr)
        return self._db.prepare(sql)

    async def batch(self, statements):
        print("[d1] batch", file=sys.stderr)
        results = await self._db.batch(statements)
        print(f"[d1-rows] {sum(_rows_written(result) for result in results)}", file=sys.stderr)
        return results

    def __getattr__(self, name):
        return getattr(self._db, name)


class _TracedEnv:
    def __init__(self, env):
        self._env = env

    def __getattr__(self, name):
        value = getattr(self._env, name)
        return _TracedD1(d1fault.FaultyD1(value, self._env)) if name == "DB" else value


class Default(entry.Default):
    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.env = _TracedEnv(self.env)

    async def fetch(self, request):
        return await d1fault.answer(request, self.env) or await super().fetch(request)
