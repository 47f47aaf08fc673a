//! Reading the summary lines the commands print (`applied=3 duplicate=1
//! ...`), for the tests that run the binary.

/// The `name=N` field of `line`; panics, quoting the line, without one.
pub fn field(line: &str, name: &str) -> u64 {
    line.split_whitespace()
        .find_map(|field| field.strip_prefix(name)?.strip_prefix('='))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {name}= in {line:?}"))
}
