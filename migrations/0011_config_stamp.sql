-- The configuration's stamp (SPEC §18, src/gateway/isolate.py): every write to providers,
-- provider_keys, settings or clients adds 1, by trigger, so a hand-run `wrangler d1 execute`
-- counts too. An isolate whose snapshot is a minute old reads this one row (and the OpenRouter
-- pins, which change on their own) instead of every configuration row: the whole configuration
-- again only when the stamp moved. (The free plan reads 5,000,000 rows a day; ten isolates
-- re-reading ~50 rows a minute would read 720,000.)
CREATE TABLE config_stamp (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  stamp INTEGER NOT NULL
);
INSERT INTO config_stamp (id, stamp) VALUES (1, 0);

CREATE TRIGGER providers_inserted AFTER INSERT ON providers BEGIN UPDATE config_stamp SET stamp = stamp + 1; END;
CREATE TRIGGER providers_updated AFTER UPDATE ON providers BEGIN UPDATE config_stamp SET stamp = stamp + 1; END;
CREATE TRIGGER providers_deleted AFTER DELETE ON providers BEGIN UPDATE config_stamp SET stamp = stamp + 1; END;
CREATE TRIGGER provider_keys_inserted AFTER INSERT ON provider_keys BEGIN UPDATE config_stamp SET stamp = stamp + 1; END;
CREATE TRIGGER provider_keys_updated AFTER UPDATE ON provider_keys BEGIN UPDATE config_stamp SET stamp = stamp + 1; END;
CREATE TRIGGER provider_keys_deleted AFTER DELETE ON provider_keys BEGIN UPDATE config_stamp SET stamp = stamp + 1; END;
CREATE TRIGGER settings_inserted AFTER INSERT ON settings BEGIN UPDATE config_stamp SET stamp = stamp + 1; END;
CREATE TRIGGER settings_updated AFTER UPDATE ON settings BEGIN UPDATE config_stamp SET stamp = stamp + 1; END;
CREATE TRIGGER settings_deleted AFTER DELETE ON settings BEGIN UPDATE config_stamp SET stamp = stamp + 1; END;
CREATE TRIGGER clients_inserted AFTER INSERT ON clients BEGIN UPDATE config_stamp SET stamp = stamp + 1; END;
CREATE TRIGGER clients_updated AFTER UPDATE ON clients BEGIN UPDATE config_stamp SET stamp = stamp + 1; END;
CREATE TRIGGER clients_deleted AFTER DELETE ON clients BEGIN UPDATE config_stamp SET stamp = stamp + 1; END;
