//! The inbox's connection: statements whose answer nobody waits for travel
//! with the next one that has an answer.
//!
//! On a synchronous client every statement is a round trip: the client
//! sends it and waits for the server's answer before sending the next. A
//! delivery would wait for its `SAVEPOINT`, then for each of its handler's
//! statements, and its batch for `BEGIN` and `COMMIT` besides. The inbox
//! needs nothing back from `BEGIN`, `SAVEPOINT`, `RELEASE` or
//! `ROLLBACK TO SAVEPOINT` but "it worked", so [`Pipelined::defer`] queues
//! them and the next statement with an answer takes them along: both go
//! out in one write and both answers come back in one round trip, in
//! order. The server runs them in the order sent, so a deferred
//! `SAVEPOINT` still comes before the handler's statement it was sent
//! with.
//!
//! The pipelining is tokio-postgres's own (requests polled together on one
//! connection are written together); each connection drives its socket on
//! a runtime of its own, on the worker's thread, only while a statement is
//! in flight, so handlers stay plain synchronous functions.
//!
//! If a deferred statement fails, the statement it travelled with reports
//! that error (the server would have aborted the transaction anyway).

use std::time::Duration;

use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Error, GenericClient, Row, Statement, ToStatement};
use tokio::runtime::Runtime;

use crate::storage::{StorageError, StorageFault};

/// What the inbox's and the handlers' SQL needs from a connection, offered
/// by both the synchronous client (its transactions, for one-off work) and
/// [`Pipelined`] (the inbox's connection).
pub trait Exec {
    fn prepare(&mut self, sql: &str) -> Result<Statement, Error>;

    fn query<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Error>;

    fn query_opt<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error>;

    fn query_one<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, Error>;

    fn execute<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Error>;
}

impl<C: GenericClient> Exec for C {
    fn prepare(&mut self, sql: &str) -> Result<Statement, Error> {
        GenericClient::prepare(self, sql)
    }

    fn query<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Error> {
        GenericClient::query(self, statement, params)
    }

    fn query_opt<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error> {
        GenericClient::query_opt(self, statement, params)
    }

    fn query_one<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, Error> {
        GenericClient::query_one(self, statement, params)
    }

    fn execute<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Error> {
        GenericClient::execute(self, statement, params)
    }
}

/// How long a closing connection may take to say goodbye to the server.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// A connection that sends deferred statements with the next one.
pub struct Pipelined {
    /// `None` only while being dropped.
    client: Option<tokio_postgres::Client>,
    /// Drives the socket; ends when the connection closes.
    connection: Option<tokio::task::JoinHandle<()>>,
    runtime: Runtime,
    /// Statements to send before the next one, `;`-separated.
    deferred: String,
    /// Whether a transaction was begun and not yet ended.
    in_transaction: bool,
    /// Round trips made so far.
    round_trips: u64,
}

impl Pipelined {
    /// Connects with `config`.
    pub fn connect(config: &tokio_postgres::Config) -> Result<Self, StorageError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| {
                StorageError::new(
                    StorageFault::Other,
                    format!("cannot start the connection's runtime: {error}"),
                )
            })?;
        let (client, connection) = runtime.block_on(config.connect(tokio_postgres::NoTls))?;
        let connection = runtime.spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "database connection ended");
            }
        });
        Ok(Self {
            client: Some(client),
            connection: Some(connection),
            runtime,
            deferred: String::new(),
            in_transaction: false,
            round_trips: 0,
        })
    }

    /// Round trips to the server so far, so that what the deferring saves
    /// is counted, not timed (a statement given as text, not prepared,
    /// costs one more, uncounted: its prepare).
    pub fn round_trips(&self) -> u64 {
        self.round_trips
    }

    /// Whether a transaction was begun and not yet ended.
    pub fn in_transaction(&self) -> bool {
        self.in_transaction
    }

    /// Whether the server closed the connection (or it broke).
    pub fn is_closed(&self) -> bool {
        self.client.as_ref().is_none_or(|client| client.is_closed())
    }

    /// Queues `sql` (statements without an answer worth waiting for) to be
    /// sent with the next statement.
    pub fn defer(&mut self, sql: &str) {
        if !self.deferred.is_empty() {
            self.deferred.push_str("; ");
        }
        self.deferred.push_str(sql);
    }

    /// Begins a transaction, sent with the next statement. One left open
    /// by an earlier error is rolled back first, never continued.
    pub fn begin(&mut self) {
        self.deferred.clear();
        self.defer(if self.in_transaction {
            "ROLLBACK; BEGIN"
        } else {
            "BEGIN"
        });
        self.in_transaction = true;
    }

    /// Commits the transaction, sent with whatever was deferred.
    ///
    /// PostgreSQL answers `COMMIT` in a transaction that an error aborted
    /// with a rollback, and no error: a statement whose error was swallowed
    /// (by a handler) would have the whole batch reported applied and
    /// lost. So a statement that fails in an aborted transaction goes
    /// first, in the same round trip, and its error stops the `COMMIT`.
    pub fn commit(&mut self) -> Result<(), StorageError> {
        self.batch_execute("SELECT 1; COMMIT").map_err(|error| {
            if error.code() == Some(&SqlState::IN_FAILED_SQL_TRANSACTION) {
                StorageError::new(
                    StorageFault::Other,
                    "nothing was committed: a statement failed and its error was not passed on \
                     (does a handler swallow an error from its tables?)",
                )
            } else {
                error.into()
            }
        })?;
        self.in_transaction = false;
        Ok(())
    }

    /// Commits a transaction that wrote and locked nothing (a batch of
    /// duplicates, a relay's take that found no row) without waiting for
    /// the answer, which the connection reads and drops when it comes.
    ///
    /// There is nothing to lose: the transaction holds no row and no
    /// error (its only statement answered), so its `COMMIT` cannot fail
    /// but with the connection, which the next statement then finds
    /// broken. It is written to the socket now, not deferred to the next
    /// batch: a transaction left open between batches would hold its lock
    /// on the inbox for as long as the consumer waits for messages, and
    /// lock out every `TRUNCATE`, `ALTER TABLE` and migration meanwhile.
    pub fn commit_unawaited(&mut self) {
        self.defer("COMMIT");
        let sql = std::mem::take(&mut self.deferred);
        let client = self.client.as_ref().expect("open until dropped");
        self.runtime.block_on(async {
            let mut commit = std::pin::pin!(client.batch_execute(&sql));
            // The first poll queues the request on the connection, ahead
            // of any later one; the answer is not awaited.
            std::future::poll_fn(|context| {
                let _ = commit.as_mut().poll(context);
                std::task::Poll::Ready(())
            })
            .await;
            // Lets the connection's task run and write it.
            tokio::task::yield_now().await;
        });
        self.in_transaction = false;
    }

    /// Rolls the transaction back, dropping what was deferred. An error is
    /// ignored: the transaction ends either way (a broken connection takes
    /// it with it).
    pub fn rollback(&mut self) {
        self.deferred.clear();
        if self.in_transaction && !self.is_closed() {
            let _ = self.batch_execute("ROLLBACK");
        }
        self.in_transaction = false;
    }

    /// Runs `sql` (statements without parameters) after what was deferred,
    /// in one round trip.
    pub fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.defer(sql);
        let (runtime, client, sql) = self.take_deferred();
        runtime.block_on(client.batch_execute(&sql))
    }

    /// The runtime, the client and the deferred statements, taken for
    /// the next round trip.
    fn take_deferred(&mut self) -> (&Runtime, &tokio_postgres::Client, String) {
        self.round_trips += 1;
        let deferred = std::mem::take(&mut self.deferred);
        let client = self.client.as_ref().expect("open until dropped");
        (&self.runtime, client, deferred)
    }
}

/// Sends `deferred` (if any), then `request`, without waiting in between;
/// the first error wins.
async fn after<T>(
    client: &tokio_postgres::Client,
    deferred: &str,
    request: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    if deferred.is_empty() {
        return request.await;
    }
    // `biased`: polled in this order, so the deferred statements are
    // written first.
    let (before, answer) = tokio::join!(biased; client.batch_execute(deferred), request);
    before?;
    answer
}

impl Exec for Pipelined {
    fn prepare(&mut self, sql: &str) -> Result<Statement, Error> {
        let (runtime, client, deferred) = self.take_deferred();
        runtime.block_on(after(client, &deferred, client.prepare(sql)))
    }

    fn query<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Error> {
        let (runtime, client, deferred) = self.take_deferred();
        runtime.block_on(after(client, &deferred, client.query(statement, params)))
    }

    fn query_opt<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error> {
        let (runtime, client, deferred) = self.take_deferred();
        runtime.block_on(after(
            client,
            &deferred,
            client.query_opt(statement, params),
        ))
    }

    fn query_one<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, Error> {
        let (runtime, client, deferred) = self.take_deferred();
        runtime.block_on(after(
            client,
            &deferred,
            client.query_one(statement, params),
        ))
    }

    fn execute<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Error> {
        let (runtime, client, deferred) = self.take_deferred();
        runtime.block_on(after(client, &deferred, client.execute(statement, params)))
    }
}

impl Drop for Pipelined {
    /// Closes the connection politely: dropping the client tells the
    /// server goodbye, then the socket closes (or, after `CLOSE_WAIT`, is
    /// dropped).
    fn drop(&mut self) {
        drop(self.client.take());
        if let Some(connection) = self.connection.take() {
            // The timer must be made inside the runtime.
            let _ = self
                .runtime
                .block_on(async { tokio::time::timeout(CLOSE_WAIT, connection).await });
        }
    }
}
