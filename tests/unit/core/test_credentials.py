"""What makes the tokens and ENCRYPTION_KEY usable (issue 8): one rule for the Worker's 503 and
its default client (SPEC §14), the admin API's 400, the local runtime's warning and
scripts/deploy."""

from __future__ import annotations

import pytest

from gateway.core.credentials import default_client_enabled, key_problem, problems, token_problem

GOOD_KEY = "ab" * 32


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        pytest.param(None, "is not set", id="unset"),
        pytest.param("", "is not set", id="empty"),
        pytest.param("change-me-admin-token", "is a placeholder", id="example-admin"),
        pytest.param("change-me-api-token", "is a placeholder", id="example-api"),
        pytest.param("CHANGE-ME-but-long-enough-0123", "is a placeholder", id="any-change-me"),
        pytest.param("x" * 15, "is shorter than 16 characters", id="15-chars"),
        pytest.param("x" * 16, None, id="16-chars"),
        pytest.param("api-0123456789abcdef01234567", None, id="test-token"),
    ],
)
def test_token_problem(token, problem):
    found = token_problem(token)

    assert (found is None) if problem is None else (found is not None and found.startswith(problem))


@pytest.mark.parametrize(
    ("key", "usable"),
    [(None, False), ("", False), ("ab" * 31, False), ("g" * 64, False), (GOOD_KEY, True), (f" {GOOD_KEY} ", True)],
)
def test_key_problem(key, usable):
    assert (key_problem(key) is None) is usable


def test_the_example_env_file_has_three_problems_naming_each_variable():
    env = {"ADMIN_TOKEN": "change-me-admin-token", "API_TOKEN": "change-me-api-token"}

    found = problems(env)

    assert [line.split()[0] for line in found] == ["ADMIN_TOKEN", "API_TOKEN", "ENCRYPTION_KEY"]
    assert "placeholder" in found[0] and "503" in found[0]
    assert "is not set" in found[2]


def test_equal_tokens_are_a_problem_without_showing_them():
    token = "the-same-secret-0123456789"

    found = problems({"ADMIN_TOKEN": token, "API_TOKEN": token, "ENCRYPTION_KEY": GOOD_KEY})

    assert len(found) == 1 and "differ" in found[0]
    assert token not in found[0]


def test_good_credentials_have_no_problem():
    env = {"ADMIN_TOKEN": "admin-0123456789abcdef", "API_TOKEN": "api-0123456789abcdef", "ENCRYPTION_KEY": GOOD_KEY}

    assert problems(env) == []


@pytest.mark.parametrize(
    ("api_token", "enabled"),
    [
        pytest.param(None, False, id="unset"),
        pytest.param("", False, id="empty"),
        pytest.param("change-me-api-token", False, id="placeholder"),
        pytest.param("x" * 15, False, id="short"),
        pytest.param("api-0123456789abcdef", True, id="usable"),
    ],
)
def test_the_default_client_is_on_only_with_a_usable_api_token(api_token, enabled):
    assert default_client_enabled(api_token) is enabled


def test_an_unusable_api_token_warns_that_named_clients_are_still_served():
    env = {"ADMIN_TOKEN": "admin-0123456789abcdef", "API_TOKEN": "change-me-api-token", "ENCRYPTION_KEY": GOOD_KEY}

    (found,) = problems(env)

    assert found.startswith("API_TOKEN is a placeholder")
    assert "default client is off" in found and "named clients" in found
    assert "change-me-api-token" not in found
