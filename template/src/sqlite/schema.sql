-- Every table of this consumer's handlers, created if missing when the
-- database opens, after the inbox's own tables (the runtime's
-- `inbox_kit_runtime::sqlite::SCHEMA`: inbox, attempts, dead_letters).
-- Timestamps are milliseconds since the Unix epoch (UTC).

-- `debit`: balances, and every applied debit under its payment id. The
-- payment id is the ledger's own key (one payment, one debit): a second
-- line of defence behind the inbox.
CREATE TABLE IF NOT EXISTS accounts (
    id      INTEGER PRIMARY KEY,
    balance INTEGER NOT NULL CHECK (typeof(balance) = 'integer')
);
CREATE TABLE IF NOT EXISTS debits (
    payment_id TEXT    PRIMARY KEY,
    account    INTEGER NOT NULL,
    amount     INTEGER NOT NULL
) WITHOUT ROWID;

-- `refund`: every refund credited, under its own refund id (from the
-- payload): the same refund sent again under a new message id passes the
-- inbox, and this key stops it. Looked up by payment to add up what was
-- refunded of it.
CREATE TABLE IF NOT EXISTS refunds (
    refund_id  TEXT    NOT NULL PRIMARY KEY,
    payment_id TEXT    NOT NULL,
    account    INTEGER NOT NULL,
    amount     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS refunds_by_payment ON refunds (payment_id);

-- `notify`: the notifications outbox, one row per event and channel. The
-- key must include the channel (one event, one email AND one push) and
-- nothing more (a repeat of the event is the same notification).
CREATE TABLE IF NOT EXISTS notifications (
    event_id   TEXT    NOT NULL,
    channel    TEXT    NOT NULL,
    account    INTEGER NOT NULL,
    body       TEXT    NOT NULL,
    -- The relay's bookkeeping (src/relay): when the row was queued, when
    -- its send was confirmed, failed sends and the earliest next try, and
    -- when it was parked after too many failures.
    queued_at  INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)),
    sent_at    INTEGER,
    failures   INTEGER NOT NULL DEFAULT 0,
    retry_at   INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    parked_at  INTEGER,
    -- The W3C trace context of the delivery that queued the row, which the
    -- relay sends on (src/trace.rs). Added after the table first shipped:
    -- a database made before gets it (ADDED_COLUMNS in src/sqlite/mod.rs).
    trace_parent TEXT,
    UNIQUE (event_id, channel)
);
-- What the relay has left to send, in the order it sends it: the whole
-- sort key, so a take reads its batch off the index and stops (ordered by
-- `queued_at` alone, every take sorted every row left to send). Replaces
-- `notifications_to_send`, which had only `queued_at`.
DROP INDEX IF EXISTS notifications_to_send;
CREATE INDEX IF NOT EXISTS notifications_due ON notifications (queued_at, event_id, channel)
WHERE sent_at IS NULL AND parked_at IS NULL;
