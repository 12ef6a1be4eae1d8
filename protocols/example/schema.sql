-- The example protocol: a signed chat log.

-- One row per posted message; deleted ones keep their row, flagged.
CREATE TABLE example_messages (
    room        TEXT    NOT NULL,
    id          BLOB    NOT NULL,
    author      TEXT    NOT NULL,
    ts_ms       INTEGER NOT NULL,
    text        TEXT    NOT NULL,
    deleted     INTEGER NOT NULL DEFAULT 0,
    seq         INTEGER NOT NULL,
    PRIMARY KEY (room, id)
    INDEX example_messages_page (room, ts_ms DESC, id DESC)
) WITHOUT ROWID;

-- Per-room totals; last_seq makes re-applying an event a no-op.
CREATE TABLE example_rooms (
    room            TEXT    PRIMARY KEY,
    message_count   INTEGER NOT NULL,
    deleted_count   INTEGER NOT NULL,
    last_ts_ms      INTEGER NOT NULL,
    last_seq        INTEGER NOT NULL
) WITHOUT ROWID;
