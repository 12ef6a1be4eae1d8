-- Event bodies: raw bytes a protocol keeps beside a fact's JSON (core/schema.sql).
-- Every event logged so far has none.  A purge now drops the body with the
-- payload, so the trigger that allows only a purge learns that column.
ALTER TABLE events ADD COLUMN body BLOB;
DROP TRIGGER IF EXISTS events_no_update;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
WHEN NOT (new.payload = X'' AND old.payload != X'' AND new.body IS NULL
          AND new.seq = old.seq AND new.protocol = old.protocol AND new.event_type = old.event_type
          AND new.version = old.version AND new.event_id = old.event_id
          AND new.partition_key = old.partition_key AND new.created_at_ms = old.created_at_ms
          AND new.recorded_at_ms = old.recorded_at_ms)
BEGIN
    SELECT RAISE(ABORT, 'events are append-only: the only change allowed is a purge, which empties the payload');
END;
