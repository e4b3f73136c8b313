"""The configuration snapshot: settings precedence, tokens, the TTL cache (SPEC §2.3, §5.2)."""

from __future__ import annotations

import pytest

from gateway.core import rules
from gateway.core.config import ConfigCache, build_config
from gateway.core.settings import SETTINGS_BY_KEY, SETTINGS_BY_NAME, Setting, parse_setting, resolve_settings
from support.factories import provider

CEILING = "routing_cooldown_ceiling_ms"


@pytest.mark.parametrize(
    ("rows", "env", "value", "source"),
    [
        pytest.param({}, {}, rules.DEFAULT_COOLDOWN_CEILING_MS, "default", id="default"),
        pytest.param({}, {"COOLDOWN_CEILING_MS": "120000"}, 120_000, "env", id="env"),
        pytest.param({CEILING: "180000"}, {"COOLDOWN_CEILING_MS": "120000"}, 180_000, "d1", id="d1-over-env"),
        pytest.param({CEILING: "soon"}, {"COOLDOWN_CEILING_MS": "120000"}, 120_000, "env", id="invalid-d1-skipped"),
        pytest.param(
            {CEILING: "1.5"},
            {"COOLDOWN_CEILING_MS": "x"},
            rules.DEFAULT_COOLDOWN_CEILING_MS,
            "default",
            id="both-invalid",
        ),
        pytest.param({CEILING: "5"}, {}, rules.COOLDOWN_CEILING_MIN_MS, "d1", id="clamped-up"),
        pytest.param(
            {}, {"COOLDOWN_CEILING_MS": "999999999999"}, rules.COOLDOWN_CEILING_MAX_MS, "env", id="clamped-down"
        ),
    ],
)
def test_setting_precedence(rows, env, value, source):
    config = build_config([], rows, env, now_ms=0)

    assert config.settings.routing_cooldown_ceiling_ms == value
    assert (config.setting_values[CEILING].value, config.setting_values[CEILING].source) == (value, source)


@pytest.mark.parametrize(
    ("key", "raw", "expected"),
    [
        ("max_consecutive_upstream_fails", "3", 3),
        ("max_consecutive_upstream_fails", 0, 0),
        ("max_consecutive_upstream_fails", "-1", None),
        ("max_consecutive_upstream_fails", True, None),
        ("stream_stall_ms", 0, 250),
        ("stream_stall_ms", " 5000 ", 5000),
        ("stream_stall_ms", 10**12, 600_000),
        ("max_consecutive_upstream_fails", "--5", None),
        ("max_consecutive_upstream_fails", "²", None),
        ("max_consecutive_upstream_fails", "3.0", None),
        ("max_body_bytes", 1.5, None),
        ("ip_rpm", "-1", None),
        ("auth_fail_limit", "x", None),
        ("openrouter_pinning", 5, 1),
        ("stream_rescue", 5, 1),
        ("stream_rescue", "-1", 0),
        ("stream_rescue", " 1 ", 1),
        ("stream_rescue", "on", None),
        ("stream_rescue", True, None),
        ("openrouter_lock_idle_ms", 1, 60_000),
        ("max_body_bytes", "0", None),
        ("max_body_bytes", "100000000", 100_000_000),
        ("max_body_bytes", "100000001", rules.PLATFORM_MAX_BODY_BYTES),
        ("ip_rpm", 2**60, 2**53 - 1),
        ("subrequest_limit", "0", 10),
        ("usage_flush_minutes", "0", 1),
        ("usage_flush_minutes", "1440", 60),
        ("usage_flush_minutes", "ten", None),
        ("subrequest_limit", " 1000 ", 1000),
        ("subrequest_limit", 10**6, 10_000),
        ("subrequest_limit", "many", None),
    ],
)
def test_parse_setting(key, raw, expected):
    assert parse_setting(SETTINGS_BY_KEY[key], raw) == expected


@pytest.mark.parametrize(
    ("key", "raw", "expected"),
    [
        ("stream_stall_ms", -1, None),
        ("stream_stall_ms", 249, None),
        ("stream_stall_ms", 250, 250),
        ("stream_stall_ms", 600_000, 600_000),
        ("stream_stall_ms", 600_001, None),
        ("routing_cooldown_ceiling_ms", 5, None),
        ("max_consecutive_upstream_fails", -1, None),
        ("max_consecutive_upstream_fails", 7, 7),
        ("default_client_rpm", -5, None),
        ("openrouter_pinning", 2, None),
        ("stream_rescue", 2, None),
        ("stream_rescue", -1, None),
        ("stream_rescue", 0, 0),
        ("stream_rescue", 1, 1),
        ("openrouter_lock_idle_ms", 59_999, None),
        ("openrouter_lock_idle_ms", 86_400_001, None),
        ("max_body_bytes", 100_000_000, 100_000_000),
        ("max_body_bytes", 100_000_001, None),
        ("max_body_bytes", 10**12, None),
        ("ip_rpm", 2**53 - 1, 2**53 - 1),
        ("ip_rpm", 2**53, None),
        ("subrequest_limit", 0, None),
        ("subrequest_limit", 9, None),
        ("usage_flush_minutes", 0, None),
        ("usage_flush_minutes", 61, None),
        ("usage_flush_minutes", 60, 60),
        ("subrequest_limit", 10, 10),
        ("subrequest_limit", 10_000, 10_000),
        ("subrequest_limit", 10_001, None),
    ],
)
def test_parse_setting_without_clamping_refuses_out_of_range(key, raw, expected):
    assert parse_setting(SETTINGS_BY_KEY[key], raw, clamp=False) == expected


RESCUE = "stream_rescue"


@pytest.mark.parametrize(
    ("rows", "env", "value", "source"),
    [
        pytest.param({}, {}, 0, "default", id="off-by-default"),
        pytest.param({}, {"STREAM_RESCUE": "1"}, 1, "env", id="env-on"),
        pytest.param({RESCUE: "0"}, {"STREAM_RESCUE": "1"}, 0, "d1", id="d1-off-over-env-on"),
        pytest.param({}, {"STREAM_RESCUE": "7"}, 1, "env", id="env-clamped"),
        pytest.param({}, {"STREAM_RESCUE": "yes"}, 0, "default", id="env-not-a-number"),
    ],
)
def test_stream_rescue_is_an_opt_in_switch(rows, env, value, source):
    # SPEC §16: off unless turned on; 1 on, 0 off, like openrouter_pinning.
    config = build_config([], rows, env, now_ms=0)

    assert config.settings.stream_rescue == value
    assert (config.setting_values[RESCUE].value, config.setting_values[RESCUE].source) == (value, source)
    assert SETTINGS_BY_NAME["STREAM_RESCUE"] is SETTINGS_BY_KEY[RESCUE]
    assert SETTINGS_BY_KEY[RESCUE].expected == "an integer from 0 to 1"


def test_the_body_limit_is_bounded_by_the_platforms():
    # The number itself: the Free and Pro plans' request body limit, "100 MB".
    assert rules.PLATFORM_MAX_BODY_BYTES == 100_000_000
    assert rules.DEFAULT_MAX_BODY_BYTES <= rules.UPLOAD_LIMIT_BYTES <= rules.PLATFORM_MAX_BODY_BYTES


INTEGER_KEYS = [s.key for s in SETTINGS_BY_KEY.values() if isinstance(s, Setting)]


@pytest.mark.parametrize("key", INTEGER_KEYS)
@pytest.mark.parametrize("value", ["5", " 5 ", "1000", True, False, 5.0, 1.5, [5], {"v": 5}])
def test_the_admin_api_takes_integers_as_json_numbers_only(key, value):
    setting = SETTINGS_BY_KEY[key]

    assert setting.accept(value) is None
    if isinstance(value, str):
        assert "not a string" in setting.refusal(value)


@pytest.mark.parametrize("key", INTEGER_KEYS)
def test_stored_and_env_integers_are_text(key):
    setting = SETTINGS_BY_KEY[key]
    valid = setting.clamp[0] if setting.clamp else max(setting.minimum, 1)

    assert setting.read(str(valid)) == valid
    assert setting.accept(valid) == valid


def test_every_setting_has_both_names():
    assert SETTINGS_BY_NAME["STREAM_STALL_MS"] is SETTINGS_BY_NAME["stream_stall_ms"]
    assert len(SETTINGS_BY_NAME) == 2 * len(SETTINGS_BY_KEY)
    assert SETTINGS_BY_KEY["stream_stall_ms"].expected == "an integer from 250 to 600000"
    assert SETTINGS_BY_KEY["max_body_bytes"].expected == "an integer from 1 to 100000000"
    assert SETTINGS_BY_KEY["ip_rpm"].expected == "an integer from 0 to 9007199254740991"


def test_deployment_id_and_token_sources_come_from_the_rows():
    rows = {"deployment_id": "0123456789abcdef", "admin_token": "row-admin-0123456789"}

    config = build_config([], rows, {"API_TOKEN": "env-api-0123456789"}, 0)

    assert config.deployment_id == "0123456789abcdef"
    assert config.token_rows == frozenset({"admin_token"})


def test_token_rows_win_over_env_secrets():
    env = {"API_TOKEN": "env-api", "ADMIN_TOKEN": "env-admin"}

    assert build_config([], {}, env, 0).api_token == "env-api"
    config = build_config([], {"api_token": "row-api", "admin_token": "row-admin"}, env, 0)
    assert (config.api_token, config.admin_token) == ("row-api", "row-admin")


def test_providers_in_priority_order_ties_by_id():
    config = build_config(
        [provider(3, priority=10), provider(1, priority=20), provider(2, priority=10, enabled=False)], {}, {}, 0
    )

    assert [p.id for p in config.providers] == [2, 3, 1]
    assert [p.id for p in config.enabled_providers] == [3, 1]


def test_cache_serves_until_the_ttl():
    cache = ConfigCache()
    config = build_config([provider(1)], {}, {}, now_ms=1_000)
    cache.put(config, cache.generation, 1)

    assert cache.get(1_000 + rules.CONFIG_TTL_MS - 1) is config
    assert cache.get(1_000 + rules.CONFIG_TTL_MS) is None


def test_cache_never_keeps_an_empty_provider_list():
    cache = ConfigCache()
    cache.put(build_config([], {}, {}, now_ms=0), cache.generation, 1)

    assert cache.get(1) is None


def test_invalidate_drops_the_snapshot():
    cache = ConfigCache()
    cache.put(build_config([provider(1)], {}, {}, now_ms=0), cache.generation, 1)
    cache.invalidate()

    assert cache.get(1) is None


def test_a_snapshot_read_across_an_invalidation_is_not_kept():
    cache = ConfigCache()
    generation = cache.generation  # a request starts reading D1 ...
    cache.invalidate()  # ... an admin write lands meanwhile ...
    cache.put(build_config([provider(1)], {}, {}, now_ms=0), generation, 1)  # ... the old read returns

    assert cache.get(1) is None


def test_a_confirmed_snapshot_serves_another_ttl_unless_invalidated_meanwhile():
    cache = ConfigCache()
    config = build_config([provider(1)], {}, {}, now_ms=0)
    cache.put(config, cache.generation, 7)

    cache.confirm(rules.CONFIG_TTL_MS, cache.generation)
    assert cache.get(2 * rules.CONFIG_TTL_MS - 1) is config
    generation = cache.generation
    cache.invalidate()
    cache.confirm(2 * rules.CONFIG_TTL_MS, generation)
    assert cache.get(2 * rules.CONFIG_TTL_MS) is None
    assert cache.stamp is None  # an admin write here: only a whole read will do


def test_while_d1_fails_the_last_snapshot_serves_however_old_and_d1_is_asked_a_ttl_later():
    cache = ConfigCache()
    empty = build_config([], {}, {}, now_ms=0)
    cache.put(empty, cache.generation, 1)
    failed_at = 10 * rules.DAY_MS

    assert cache.get(failed_at) is None  # time to ask D1
    cache.hold(failed_at, cache.generation)

    assert cache.get(failed_at + rules.CONFIG_TTL_MS - 1) is empty
    assert cache.get(failed_at + rules.CONFIG_TTL_MS) is None
    assert cache.last is empty
    cache.hold(failed_at, cache.generation)
    cache.invalidate()  # D1 answered an admin write meanwhile
    assert cache.get(failed_at + 1) is None
    generation = cache.generation  # a read begins ...
    cache.invalidate()  # ... an admin write lands ...
    cache.hold(failed_at + 2, generation)  # ... and the read fails: the write's D1 is read next
    assert cache.get(failed_at + 3) is None


def test_an_unreadable_env_value_never_breaks_the_snapshot():
    config = build_config([], {}, {"MAX_CONSECUTIVE_UPSTREAM_FAILS": "--1", "STREAM_STALL_MS": "²"}, 0)

    assert config.settings.max_consecutive_upstream_fails == 0
    assert config.setting_values["stream_stall_ms"].source == "default"


def test_encryption_key_is_not_in_the_repr():
    config = build_config([], {}, {"ENCRYPTION_KEY": "ab" * 32}, 0)

    assert "ab" * 32 not in repr(config)


ALIASES = "model_aliases"


@pytest.mark.parametrize(
    ("rows", "env", "table", "source"),
    [
        pytest.param({}, {}, {}, "default", id="default-empty"),
        pytest.param({}, {"MODEL_ALIASES": '{"claude-*": "auto"}'}, {"claude-*": "auto"}, "env", id="env"),
        pytest.param(
            {ALIASES: '{"claude-*":"small"}'},
            {"MODEL_ALIASES": '{"claude-*": "auto"}'},
            {"claude-*": "small"},
            "d1",
            id="d1-over-env",
        ),
        pytest.param(
            {ALIASES: "{}"}, {"MODEL_ALIASES": '{"claude-*": "auto"}'}, {}, "d1", id="empty-d1-table-turns-env-off"
        ),
        pytest.param(
            {ALIASES: "not json"}, {"MODEL_ALIASES": '{"a": "b"}'}, {"a": "b"}, "env", id="invalid-d1-skipped"
        ),
        pytest.param({}, {"MODEL_ALIASES": '["claude-*"]'}, {}, "default", id="env-not-an-object"),
        pytest.param({}, {"MODEL_ALIASES": '{"claude-*": 1}'}, {}, "default", id="env-target-not-a-string"),
        pytest.param({}, {"MODEL_ALIASES": "[" * 100_000}, {}, "default", id="env-too-deep"),
    ],
)
def test_alias_setting_precedence(rows, env, table, source):
    config = build_config([], rows, env, now_ms=0)

    assert config.settings.model_aliases.as_json() == table
    assert config.setting_values[ALIASES].source == source
    assert config.settings.model_aliases is config.setting_values[ALIASES].value  # compiled once


def test_alias_setting_round_trips_through_its_row():
    setting = SETTINGS_BY_KEY[ALIASES]
    table = setting.accept({"claude-*haiku*": "小模型", "claude-*": "auto"})

    assert setting.read(setting.to_row(table)) == table
    assert list(setting.to_json(table)) == ["claude-*haiku*", "claude-*"]
    assert setting.accept(["x"]) is None
    assert "JSON object" in setting.refusal(["x"])


def test_integer_settings_speak_the_same_interface():
    setting = SETTINGS_BY_KEY["stream_stall_ms"]

    assert (setting.read("0"), setting.accept(0), setting.to_row(5000)) == (250, None, "5000")
    assert setting.refusal(0) == "an integer from 250 to 600000 is expected"


@pytest.mark.parametrize(
    ("raw", "origin"),
    [
        ("https://openrouter.ai", "https://openrouter.ai"),
        (" https://OpenRouter.ai/ ", "https://openrouter.ai"),
        ("http://127.0.0.1:8123", "http://127.0.0.1:8123"),
        ("https://openrouter.ai/api", None),
        ("https://openrouter.ai?x=1", None),
        ("https://user:pw@openrouter.ai", None),
        ("ftp://openrouter.ai", None),
        ("openrouter.ai", None),
        ("http://host:port", None),
        (42, None),
    ],
)
def test_the_openrouter_origin_is_a_scheme_and_host_only(raw, origin):
    assert SETTINGS_BY_KEY["openrouter_origin"].accept(raw) == origin


def test_the_subrequest_limit_defaults_to_the_free_plans():
    settings, values = resolve_settings({}, {})

    assert settings.subrequest_limit == rules.DEFAULT_SUBREQUEST_LIMIT == 50
    assert values["subrequest_limit"].source == "default"
    assert resolve_settings({}, {"SUBREQUEST_LIMIT": "1000"})[0].subrequest_limit == 1000


@pytest.mark.parametrize(
    ("given", "accepted"),
    [("fastest", "fastest"), (" Reliable ", "reliable"), ("smartest", None), ("", None), (1, None), (None, None)],
)
def test_routing_strategy_is_one_of_its_names(given, accepted):
    strategy = SETTINGS_BY_NAME["ROUTING_STRATEGY"]

    assert strategy.accept(given) == accepted
    if accepted is None:
        assert strategy.refusal(given) == "one of priority, fastest, reliable, balanced is expected"


def test_an_unknown_strategy_in_d1_or_env_falls_back_to_the_next_source():
    settings, values = resolve_settings({"routing_strategy": "smartest"}, {"ROUTING_STRATEGY": "balanced"})

    assert settings.routing_strategy == "balanced" and values["routing_strategy"].source == "env"
