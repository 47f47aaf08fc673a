//! The tripwire on one handler's own statement, on SQLite: a trigger on
//! the table the handler writes refuses the rows of the messages listed,
//! with `RAISE(ABORT)` (the statement fails, the transaction goes on) or
//! `RAISE(ROLLBACK)` (the statement ends the whole transaction). The
//! project names the table and the column that holds the message id, in
//! its `StatementTripwire` implementation; this is the SQL behind it.

use rusqlite::params;

use super::{SqliteFixture, SqliteTest};

impl<P: SqliteTest> SqliteFixture<P> {
    /// From now on, a row written to `table` whose `column` holds one of
    /// `message_ids` fails at its statement, or (`whole_transaction`)
    /// ends its whole transaction. The table and triggers are made the
    /// first time.
    pub fn arm_statement_tripwire(
        &self,
        table: &str,
        column: &str,
        message_ids: &[&str],
        whole_transaction: bool,
    ) {
        let db = self.database().connect().expect("connect");
        db.execute_batch(&tripwire_sql(table, column))
            .expect("make the statement tripwire");
        for id in message_ids {
            db.execute(
                "INSERT OR REPLACE INTO statement_tripwire (message_id, whole) VALUES (?1, ?2)",
                params![id, whole_transaction],
            )
            .expect("arm the statement tripwire");
        }
    }

    /// No statement fails any more.
    pub fn disarm_statement_tripwire(&self, table: &str, column: &str) {
        self.execute(&format!(
            "{}\nDELETE FROM statement_tripwire;",
            tripwire_sql(table, column)
        ));
    }
}

/// The tripwire's table and triggers on `table`, each made if missing.
fn tripwire_sql(table: &str, column: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS statement_tripwire (message_id TEXT PRIMARY KEY, whole INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS {table}_tripwire_statement BEFORE INSERT ON {table}
WHEN EXISTS (SELECT 1 FROM statement_tripwire WHERE message_id = NEW.{column} AND whole = 0)
BEGIN
    SELECT RAISE(ABORT, 'tripwire: this statement fails');
END;
CREATE TRIGGER IF NOT EXISTS {table}_tripwire_transaction BEFORE INSERT ON {table}
WHEN EXISTS (SELECT 1 FROM statement_tripwire WHERE message_id = NEW.{column} AND whole = 1)
BEGIN
    SELECT RAISE(ROLLBACK, 'tripwire: this statement ends its transaction');
END;"
    )
}
