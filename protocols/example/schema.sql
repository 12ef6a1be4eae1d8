-- The example protocol: a signed chat log.

-- One row per posted message, in the order the log recorded them (seq is the
-- event's seq, the rowid): appends land at the end of the table and at the end
-- of their room's range in the page index, never at a random place.  The text
-- and author stay in the event's payload, which pages read through seq
-- (protocols/example/queries.py) instead of keeping a second copy here.
CREATE TABLE example_messages (
    seq         INTEGER PRIMARY KEY,
    room        TEXT    NOT NULL,
    ts_ms       INTEGER NOT NULL,
    id          BLOB    NOT NULL
    INDEX example_messages_page (room, ts_ms)
);

-- Messages their author deleted: few, so a separate table keyed by id costs
-- less than an id index over every message.
CREATE TABLE example_deletions (
    id          BLOB    PRIMARY KEY,
    room        TEXT    NOT NULL
) WITHOUT ROWID;

-- Per-room totals; last_seq makes re-applying an event a no-op.
CREATE TABLE example_rooms (
    room            TEXT    PRIMARY KEY,
    message_count   INTEGER NOT NULL,
    deleted_count   INTEGER NOT NULL,
    last_ts_ms      INTEGER NOT NULL,
    last_seq        INTEGER NOT NULL
) WITHOUT ROWID;
