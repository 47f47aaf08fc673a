//! Sending notifications as JSON lines, to a file or standard output.
//!
//! Each line is an envelope like `run`'s input (`id`, `type`, `payload`),
//! with the idempotency key as its `id` (and the trace context, if the
//! notification has one, as `traceparent`), so the output of one consumer can
//! be the input of another, whose inbox then applies each notification
//! once however often the relay sent it. A line counts as sent once it is
//! written and flushed to the operating system (it survives a crash of
//! this process); each line is written in one call, so a crash never
//! leaves half of one.

use std::io::Write;

use super::{Notice, Outgoing, Sent, Sink};
use crate::message::TRACEPARENT;

/// Writes one JSON line per notification.
pub struct LinesSink {
    out: Box<dyn Write + Send>,
}

impl LinesSink {
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Self { out }
    }
}

/// A notification as one line of JSON (without the line break).
pub fn to_line<N: Notice>(outgoing: &Outgoing<N>) -> String {
    let notification = &outgoing.notification;
    let mut line = serde_json::json!({
        "id": outgoing.key,
        "type": N::TYPE,
        "payload": notification.payload(),
    });
    if let Some(traceparent) = notification.trace_parent() {
        line[TRACEPARENT] = traceparent.into();
    }
    line.to_string()
}

impl<N: Notice> Sink<N> for LinesSink {
    fn send(&mut self, outgoing: &Outgoing<N>) -> Sent {
        // One write per line (a line and its break together): a crash
        // between two writes would leave a line without its break, and the
        // next run's first line would be glued to it.
        let mut line = to_line(outgoing);
        line.push('\n');
        let written = self
            .out
            .write_all(line.as_bytes())
            .and_then(|()| self.out.flush());
        match written {
            Ok(()) => Sent::Confirmed,
            // Whoever read the pipe is gone: nobody is left to send to.
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                Sent::Closed(error.to_string())
            }
            Err(error) => Sent::Failed(format!("could not write the line: {error}")),
        }
    }
}

/// A sink writing to `output` (appending), or to standard output for `-`
/// or nothing.
pub fn lines_sink(output: Option<&std::path::Path>) -> anyhow::Result<LinesSink> {
    use anyhow::Context;
    let out: Box<dyn Write + Send> = match output {
        Some(path) if path.as_os_str() != "-" => Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("could not open {}", path.display()))?,
        ),
        _ => Box::new(std::io::stdout()),
    };
    Ok(LinesSink::new(out))
}
