-- The schema loader's own bookkeeping, created before anything else.

-- One row per schema owner ('core', each protocol): what was applied.
CREATE TABLE schema_versions (
    owner           TEXT    PRIMARY KEY,
    version         INTEGER NOT NULL,
    checksum        TEXT    NOT NULL,
    applied_at_ms   INTEGER NOT NULL
) WITHOUT ROWID;

-- Numbered migrations, applied or recorded as the baseline of a new database.
CREATE TABLE schema_migrations (
    owner           TEXT    NOT NULL,
    number          INTEGER NOT NULL,
    name            TEXT    NOT NULL,
    checksum        TEXT    NOT NULL,
    applied_at_ms   INTEGER NOT NULL,
    baseline        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (owner, number)
) WITHOUT ROWID;

-- Which owner defined each table, index, view and trigger.
CREATE TABLE schema_objects (
    name            TEXT    PRIMARY KEY,
    owner           TEXT    NOT NULL,
    type            TEXT    NOT NULL,
    table_name      TEXT
    INDEX schema_objects_by_owner (owner)
) WITHOUT ROWID;
