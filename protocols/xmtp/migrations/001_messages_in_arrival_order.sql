-- Messages in arrival order with their random id in an index of its own (see schema.sql).
CREATE TABLE xmtp_group_messages_in_arrival_order (
    id                      BLOB    NOT NULL,
    group_id                BLOB    NOT NULL,
    decrypted_message_bytes BLOB    NOT NULL,
    sent_at_ns              INTEGER NOT NULL,
    kind                    INTEGER NOT NULL CHECK (kind IN (1, 2, 3)),
    sender_installation_id  BLOB    NOT NULL,
    sender_wallet_address   TEXT    NOT NULL,
    server_id               TEXT    NOT NULL DEFAULT ''
);
INSERT INTO xmtp_group_messages_in_arrival_order(
    id, group_id, decrypted_message_bytes, sent_at_ns, kind, sender_installation_id, sender_wallet_address, server_id
)
    SELECT id, group_id, decrypted_message_bytes, sent_at_ns, kind, sender_installation_id, sender_wallet_address,
           server_id
    FROM xmtp_group_messages ORDER BY group_id, sent_at_ns, server_id;
DROP TABLE xmtp_group_messages;
ALTER TABLE xmtp_group_messages_in_arrival_order RENAME TO xmtp_group_messages;
CREATE UNIQUE INDEX xmtp_group_messages_by_id ON xmtp_group_messages (id);
CREATE INDEX xmtp_group_messages_group_sort ON xmtp_group_messages (group_id, sent_at_ns, server_id);
