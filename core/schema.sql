-- Tessera core tables, shared by every protocol.
-- Timestamps are integer milliseconds since the Unix epoch (*_ms).
-- Inline INDEX lines are turned into CREATE INDEX statements by schema_loader.

-- Wire blobs waiting for process_incoming, oldest first (by id).  The blobs
-- of one delivery (one push_incoming) share a delivery number, larger than
-- that of every delivery queued before it.
CREATE TABLE incoming (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    protocol        TEXT    NOT NULL,
    blob            BLOB    NOT NULL,
    received_at_ms  INTEGER NOT NULL,
    delivery        INTEGER NOT NULL DEFAULT 0
);

-- The append-only event log: facts as handlers decided them.  payload is the
-- fact's canonical JSON; body the raw bytes a protocol keeps beside it (JSON
-- would hold them as base64, a third larger), NULL for a fact without any.
-- seq never goes backwards: rows are never deleted, so max(seq)+1 only grows,
-- and a duplicate append consumes no number (no gaps from replays); and
-- (protocol, event_id) is unique, which makes a replayed append a no-op.
CREATE TABLE events (
    seq             INTEGER PRIMARY KEY,
    protocol        TEXT    NOT NULL,
    event_type      TEXT    NOT NULL,
    version         INTEGER NOT NULL,
    event_id        BLOB    NOT NULL,
    partition_key   TEXT    NOT NULL,
    created_at_ms   INTEGER NOT NULL,
    recorded_at_ms  INTEGER NOT NULL,
    payload         BLOB    NOT NULL,
    body            BLOB
    INDEX events_by_partition (protocol, partition_key, seq)
);
-- Event ids are hashes, so every append lands at a random place of an index
-- on them.  A unique index on (protocol, event_id) takes ~50 bytes an event
-- and outgrows the page cache within a few million events, after which each
-- append reads index pages from the disk.  The first 8 bytes of the id pick
-- an event as surely at ~19 bytes an entry; the append checks the whole id
-- and the protocol on the rare rows sharing a prefix (core/eventlog.py), so
-- (protocol, event_id) stays unique with an index a third of the size.
CREATE INDEX events_by_id_prefix ON events (substr(event_id, 1, 8));

-- The log is append-only; the seq guarantee above depends on it.  The one
-- change allowed is a purge (core/eventlog.py): the payload becomes empty, the
-- body NULL, and every other column stays, so the row is a tombstone that keeps seq
-- contiguous and keeps (protocol, event_id) taken (a replayed append stays a
-- no-op instead of bringing the purged event back).
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only: the log is the source of every rebuild');
END;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
WHEN NOT (new.payload = X'' AND old.payload != X'' AND new.body IS NULL
          AND new.seq = old.seq AND new.protocol = old.protocol AND new.event_type = old.event_type
          AND new.version = old.version AND new.event_id = old.event_id
          AND new.partition_key = old.partition_key AND new.created_at_ms = old.created_at_ms
          AND new.recorded_at_ms = old.recorded_at_ms)
BEGIN
    SELECT RAISE(ABORT, 'events are append-only: the only change allowed is a purge, which empties the payload');
END;

-- One row per purge: the retention event that recorded it, and the lowest
-- seq it emptied (a rebuild's Parquet export re-writes its files from there).
CREATE TABLE event_purges (
    by_seq          INTEGER PRIMARY KEY,
    lowest_seq      INTEGER NOT NULL,
    purged          INTEGER NOT NULL,
    purged_at_ms    INTEGER NOT NULL
);

-- Work scheduled for later: retries of failed items and protocol timers.
-- Drained FIFO per partition, one item per transaction, only when due.
CREATE TABLE deferred (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    protocol            TEXT    NOT NULL,
    payload             BLOB    NOT NULL,
    partition_key       TEXT    NOT NULL DEFAULT '',
    idempotency_key     TEXT,
    available_at_ms     INTEGER NOT NULL,
    attempts            INTEGER NOT NULL DEFAULT 0,
    first_failed_at_ms  INTEGER,
    last_error          TEXT,
    origin              TEXT    NOT NULL DEFAULT 'scheduled',
    INDEX deferred_by_partition (partition_key, id)
    INDEX deferred_by_due (available_at_ms, id)
);
CREATE UNIQUE INDEX deferred_by_idempotency_key ON deferred (idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Wire messages to publish through a transport, at least once.
CREATE TABLE outgoing (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    protocol            TEXT    NOT NULL,
    transport           TEXT    NOT NULL,
    destination         TEXT    NOT NULL DEFAULT '',
    payload             BLOB    NOT NULL,
    idempotency_key     TEXT,
    status              TEXT    NOT NULL DEFAULT 'pending'
                        CHECK (status IN ('pending', 'sent')),
    attempts            INTEGER NOT NULL DEFAULT 0,
    available_at_ms     INTEGER NOT NULL,
    created_at_ms       INTEGER NOT NULL,
    sent_at_ms          INTEGER,
    last_error          TEXT
);
CREATE INDEX outgoing_pending ON outgoing (available_at_ms, id) WHERE status = 'pending';
CREATE UNIQUE INDEX outgoing_by_idempotency_key ON outgoing (idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Named leases with fencing tokens; the token grows at every takeover.
CREATE TABLE leases (
    name            TEXT    PRIMARY KEY,
    owner           TEXT    NOT NULL,
    token           INTEGER NOT NULL,
    expires_at_ms   INTEGER NOT NULL,
    acquired_at_ms  INTEGER NOT NULL
) WITHOUT ROWID;

-- Items that cannot be handled until something else happens.
CREATE TABLE blocked (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    protocol        TEXT    NOT NULL,
    blob            BLOB    NOT NULL,
    reason_type     TEXT    NOT NULL,
    reason_key      TEXT    NOT NULL,
    partition_key   TEXT    NOT NULL DEFAULT '',
    attempts        INTEGER NOT NULL DEFAULT 0,
    blocked_at_ms   INTEGER NOT NULL,
    -- A patient wait (the handler gave a horizon) never counts rechecks as
    -- attempts; it is parked with expired_reason once expires_at_ms passes,
    -- counted from waiting_since_ms, its first block.
    waiting_since_ms INTEGER,
    expires_at_ms   INTEGER,
    expired_reason  TEXT,
    -- A wait in time order (the handler asked for it) is woken by its
    -- envelope's (created_at_ms, event_id); every other wait has (0, x'')
    -- here and is woken in arrival order, by id.
    order_ms        INTEGER NOT NULL DEFAULT 0,
    order_id        BLOB    NOT NULL DEFAULT x'',
    -- The handler's words on why it waits (shown, and kept in the parked reason when the wait expires).
    detail          TEXT,
    INDEX blocked_by_reason (reason_type, reason_key, order_ms, order_id, id)
    INDEX blocked_by_age (blocked_at_ms)
);
CREATE INDEX blocked_by_expiry ON blocked (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
-- The oldest patient waits of a partition first: what its wait budget evicts.
CREATE INDEX blocked_patient_by_partition ON blocked (protocol, partition_key, id) WHERE expires_at_ms IS NOT NULL;

-- What the patient waits of each (protocol, partition) hold, kept by the
-- triggers below in the transaction that adds or removes a wait, so the wait
-- budget (core/recheck.py) costs one row read per wait instead of a count.
CREATE TABLE blocked_budgets (
    protocol        TEXT    NOT NULL,
    partition_key   TEXT    NOT NULL,
    items           INTEGER NOT NULL,
    bytes           INTEGER NOT NULL,
    PRIMARY KEY (protocol, partition_key)
) WITHOUT ROWID;
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
-- A wait that blocks again may turn patient or counted (core/recheck.py: _REBLOCK).
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

-- One coalesced marker per blocking reason: "look at these items again".
-- status 'processing' is the drainer's claim; an unblock that lands during
-- the claim only sets dirty, and a timed recheck asked for during the claim
-- only sets timer_at_ms, so the marker is never duplicated.
CREATE TABLE recheck_queue (
    reason_type     TEXT    NOT NULL,
    reason_key      TEXT    NOT NULL,
    available_at_ms INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    status          TEXT    NOT NULL DEFAULT 'ready'
                    CHECK (status IN ('ready', 'processing')),
    dirty           INTEGER NOT NULL DEFAULT 0,
    timer_at_ms     INTEGER,
    PRIMARY KEY (reason_type, reason_key)
    INDEX recheck_ready (status, available_at_ms)
) WITHOUT ROWID;

-- Dead letters: items that failed for good, with everything needed to retry.
CREATE TABLE parked (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    protocol            TEXT    NOT NULL,
    source              TEXT    NOT NULL,
    blob                BLOB    NOT NULL,
    partition_key       TEXT    NOT NULL DEFAULT '',
    reason              TEXT    NOT NULL,
    attempts            INTEGER NOT NULL,
    first_failed_at_ms  INTEGER NOT NULL,
    last_failed_at_ms   INTEGER NOT NULL,
    transport           TEXT,
    destination         TEXT
);

-- Tiny flags and counters only; large data belongs in tables.
CREATE TABLE kv (
    key     TEXT PRIMARY KEY,
    value   ANY
) WITHOUT ROWID;

-- Files that arrive as slices; file_id is the SHA-256 of the content (hex).
CREATE TABLE blobs (
    file_id         TEXT    PRIMARY KEY,
    total_size      INTEGER NOT NULL,
    mime            TEXT,
    next_slice      INTEGER NOT NULL DEFAULT 0,
    received_bytes  INTEGER NOT NULL DEFAULT 0,
    status          TEXT    NOT NULL DEFAULT 'receiving'
                    CHECK (status IN ('receiving', 'complete', 'corrupt')),
    reason          TEXT,
    created_at_ms   INTEGER NOT NULL,
    completed_at_ms INTEGER
) WITHOUT ROWID;

-- blob_slices_by_offset finds the slice holding a byte (a read that resumes mid-file).
CREATE TABLE blob_slices (
    file_id     TEXT    NOT NULL,
    slice_no    INTEGER NOT NULL,
    offset      INTEGER NOT NULL,
    data        BLOB    NOT NULL,
    PRIMARY KEY (file_id, slice_no)
    INDEX blob_slices_by_offset (file_id, offset)
) WITHOUT ROWID;

-- Opaque protocol state written through intents (e.g. MLS group snapshots).
CREATE TABLE protocol_state (
    protocol        TEXT    NOT NULL,
    key             TEXT    NOT NULL,
    value           BLOB    NOT NULL,
    updated_at_ms   INTEGER NOT NULL,
    PRIMARY KEY (protocol, key)
) WITHOUT ROWID;

-- One row per projector: whether it is live and the seq it was built through.
-- There is no "last applied" seq: projectors run in the transaction of the
-- events they apply, so a projection is never behind the log's head.
CREATE TABLE projections (
    name                TEXT    PRIMARY KEY,
    protocol            TEXT    NOT NULL,
    status              TEXT    NOT NULL DEFAULT 'live'
                        CHECK (status IN ('live', 'needs_rebuild')),
    built_through_seq   INTEGER NOT NULL DEFAULT 0,
    rebuilt_at_ms       INTEGER,
    failures            INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Projector failures that were isolated so authoritative state could commit.
CREATE TABLE projection_failures (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    projection  TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    error       TEXT    NOT NULL,
    failed_at_ms INTEGER NOT NULL,
    INDEX projection_failures_by_name (projection, id)
);
