-- Several keys per provider (SPEC §13). Times are epoch milliseconds.
-- Each key is sealed as before (AES-256-GCM hex ciphertext, 16-byte IV, 16-byte tag, with the same
-- ENCRYPTION_KEY). Every existing provider's key moves here as it is stored: the ciphertext is
-- copied, never re-encrypted, so nothing needs the ENCRYPTION_KEY to migrate and nothing is lost.
CREATE TABLE provider_keys (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  provider_id INTEGER NOT NULL REFERENCES providers (id) ON DELETE CASCADE,
  encrypted_key TEXT NOT NULL,
  iv TEXT NOT NULL,
  auth_tag TEXT NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL
);

CREATE INDEX provider_keys_by_provider ON provider_keys (provider_id, id);

INSERT INTO provider_keys (provider_id, encrypted_key, iv, auth_tag, enabled, created_at)
  SELECT id, encrypted_key, iv, auth_tag, 1, created_at FROM providers ORDER BY id;

-- The old columns go: a key deleted through the admin API must not stay sealed in a column the
-- gateway no longer reads (and one place holds each key). SQLite >= 3.35 (D1) drops columns.
ALTER TABLE providers DROP COLUMN encrypted_key;
ALTER TABLE providers DROP COLUMN iv;
ALTER TABLE providers DROP COLUMN auth_tag;
