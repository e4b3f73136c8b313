-- Providers and settings (SPEC §7). Times are epoch milliseconds.
-- A provider's API key is stored as the original FreeLLMAPI server stores it: AES-256-GCM with a
-- 16-byte IV, as three hex columns, so keys migrate between the two.
CREATE TABLE providers (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  platform TEXT NOT NULL DEFAULT 'custom',
  base_url TEXT NOT NULL,
  encrypted_key TEXT NOT NULL,
  iv TEXT NOT NULL,
  auth_tag TEXT NOT NULL,
  models TEXT NOT NULL DEFAULT '[]', -- JSON list of model ids, in the order the user gave
  priority INTEGER NOT NULL DEFAULT 100, -- lower is tried first
  timeout_ms INTEGER, -- NULL: the default attempt timeout
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

CREATE INDEX providers_by_priority ON providers (priority, id);

-- Routing settings and the api_token/admin_token rows, which win over the env secrets.
CREATE TABLE settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
