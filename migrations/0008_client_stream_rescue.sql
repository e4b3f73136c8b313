-- A client's own stream rescue switch (SPEC §16): 1 on, 0 off, NULL follows the setting
-- `stream_rescue`. NULL for every client already stored, so an upgrade changes no behaviour.
ALTER TABLE clients ADD COLUMN stream_rescue INTEGER;
