"""Settings precedence through a real Worker env (SPEC §5.2): D1 row > env var > default, and an
env value that is not valid falls back to the default. Uses its own runtime, started with env."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from support.runtime import Gateway


@pytest.fixture(scope="module")
def env_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    running = Gateway.start(
        tmp_path_factory.mktemp("env-gateway"),
        extra_env={
            "COOLDOWN_CEILING_MS": "120000",
            "MAX_CONSECUTIVE_UPSTREAM_FAILS": "often",
            "MODEL_ALIASES": '{"claude-*haiku*": "small", "claude-*": "auto"}',
            "STREAM_RESCUE": "1",
        },
    )
    yield running
    running.stop()


def test_env_over_default_and_d1_over_env(env_gateway):
    url = f"{env_gateway.url}/api/admin/settings"
    auth = {"authorization": f"Bearer {env_gateway.admin_token}"}

    settings = httpx.get(url, headers=auth).json()["settings"]
    assert settings["routing_cooldown_ceiling_ms"].items() >= {"value": 120_000, "source": "env"}.items()
    assert settings["max_consecutive_upstream_fails"].items() >= {"value": 0, "source": "default"}.items()
    assert settings["stream_rescue"].items() >= {"value": 1, "source": "env"}.items()

    updated = httpx.put(url, headers=auth, json={"routing_cooldown_ceiling_ms": 600_000, "stream_rescue": 0})
    assert (
        updated.json()["settings"]["routing_cooldown_ceiling_ms"].items() >= {"value": 600_000, "source": "d1"}.items()
    )
    # A D1 row of 0 turns off what the env turned on (SPEC §16); null gives the env its say again.
    assert updated.json()["settings"]["stream_rescue"].items() >= {"value": 0, "source": "d1"}.items()
    back = httpx.put(url, headers=auth, json={"stream_rescue": None}).json()["settings"]["stream_rescue"]
    assert back.items() >= {"value": 1, "source": "env"}.items()


def test_model_aliases_from_env_then_d1(env_gateway):
    url = f"{env_gateway.url}/api/admin/settings"
    auth = {"authorization": f"Bearer {env_gateway.admin_token}"}

    aliases = httpx.get(url, headers=auth).json()["settings"]["model_aliases"]
    assert aliases == {"value": {"claude-*haiku*": "small", "claude-*": "auto"}, "source": "env"}

    saved = httpx.put(url, headers=auth, json={"model_aliases": {}}).json()["settings"]["model_aliases"]
    assert saved == {"value": {}, "source": "d1"}  # an empty table in D1 turns the env's off
    back = httpx.put(url, headers=auth, json={"model_aliases": None}).json()["settings"]["model_aliases"]
    assert back["source"] == "env"
