-- A provider's free-tier caps (SPEC §19): JSON {"rpm", "rpd", "tpm"}, each optional, for each cap
-- of each of its models that the model's own models entry does not set; NULL for none.
ALTER TABLE providers ADD COLUMN caps TEXT;
