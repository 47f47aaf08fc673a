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
        // `rejected` counts input lines, never a delivery.
        let count = Some(outcome)
            .filter(|&outcome| outcome != "rejected")
            .and_then(|outcome| summary_count(&mut summary, outcome))
            .ok_or_else(|| format!("an outcome the summary does not have: {outcome}"))?;
        *count += value as u64;
    }
    Ok(summary)
}

/// The count of `summary` that its line calls `name` (`applied=...`).
fn summary_count<'a>(summary: &'a mut Summary, name: &str) -> Option<&'a mut u64> {
    Some(match name {
        "applied" => &mut summary.applied,
        "duplicate" => &mut summary.duplicate,
        "failed" => &mut summary.failed,
        "rejected" => &mut summary.rejected,
        "dead_lettered" => &mut summary.dead_lettered,
        "refused" => &mut summary.refused,
        _ => return None,
    })
}

/// A run's summary line, read back.
pub fn parse_summary(line: &str) -> Summary {
    let mut summary = Summary::default();
    for pair in line.split_whitespace() {
        let (name, value) = pair.split_once('=').expect("name=value");
        *summary_count(&mut summary, name)
            .unwrap_or_else(|| panic!("an unknown count in the summary: {name}")) =
            value.parse().expect("a count");
    }
    summary
}

/// The `host:port` a command serves metrics at, from the line it prints
/// on stderr (`metrics: serving http://...`), read from `lines`.
pub fn served_at(lines: impl Iterator<Item = String>) -> Option<String> {
    lines.into_iter().find_map(|line| {
        let url = line.strip_prefix("metrics: serving http://")?;
        Some(url.split_once("/metrics")?.0.to_owned())
    })
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

/// The dashboard the project ships for Grafana.
pub const DASHBOARD: &str = include_str!("../../dashboards/consumer.json");

/// Words of a PromQL query that name no series: functions, keywords, the
/// dashboard's own variables.
const PROMQL_WORDS: &[&str] = &[
    "sum",
    "max",
    "min",
    "avg",
    "count",
    "rate",
    "irate",
    "increase",
    "histogram_quantile",
    "by",
    "without",
    "on",
    "ignoring",
    "and",
    "or",
    "unless",
    "__rate_interval",
];

/// The series every query of `dashboard` (Grafana's JSON) names, sorted.
pub fn dashboard_series(dashboard: &str) -> Vec<String> {
    let dashboard: serde_json::Value =
        serde_json::from_str(dashboard).expect("the dashboard is JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut names = std::collections::BTreeSet::new();
    for target in panels
        .iter()
        .flat_map(|panel| panel["targets"].as_array().expect("targets"))
    {
        let query = target["expr"].as_str().expect("a query");
        // Label matchers, grouping labels and ranges name no series.
        let mut bare = String::new();
        let mut depth = 0;
        for character in query.chars() {
            match character {
                '{' | '[' => depth += 1,
                '}' | ']' => depth -= 1,
                _ if depth == 0 => bare.push(character),
                _ => {}
            }
        }
        let bare = strip_groupings(&bare);
        names.extend(
            bare.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|word| word.starts_with(|c: char| c.is_ascii_lowercase()))
                .filter(|word| !PROMQL_WORDS.contains(word))
                .map(str::to_owned),
        );
    }
    names.into_iter().collect()
}

/// `query` without the label lists of `by (...)` and `without (...)`.
fn strip_groupings(query: &str) -> String {
    let mut rest = query;
    let mut kept = String::new();
    while let Some(at) = ["by (", "without ("]
        .iter()
        .filter_map(|keyword| rest.find(keyword).map(|at| (at, keyword.len())))
        .min()
    {
        kept.push_str(&rest[..at.0]);
        let after = &rest[at.0 + at.1..];
        rest = after.split_once(')').map_or("", |(_, tail)| tail);
    }
    kept.push_str(rest);
    kept
}

/// The series names a scrape declares, families expanded as Prometheus
/// stores them (`_total` for counters; `_bucket`, `_sum`, `_count` for
/// histograms), whether or not a series of the family has a value yet.
pub fn exported_series(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .flat_map(|declared| {
            let (name, kind) = declared.split_once(' ').expect("# TYPE name kind");
            let suffixes: &[&str] = match kind {
                "counter" => &["_total"],
                "histogram" => &["_bucket", "_sum", "_count"],
                _ => &[""],
            };
            suffixes.iter().map(move |suffix| format!("{name}{suffix}"))
        })
        .collect()
}

/// The series `dashboard` queries that the scrape `text` does not export.
pub fn dashboard_gaps(dashboard: &str, text: &str) -> Vec<String> {
    let exported = exported_series(text);
    dashboard_series(dashboard)
        .into_iter()
        .filter(|name| !exported.contains(name))
        .collect()
}
