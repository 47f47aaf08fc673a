//! How a consumer's command line names its PostgreSQL database: a
//! connection URL and a schema (global options of every command).

use std::marker::PhantomData;

use anyhow::Context;

use crate::cli::consumer::OpenStore;

use super::{Database, PgProject, Settings};

/// Where the database of project `P` is (global options of every command).
#[derive(clap::Args)]
pub struct DatabaseOptions<P: PgProject> {
    /// PostgreSQL connection URL, e.g. postgres://user:password@localhost:5432/dbname.
    /// Never printed: logs and errors name only the server, user and database.
    #[arg(long, global = true, env = "DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// Schema holding this consumer's tables (created if missing).
    #[arg(long, global = true, env = "DATABASE_SCHEMA", default_value = "public")]
    schema: String,
    #[arg(skip)]
    project: PhantomData<fn() -> P>,
}

impl<P: PgProject> OpenStore for DatabaseOptions<P> {
    type Store = Database<P>;

    /// Connects and creates the tables that are missing.
    fn open(&self) -> anyhow::Result<Database<P>> {
        let database = self.database()?;
        database
            .migrate()
            .with_context(|| format!("could not set up the database at {}", database.describe()))?;
        Ok(database)
    }

    /// Like [`DatabaseOptions::open`], for commands that only make sense
    /// on a database that has the tables already: a mistyped schema must not
    /// quietly create an empty one.
    fn open_existing(&self) -> anyhow::Result<Database<P>> {
        let database = self.database()?;
        let has_tables = database
            .has_tables()
            .with_context(|| format!("could not connect to {}", database.describe()))?;
        if !has_tables {
            anyhow::bail!(
                "no inbox tables in schema {:?} at {} (check --schema or DATABASE_SCHEMA; `run`, `seed` and `migrate` create them)",
                self.schema,
                database.describe()
            );
        }
        Ok(database)
    }

    /// Why `workers` workers cannot run with these options, if they cannot:
    /// never, on PostgreSQL.
    fn refuse_workers(&self, _workers: u16) -> Option<String> {
        None
    }
}

impl<P: PgProject> DatabaseOptions<P> {
    fn database(&self) -> anyhow::Result<Database<P>> {
        let url = self.database_url.as_deref().context(
            "no database given: set DATABASE_URL (or pass --database-url), e.g. \
             postgres://postgres@localhost:5432/postgres. No server yet? \
             docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:15",
        )?;
        Ok(Database::new(
            url,
            Settings {
                schema: self.schema.clone(),
            },
        ))
    }
}
