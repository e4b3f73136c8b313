"""Decrypted keys remembered by key id (``core/keyring.py``; issue 10 review, M6): a warm admin
listing decrypts nothing it already decrypted, and a snapshot hands its keys on to the next."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from gateway.core.config import ConfigCache, build_config
from gateway.core.keyring import KeyMemo
from gateway.core.providers import ProviderKey, SealedKey
from support.factories import provider

KEY_HEX = "00" * 32


@dataclass
class FakeCrypto:
    """Counts decryptions; a sealed value whose ciphertext is ``bad`` cannot be decrypted."""

    opened: list[SealedKey] = field(default_factory=list)

    async def __call__(self, sealed: SealedKey) -> str | None:
        self.opened.append(sealed)
        return None if sealed.ciphertext == "bad" else f"sk-plain-{sealed.ciphertext}"


def key(id_: int, ciphertext: str | None = None) -> ProviderKey:
    return ProviderKey(id_, SealedKey(ciphertext or f"c{id_}", "00", "00"))


def test_a_second_listing_decrypts_nothing():
    memo, crypto = KeyMemo(), FakeCrypto()
    keys = [key(n) for n in range(1, 51)] + [key(99, "bad")]

    first = asyncio.run(memo.open(keys, crypto))
    second = asyncio.run(memo.open(keys, crypto))

    assert len(crypto.opened) == len(keys)  # each key once, the undecryptable one too
    assert first == second
    assert first[1] == "sk-plain-c1" and first[99] is None


def test_only_keys_not_remembered_are_decrypted():
    memo, crypto = KeyMemo(), FakeCrypto()
    memo.remember(key(1), "sk-known")

    plains = asyncio.run(memo.open([key(1), key(2)], crypto))

    assert plains == {1: "sk-known", 2: "sk-plain-c2"}
    assert crypto.opened == [key(2).sealed]


def test_a_changed_sealed_value_is_decrypted_again():
    # A row edited by hand (the ciphertext replaced) keeps its id: the memo must not answer for it.
    memo, crypto = KeyMemo(), FakeCrypto()
    asyncio.run(memo.open([key(1)], crypto))

    plains = asyncio.run(memo.open([key(1, "bad")], crypto))

    assert plains == {1: None} and len(crypto.opened) == 2
    assert memo.plain(key(1, "bad")) is None and not memo.known(key(1))


def _snapshot(keys: int, encryption_key: str = KEY_HEX):
    return build_config([provider(1, keys=keys)], {}, {"ENCRYPTION_KEY": encryption_key}, now_ms=0)


def test_the_next_snapshot_inherits_the_decrypted_keys_it_still_holds():
    cache = ConfigCache()
    old = _snapshot(keys=3)
    cache.put(old, cache.generation, 1)
    for k in old.providers[0].keys:
        old.key_memo.remember(k, f"sk-{k.id}")
    cache.invalidate()  # an admin write deleted key 103
    new = build_config([provider(1, keys=2)], {}, {"ENCRYPTION_KEY": KEY_HEX}, now_ms=1)

    cache.put(new, cache.generation, 2)

    assert [new.key_memo.plain(k) for k in new.providers[0].keys] == ["sk-101", "sk-102"]
    assert len(new.key_memo) == 2  # the deleted key's text is not carried on


def test_no_inheritance_under_another_encryption_key():
    cache = ConfigCache()
    old = _snapshot(keys=1)
    cache.put(old, cache.generation, 1)
    old.key_memo.remember(old.providers[0].keys[0], "sk-101")
    cache.invalidate()
    new = _snapshot(keys=1, encryption_key="11" * 32)

    cache.put(new, cache.generation, 2)

    assert len(new.key_memo) == 0
