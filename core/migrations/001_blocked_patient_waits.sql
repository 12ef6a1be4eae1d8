-- Patient waits: blocked items that wait for a dependency without consuming
-- attempts, parked only after a horizon counted from their first block.
ALTER TABLE blocked ADD COLUMN waiting_since_ms INTEGER;
ALTER TABLE blocked ADD COLUMN expires_at_ms INTEGER;
ALTER TABLE blocked ADD COLUMN expired_reason TEXT;
CREATE INDEX blocked_by_expiry ON blocked (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
