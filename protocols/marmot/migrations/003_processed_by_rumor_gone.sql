-- Nothing looks outer events up by rumor in the read model any more: the handlers ask the plugin's
-- write-side state who wrote a rumor (carried/<gid>/<rumor id>/...), so the index only cost a write per message.
DROP INDEX IF EXISTS marmot_processed_by_rumor;
