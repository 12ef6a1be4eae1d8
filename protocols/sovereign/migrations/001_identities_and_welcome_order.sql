-- Welcomes carry their message's server timestamp, for polling them by cursor in server order.
-- A NOT NULL column needs a value for the rows already there, so the table is made anew and
-- filled from the messages.  A welcome row and its message are removed together, so each row
-- finds its message; should one not, the row is kept (it still lets its recipient join).
CREATE TABLE sovereign_welcomes_001 (
    group_id            TEXT    NOT NULL,
    recipient_id        TEXT    NOT NULL,
    message_id          TEXT    NOT NULL,
    server_timestamp    INTEGER NOT NULL,
    PRIMARY KEY (group_id, recipient_id, message_id)
) WITHOUT ROWID;
INSERT INTO sovereign_welcomes_001(group_id, recipient_id, message_id, server_timestamp)
    SELECT w.group_id, w.recipient_id, w.message_id, coalesce(m.server_timestamp, 0)
    FROM sovereign_welcomes AS w LEFT JOIN sovereign_messages AS m ON m.id = w.message_id;
DROP TABLE sovereign_welcomes;
ALTER TABLE sovereign_welcomes_001 RENAME TO sovereign_welcomes;
CREATE INDEX sovereign_welcomes_recipient ON sovereign_welcomes (recipient_id, server_timestamp, message_id);

-- The identity directory (see schema.sql).
CREATE TABLE sovereign_identities (
    address             TEXT    NOT NULL,
    installation        TEXT    PRIMARY KEY,
    binding             BLOB    NOT NULL,
    published_at        INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sovereign_identities_address ON sovereign_identities (address, installation);
