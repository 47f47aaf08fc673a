-- The inbox's own tables on PostgreSQL, created if missing when a
-- project migrates, before the handlers' tables. Timestamps are
-- milliseconds since the Unix epoch (UTC). Message ids compare byte for
-- byte (COLLATE "C"): two ids are the same only if every byte is, whatever
-- the database's locale.

-- The inbox: one row per (consumer, message) that was applied, or
-- dead-lettered (so that its redeliveries are duplicates too). The primary
-- key IS the duplicate check: `INSERT ... ON CONFLICT DO NOTHING` claims
-- the row, or finds it taken. A second transaction claiming the same key
-- waits for the first to end, then finds it taken (first committed) or
-- claims it (first rolled back).
CREATE TABLE IF NOT EXISTS inbox (
    consumer    text   NOT NULL,
    message_id  text   COLLATE "C" NOT NULL,
    received_at bigint NOT NULL,
    PRIMARY KEY (consumer, message_id)
);

-- Failed attempts per (consumer, message). Written after the failed
-- delivery's savepoint was rolled back, so the count survives the rollback
-- that undoes everything else the attempt did.
CREATE TABLE IF NOT EXISTS attempts (
    consumer       text    NOT NULL,
    message_id     text    COLLATE "C" NOT NULL,
    failures       integer NOT NULL,
    last_error     text    NOT NULL,
    last_failed_at bigint  NOT NULL,
    PRIMARY KEY (consumer, message_id)
);

-- Messages that failed max_attempts times, or that their handler refused,
-- with what is needed to look at them and re-drive them. Their inbox row is
-- written at the same time, so a redelivery is a duplicate instead of
-- another failure.
CREATE TABLE IF NOT EXISTS dead_letters (
    consumer   text    NOT NULL,
    message_id text    COLLATE "C" NOT NULL,
    event_type text    NOT NULL,
    payload    text    NOT NULL,
    error      text    NOT NULL,
    attempts   integer NOT NULL,
    -- Refused by its handler (never retried), not failed `attempts` times.
    refused    boolean NOT NULL DEFAULT false,
    dead_at    bigint  NOT NULL,
    PRIMARY KEY (consumer, message_id)
);
