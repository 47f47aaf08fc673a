-- The inbox: one row per (consumer, message) that was applied.
-- The primary key IS the duplicate check: inserting an existing pair fails
-- with SQLITE_CONSTRAINT_PRIMARYKEY inside the delivery's transaction.
-- received_at is milliseconds since the Unix epoch (UTC).
CREATE TABLE IF NOT EXISTS inbox (
    consumer    TEXT    NOT NULL,
    message_id  TEXT    NOT NULL,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (consumer, message_id)
) WITHOUT ROWID;
