-- Rate limits and the failed-auth lock (SPEC §14, src/gateway/core/limits.py): one row per counter
-- key ('ip:<ip>', 'client:<id>', 'client:default', 'authfail:<ip>'), holding the count of its
-- current fixed window. A count in an older window is stale: the next request starts it again at
-- 1 in the same row. Rows of windows that ended are deleted once a minute by a serving isolate.
CREATE TABLE rate_windows (
  key TEXT PRIMARY KEY,
  window_start INTEGER NOT NULL, -- epoch milliseconds, a multiple of 60000
  count INTEGER NOT NULL,         -- units counted in the window: requests, or leases of them
  granted INTEGER NOT NULL        -- what the last count granted (a lease may get less than asked)
) WITHOUT ROWID;
-- The once-a-minute sweep reads only the rows it deletes.
CREATE INDEX rate_windows_by_start ON rate_windows (window_start);
