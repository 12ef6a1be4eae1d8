-- Each message's place in its group's history (see schema.sql).  Messages stored before carry
-- none: the store numbers each group's messages from the first one stored after this migration.
ALTER TABLE sovereign_messages ADD COLUMN sequence INTEGER;
