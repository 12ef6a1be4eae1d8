-- The projections' last_applied_seq goes: every transaction that projected an
-- event wrote it (a statement and a page of the WAL each), yet projectors run
-- in the transaction of the events they apply, so it only ever said where the
-- log's head was.  built_through_seq, status and failures stay.
ALTER TABLE projections DROP COLUMN last_applied_seq;
