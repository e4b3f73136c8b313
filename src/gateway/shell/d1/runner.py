"""How every D1 statement is sent (SPEC §7, §18): one round trip, one subrequest, one way to fail.

``db`` is the SDK-wrapped binding (``self.env.DB``): ``None`` binds as NULL, rows come back as
dicts. A D1 failure becomes ``StorageError`` naming D1's error (and marks ``health()`` failing until
D1 answers again); a duplicate provider or client name becomes ``ConflictError``.
"""

from __future__ import annotations

import time
from typing import Any

from pyodide.ffi import JsException

from gateway.core.classify import redact
from gateway.core.d1health import D1Health
from gateway.core.subrequests import SUBREQUESTS
from gateway.errors import ConflictError, StorageError

__all__ = ["batch", "health", "run"]

# What a D1 error may show of itself, redacted: its first line is what tells the cause.
_ERROR_MAX_CHARS = 200
# Unique columns whose violation is the caller's (409), with what to tell them.
_CONFLICTS = {
    "providers.name": ("A provider with this name already exists.", "name"),
    "clients.name": ("A client with this name already exists.", "name"),
}


def health() -> D1Health:
    """What this isolate saw of D1 (``core/d1health.py``), made at the first query (never at
    import: the deploy snapshot holds no state)."""
    global _health
    if _health is None:
        _health = D1Health()
    return _health


_health: D1Health | None = None


def _failed(what: str, exc: JsException) -> Exception:
    for column, (message, param) in _CONFLICTS.items():
        if f"UNIQUE constraint failed: {column}" in str(exc):
            health().answered()
            return ConflictError(message, param=param)
    error = redact(str(exc))[:_ERROR_MAX_CHARS]
    health().failed(int(time.time() * 1000), error)
    return StorageError(f"D1 failed to {what}: {error}")


async def run(what: str, target: Any, method: str = "run", *args: Any) -> Any:
    """``target.method(*args)`` (a statement's ``run``/``all``, a binding's ``batch``): one round
    trip, one subrequest (SPEC §18); a failure becomes ours and marks D1 failing, an answer marks
    it answering."""
    SUBREQUESTS.get().used += 1
    try:
        result = await getattr(target, method)(*args)
    except JsException as exc:
        raise _failed(what, exc) from exc
    health().answered()
    return result


async def batch(what: str, db: Any, statements: list[Any]) -> list[Any]:
    """``statements`` in one batch (one round trip, one transaction), their results in order."""
    return list(await run(what, db, "batch", statements))
