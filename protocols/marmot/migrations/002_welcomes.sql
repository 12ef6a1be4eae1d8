-- Invitations received gift-wrapped (see schema.sql).
CREATE TABLE marmot_welcomes (
    welcome_id          TEXT    PRIMARY KEY,
    received_at_ms      INTEGER NOT NULL,
    sender              TEXT    NOT NULL,
    gid                 BLOB    NOT NULL,
    state               TEXT    NOT NULL CHECK (state IN ('pending', 'accepted', 'declined')),
    data                TEXT    NOT NULL
    INDEX marmot_welcomes_by_state (state, received_at_ms)
) WITHOUT ROWID;
