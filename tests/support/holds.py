"""How long a relay held each event of a paced answer (SPEC §18), seen from outside: the fake
upstream notes when it wrote each event (``Sse.sent``), the caller when each arrived. The answer's
text pieces are `` t0``, `` t1``, …, so each can be found in whatever the surface made of it.

Used by scripts/bench.py (the worst hold beside the floor's) and the pacing tests.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import httpx

from support.upstream import Sse, chunk

__all__ = ["Holds", "paced_answer", "read_timed"]

# A piece's mark, whole: a non-digit must follow its number.
_MARK = re.compile(rb" t(\d+)(?=\D)")


def paced_answer(events: int, pace_s: float, model: str = "m", pauses: dict[int, float] | None = None) -> Sse:
    """``events`` text pieces `` t<i>`` then the finish, one per upstream write, ``pace_s`` apart;
    ``pauses``: extra seconds of silence before some pieces (a model that slows)."""
    pieces = [chunk(model, f" t{i}") for i in range(events)]
    return Sse([*pieces, chunk(model, None, "stop")], pace_s=pace_s, pauses=pauses or {})


def read_timed(client: httpx.Client, url: str, body: dict, headers: dict) -> list[tuple[float, bytes]]:
    """Send ``body`` and read the answer to its end: each read with the monotonic time it came."""
    reads = []
    with client.stream("POST", url, json=body, headers=headers) as response:
        response.raise_for_status()
        for data in response.iter_raw():
            reads.append((time.monotonic(), data))
    return reads


@dataclass(frozen=True)
class Holds:
    """Per text piece, how long it was held: arrival less the upstream's write (s)."""

    held: dict[int, float]

    @classmethod
    def of(cls, reads: list[tuple[float, bytes]], sent: list[float]) -> Holds:
        seen = b""
        held: dict[int, float] = {}
        for at, data in reads:
            start = max(0, len(seen) - 16)  # a mark may straddle two reads
            seen += data
            for found in _MARK.finditer(seen, start):
                index = int(found.group(1))
                if index not in held and index < len(sent):
                    held[index] = at - sent[index]
        return cls(held)

    @property
    def worst_ms(self) -> float:
        return max(self.held.values(), default=0.0) * 1000

    def over(self, allowed_ms, sent: list[float]) -> dict[int, float]:
        """The pieces held longer than ``allowed_ms(ms since the first piece)`` allows, by how much (ms)."""
        first = sent[0]
        excess = {i: held * 1000 - allowed_ms((sent[i] - first) * 1000) for i, held in self.held.items()}
        return {i: round(ms, 1) for i, ms in excess.items() if ms > 0}
