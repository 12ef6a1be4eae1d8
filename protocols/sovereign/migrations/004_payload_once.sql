-- Each payload stored once: a message row names its stored fact's row in the event log (which holds the
-- payload) instead of copying the payload and its digest; of its indexes only the group's history in server
-- order stays (by sender, and by group and size, no query used; retention's oldest first reads the primary
-- key, as ids grow in arrival order).  The log keeps every message's fact (a purge removes the row with it),
-- so each row finds its seq through the log's id index (sovereign_fact_seq: protocols/sovereign/sql_functions.py);
-- a row whose fact is missing could serve no payload and is left out.  The freed pages (about half the file) are reused by new messages; tessera scrub gives
-- them back to the disk at once.
CREATE TABLE sovereign_messages_004 (
    id                  TEXT    PRIMARY KEY,
    seq                 INTEGER NOT NULL,
    group_id            TEXT    NOT NULL,
    sender_id           TEXT    NOT NULL,
    server_timestamp    INTEGER NOT NULL,
    payload_size        INTEGER NOT NULL,
    message_type        INTEGER NOT NULL DEFAULT 0 CHECK (message_type IN (0, 1, 2, 3)),
    epoch               INTEGER NOT NULL DEFAULT 0,
    created_at          INTEGER NOT NULL,
    superseded          INTEGER NOT NULL DEFAULT 0 CHECK (superseded IN (0, 1)),
    sequence            INTEGER
) WITHOUT ROWID;
INSERT INTO sovereign_messages_004(id, seq, group_id, sender_id, server_timestamp, payload_size, message_type,
                                   epoch, created_at, superseded, sequence)
    SELECT * FROM (
        SELECT m.id, sovereign_fact_seq(m.digest) AS seq, m.group_id, m.sender_id, m.server_timestamp,
               m.payload_size, m.message_type, m.epoch, m.created_at, m.superseded, m.sequence
        FROM sovereign_messages AS m
    ) WHERE seq IS NOT NULL;
DROP TABLE sovereign_messages;
ALTER TABLE sovereign_messages_004 RENAME TO sovereign_messages;
CREATE INDEX sovereign_messages_group_timestamp ON sovereign_messages (group_id, server_timestamp);
