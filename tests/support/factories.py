"""Builders shared by the core tests: providers, candidates and a fake clock."""

from __future__ import annotations

from gateway.core.attempt import Candidate
from gateway.core.kinds import Kind
from gateway.core.loop import Clock
from gateway.core.modelfacts import Facts
from gateway.core.providers import Provider, ProviderKey, SealedKey

# 2023-11-14 22:13:20 UTC: far from a UTC midnight, so quota cooldowns are not floored.
T0 = 1_700_000_000_000


def provider(
    id_: int = 1,
    *,
    models: tuple[str, ...] = ("m",),
    priority: int = 100,
    timeout_ms: int | None = None,
    enabled: bool = True,
    name: str | None = None,
    keys: int = 1,
    disabled_keys: tuple[int, ...] = (),
    kinds: tuple[tuple[str, Kind], ...] = (),
    facts: dict[str, Facts] | None = None,
) -> Provider:
    """A provider whose ``keys`` keys have ids ``id_*100 + 1``, ``+ 2`` … (``disabled_keys``:
    those of them that are disabled). ``facts``: the admin's facts of its models (SPEC §19)."""
    return Provider(
        id=id_,
        name=name or f"p{id_}",
        platform="custom",
        base_url="http://upstream.invalid/v1",
        models=models,
        priority=priority,
        timeout_ms=timeout_ms,
        enabled=enabled,
        keys=tuple(
            ProviderKey(id_ * 100 + n, SealedKey("00", "00", "00"), id_ * 100 + n not in disabled_keys)
            for n in range(1, keys + 1)
        ),
        created_at=0,
        updated_at=0,
        kinds=kinds,
        declared=facts or {},
        facts=facts or {},
    )


def candidate(id_: int = 1, model: str = "m") -> Candidate:
    return Candidate(provider(id_, models=(model,)), model)


class FakeClock:
    """An int the test advances; ``sleep`` advances it and records the wait."""

    def __init__(self, now: int = T0) -> None:
        self.now = now
        self.slept: list[int] = []

    def now_ms(self) -> int:
        return self.now

    async def sleep(self, ms: int) -> None:
        self.slept.append(ms)
        self.now += ms

    @property
    def clock(self) -> Clock:
        return Clock(self.now_ms, self.sleep)
