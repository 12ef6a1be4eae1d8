-- The XMTP node's tables (see schema.sql for what each holds).
CREATE TABLE sovereign_xmtp_group_messages (
    id                  INTEGER PRIMARY KEY,
    group_id            BLOB    NOT NULL,
    created_ns          INTEGER NOT NULL,
    data                BLOB    NOT NULL,
    sender_hmac         BLOB    NOT NULL,
    should_push         INTEGER NOT NULL CHECK (should_push IN (0, 1)),
    is_commit           INTEGER NOT NULL CHECK (is_commit IN (0, 1)),
    epoch               INTEGER NOT NULL,
    digest              BLOB    NOT NULL
);
CREATE INDEX sovereign_xmtp_group_messages_group ON sovereign_xmtp_group_messages (group_id, id);
CREATE TABLE sovereign_xmtp_welcomes (
    id                  INTEGER PRIMARY KEY,
    installation_key    BLOB    NOT NULL,
    created_ns          INTEGER NOT NULL,
    kind                INTEGER NOT NULL CHECK (kind IN (0, 1)),
    data                BLOB    NOT NULL,
    hpke_public_key     BLOB    NOT NULL,
    wrapper_algorithm   INTEGER NOT NULL,
    welcome_metadata    BLOB    NOT NULL
);
CREATE INDEX sovereign_xmtp_welcomes_installation ON sovereign_xmtp_welcomes (installation_key, id);
CREATE TABLE sovereign_xmtp_key_packages (
    installation_key    BLOB    PRIMARY KEY,
    inbox_id            TEXT    NOT NULL,
    key_package         BLOB    NOT NULL,
    not_after           INTEGER NOT NULL,
    uploaded_ns         INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE sovereign_xmtp_identity_updates (
    inbox_id            TEXT    NOT NULL,
    sequence_id         INTEGER NOT NULL,
    server_timestamp_ns INTEGER NOT NULL,
    identity_update     BLOB    NOT NULL,
    PRIMARY KEY (inbox_id, sequence_id)
) WITHOUT ROWID;
CREATE TABLE sovereign_xmtp_inbox_index (
    identifier          TEXT    NOT NULL,
    kind                INTEGER NOT NULL,
    inbox_id            TEXT    NOT NULL,
    claimed_ns          INTEGER NOT NULL,
    PRIMARY KEY (identifier, kind, inbox_id)
) WITHOUT ROWID;
CREATE TABLE sovereign_xmtp_commit_log (
    id                  INTEGER PRIMARY KEY,
    group_id            BLOB    NOT NULL,
    entry               BLOB    NOT NULL,
    signature           BLOB    NOT NULL
);
CREATE INDEX sovereign_xmtp_commit_log_group ON sovereign_xmtp_commit_log (group_id, id);
CREATE TABLE sovereign_xmtp_daily_counts (
    group_id            BLOB    NOT NULL,
    day                 INTEGER NOT NULL,
    messages            INTEGER NOT NULL,
    last_seq            INTEGER NOT NULL,
    PRIMARY KEY (group_id, day)
) WITHOUT ROWID;
