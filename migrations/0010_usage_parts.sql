-- Usage as one row per isolate and hour (SPEC §17, §18; src/gateway/core/usage.py, shell/d1.py).
--
-- usage_parts: everything one isolate counted in one UTC hour. The isolate holds its hour in
-- memory, cumulatively, and each flush REPLACES its row of that hour with the whole of it: a flush
-- costs one row written per hour it changed (not one per bucket), a write repeated or whose answer
-- was lost counts nothing twice, and a failed write loses nothing (the next rewrites the hour).
--   isolate  a random id the isolate draws at its first request; 'migrated' for the rows below
--   seq      the isolate's write number: an upsert never replaces a newer write with an older one
--   buckets  a JSON array with an array per bucket: [client_id, provider_id, key_id, model, surface,
--            then the counts of core/usage.COLUMNS in that order, trailing zeros left out]
--            (client_id 0: the API token; provider_id 0: nothing served; key_id 0: no key)
--   events   a JSON array of the hour's newest failures (core/rules.USAGE_EVENTS_PER_HOUR per
--            isolate): [at_ms, client_id, provider_id, key_id, model, surface, class, status, message]
-- The admin API sums the buckets in SQL (json_each). The cron deletes parts older than 30 days.
CREATE TABLE usage_parts (
  hour_ms INTEGER NOT NULL,     -- epoch milliseconds, a multiple of 3600000
  isolate TEXT NOT NULL,
  seq INTEGER NOT NULL,
  buckets TEXT NOT NULL,
  events TEXT NOT NULL,
  PRIMARY KEY (hour_ms, isolate)
) WITHOUT ROWID;

-- What 0006's tables hold moves into parts of the isolate 'migrated', one per hour that has
-- buckets or events (all of them: the events of 0006 were the newest 200), then they go.
INSERT INTO usage_parts (hour_ms, isolate, seq, buckets, events)
SELECT h.hour_ms, 'migrated', 0,
  (SELECT json_group_array(json_array(client_id, provider_id, key_id, model, surface,
      requests, successes, failovers, streams_cut, rescues, tokens_in, tokens_out, cached_in,
      estimated_in, estimated_out, err_auth, err_out_of_credits, err_forbidden,
      err_daily_quota_exhausted, err_rate_limited, err_model_not_found, err_context_too_large,
      err_timeout, err_upstream_error, err_network, err_invalid_stream, err_key_unreadable,
      err_loop_detected, err_caller_error, fb_0, fb_1, fb_2, fb_3, fb_4, fb_5, fb_6, fb_7, fb_8, fb_9,
      fb_10, fb_11, fb_12, fb_13, fb_14, fb_15, fb_16, fb_17, fb_18, fb_19, end_0, end_1, end_2,
      end_3, end_4, end_5, end_6, end_7, end_8, end_9, end_10, end_11, end_12, end_13, end_14, end_15,
      end_16, end_17, end_18, end_19))
   FROM usage_buckets b WHERE b.hour_ms = h.hour_ms),
  (SELECT json_group_array(json_array(at_ms, client_id, provider_id, key_id, model, surface, class, status,
      message))
   FROM (SELECT * FROM usage_events e WHERE e.at_ms - e.at_ms % 3600000 = h.hour_ms ORDER BY at_ms, id))
FROM (SELECT hour_ms FROM usage_buckets UNION SELECT at_ms - at_ms % 3600000 FROM usage_events) h;

DROP TABLE usage_events;
DROP TABLE usage_buckets;
