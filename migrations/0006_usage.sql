-- Usage and health (SPEC §17, src/gateway/core/usage.py, src/gateway/meter.py).
--
-- usage_buckets: one row per UTC hour of one (client, provider, key, model, surface). Isolates add
-- to a row with one upsert per row they hold, at most once a minute, in one batch: every column
-- below the key is a count, added to what the row has. client_id 0 is the API token (the default
-- client), provider_id 0 a request that nothing served, key_id 0 no key. Errors are counted per
-- class of SPEC §5.1 (one column each); latency is a histogram to the first byte (fb_*) and to the
-- end (end_*) over the bins of core/usage.LATENCY_EDGES_MS (the last bin: above its last edge).
-- The cron deletes rows older than 30 days.
CREATE TABLE usage_buckets (
  hour_ms INTEGER NOT NULL,     -- epoch milliseconds, a multiple of 3600000
  client_id INTEGER NOT NULL,
  provider_id INTEGER NOT NULL,
  key_id INTEGER NOT NULL,
  model TEXT NOT NULL,
  surface TEXT NOT NULL,        -- the front door: chat, anthropic, responses, gemini, ollama, ...
  requests INTEGER NOT NULL DEFAULT 0, successes INTEGER NOT NULL DEFAULT 0, failovers INTEGER NOT NULL DEFAULT 0, streams_cut INTEGER NOT NULL DEFAULT 0, rescues INTEGER NOT NULL DEFAULT 0,
  -- tokens as the upstream reported them (cached_in: of tokens_in, read from a cache), and apart
  -- the estimates of answers that reported none
  tokens_in INTEGER NOT NULL DEFAULT 0, tokens_out INTEGER NOT NULL DEFAULT 0, cached_in INTEGER NOT NULL DEFAULT 0, estimated_in INTEGER NOT NULL DEFAULT 0, estimated_out INTEGER NOT NULL DEFAULT 0,
  err_auth INTEGER NOT NULL DEFAULT 0, err_out_of_credits INTEGER NOT NULL DEFAULT 0, err_forbidden INTEGER NOT NULL DEFAULT 0, err_daily_quota_exhausted INTEGER NOT NULL DEFAULT 0,
  err_rate_limited INTEGER NOT NULL DEFAULT 0, err_model_not_found INTEGER NOT NULL DEFAULT 0, err_context_too_large INTEGER NOT NULL DEFAULT 0, err_timeout INTEGER NOT NULL DEFAULT 0,
  err_upstream_error INTEGER NOT NULL DEFAULT 0, err_network INTEGER NOT NULL DEFAULT 0, err_invalid_stream INTEGER NOT NULL DEFAULT 0, err_key_unreadable INTEGER NOT NULL DEFAULT 0,
  err_loop_detected INTEGER NOT NULL DEFAULT 0, err_caller_error INTEGER NOT NULL DEFAULT 0,
  fb_0 INTEGER NOT NULL DEFAULT 0, fb_1 INTEGER NOT NULL DEFAULT 0, fb_2 INTEGER NOT NULL DEFAULT 0, fb_3 INTEGER NOT NULL DEFAULT 0, fb_4 INTEGER NOT NULL DEFAULT 0,
  fb_5 INTEGER NOT NULL DEFAULT 0, fb_6 INTEGER NOT NULL DEFAULT 0, fb_7 INTEGER NOT NULL DEFAULT 0, fb_8 INTEGER NOT NULL DEFAULT 0, fb_9 INTEGER NOT NULL DEFAULT 0,
  fb_10 INTEGER NOT NULL DEFAULT 0, fb_11 INTEGER NOT NULL DEFAULT 0, fb_12 INTEGER NOT NULL DEFAULT 0, fb_13 INTEGER NOT NULL DEFAULT 0, fb_14 INTEGER NOT NULL DEFAULT 0,
  fb_15 INTEGER NOT NULL DEFAULT 0, fb_16 INTEGER NOT NULL DEFAULT 0, fb_17 INTEGER NOT NULL DEFAULT 0, fb_18 INTEGER NOT NULL DEFAULT 0, fb_19 INTEGER NOT NULL DEFAULT 0,
  end_0 INTEGER NOT NULL DEFAULT 0, end_1 INTEGER NOT NULL DEFAULT 0, end_2 INTEGER NOT NULL DEFAULT 0, end_3 INTEGER NOT NULL DEFAULT 0, end_4 INTEGER NOT NULL DEFAULT 0,
  end_5 INTEGER NOT NULL DEFAULT 0, end_6 INTEGER NOT NULL DEFAULT 0, end_7 INTEGER NOT NULL DEFAULT 0, end_8 INTEGER NOT NULL DEFAULT 0, end_9 INTEGER NOT NULL DEFAULT 0,
  end_10 INTEGER NOT NULL DEFAULT 0, end_11 INTEGER NOT NULL DEFAULT 0, end_12 INTEGER NOT NULL DEFAULT 0, end_13 INTEGER NOT NULL DEFAULT 0, end_14 INTEGER NOT NULL DEFAULT 0,
  end_15 INTEGER NOT NULL DEFAULT 0, end_16 INTEGER NOT NULL DEFAULT 0, end_17 INTEGER NOT NULL DEFAULT 0, end_18 INTEGER NOT NULL DEFAULT 0, end_19 INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (hour_ms, client_id, provider_id, key_id, model, surface)
) WITHOUT ROWID;

-- usage_events: the last failures (SPEC §17: 200 kept), one row per failed attempt, written with
-- the buckets; the batch that inserts them deletes all but the newest 200.
CREATE TABLE usage_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at_ms INTEGER NOT NULL,
  client_id INTEGER NOT NULL,
  provider_id INTEGER NOT NULL,
  key_id INTEGER NOT NULL,
  model TEXT NOT NULL,
  surface TEXT NOT NULL,
  class TEXT NOT NULL,          -- SPEC §5.1
  status INTEGER,               -- the upstream's HTTP status, NULL when it sent none
  message TEXT NOT NULL         -- redacted (core/classify.redact)
);
