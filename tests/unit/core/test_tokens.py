"""Tokens: where callers present them, constant-time comparison, masked hints (SPEC §2.1, §7)."""

from __future__ import annotations

import pytest

from gateway.core.tokens import hint, presented_token, token_matches
from gateway.wire.headers import TOKEN_HEADERS


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        pytest.param({"authorization": "Bearer abc"}, "abc", id="bearer"),
        pytest.param({"authorization": "bearer  abc "}, "abc", id="scheme-case-and-spaces"),
        pytest.param({"x-api-key": "k"}, "k", id="x-api-key"),
        pytest.param({"x-goog-api-key": "g"}, "g", id="x-goog-api-key"),
        pytest.param({"authorization": "Bearer", "x-api-key": "k"}, "k", id="empty-bearer-falls-through"),
        pytest.param({"authorization": "Basic abc", "x-goog-api-key": "g"}, "g", id="basic-ignored"),
        pytest.param({"authorization": "Bearer a", "x-api-key": "k"}, "a", id="first-wins"),
        pytest.param({}, None, id="none"),
    ],
)
def test_presented_token(headers, expected):
    assert presented_token(headers.get, TOKEN_HEADERS) == expected


@pytest.mark.parametrize(
    ("presented", "expected", "matches"),
    [
        ("secret-token", "secret-token", True),
        ("secret-token", "secret-tokem", False),
        ("secret", "secret-token", False),
        (None, "secret-token", False),
        ("", "", False),
        ("x", None, False),
    ],
)
def test_token_matches(presented, expected, matches):
    assert token_matches(presented, expected) is matches


@pytest.mark.parametrize(
    ("secret", "expected"),
    [("sk-1234567890abcd", "sk-1...abcd"), ("12345678", "****"), ("abc", "****"), ("", None), (None, None)],
)
def test_hint(secret, expected):
    assert hint(secret) == expected
