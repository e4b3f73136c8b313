-- Named client tokens (SPEC §14). Times are epoch milliseconds.
-- A token is never stored: only the hex SHA-256 of its text (core/clients.py says why a plain hash
-- suffices) and a hint (first 4 + '...' + last 4) for the listing.
CREATE TABLE clients (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  token_hash TEXT NOT NULL UNIQUE,
  token_hint TEXT NOT NULL,
  rpm INTEGER, -- requests per minute; NULL: unlimited (stored now, enforced with the limiter)
  models TEXT, -- JSON list of model ids the client may use; NULL: every model
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
