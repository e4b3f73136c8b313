"""Whether D1 answers (SPEC §18): what the admin API and the page show while it fails.

Rules:
- A query D1 failed (an error, a timeout, the day's quota spent) marks it failing from that
  moment, with the first error's text; later failures keep the moment and take the newest text.
- A query D1 answered (a constraint it refused included: that is an answer) marks it answering.
- What one isolate saw: another isolate may already know better, and learns at its next query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["D1Health"]


@dataclass(slots=True)
class D1Health:
    failing_since_ms: int | None = None
    error: str | None = None

    def failed(self, now_ms: int, error: str) -> None:
        if self.failing_since_ms is None:
            self.failing_since_ms = now_ms
        self.error = error

    def answered(self) -> None:
        self.failing_since_ms = None
        self.error = None

    @property
    def ok(self) -> bool:
        return self.failing_since_ms is None

    def as_json(self) -> dict[str, Any]:
        """``{"ok", "failing_since", "error"}`` as ``GET /api/admin/status`` shows it."""
        return {"ok": self.ok, "failing_since": self.failing_since_ms, "error": self.error}
