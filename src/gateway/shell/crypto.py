"""Provider keys sealed with AES-256-GCM through WebCrypto (SPEC §7).

Storage format of the original FreeLLMAPI server: hex ciphertext, hex 16-byte IV, hex 16-byte
tag. WebCrypto's AES-GCM output is ciphertext‖tag, so ``seal`` splits it and ``open_sealed`` joins
it. ``ENCRYPTION_KEY`` is 64 hex characters used as the raw key (no derivation). The CryptoKey
is imported once per isolate, on the first request that needs it (never at import: a JS object
cannot be part of the deploy snapshot).
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

import js
from pyodide.ffi import JsException, to_js

from gateway.core.credentials import key_problem
from gateway.core.providers import SealedKey
from gateway.errors import CryptoError
from gateway.shell.http import plain

if TYPE_CHECKING:
    from js import CryptoKey

__all__ = ["open_sealed", "seal"]

IV_BYTES = 16
TAG_BYTES = 16

# (SHA-256 of the key text, imported key): re-imported only if ENCRYPTION_KEY changes.
_imported: tuple[bytes, CryptoKey] | None = None


def _raw_key(key_hex: str | None) -> bytes:
    problem = key_problem(key_hex)
    if key_hex is None or problem is not None:
        raise CryptoError(f"ENCRYPTION_KEY {problem}: provider keys cannot be stored or read.")
    return bytes.fromhex(key_hex.strip())


async def _key(key_hex: str | None) -> CryptoKey:
    global _imported
    raw = _raw_key(key_hex)
    fingerprint = hashlib.sha256(raw).digest()
    if _imported is None or _imported[0] != fingerprint:
        try:
            key = await js.crypto.subtle.importKey(
                "raw", to_js(raw), plain({"name": "AES-GCM"}), False, to_js(["encrypt", "decrypt"])
            )
        except JsException as exc:
            raise CryptoError("ENCRYPTION_KEY could not be imported as an AES-256 key.") from exc
        _imported = (fingerprint, key)
    return _imported[1]


async def seal(plaintext: str, key_hex: str | None) -> SealedKey:
    """Encrypt ``plaintext`` with a fresh random IV. Raises ``CryptoError``."""
    key = await _key(key_hex)
    iv = os.urandom(IV_BYTES)
    try:
        out = await js.crypto.subtle.encrypt(
            plain({"name": "AES-GCM", "iv": to_js(iv), "tagLength": TAG_BYTES * 8}),
            key,
            to_js(plaintext.encode()),
        )
    except JsException as exc:
        raise CryptoError("A provider key could not be encrypted.") from exc
    sealed = out.to_bytes()
    return SealedKey(ciphertext=sealed[:-TAG_BYTES].hex(), iv=iv.hex(), tag=sealed[-TAG_BYTES:].hex())


async def open_sealed(sealed: SealedKey, key_hex: str | None) -> str:
    """Decrypt a stored key. Raises ``CryptoError`` for a tampered value, a short tag, a wrong
    ``ENCRYPTION_KEY`` or malformed hex; the message never contains key material."""
    key = await _key(key_hex)
    try:
        ciphertext = bytes.fromhex(sealed.ciphertext)
        iv = bytes.fromhex(sealed.iv)
        tag = bytes.fromhex(sealed.tag)
    except ValueError as exc:
        raise CryptoError("The stored key is not valid hex.") from exc
    if len(iv) != IV_BYTES or len(tag) != TAG_BYTES:
        raise CryptoError("The stored key has a wrong IV or tag length.")
    try:
        out = await js.crypto.subtle.decrypt(
            plain({"name": "AES-GCM", "iv": to_js(iv), "tagLength": TAG_BYTES * 8}),
            key,
            to_js(ciphertext + tag),
        )
    except JsException as exc:
        raise CryptoError("The stored key cannot be decrypted (tampered, or ENCRYPTION_KEY changed).") from exc
    try:
        return out.to_bytes().decode()
    except UnicodeDecodeError as exc:
        raise CryptoError("The stored key does not decode as text.") from exc
