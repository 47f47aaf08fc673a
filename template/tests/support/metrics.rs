//! Reading what a consumer's `/metrics` serves, and checking it against
//! the run's summary line: the one check every metrics test makes, so a
//! known-broken exporter is caught by the very check that passes the real
//! one.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use {{crate_name}}::pipeline::Summary;

/// The counter of deliveries by consumer and outcome.
pub const DELIVERIES: &str = "inbox_deliveries_total";

/// The status code and body of `GET path` from `addr` (`host:port`).
pub fn get(addr: &str, path: &str) -> (u16, String) {
    let (head, body) = request(addr, path);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {head}"));
    (status, body)
}

/// The head and body of the answer to `GET path`.
fn request(addr: &str, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr)
        .unwrap_or_else(|error| panic!("could not connect to the endpoint {addr}: {error}"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send the request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read the answer");
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
    (head.to_owned(), body.to_owned())
}

/// The body of `GET /metrics` from `addr`, after checking that the answer
/// is a 200 in the OpenMetrics text format, whole.
pub fn scrape(addr: &str) -> String {
    let (head, body) = request(addr, "/metrics");
    assert!(head.starts_with("HTTP/1.1 200"), "scrape failed: {head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text"),
        "not the OpenMetrics format: {head}"
    );
    assert!(body.ends_with("# EOF\n"), "a cut-off scrape: {body}");
    body
}

/// The value of every series of `name` in `text`, keyed by its labels as
/// written (`consumer="debit",outcome="applied"`).
pub fn series(text: &str, name: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter_map(|line| line.strip_prefix(name))
        .filter_map(|rest| {
            let (labels, value) = match rest.strip_prefix('{') {
                Some(labelled) => labelled.split_once("} ")?,
                None => ("", rest.strip_prefix(' ')?),
            };
            let value = value
                .parse()
                .unwrap_or_else(|_| panic!("a bad value: {rest}"));
            Some((labels.to_owned(), value))
        })
        .collect()
}

/// The deliveries `text` counts, by outcome, as a summary (`rejected`,
/// which counts input lines, not deliveries, stays 0). An outcome the
/// summary has no name for is a failed check.
pub fn counted(text: &str) -> Result<Summary, String> {
    let mut summary = Summary::default();
    for (labels, value) in series(text, DELIVERIES) {
        let outcome = labels
            .split(',')
            .find_map(|label| label.strip_prefix("outcome="))
            .ok_or_else(|| format!("a series without an outcome: {labels}"))?
            .trim_matches('"');
        let count = match outcome {
            "applied" => &mut summary.applied,
            "duplicate" => &mut summary.duplicate,
            "failed" => &mut summary.failed,
            "dead_lettered" => &mut summary.dead_lettered,
            "refused" => &mut summary.refused,
            other => return Err(format!("an outcome the summary does not have: {other}")),
        };
        *count += value as u64;
    }
    Ok(summary)
}

/// Why what `text` counts is not what `summary` says, if it is not.
pub fn disagreement(text: &str, summary: &Summary) -> Option<String> {
    let expected = Summary {
        rejected: 0,
        ..*summary
    };
    match counted(text) {
        Ok(counted) if counted == expected => None,
        Ok(counted) => Some(format!(
            "the metrics count {counted}, the summary says {expected}"
        )),
        Err(error) => Some(error),
    }
}
