//! Reading input line by line with a bounded buffer.
//!
//! `BufRead::read_until` would happily grow one buffer to the size of a
//! multi-gigabyte line. Here a line longer than the limit is skipped to its
//! end without being kept, so memory stays flat whatever the input holds.

use std::io::{self, BufRead, BufReader, Read};

/// One line of input, numbered from 1.
pub enum Line<'a> {
    /// The line's bytes, without the line break (`\n` or `\r\n`).
    Text(&'a [u8]),
    /// The line was longer than the limit and was skipped.
    TooLong,
}

/// Splits a byte stream into lines of at most `limit` bytes.
pub struct Lines<R> {
    reader: BufReader<R>,
    limit: usize,
    buffer: Vec<u8>,
    number: u64,
}

impl<R: Read> Lines<R> {
    pub fn new(input: R, limit: usize) -> Self {
        Self::with_capacity(input, 1 << 16, limit)
    }

    /// Like [`Lines::new`], reading `capacity` bytes at a time.
    pub fn with_capacity(input: R, capacity: usize, limit: usize) -> Self {
        Self {
            reader: BufReader::with_capacity(capacity, input),
            limit,
            buffer: Vec::new(),
            number: 0,
        }
    }

    /// Whether everything read so far has been handed out, so the next line
    /// needs a read from the input, which may block (a quiet stdin).
    pub fn must_wait_for_input(&self) -> bool {
        self.reader.buffer().is_empty()
    }

    /// The next line with its number and its size in bytes (line break
    /// included), or `None` at the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<(u64, Line<'_>, usize)>> {
        self.buffer.clear();
        let mut size = 0;
        let mut too_long = false;
        loop {
            let available = self.reader.fill_buf()?;
            if available.is_empty() {
                if size == 0 {
                    return Ok(None);
                }
                break;
            }
            let (chunk, found_end) = match memchr::memchr(b'\n', available) {
                Some(end) => (&available[..=end], true),
                None => (available, false),
            };
            let taken = chunk.len();
            size += taken;
            if !too_long {
                if self.buffer.len() + taken > self.limit + 2 {
                    too_long = true;
                    self.buffer.clear();
                } else {
                    self.buffer.extend_from_slice(chunk);
                }
            }
            self.reader.consume(taken);
            if found_end {
                break;
            }
        }
        self.number += 1;
        if too_long {
            return Ok(Some((self.number, Line::TooLong, size)));
        }
        let text = strip_line_break(&self.buffer);
        if text.len() > self.limit {
            return Ok(Some((self.number, Line::TooLong, size)));
        }
        Ok(Some((self.number, Line::Text(text), size)))
    }
}

fn strip_line_break(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(input: &[u8], limit: usize) -> Vec<(u64, Option<Vec<u8>>, usize)> {
        let mut lines = Lines::with_capacity(input, 4, limit);
        let mut out = Vec::new();
        while let Some((number, line, size)) = lines.next_line().unwrap() {
            let text = match line {
                Line::Text(text) => Some(text.to_vec()),
                Line::TooLong => None,
            };
            out.push((number, text, size));
        }
        out
    }

    #[test]
    fn splits_on_lf_and_crlf_and_keeps_a_last_line_without_break() {
        let lines = collect(b"ab\r\ncd\nef", 10);
        assert_eq!(
            lines,
            vec![
                (1, Some(b"ab".to_vec()), 4),
                (2, Some(b"cd".to_vec()), 3),
                (3, Some(b"ef".to_vec()), 2)
            ]
        );
    }

    #[test]
    fn skips_an_overlong_line_and_goes_on() {
        let lines = collect(b"short\nthis line is too long\nok\n", 8);
        assert_eq!(lines[0].1.as_deref(), Some(&b"short"[..]));
        assert_eq!(lines[1], (2, None, 22));
        assert_eq!(lines[2], (3, Some(b"ok".to_vec()), 3));
    }

    #[test]
    fn a_line_exactly_at_the_limit_is_kept() {
        let lines = collect(b"12345678\r\n", 8);
        assert_eq!(lines[0].1.as_deref(), Some(&b"12345678"[..]));
    }

    #[test]
    fn empty_input_has_no_lines() {
        assert!(collect(b"", 8).is_empty());
    }

    /// A line far over the limit is skipped chunk by chunk: what is kept
    /// of it never grows much past the limit (twice the limit would mean
    /// a line of gigabytes holds gigabytes).
    #[test]
    fn a_long_line_is_skipped_without_being_kept() {
        let limit = 100;
        let long = vec![b'x'; 100 * limit];
        let mut lines = Lines::with_capacity(&long[..], 8, limit);
        assert!(matches!(
            lines.next_line().unwrap(),
            Some((1, Line::TooLong, size)) if size == long.len()
        ));
        assert!(
            lines.buffer.capacity() < 2 * limit,
            "kept {} bytes of a line over a {limit}-byte limit",
            lines.buffer.capacity()
        );
    }

    #[test]
    fn input_is_waited_for_only_once_everything_read_was_handed_out() {
        let mut lines = Lines::with_capacity(&b"a\nb\n"[..], 64, 10);
        assert!(lines.must_wait_for_input(), "nothing read yet");
        lines.next_line().unwrap();
        assert!(!lines.must_wait_for_input(), "`b` is already read");
        lines.next_line().unwrap();
        assert!(lines.must_wait_for_input());
    }
}
