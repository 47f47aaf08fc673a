-- Every table of this consumer's handlers, created if missing (see
-- `migrate`), after the inbox's own tables (the runtime's
-- `inbox_kit_runtime::postgres::SCHEMA`: inbox, attempts, dead_letters).
-- Timestamps are milliseconds since the Unix epoch (UTC). Ids compare
-- byte for byte (COLLATE "C"), as message ids do in the inbox: two are
-- the same only if every byte is, whatever the database's locale.

-- `debit`: balances, and every applied debit under its payment id. The
-- payment id is the ledger's own key (one payment, one debit): a second
-- line of defence behind the inbox.
CREATE TABLE IF NOT EXISTS accounts (
    id      bigint PRIMARY KEY,
    balance bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS debits (
    payment_id text   COLLATE "C" PRIMARY KEY,
    account    bigint NOT NULL,
    amount     bigint NOT NULL
);

-- `refund`: every refund credited, under its own refund id (from the
-- payload): the same refund sent again under a new message id passes the
-- inbox, and this key stops it. Looked up by payment to add up what was
-- refunded of it.
CREATE TABLE IF NOT EXISTS refunds (
    refund_id  text   COLLATE "C" PRIMARY KEY,
    payment_id text   COLLATE "C" NOT NULL,
    account    bigint NOT NULL,
    amount     bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS refunds_by_payment ON refunds (payment_id);

-- `notify`: the notifications outbox, one row per event and channel. The
-- key must include the channel (one event, one email AND one push) and
-- nothing more (a repeat of the event is the same notification).
CREATE TABLE IF NOT EXISTS notifications (
    event_id   text    COLLATE "C" NOT NULL,
    channel    text    NOT NULL,
    account    bigint  NOT NULL,
    body       text    NOT NULL,
    -- The relay's bookkeeping (src/relay): when the row was queued, when
    -- its send was confirmed, failed sends and the earliest next try, and
    -- when it was parked after too many failures.
    queued_at  bigint  NOT NULL DEFAULT ((extract(epoch FROM clock_timestamp()) * 1000)::bigint),
    sent_at    bigint,
    failures   integer NOT NULL DEFAULT 0,
    retry_at   bigint  NOT NULL DEFAULT 0,
    last_error text,
    parked_at  bigint,
    -- The W3C trace context of the delivery that queued the row, which the
    -- relay sends on (src/trace.rs).
    trace_parent text,
    UNIQUE (event_id, channel)
);
-- Added after the table first shipped: a database made before gets it.
-- Looked up first: even with IF NOT EXISTS, ALTER TABLE waits for an
-- exclusive lock, behind every running consumer's transaction.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM information_schema.columns
                   WHERE table_schema = current_schema()
                     AND table_name = 'notifications' AND column_name = 'trace_parent') THEN
        ALTER TABLE notifications ADD COLUMN trace_parent text;
    END IF;
END $$;
-- What the relay has left to send, in the order it sends it: the whole
-- sort key, so a take reads its batch off the index and stops (ordered by
-- `queued_at` alone, every take sorted every row left to send). Replaces
-- `notifications_to_send`, which had only `queued_at`.
DROP INDEX IF EXISTS notifications_to_send;
CREATE INDEX IF NOT EXISTS notifications_due ON notifications (queued_at, event_id, channel)
WHERE sent_at IS NULL AND parked_at IS NULL;
