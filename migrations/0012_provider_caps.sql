-- A provider's free-tier caps (SPEC §19): JSON {"rpm", "rpd", "tpm"}, each optional, for every
-- model of the provider that its own models entry does not cap; NULL for none.
ALTER TABLE providers ADD COLUMN caps TEXT;
