//! Safety of inputs: SQL is only ever built from constant text with bound
//! parameters, and logs carry neither the database path nor payloads.

use std::path::Path;

use crate::support::database::Fixture;

const SQL_WORDS: [&str; 6] = [
    "SELECT ", "INSERT ", "UPDATE ", "DELETE ", "CREATE ", "DROP ",
];

fn rust_files(folder: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// The string literal a `format!(` starting at `start` formats, if any.
fn format_string(text: &str, start: usize) -> Option<&str> {
    let rest = text[start + "format!(".len()..].trim_start();
    let rest = rest
        .strip_prefix("r#\"")
        .or_else(|| rest.strip_prefix('"'))?;
    let end = rest.find('"')?;
    Some(&rest[..end])
}

/// Text glued into SQL is how injection starts; every value must be a
/// bound parameter (`?1`), so no formatted string may contain SQL (written
/// in upper case, as everywhere in this crate).
#[test]
fn sql_is_never_built_by_formatting_strings() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(!files.is_empty());
    let mut formats = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (start, _) in text.match_indices("format!(") {
            let Some(literal) = format_string(&text, start) else {
                continue;
            };
            formats += 1;
            for word in SQL_WORDS {
                assert!(
                    !literal.contains(word),
                    "{}: SQL built with format!: {literal:?}",
                    file.display()
                );
            }
        }
    }
    assert!(formats > 0, "the scan found no format! calls at all");
}

#[test]
fn logs_carry_neither_the_database_location_nor_payloads() {
    let fixture = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.jsonl");
    let lines = [
        r#"{"id": "s-1", "type": "payment.captured", "payload": {"account": 1, "amount": 424242}}"#,
        r#"{"id": "s-1", "type": "payment.captured", "payload": {"account": 1, "amount": 424242}}"#,
        r#"{"id": "s-2", "type": "payment.captured", "payload": {"account": 777, "amount": 515151}}"#,
    ];
    std::fs::write(&input, lines.join("\n")).unwrap();
    let consumer = |args: &[&str]| {
        crate::consumer(&fixture)
            .env("RUST_LOG", "trace")
            .args(args)
            .output()
            .unwrap()
    };
    assert!(consumer(&["open-account", "1", "1000000"]).status.success());
    let output = consumer(&["run", input.to_str().unwrap()]);
    let logs = String::from_utf8_lossy(&output.stderr);
    assert!(
        logs.contains("duplicate delivery skipped"),
        "trace logs expected:\n{logs}"
    );
    assert!(
        logs.contains("delivery failed"),
        "the failing payment should be logged:\n{logs}"
    );
    let mut secrets = fixture.secrets();
    secrets.extend(["424242".to_owned(), "515151".to_owned()]);
    for secret in secrets {
        assert!(!logs.contains(&secret), "logs leak {secret}:\n{logs}");
    }
}
