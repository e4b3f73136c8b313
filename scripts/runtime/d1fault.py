"""D1 failures on demand, in the local runtime only (issue 30; SPEC §18): the dev main module
(``workerd_entry.py``, with the D1 trace on: the end-to-end tests) puts ``FaultyD1`` around
``env.DB`` and answers ``/api/dev/d1-fault`` before the Worker's routes. Dev only: wrangler
deploys ``src/entry.py``, and this file is never in ``src/``.

Modes (one per isolate, module state; the first request's ``LOCAL_RUNTIME_D1_FAULT`` binding,
which workerd.mjs passes from the environment, is the initial one, so a runtime can start failing):

- ``off``: every query passes (the default).
- ``all``: every query fails.
- ``writes``: a statement that writes (INSERT, UPDATE, DELETE, REPLACE), and a batch holding one,
  fails; reads pass.
- ``quota:N``: queries pass until N more rows were written (D1's own count, each result's
  ``meta.rows_written``), then every query fails, as the free plan's daily quota does.

A failure is D1's own: the query is swapped at execution (``run``, ``all``, ``first``, ``raw``,
``batch``, ``exec``; never at ``prepare`` or ``bind``, which the Worker does first) for one against
a table that does not exist, so the Worker gets the ``JsException`` a failing D1 raises
(``D1_ERROR: no such table: …``) through the same SDK call.

Control: ``GET /api/dev/d1-fault`` → ``{"mode", "rows_left"}``; ``POST`` with ``{"mode": "…"}``
sets it and answers the same plus ``was``, the mode before (400 for an unknown mode). Both need
the env ``ADMIN_TOKEN`` as a Bearer token (not D1's: D1 may be failing). tests/support/runtime.py:
``Gateway.d1_fault(mode)``.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from workers import Response

__all__ = ["PATH", "FaultyD1", "answer", "parse_mode"]

PATH = "/api/dev/d1-fault"
_ENV_NAME = "LOCAL_RUNTIME_D1_FAULT"
_WRITE = re.compile(r"^\s*(?:INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)
_WRITE_ANYWHERE = re.compile(r"\b(?:INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)
_QUOTA = re.compile(r"^quota:(\d+)$")
# The failing query: its error names the fault, so a test reading the Worker's redacted error sees it.
_FAILING_SQL = 'SELECT 1 FROM "local runtime D1 fault ({})"'


class _Fault:
    """The isolate's mode: ``mode`` is ``off``, ``all``, ``writes`` or ``quota``; ``rows_left``
    counts down in ``quota`` mode (at 0 or less, every query fails)."""

    def __init__(self) -> None:
        self.started = False
        self.mode = "off"
        self.rows_left = 0

    def set(self, mode: str, rows: int = 0) -> str:
        """Switch to ``mode``; the mode it was in."""
        was = self.json()["mode"]
        self.started = True
        self.mode, self.rows_left = mode, rows
        return was

    def failing(self, writes: bool) -> str | None:
        """Why a query fails now (``writes``: it writes), or None when it passes."""
        if self.mode == "all":
            return "all"
        if self.mode == "writes" and writes:
            return "writes"
        if self.mode == "quota" and self.rows_left <= 0:
            return "quota spent"
        return None

    def wrote(self, results: Any) -> None:
        if self.mode == "quota":
            self.rows_left -= sum(_rows_written(r) for r in (results if isinstance(results, list) else [results]))

    def json(self) -> dict[str, Any]:
        mode = f"quota:{max(self.rows_left, 0)}" if self.mode == "quota" else self.mode
        return {"mode": mode, "rows_left": self.rows_left if self.mode == "quota" else None}


_fault = _Fault()


def parse_mode(text: Any) -> tuple[str, int] | None:
    """``(mode, rows)`` for ``off``, ``all``, ``writes`` or ``quota:N``; None for anything else."""
    if text in ("off", "all", "writes"):
        return text, 0
    found = _QUOTA.match(text) if isinstance(text, str) else None
    return ("quota", int(found.group(1))) if found else None


def _rows_written(result: Any) -> int:
    """D1's ``meta.rows_written`` of a result (the SDK hands a dict; a JS object has attributes)."""
    meta = result.get("meta") if isinstance(result, dict) else getattr(result, "meta", None)
    if meta is None:
        return 0
    rows = meta.get("rows_written") if isinstance(meta, dict) else getattr(meta, "rows_written", 0)
    return int(rows or 0)


def _writes(sql: str) -> bool:
    # A WITH clause may lead a write; anything else that writes starts with its verb.
    return bool(_WRITE.match(sql) or (sql.lstrip()[:4].upper() == "WITH" and _WRITE_ANYWHERE.search(sql)))


class _FaultyStatement:
    """A prepared statement (the SDK's wrapper) that fails at execution while the mode says so."""

    def __init__(self, db: Any, statement: Any, writes: bool) -> None:
        self._db, self._statement, self._writes = db, statement, writes

    def bind(self, *values: Any) -> _FaultyStatement:
        return _FaultyStatement(self._db, self._statement.bind(*values), self._writes)

    async def _execute(self, method: str, *args: Any) -> Any:
        await _fail_if(self._db, self._writes)
        result = await getattr(self._statement, method)(*args)
        _fault.wrote(result)
        return result

    async def run(self, *args: Any) -> Any:
        return await self._execute("run", *args)

    async def all(self, *args: Any) -> Any:
        return await self._execute("all", *args)

    async def first(self, *args: Any) -> Any:
        return await self._execute("first", *args)

    async def raw(self, *args: Any) -> Any:
        return await self._execute("raw", *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._statement, name)


async def _fail_if(db: Any, writes: bool) -> None:
    """Raise D1's own error (a ``JsException``) when the mode fails this query."""
    why = _fault.failing(writes)
    if why is not None:
        await db.prepare(_FAILING_SQL.format(why)).run()
        raise AssertionError("the fault's query against a missing table passed")  # D1 itself changed


def _start(env: Any) -> None:
    """The isolate's initial mode, from the ``LOCAL_RUNTIME_D1_FAULT`` binding, once."""
    if _fault.started:
        return
    initial = parse_mode(getattr(env, _ENV_NAME, None) or "off")
    if initial is None:
        raise ValueError(f"{_ENV_NAME}: off, all, writes or quota:N")
    _fault.set(*initial)


class FaultyD1:
    """``env.DB`` with the isolate's fault mode applied at execution."""

    def __init__(self, db: Any, env: Any) -> None:
        self._db = db
        _start(env)

    def prepare(self, sql: str) -> _FaultyStatement:
        return _FaultyStatement(self._db, self._db.prepare(sql), _writes(sql))

    async def batch(self, statements: list[Any]) -> Any:
        unwrapped = [getattr(s, "_statement", s) for s in statements]
        await _fail_if(self._db, any(getattr(s, "_writes", False) for s in statements))
        results = await self._db.batch(unwrapped)
        _fault.wrote(list(results))
        return results

    async def exec(self, sql: str) -> Any:
        await _fail_if(self._db, _writes(sql))
        return await self._db.exec(sql)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def _json(body: dict[str, Any], status: int = 200) -> Response:
    return Response(
        json.dumps(body), status=status, headers={"content-type": "application/json", "cache-control": "no-store"}
    )


async def answer(request: Any, env: Any) -> Response | None:
    """The control route's answer, or None when ``request`` is not for it (the Worker's then)."""
    if urlsplit(str(request.url)).path.rstrip("/") != PATH:
        return None
    token = getattr(env, "ADMIN_TOKEN", None)
    if not token or request.headers.get("authorization") != f"Bearer {token}":
        return _json(
            {"error": {"message": "the env ADMIN_TOKEN as a Bearer token", "type": "authentication_error"}}, 401
        )
    _start(env)
    if request.method == "POST":
        try:
            asked = (await request.json()).get("mode")
        except Exception:  # noqa: BLE001 - any unreadable body is the caller's mistake
            asked = None
        mode = parse_mode(asked)
        if mode is None:
            return _json(
                {"error": {"message": "mode: off, all, writes or quota:N", "type": "invalid_request_error"}}, 400
            )
        was = _fault.set(*mode)
        return _json({**_fault.json(), "was": was})
    if request.method != "GET":
        return _json({"error": {"message": "GET or POST", "type": "invalid_request_error"}}, 405)
    return _json(_fault.json())
