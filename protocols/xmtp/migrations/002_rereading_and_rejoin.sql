-- Why a group needs a rejoin, and where each group topic may be read again from (see schema.sql).
ALTER TABLE xmtp_groups ADD COLUMN needs_rejoin TEXT NOT NULL DEFAULT '';
ALTER TABLE xmtp_topic_refresh_state ADD COLUMN epoch_starts TEXT NOT NULL DEFAULT '';
ALTER TABLE xmtp_topic_refresh_state ADD COLUMN skip_check TEXT NOT NULL DEFAULT '';
