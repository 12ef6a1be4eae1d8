-- The sovereign store: encrypted MLS payloads and the metadata that routes them.
-- The server never decrypts; ids are ULIDs in arrival order; server timestamps
-- are microseconds since the Unix epoch, created_at seconds.

-- Every stored message: application messages and MLS control messages alike.
-- seq: the event log's row of the message's stored fact (``*_stored``), which holds the payload (as the event's
-- body): the store keeps each payload once, in the log that rebuilds read, and a page reads it from there by
-- rowid.  The fact's event_id is the digest (SHA-256 over the group and the payload) by which a client's retry
-- of the same payload is recognised and stored once.
-- group_id, sender_id: the MLS group id and the sender's Ed25519 key as their bytes (half the size of the hex
-- the wire and the facts spell them in; protocols/sovereign/history.py converts).
-- superseded: a commit for an epoch that already had one (stored, never applied).
-- sequence: the message's place in its group's history (1, 2, 3... none skipped), so a
-- client sees a message left out of a page; NULL for messages stored before numbering.
-- One index: a group's history in server order (protocols/sovereign/history.py).  Lookups by id and
-- retention's oldest first (id order is arrival order) use the primary key; tests/sovereign/test_query_plans.py
-- checks each query's plan.
CREATE TABLE sovereign_messages (
    id                  TEXT    PRIMARY KEY,
    seq                 INTEGER NOT NULL,
    group_id            BLOB    NOT NULL,
    sender_id           BLOB    NOT NULL,
    server_timestamp    INTEGER NOT NULL,
    payload_size        INTEGER NOT NULL,
    message_type        INTEGER NOT NULL DEFAULT 0 CHECK (message_type IN (0, 1, 2, 3)),
    epoch               INTEGER NOT NULL DEFAULT 0,
    superseded          INTEGER NOT NULL DEFAULT 0 CHECK (superseded IN (0, 1)),
    sequence            INTEGER
    INDEX sovereign_messages_group_timestamp (group_id, server_timestamp)
) WITHOUT ROWID;

-- One row per (message, recipient): 0 pending, 1 delivered, 2 read; never backwards.
-- Rows go with their message (the retention fact deletes both; no foreign key, so
-- a rebuild's shadow tables stand alone).
CREATE TABLE sovereign_delivery_status (
    message_id          TEXT    NOT NULL,
    recipient_id        TEXT    NOT NULL,
    status              INTEGER NOT NULL DEFAULT 0 CHECK (status IN (0, 1, 2)),
    delivered_at        INTEGER,
    read_at             INTEGER,
    PRIMARY KEY (message_id, recipient_id)
) WITHOUT ROWID;
-- What a reconnecting member has not received yet, in server (id) order.
CREATE INDEX sovereign_delivery_pending ON sovereign_delivery_status (recipient_id, message_id) WHERE status = 0;

-- Who is in which group now (the server's view: joins and leaves).
CREATE TABLE sovereign_group_members (
    group_id            TEXT    NOT NULL,
    user_id             TEXT    NOT NULL,
    joined_at           INTEGER NOT NULL,
    PRIMARY KEY (group_id, user_id)
    INDEX sovereign_group_members_user (user_id)
) WITHOUT ROWID;

-- Each group's epoch as its commits moved it (the first commit stored for an epoch wins),
-- its stored bytes, and who was welcomed into it (a welcome is the ticket to join).
CREATE TABLE sovereign_groups (
    group_id            TEXT    PRIMARY KEY,
    epoch               INTEGER,
    commits             INTEGER NOT NULL DEFAULT 0,
    last_seq            INTEGER NOT NULL
) WITHOUT ROWID;

-- server_timestamp is the welcome message's, so a recipient polls its welcomes in server order
-- with a (server_timestamp, message_id) cursor that the index below serves.
CREATE TABLE sovereign_welcomes (
    group_id            TEXT    NOT NULL,
    recipient_id        TEXT    NOT NULL,
    message_id          TEXT    NOT NULL,
    server_timestamp    INTEGER NOT NULL,
    PRIMARY KEY (group_id, recipient_id, message_id)
    INDEX sovereign_welcomes_recipient (recipient_id, server_timestamp, message_id)
) WITHOUT ROWID;

-- Application messages per group per UTC day, for the daily limit (control messages are not counted).
CREATE TABLE sovereign_daily_counts (
    group_id            TEXT    NOT NULL,
    day                 INTEGER NOT NULL,
    messages            INTEGER NOT NULL,
    last_seq            INTEGER NOT NULL,
    PRIMARY KEY (group_id, day)
) WITHOUT ROWID;

-- One-time KeyPackages per installation, consumed when fetched.
CREATE TABLE sovereign_key_packages (
    installation        TEXT    NOT NULL,
    ref                 TEXT    NOT NULL,
    key_package         BLOB    NOT NULL,
    published_at        INTEGER NOT NULL,
    PRIMARY KEY (installation, ref)
) WITHOUT ROWID;

-- The identity directory: which account address each installation belongs to, with the binding the
-- account signed.  The server keeps the binding as opaque bytes and never checks it; clients do.
CREATE TABLE sovereign_identities (
    address             TEXT    NOT NULL,
    installation        TEXT    PRIMARY KEY,
    binding             BLOB    NOT NULL,
    published_at        INTEGER NOT NULL
    INDEX sovereign_identities_address (address, installation)
) WITHOUT ROWID;

-- === The XMTP node (protocols/sovereign/xmtp_node, docs/xmtp-node.md) ===================================
-- XMTP v3 clients' data, on the same store.  Ids are node-wide and increasing (the XMTP API pages by them);
-- created_ns is when the node stored the row, in nanoseconds since the Unix epoch.  Payloads stay opaque.

-- Group messages (commits and application messages), in server order.  digest: SHA-256 over the group id
-- and the payload, the id of the stored fact, so a client's retry is stored once.
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
    INDEX sovereign_xmtp_group_messages_group (group_id, id)
);

-- Welcomes by the installation key they are addressed to (a real installation, or the random key libxmtp
-- stores one welcome under for pointers).  kind 0: a wrapped Welcome (data, welcome_metadata);
-- kind 1: a welcome pointer (data holds the pointer; welcome_metadata is empty).
CREATE TABLE sovereign_xmtp_welcomes (
    id                  INTEGER PRIMARY KEY,
    installation_key    BLOB    NOT NULL,
    created_ns          INTEGER NOT NULL,
    kind                INTEGER NOT NULL CHECK (kind IN (0, 1)),
    data                BLOB    NOT NULL,
    hpke_public_key     BLOB    NOT NULL,
    wrapper_algorithm   INTEGER NOT NULL,
    welcome_metadata    BLOB    NOT NULL
    INDEX sovereign_xmtp_welcomes_installation (installation_key, id)
);

-- The latest checked KeyPackage of each installation (a later upload replaces it).
CREATE TABLE sovereign_xmtp_key_packages (
    installation_key    BLOB    PRIMARY KEY,
    inbox_id            TEXT    NOT NULL,
    key_package         BLOB    NOT NULL,
    not_after           INTEGER NOT NULL,
    uploaded_ns         INTEGER NOT NULL
) WITHOUT ROWID;

-- Each inbox's identity updates, numbered 1, 2, 3... per inbox (the sequence id clients read after).
CREATE TABLE sovereign_xmtp_identity_updates (
    inbox_id            TEXT    NOT NULL,
    sequence_id         INTEGER NOT NULL,
    server_timestamp_ns INTEGER NOT NULL,
    identity_update     BLOB    NOT NULL,
    PRIMARY KEY (inbox_id, sequence_id)
) WITHOUT ROWID;

-- Which inboxes hold an identifier (an Ethereum address, a passkey), since when (the node's stamp of the
-- update that added it): the lookup answers the latest.  A revocation removes its inbox's row only, so each
-- inbox's updates touch only its own rows.  kind is the IdentifierKind of the XMTP API.
CREATE TABLE sovereign_xmtp_inbox_index (
    identifier          TEXT    NOT NULL,
    kind                INTEGER NOT NULL,
    inbox_id            TEXT    NOT NULL,
    claimed_ns          INTEGER NOT NULL,
    PRIMARY KEY (identifier, kind, inbox_id)
) WITHOUT ROWID;

-- Commit log entries (libxmtp's fork detection), per group, in node-wide order.
CREATE TABLE sovereign_xmtp_commit_log (
    id                  INTEGER PRIMARY KEY,
    group_id            BLOB    NOT NULL,
    entry               BLOB    NOT NULL,
    signature           BLOB    NOT NULL
    INDEX sovereign_xmtp_commit_log_group (group_id, id)
);

-- Application messages per group per UTC day, for the daily limit (commits are not counted).
CREATE TABLE sovereign_xmtp_daily_counts (
    group_id            BLOB    NOT NULL,
    day                 INTEGER NOT NULL,
    messages            INTEGER NOT NULL,
    last_seq            INTEGER NOT NULL,
    PRIMARY KEY (group_id, day)
) WITHOUT ROWID;
