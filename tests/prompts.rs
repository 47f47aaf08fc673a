//! The prompts: Claude Code commands carry complete front matter, every
//! prompt asks for failing tests before any implementation, headless
//! prompts compose cleanly, and no line of prompt text is kept twice.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::kit_root;

fn markdown_in(folder: &Path) -> Vec<PathBuf> {
    let mut found: Vec<_> = fs::read_dir(folder)
        .expect("prompt folder")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    found.sort();
    found
}

fn commands() -> Vec<PathBuf> {
    markdown_in(&kit_root().join("template/.claude/commands"))
}

fn headless_prompts() -> Vec<PathBuf> {
    markdown_in(&kit_root().join("prompts"))
        .into_iter()
        .filter(|path| !path.ends_with("README.md"))
        .collect()
}

fn compose(prompt: &Path) -> String {
    let name = prompt.file_stem().unwrap().to_str().unwrap();
    let output = Command::new(kit_root().join("prompts/compose"))
        .arg(name)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "compose {name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The titles of a prompt's numbered steps (`1. **Title**...`), in order.
fn step_titles(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let (number, rest) = line.split_once(". **")?;
            number.trim().parse::<u32>().ok()?;
            Some(rest.split("**").next()?.to_lowercase())
        })
        .collect()
}

fn assert_failing_tests_come_first(name: &str, text: &str) {
    let titles = step_titles(text);
    let failing = titles.iter().position(|t| t.contains("fail"));
    let implementing = titles.iter().position(|t| {
        ["implement", "retrofit", "fix", "change"]
            .iter()
            .any(|word| t.contains(word))
    });
    match (failing, implementing) {
        (Some(failing), Some(implementing)) => assert!(
            failing < implementing,
            "{name}: the failing-test step ({:?}) must come before the implementing step ({:?})",
            titles[failing],
            titles[implementing]
        ),
        _ => panic!("{name}: needs a failing-test step and an implementing step, has {titles:?}"),
    }
}

#[test]
fn commands_have_complete_front_matter() {
    let commands = commands();
    assert!(
        commands.len() >= 4,
        "expected at least 4 commands, found {commands:?}"
    );
    for command in commands {
        let text = fs::read_to_string(&command).unwrap();
        let name = command.display();
        let front = text
            .strip_prefix("---\n")
            .and_then(|rest| rest.split_once("\n---\n"))
            .map(|(front, _)| front)
            .unwrap_or_else(|| panic!("{name}: no front matter"));
        for key in ["description", "argument-hint", "allowed-tools"] {
            let value = front
                .lines()
                .find_map(|line| line.strip_prefix(&format!("{key}:")))
                .unwrap_or_else(|| panic!("{name}: no `{key}`"));
            assert!(!value.trim().is_empty(), "{name}: empty `{key}`");
        }
        assert!(text.contains("$ARGUMENTS"), "{name}: ignores its arguments");
    }
}

#[test]
fn every_prompt_asks_for_failing_tests_before_implementation() {
    for command in commands() {
        assert_failing_tests_come_first(
            &command.display().to_string(),
            &fs::read_to_string(&command).unwrap(),
        );
    }
    for prompt in headless_prompts() {
        assert_failing_tests_come_first(&prompt.display().to_string(), &compose(&prompt));
    }
}

#[test]
fn headless_prompts_compose_without_leftovers() {
    for prompt in headless_prompts() {
        let text = compose(&prompt);
        assert!(
            !text.contains("<!-- include"),
            "{}: unexpanded include",
            prompt.display()
        );
        assert!(
            !text.contains("{{"),
            "{}: template syntax leaked",
            prompt.display()
        );
    }
    let retrofit = compose(&kit_root().join("prompts/retrofit-existing-consumer.md"));
    assert!(
        retrofit.contains("The failed insert is the duplicate check"),
        "the rules were not included"
    );
}

/// Sentences of prompt text, whitespace normalised so that a copy wrapped
/// differently is still the same sentence.
fn sentences(body: &str) -> Vec<String> {
    let text = body.split_whitespace().collect::<Vec<_>>().join(" ");
    text.split(". ")
        .map(|sentence| sentence.trim().trim_end_matches('.').to_owned())
        .filter(|sentence| sentence.len() >= 60)
        .collect()
}

#[test]
fn no_prompt_text_is_kept_twice() {
    let mut sources = vec![kit_root().join("template/CLAUDE.md")];
    sources.extend(commands());
    sources.extend(markdown_in(&kit_root().join("prompts")));
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    for source in sources {
        let text = fs::read_to_string(&source).unwrap();
        // Front matter is configuration (tool lists), not prompt text.
        let body = text
            .strip_prefix("---\n")
            .and_then(|rest| rest.split_once("\n---\n"))
            .map_or(text.as_str(), |(_, body)| body);
        for sentence in sentences(body) {
            if let Some(first) = seen.insert(sentence.clone(), source.clone()) {
                panic!(
                    "this text is in {} and {}:\n{sentence}",
                    first.display(),
                    source.display()
                );
            }
        }
    }
}
