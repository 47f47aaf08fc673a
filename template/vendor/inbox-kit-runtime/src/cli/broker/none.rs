//! Without a broker, `relay send` writes notifications as JSON lines.

use crate::relay::lines::lines_sink;
use crate::relay::{Notice, Sink};

/// Where `relay send` writes notifications: JSON lines.
#[derive(clap::Args)]
pub struct SinkOptions {
    /// File the notifications are appended to, one JSON line each; `-` or
    /// nothing writes to standard output.
    #[arg(long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
}

impl SinkOptions {
    pub async fn open<N: Notice>(&self) -> anyhow::Result<Box<dyn Sink<N>>> {
        Ok(Box::new(lines_sink(self.output.as_deref())?))
    }
}
