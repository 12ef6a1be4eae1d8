-- The server's number of the message at each topic's cursor, and the numbers it did not hand out
-- (see schema.sql).  Topics synced before carry none: their next message starts the count.
ALTER TABLE xmtp_topic_refresh_state ADD COLUMN sequence INTEGER;
ALTER TABLE xmtp_topic_refresh_state ADD COLUMN gaps TEXT NOT NULL DEFAULT '';
