-- Wait budgets: the handler's detail kept with each blocked item, and a tally
-- of the patient waits of each (protocol, partition), kept by triggers, that
-- core/recheck.py holds to the wait budget (see schema.sql).
ALTER TABLE blocked ADD COLUMN detail TEXT;
CREATE INDEX blocked_patient_by_partition ON blocked (protocol, partition_key, id) WHERE expires_at_ms IS NOT NULL;
CREATE TABLE blocked_budgets (
    protocol        TEXT    NOT NULL,
    partition_key   TEXT    NOT NULL,
    items           INTEGER NOT NULL,
    bytes           INTEGER NOT NULL,
    PRIMARY KEY (protocol, partition_key)
) WITHOUT ROWID;
INSERT INTO blocked_budgets(protocol, partition_key, items, bytes)
    SELECT protocol, partition_key, count(*), sum(length(blob)) FROM blocked
    WHERE expires_at_ms IS NOT NULL GROUP BY protocol, partition_key;
CREATE TRIGGER blocked_patient_added AFTER INSERT ON blocked WHEN new.expires_at_ms IS NOT NULL
BEGIN
    INSERT INTO blocked_budgets(protocol, partition_key, items, bytes)
        VALUES (new.protocol, new.partition_key, 1, length(new.blob))
        ON CONFLICT(protocol, partition_key) DO UPDATE SET items = items + 1, bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER blocked_patient_removed AFTER DELETE ON blocked WHEN old.expires_at_ms IS NOT NULL
BEGIN
    UPDATE blocked_budgets SET items = items - 1, bytes = bytes - length(old.blob)
        WHERE protocol = old.protocol AND partition_key = old.partition_key;
END;
CREATE TRIGGER blocked_patience_changed AFTER UPDATE OF expires_at_ms ON blocked
WHEN (old.expires_at_ms IS NULL) != (new.expires_at_ms IS NULL)
BEGIN
    INSERT INTO blocked_budgets(protocol, partition_key, items, bytes)
        VALUES (new.protocol, new.partition_key, 0, 0) ON CONFLICT(protocol, partition_key) DO NOTHING;
    UPDATE blocked_budgets
        SET items = items + iif(new.expires_at_ms IS NULL, -1, 1),
            bytes = bytes + iif(new.expires_at_ms IS NULL, -1, 1) * length(new.blob)
        WHERE protocol = new.protocol AND partition_key = new.partition_key;
END;
