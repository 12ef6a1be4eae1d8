-- The event log's ids indexed by their first 8 bytes instead of a unique
-- (protocol, event_id) (see schema.sql).  SQLite cannot drop a table's own
-- UNIQUE constraint, so the log is copied into a table without it, seq kept.
CREATE TABLE events_without_unique_ids (
    seq             INTEGER PRIMARY KEY,
    protocol        TEXT    NOT NULL,
    event_type      TEXT    NOT NULL,
    version         INTEGER NOT NULL,
    event_id        BLOB    NOT NULL,
    partition_key   TEXT    NOT NULL,
    created_at_ms   INTEGER NOT NULL,
    recorded_at_ms  INTEGER NOT NULL,
    payload         BLOB    NOT NULL
);
INSERT INTO events_without_unique_ids(
    seq, protocol, event_type, version, event_id, partition_key, created_at_ms, recorded_at_ms, payload
)
    SELECT seq, protocol, event_type, version, event_id, partition_key, created_at_ms, recorded_at_ms, payload
    FROM events ORDER BY seq;
-- Dropping a table drops its triggers first, so the no-delete trigger does not stop this.
DROP TABLE events;
ALTER TABLE events_without_unique_ids RENAME TO events;
CREATE INDEX events_by_partition ON events (protocol, partition_key, seq);
CREATE INDEX events_by_id_prefix ON events (substr(event_id, 1, 8));
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only: the log is the source of every rebuild');
END;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
WHEN NOT (new.payload = X'' AND old.payload != X''
          AND new.seq = old.seq AND new.protocol = old.protocol AND new.event_type = old.event_type
          AND new.version = old.version AND new.event_id = old.event_id
          AND new.partition_key = old.partition_key AND new.created_at_ms = old.created_at_ms
          AND new.recorded_at_ms = old.recorded_at_ms)
BEGIN
    SELECT RAISE(ABORT, 'events are append-only: the only change allowed is a purge, which empties the payload');
END;
