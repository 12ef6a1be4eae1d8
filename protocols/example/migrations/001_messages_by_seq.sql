-- Messages in log order, referencing the event's payload instead of copying
-- its text; deletions move to a table of their own (see schema.sql).
CREATE TABLE example_deletions (
    id          BLOB    PRIMARY KEY,
    room        TEXT    NOT NULL
) WITHOUT ROWID;
INSERT INTO example_deletions(id, room) SELECT id, room FROM example_messages WHERE deleted;
CREATE TABLE example_messages_by_seq (
    seq         INTEGER PRIMARY KEY,
    room        TEXT    NOT NULL,
    ts_ms       INTEGER NOT NULL,
    id          BLOB    NOT NULL
);
INSERT INTO example_messages_by_seq(seq, room, ts_ms, id) SELECT seq, room, ts_ms, id FROM example_messages ORDER BY seq;
DROP TABLE example_messages;
ALTER TABLE example_messages_by_seq RENAME TO example_messages;
CREATE INDEX example_messages_page ON example_messages (room, ts_ms);
