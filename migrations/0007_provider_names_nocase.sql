-- Provider names are unique whatever their case (issue "honest values"): "Groq" and "groq" would be
-- two rows the page, the trail (X-Fallback-Trail) and the usage tables could not tell apart.
--
-- Triggers, not a UNIQUE index on (name COLLATE NOCASE): an index would fail this migration on a
-- live database that already holds two names differing only in case, and a migration must not fail.
-- Rows already stored stay as they are (and can still be edited or renamed); every new name, and
-- every rename, is checked, in the same statement as the write, so two admin calls cannot race past
-- it. The message is the one SQLite gives for the exact-case UNIQUE constraint, so the Worker answers
-- both with the same 409 (shell/d1.py _CONFLICTS). NOCASE folds ASCII letters only (SQLite's rule).
-- A later migration that rebuilds the providers table must create both triggers again.
CREATE TRIGGER providers_name_nocase_insert
BEFORE INSERT ON providers
WHEN EXISTS (SELECT 1 FROM providers WHERE name = NEW.name COLLATE NOCASE)
BEGIN
  SELECT RAISE(ABORT, 'UNIQUE constraint failed: providers.name');
END;

CREATE TRIGGER providers_name_nocase_update
BEFORE UPDATE OF name ON providers
WHEN NEW.name IS NOT OLD.name
  AND EXISTS (SELECT 1 FROM providers WHERE id <> NEW.id AND name = NEW.name COLLATE NOCASE)
BEGIN
  SELECT RAISE(ABORT, 'UNIQUE constraint failed: providers.name');
END;
