-- The node profile's intents that change a libxmtp group's metadata, admins, permissions and members'
-- installations (kinds 5 to 8, see schema.sql and protocols/xmtp/kinds.py): SQLite cannot widen a CHECK
-- in place, so the intents table is made again with every row it held.
CREATE TABLE xmtp_group_intents_of_every_kind (
    id                  TEXT    PRIMARY KEY NOT NULL,
    seq                 INTEGER NOT NULL,
    kind                INTEGER NOT NULL CHECK (kind BETWEEN 1 AND 8),
    group_id            BLOB    NOT NULL,
    request             BLOB    NOT NULL,
    publish_data        BLOB    NOT NULL DEFAULT x'',
    post_commit_data    BLOB    NOT NULL DEFAULT x'',
    state               INTEGER NOT NULL CHECK (state IN (1, 2, 3, 4)),
    message_hash        BLOB,
    epoch               INTEGER,
    attempts            INTEGER NOT NULL DEFAULT 0,
    next_attempt_at_ns  INTEGER NOT NULL DEFAULT 0,
    rebuilds            INTEGER NOT NULL DEFAULT 0,
    error               TEXT    NOT NULL DEFAULT '',
    server_id           TEXT    NOT NULL DEFAULT '',
    updated_at_ns       INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO xmtp_group_intents_of_every_kind SELECT id, seq, kind, group_id, request, publish_data, post_commit_data,
    state, message_hash, epoch, attempts, next_attempt_at_ns, rebuilds, error, server_id, updated_at_ns
    FROM xmtp_group_intents;
DROP TABLE xmtp_group_intents;
ALTER TABLE xmtp_group_intents_of_every_kind RENAME TO xmtp_group_intents;
CREATE INDEX xmtp_group_intents_group_id_id ON xmtp_group_intents (group_id, seq);
CREATE INDEX xmtp_group_intents_state ON xmtp_group_intents (state, next_attempt_at_ns);
CREATE INDEX xmtp_group_intents_open ON xmtp_group_intents (group_id, seq) WHERE state IN (1, 2);
CREATE INDEX xmtp_group_intents_open_hash ON xmtp_group_intents (group_id, message_hash) WHERE state IN (1, 2);
