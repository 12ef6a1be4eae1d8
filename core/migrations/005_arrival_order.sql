-- Reading what arrived in its authors' order: incoming blobs know their
-- delivery; waits in time order are woken by their envelopes' time, through
-- a reason index that walks them in that order.
ALTER TABLE incoming ADD COLUMN delivery INTEGER NOT NULL DEFAULT 0;
ALTER TABLE blocked ADD COLUMN order_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE blocked ADD COLUMN order_id BLOB NOT NULL DEFAULT x'';
DROP INDEX blocked_by_reason;
CREATE INDEX blocked_by_reason ON blocked (reason_type, reason_key, order_ms, order_id, id);
