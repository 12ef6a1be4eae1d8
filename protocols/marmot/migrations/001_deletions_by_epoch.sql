-- Deletions are kept with their epoch (a rollback can undo them) and deleted
-- rumors keep the epoch of their deletion.
CREATE TABLE marmot_deletions (
    gid                 BLOB    NOT NULL,
    target              BLOB    NOT NULL,
    pubkey              TEXT    NOT NULL,
    deletion_id         BLOB    NOT NULL,
    epoch               INTEGER NOT NULL,
    PRIMARY KEY (gid, target, deletion_id)
) WITHOUT ROWID;
CREATE INDEX marmot_deletions_by_epoch ON marmot_deletions (gid, epoch);
INSERT OR IGNORE INTO marmot_deletions(gid, target, pubkey, deletion_id, epoch)
    SELECT d.gid, d.target, d.pubkey, d.deletion_id, coalesce(p.epoch, 0)
    FROM marmot_pending_deletions AS d
    LEFT JOIN marmot_processed AS p ON p.gid = d.gid AND p.rumor_id = d.deletion_id;
DROP TABLE marmot_pending_deletions;
ALTER TABLE marmot_messages ADD COLUMN deleted_epoch INTEGER;
UPDATE marmot_messages SET deleted_epoch = epoch WHERE state = 'Deleted';
