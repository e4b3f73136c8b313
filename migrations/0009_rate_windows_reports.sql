-- Rate windows counted by reports (SPEC §14, §18; src/gateway/core/limits.py): an isolate counts a
-- key's requests in memory and adds them to the key's row once half its limit is unreported, so
-- the row holds a count only, with no lease column, and no index: the index on window_start cost
-- a second row written per count, and the sweep of ended windows (the cron, every 3 h) reads the
-- whole table instead, a row per key reported since. A window's counts are worth nothing once it
-- ended, so the old rows go with the old table.
DROP TABLE rate_windows;
CREATE TABLE rate_windows (
  key TEXT PRIMARY KEY,
  window_start INTEGER NOT NULL, -- epoch milliseconds, a multiple of 60000
  count INTEGER NOT NULL          -- units reported in the window, by every isolate
) WITHOUT ROWID;
