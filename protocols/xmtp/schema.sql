-- The XMTP-style intents client (seed 002): groups, the messages read in them,
-- the intents that change them, the welcomes our commits release, and where
-- each topic's sync stands.  Enums are small integers, each checked here;
-- protocols/xmtp/kinds.py names them.

-- Every group we know: created by us, or announced by a welcome.
-- membership_state: 1 ALLOWED, 2 REJECTED, 3 PENDING.
-- active: 0 once we were removed from it (it is then read-only and not synced).
-- needs_rejoin: why we cannot follow the group any more (a commit we need is gone from the server); '' while
-- we can.  Sync keeps trying and clears it if the group moves on again.
-- leave_requested (node profile): 1 once we asked to leave (libxmtp's leave request), until a welcome re-adds us.
-- removed_reason: who removed us, and whether after our leave request; '' while we are a member.
CREATE TABLE xmtp_groups (
    id                  BLOB    PRIMARY KEY NOT NULL,
    created_at_ns       INTEGER NOT NULL,
    membership_state    INTEGER NOT NULL CHECK (membership_state IN (1, 2, 3)),
    name                TEXT    NOT NULL DEFAULT '',
    epoch               INTEGER NOT NULL DEFAULT 0,
    active              INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    added_by            TEXT    NOT NULL DEFAULT '',
    needs_rejoin        TEXT    NOT NULL DEFAULT '',
    leave_requested     INTEGER NOT NULL DEFAULT 0,
    removed_reason      TEXT    NOT NULL DEFAULT ''
    INDEX xmtp_groups_created_at (created_at_ns)
    INDEX xmtp_groups_membership_state (membership_state)
) WITHOUT ROWID;

-- Messages as the user sees them, decrypted.  id = SHA-256(decrypted bytes || group id || sent_at_ns):
-- the same message read twice is one row.  sent_at_ns is the server's timestamp and server_id its id:
-- together, server order (several messages may share a timestamp).
-- kind: 1 APPLICATION, 2 MEMBER_ADDED, 3 MEMBER_REMOVED.
-- Groups of the node profile (libxmtp's): id is libxmtp's message id, decrypted_message_bytes the
-- EncodedContent, content_type its type ('xmtp.org/text:1.0'), sender_inbox_id the sender's inbox,
-- server_id the node's id zero-padded to 20 digits; both columns are '' in the private profile.
-- Rows are kept in arrival order (a rowid table) and the random id in an index of its own: keyed by the id
-- (WITHOUT ROWID), every ~500-byte row landed at a random place, and a catch-up slowed as the table grew.
CREATE TABLE xmtp_group_messages (
    id                      BLOB    NOT NULL,
    group_id                BLOB    NOT NULL,
    decrypted_message_bytes BLOB    NOT NULL,
    sent_at_ns              INTEGER NOT NULL,
    kind                    INTEGER NOT NULL CHECK (kind IN (1, 2, 3)),
    sender_installation_id  BLOB    NOT NULL,
    sender_wallet_address   TEXT    NOT NULL,
    server_id               TEXT    NOT NULL DEFAULT '',
    content_type            TEXT    NOT NULL DEFAULT '',
    sender_inbox_id         TEXT    NOT NULL DEFAULT ''
    UNIQUE INDEX xmtp_group_messages_by_id (id)
    INDEX xmtp_group_messages_group_sort (group_id, sent_at_ns, server_id)
);

-- Every change we asked for, from its creation until COMMITTED or ERROR.
-- kind: 1 SEND_MESSAGE, 2 ADD_MEMBERS, 3 REMOVE_MEMBERS, 4 KEY_UPDATE, and on the node profile 5 METADATA_UPDATE,
-- 6 ADMIN_LIST_UPDATE, 7 PERMISSION_UPDATE, 8 UPDATE_INSTALLATIONS.
-- state: 1 TO_SEND, 2 PUBLISHED, 3 COMMITTED, 4 ERROR (error says why).
-- id is random (chosen by the command); seq, the log position of its creation, orders a group's intents.
-- request: what was asked (the text, the addresses), as JSON; publish_data: the concrete MLS
-- message for epoch `epoch`; post_commit_data: what to do once it is committed (the welcomes), as JSON.
CREATE TABLE xmtp_group_intents (
    id                  TEXT    PRIMARY KEY NOT NULL,
    seq                 INTEGER NOT NULL,
    kind                INTEGER NOT NULL CHECK (kind BETWEEN 1 AND 8),
    group_id            BLOB    NOT NULL,
    request             BLOB    NOT NULL,
    publish_data        BLOB    NOT NULL DEFAULT x'',
    post_commit_data    BLOB    NOT NULL DEFAULT x'',
    state               INTEGER NOT NULL CHECK (state IN (1, 2, 3, 4)),
    message_hash        BLOB,
    epoch               INTEGER,
    attempts            INTEGER NOT NULL DEFAULT 0,
    next_attempt_at_ns  INTEGER NOT NULL DEFAULT 0,
    rebuilds            INTEGER NOT NULL DEFAULT 0,
    error               TEXT    NOT NULL DEFAULT '',
    server_id           TEXT    NOT NULL DEFAULT '',
    updated_at_ns       INTEGER NOT NULL
    INDEX xmtp_group_intents_group_id_id (group_id, seq)
    INDEX xmtp_group_intents_state (state, next_attempt_at_ns)
) WITHOUT ROWID;

-- The intents still in play (TO_SEND, PUBLISHED), per group in order, and by the hash of their message:
-- publishing and reading back visit these, never a group's whole history of committed intents.
CREATE INDEX xmtp_group_intents_open ON xmtp_group_intents (group_id, seq) WHERE state IN (1, 2);
CREATE INDEX xmtp_group_intents_open_hash ON xmtp_group_intents (group_id, message_hash) WHERE state IN (1, 2);

-- The welcomes of our ADD_MEMBERS commits, one per invited installation.
-- state: 1 PENDING (its commit is not confirmed), 2 READY_TO_SEND, 3 SENT.
CREATE TABLE xmtp_outbound_welcomes (
    intent_id           TEXT    NOT NULL,
    installation        TEXT    NOT NULL,
    group_id            BLOB    NOT NULL,
    welcome             BLOB    NOT NULL,
    state               INTEGER NOT NULL CHECK (state IN (1, 2, 3)),
    PRIMARY KEY (intent_id, installation)
    INDEX xmtp_outbound_welcomes_state (state)
) WITHOUT ROWID;

-- Where the sync of each topic stands (a group: 'g/<hex id>'; our welcomes: 'w/<installation>').
-- Not a projection: the sync job writes it in the transaction of each payload it processes, and
-- lock_until_ns (0: free) keeps two syncs of one topic apart; lock_holder ('<host>/<pid>') lets a
-- process that starts clear the locks of holders that died (a cold start).
-- epoch_starts (groups): JSON {epoch: [cursor, sequence] of the commit that opened it} for the epochs we
-- may read again from (a missing epoch starts at the start of history); skip_check (groups): 'digest:count'
-- of the skipped messages we last read the topic again for, and how many times (see rereading.py).
-- sequence (groups): the server's number of the message at the cursor (NULL: none known), so a message
-- left out of a page shows as a number skipped; gaps (groups): JSON [[epoch, first, last], ...], the
-- numbers the server did not hand out when asked twice, read for again in later syncs.
CREATE TABLE xmtp_topic_refresh_state (
    topic                       TEXT    PRIMARY KEY NOT NULL,
    last_message_timestamp_ns   INTEGER NOT NULL DEFAULT 0,
    cursor                      TEXT    NOT NULL DEFAULT '',
    lock_until_ns               INTEGER NOT NULL DEFAULT 0,
    lock_holder                 TEXT    NOT NULL DEFAULT '',
    epoch_starts                TEXT    NOT NULL DEFAULT '',
    skip_check                  TEXT    NOT NULL DEFAULT '',
    sequence                    INTEGER,
    gaps                        TEXT    NOT NULL DEFAULT ''
) WITHOUT ROWID;

-- The KeyPackages of ours the server has been given (their private halves are sealed in protocol
-- state until a welcome uses them).  Not a projection: the key-package job writes it after the server
-- took them, so one is never handed to the server twice (a second inviter would find it used up).
CREATE TABLE xmtp_published_key_packages (
    ref                 BLOB    PRIMARY KEY NOT NULL,
    published_at_ns     INTEGER NOT NULL
) WITHOUT ROWID;

-- The identity updates of every inbox we meet in a group of the node profile, as the node numbers them
-- (sequence_id 1, 2, 3... per inbox), each verified onto the ones before it with libxmtp's association
-- rules before it is kept.  Not a projection: fetched from the node between transactions, and what a
-- welcome's and a commit's members are checked against inside one.
CREATE TABLE xmtp_identity_updates (
    inbox_id            TEXT    NOT NULL,
    sequence_id         INTEGER NOT NULL,
    server_timestamp_ns INTEGER NOT NULL,
    identity_update     BLOB    NOT NULL,
    PRIMARY KEY (inbox_id, sequence_id)
) WITHOUT ROWID;
