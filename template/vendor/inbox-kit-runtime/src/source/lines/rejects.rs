//! Where rejected lines go, so that nothing is silently dropped.
//!
//! On stderr each rejection is one human-readable line. In a rejects file
//! each is a JSON object with the line number, the reason and the original
//! text, so the file can be fixed and fed back to `run`.

use std::io::{self, Write};

use indicatif::ProgressBar;
use serde::Serialize;

/// A destination for rejected lines.
pub struct Rejects {
    out: Box<dyn Write + Send>,
    format: Format,
}

enum Format {
    /// Lines for a person, printed around the progress bar so that the two
    /// do not garble each other.
    Human(ProgressBar),
    JsonLines,
}

#[derive(Serialize)]
struct Record<'a> {
    line: u64,
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
}

impl Rejects {
    /// `line N: reason` on standard error, above `progress` if it shows.
    pub fn to_stderr(progress: ProgressBar) -> Self {
        Self {
            out: Box::new(io::stderr()),
            format: Format::Human(progress),
        }
    }

    /// One JSON object per rejected line, written to `out`.
    pub fn to_json_lines(out: impl Write + Send + 'static) -> Self {
        Self {
            out: Box::new(io::BufWriter::new(out)),
            format: Format::JsonLines,
        }
    }

    /// Records one rejected line. `text` is the line (lossily decoded if it
    /// was not UTF-8), or `None` when it was too long to keep.
    pub fn reject(&mut self, line: u64, reason: &str, text: Option<&str>) -> io::Result<()> {
        match &self.format {
            Format::Human(progress) => {
                progress.suspend(|| writeln!(self.out, "line {line}: rejected: {reason}"))
            }
            Format::JsonLines => {
                serde_json::to_writer(&mut self.out, &Record { line, reason, text })?;
                self.out.write_all(b"\n")
            }
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
