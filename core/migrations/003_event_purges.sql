-- Purge: the one change the event log allows (a tombstone with an empty payload),
-- and the record of each purge for incremental exports.
DROP TRIGGER IF EXISTS events_no_update;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
WHEN NOT (new.payload = X'' AND old.payload != X''
          AND new.seq = old.seq AND new.protocol = old.protocol AND new.event_type = old.event_type
          AND new.version = old.version AND new.event_id = old.event_id
          AND new.partition_key = old.partition_key AND new.created_at_ms = old.created_at_ms
          AND new.recorded_at_ms = old.recorded_at_ms)
BEGIN
    SELECT RAISE(ABORT, 'events are append-only: the only change allowed is a purge, which empties the payload');
END;
CREATE TABLE IF NOT EXISTS event_purges (
    by_seq          INTEGER PRIMARY KEY,
    lowest_seq      INTEGER NOT NULL,
    purged          INTEGER NOT NULL,
    purged_at_ms    INTEGER NOT NULL
);
