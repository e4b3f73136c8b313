"""Provider keys at rest (SPEC §7, §13): AES-256-GCM in the original server's hex format, in the
``provider_keys`` table, readable by Python ``cryptography`` and the other way round; a damaged
row fails only its own provider."""

from __future__ import annotations

import os

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from support.d1 import d1_execute

SECRET = "sk-live-secret-for-crypto-test-9f8e7d6c"
BODY = {"model": "m", "messages": [{"role": "user", "content": "x"}]}


def _row(gateway, provider_id: int) -> dict:
    rows = d1_execute(
        gateway.persist_to, f"SELECT encrypted_key, iv, auth_tag FROM provider_keys WHERE provider_id = {provider_id}"
    )
    return rows[0]


def test_stored_key_is_never_plain_text(gateway, add_provider):
    add_provider(api_key=SECRET)

    for path in gateway.persist_to.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path.name


def test_key_sealed_in_pyodide_opens_with_python_cryptography(gateway, add_provider):
    provider = add_provider(api_key=SECRET)

    row = _row(gateway, provider["id"])

    assert len(bytes.fromhex(row["iv"])) == 16
    assert len(bytes.fromhex(row["auth_tag"])) == 16
    aes = AESGCM(bytes.fromhex(gateway.encryption_key))
    plain = aes.decrypt(bytes.fromhex(row["iv"]), bytes.fromhex(row["encrypted_key"] + row["auth_tag"]), None)
    assert plain.decode() == SECRET


def test_two_seals_of_one_key_differ(gateway, add_provider):
    first = _row(gateway, add_provider(name="a", api_key=SECRET)["id"])
    second = _row(gateway, add_provider(name="b", api_key=SECRET)["id"])

    assert first["iv"] != second["iv"]
    assert first["encrypted_key"] != second["encrypted_key"]


def test_key_sealed_by_python_cryptography_is_used_by_the_gateway(gateway, admin, api, add_provider, upstream):
    provider = add_provider(models=["m"])
    iv = os.urandom(16)
    sealed = AESGCM(bytes.fromhex(gateway.encryption_key)).encrypt(iv, b"sk-migrated-from-original", None)
    ciphertext, tag = sealed[:-16].hex(), sealed[-16:].hex()
    d1_execute(
        gateway.persist_to,
        f"UPDATE provider_keys SET encrypted_key = '{ciphertext}', iv = '{iv.hex()}', auth_tag = '{tag}' "
        f"WHERE provider_id = {provider['id']}",
    )
    admin.put("/settings", json={}).raise_for_status()  # an admin write: the isolate re-reads D1

    response = api.post("/chat/completions", json=BODY)

    assert response.status_code == 200
    assert upstream.requests[-1].headers["authorization"] == "Bearer sk-migrated-from-original"


DAMAGES = [
    pytest.param("encrypted_key = substr(encrypted_key, 3) || 'ff'", id="tampered-ciphertext"),
    pytest.param("auth_tag = substr(auth_tag, 1, 8)", id="short-tag"),
    pytest.param("iv = 'zz'", id="not-hex"),
]


def damage_key(gateway, admin, provider_id: int, damage: str) -> None:
    d1_execute(gateway.persist_to, f"UPDATE provider_keys SET {damage} WHERE provider_id = {provider_id}")
    admin.put("/settings", json={}).raise_for_status()  # an admin write: the isolate re-reads D1


@pytest.mark.parametrize("damage", DAMAGES)
def test_undecryptable_key_fails_over_to_the_next_provider_without_cooldown(
    gateway, admin, api, add_provider, upstream, damage
):
    damaged = add_provider(name="damaged", priority=1, models=["m"], api_key=SECRET)
    add_provider(name="healthy", priority=2, models=["m"])
    damage_key(gateway, admin, damaged["id"], damage)

    listed = {p["name"]: p for p in admin.get("/providers").json()["providers"]}
    response = api.post("/chat/completions", json=BODY)

    assert (listed["damaged"]["key_hint"], listed["damaged"]["key_error"]) == (None, True)
    assert listed["healthy"]["key_error"] is False
    assert response.status_code == 200
    assert response.headers["x-routed-via"] == "healthy/m"
    assert response.headers["x-fallback-trail"] == "damaged/m: key_unreadable"
    assert len(upstream.requests) == 1  # no upstream call for the damaged provider
    assert admin.get("/status").json()["cooldowns"] == []


@pytest.mark.parametrize("damage", DAMAGES[:1])
def test_only_undecryptable_keys_is_an_error_naming_the_provider(gateway, admin, api, add_provider, upstream, damage):
    provider = add_provider(name="damaged", models=["m"], api_key=SECRET)
    damage_key(gateway, admin, provider["id"], damage)

    response = api.post("/chat/completions", json=BODY)

    assert response.status_code == 502
    message = response.json()["error"]["message"]
    assert "damaged" in message and "cannot be decrypted" in message
    assert upstream.requests == []
    assert SECRET not in response.text


def test_a_row_with_a_broken_model_list_breaks_nothing_else(gateway, admin, api, add_provider):
    broken = add_provider(name="broken", priority=1, models=["m"])
    add_provider(name="fine", priority=2, models=["m"])
    d1_execute(gateway.persist_to, f"UPDATE providers SET models = 'not json' WHERE id = {broken['id']}")
    admin.put("/settings", json={}).raise_for_status()

    listed = {p["name"]: p["models"] for p in admin.get("/providers").json()["providers"]}
    response = api.post("/chat/completions", json=BODY)

    assert listed == {"broken": [], "fine": ["m"]}
    assert response.headers["x-routed-via"] == "fine/m"
