-- OpenRouter upstream pinning (SPEC §15, src/gateway/core/pinning.py): one row per OpenRouter model
-- the gateway has served. Times are epoch milliseconds.
-- Written only when a lock is taken or moved, when a renewal is due (at most once per 5 min per model
-- per isolate) and by the 3-hourly cron (candidates only, never the lock).
CREATE TABLE openrouter_pins (
  model TEXT PRIMARY KEY,
  candidates TEXT NOT NULL DEFAULT '[]', -- JSON list of ranked upstream slugs, best first
  refreshed_at INTEGER,                  -- when the candidates were scored
  lock_slug TEXT,                        -- the upstream slug the model is pinned to; NULL: none
  lock_until INTEGER,                    -- the lock lives until then unless traffic renews it
  failures INTEGER NOT NULL DEFAULT 0,   -- consecutive faults of the locked slug, as last written
  switches INTEGER NOT NULL DEFAULT 0,   -- times the lock moved
  cooled TEXT NOT NULL DEFAULT '{}'      -- JSON {slug: cooled until} after repeated faults
) WITHOUT ROWID;
