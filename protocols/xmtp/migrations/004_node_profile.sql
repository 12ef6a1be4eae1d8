-- The node profile (see schema.sql): messages carry their content type and sender inbox, and the
-- identity updates of the inboxes we meet are kept.  Rows of the private profile keep '' in both.
ALTER TABLE xmtp_group_messages ADD COLUMN content_type TEXT NOT NULL DEFAULT '';
ALTER TABLE xmtp_group_messages ADD COLUMN sender_inbox_id TEXT NOT NULL DEFAULT '';
CREATE TABLE xmtp_identity_updates (
    inbox_id            TEXT    NOT NULL,
    sequence_id         INTEGER NOT NULL,
    server_timestamp_ns INTEGER NOT NULL,
    identity_update     BLOB    NOT NULL,
    PRIMARY KEY (inbox_id, sequence_id)
) WITHOUT ROWID;
