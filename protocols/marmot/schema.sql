-- Marmot (MLS over Nostr): read models built from the plugin's facts.
-- Group, outer-event and rumor ids are 32-byte BLOBs: SQLite compares them
-- bytewise, which is the same order as their lowercase hex, so the
-- (created_at, id) cursor rule holds in SQL and in Python alike.
-- created_at columns are Nostr timestamps (seconds).

-- One row per joined group.  last_seq makes epoch changes apply once, in log
-- order; the resume cursor only ever moves forward (row-value max).
CREATE TABLE marmot_groups (
    gid                 BLOB    PRIMARY KEY,
    self_pubkey         TEXT    NOT NULL,
    joined_epoch        INTEGER NOT NULL,
    epoch               INTEGER NOT NULL,
    members             INTEGER NOT NULL,
    admins              TEXT    NOT NULL,
    active              INTEGER NOT NULL DEFAULT 1,
    rollbacks           INTEGER NOT NULL DEFAULT 0,
    resume_created_at   INTEGER NOT NULL DEFAULT -1,
    resume_id           BLOB    NOT NULL DEFAULT x'',
    last_seq            INTEGER NOT NULL
) WITHOUT ROWID;

-- Every outer (kind-445) event the plugin decided something about, with its
-- processing state: a read model (the handlers dedupe and roll back from the
-- plugin's write-side records, seen/<gid>/<outer id>).  raw is only set in databases
-- written before raw events moved to protocol state (kept/...).
CREATE TABLE marmot_processed (
    gid                 BLOB    NOT NULL,
    outer_id            BLOB    NOT NULL,
    outer_created_at    INTEGER NOT NULL,
    state               TEXT    NOT NULL CHECK (state IN ('Created', 'Processed', 'ProcessedCommit', 'Failed',
                                                          'EpochInvalidated', 'Retryable')),
    content_type        TEXT,
    epoch               INTEGER,
    rumor_id            BLOB,
    rumor_pubkey        TEXT,
    reason              TEXT,
    detail              TEXT,
    raw                 TEXT,
    PRIMARY KEY (gid, outer_id)
    INDEX marmot_processed_by_state (gid, state, epoch)
) WITHOUT ROWID;

-- Add/remove proposals waiting for an admin's commit (dropped when their epoch ends).
CREATE TABLE marmot_proposals (
    gid                 BLOB    NOT NULL,
    ref                 BLOB    NOT NULL,
    epoch               INTEGER NOT NULL,
    kind                TEXT    NOT NULL,
    proposer            TEXT    NOT NULL,
    subject             TEXT,
    outer_id            BLOB    NOT NULL,
    PRIMARY KEY (gid, ref)
) WITHOUT ROWID;

-- Every deletion (kind 5) the main chain carried, one row per target, with the
-- epoch it came in: a target arriving later is stored Deleted at once, and a
-- rollback drops the deletions of the epochs it invalidates.
CREATE TABLE marmot_deletions (
    gid                 BLOB    NOT NULL,
    target              BLOB    NOT NULL,
    pubkey              TEXT    NOT NULL,
    deletion_id         BLOB    NOT NULL,
    epoch               INTEGER NOT NULL,
    PRIMARY KEY (gid, target, deletion_id)
    INDEX marmot_deletions_by_epoch (gid, epoch)
) WITHOUT ROWID;

-- The decrypted history: one row per application rumor (deletion rumors are
-- not shown; they only change the state of their target).  Pages are keyset
-- scans of marmot_messages_page by (created_at, rumor_id).  A Deleted row
-- keeps its content (never shown) and the epoch of the deletion, so a
-- rollback that invalidates the deletion can restore it.
CREATE TABLE marmot_messages (
    gid                 BLOB    NOT NULL,
    rumor_id            BLOB    NOT NULL,
    created_at          INTEGER NOT NULL,
    pubkey              TEXT    NOT NULL,
    kind                INTEGER NOT NULL,
    content             TEXT    NOT NULL,
    tags                TEXT    NOT NULL,
    outer_id            BLOB    NOT NULL,
    outer_created_at    INTEGER NOT NULL,
    epoch               INTEGER NOT NULL,
    state               TEXT    NOT NULL CHECK (state IN ('Created', 'Processed', 'Deleted', 'EpochInvalidated')),
    deleted_epoch       INTEGER,
    PRIMARY KEY (gid, rumor_id)
    INDEX marmot_messages_page (gid, created_at, rumor_id)
) WITHOUT ROWID;

-- Invitations: welcomes that arrived gift-wrapped for one of our KeyPackages
-- (a provisional join succeeded), until we accept or decline them.  data is
-- the welcome_received fact as JSON (group name, admins, relays, members).
CREATE TABLE marmot_welcomes (
    welcome_id          TEXT    PRIMARY KEY,
    received_at_ms      INTEGER NOT NULL,
    sender              TEXT    NOT NULL,
    gid                 BLOB    NOT NULL,
    state               TEXT    NOT NULL CHECK (state IN ('pending', 'accepted', 'declined')),
    data                TEXT    NOT NULL
    INDEX marmot_welcomes_by_state (state, received_at_ms)
) WITHOUT ROWID;
