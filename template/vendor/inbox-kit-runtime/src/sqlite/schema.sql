-- The inbox's own tables on SQLite, created if missing when a project's
-- database opens, before the handlers' tables. Timestamps are milliseconds
-- since the Unix epoch (UTC).

-- The inbox: one row per (consumer, message) that was applied, or
-- dead-lettered (so that its redeliveries are duplicates too).
-- The primary key IS the duplicate check: inserting an existing pair fails
-- with SQLITE_CONSTRAINT_PRIMARYKEY inside the delivery's transaction.
CREATE TABLE IF NOT EXISTS inbox (
    consumer    TEXT    NOT NULL,
    message_id  TEXT    NOT NULL,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (consumer, message_id)
) WITHOUT ROWID;

-- Failed attempts per (consumer, message). Written after the failed
-- delivery's savepoint was rolled back, so the count survives the rollback
-- that undoes everything else the attempt did.
CREATE TABLE IF NOT EXISTS attempts (
    consumer       TEXT    NOT NULL,
    message_id     TEXT    NOT NULL,
    failures       INTEGER NOT NULL,
    last_error     TEXT    NOT NULL,
    last_failed_at INTEGER NOT NULL,
    PRIMARY KEY (consumer, message_id)
) WITHOUT ROWID;

-- Messages that failed max_attempts times, or that their handler refused,
-- with what is needed to look at them and re-drive them. Their inbox row is
-- written at the same time, so a redelivery is a duplicate instead of
-- another failure.
CREATE TABLE IF NOT EXISTS dead_letters (
    consumer   TEXT    NOT NULL,
    message_id TEXT    NOT NULL,
    event_type TEXT    NOT NULL,
    payload    TEXT    NOT NULL,
    error      TEXT    NOT NULL,
    attempts   INTEGER NOT NULL,
    -- 1: refused by its handler (never retried); 0: failed `attempts` times.
    refused    INTEGER NOT NULL DEFAULT 0,
    dead_at    INTEGER NOT NULL,
    PRIMARY KEY (consumer, message_id)
) WITHOUT ROWID;
