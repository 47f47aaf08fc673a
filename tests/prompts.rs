//! The prompts: Claude Code commands carry complete front matter, every
//! prompt asks for failing tests before any implementation, headless
//! prompts compose cleanly, no line of prompt text is kept twice, commands
//! composed from a headless prompt match it, and the retrofit prompt names
//! nothing that only a generated project has.

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

/// One numbered step of a prompt: `N. **Title** body...`.
#[derive(Debug)]
struct Step {
    number: u32,
    /// Lower case.
    title: String,
    /// The rest of the step: the text after the title and every line up to
    /// the next step or heading.
    body: String,
}

/// A prompt's numbered lists, in order; a list starts at its item 1. The
/// rules a prompt includes are a numbered list too, so the procedure is
/// told apart from them by looking at each list on its own.
fn step_lists(text: &str) -> Vec<Vec<Step>> {
    let mut lists: Vec<Vec<Step>> = Vec::new();
    // Whether the lines that follow still belong to the last step.
    let mut in_step = false;
    for line in text.lines() {
        let item = line.split_once(". **").and_then(|(number, rest)| {
            let number = number.trim().parse::<u32>().ok()?;
            let (title, body) = rest.split_once("**")?;
            Some((number, title.to_lowercase(), body.to_owned()))
        });
        if let Some((number, title, body)) = item {
            let step = Step {
                number,
                title,
                body,
            };
            match lists.last_mut() {
                Some(list) if number != 1 => list.push(step),
                _ => lists.push(vec![step]),
            }
            in_step = true;
        } else if line.starts_with('#') {
            in_step = false;
        } else if in_step && let Some(step) = lists.last_mut().and_then(|list| list.last_mut()) {
            step.body.push('\n');
            step.body.push_str(line);
        }
    }
    lists
}

/// Words in a step title that mean "write production code".
const CODE_WORDS: [&str; 11] = [
    "implement",
    "retrofit",
    "fix",
    "change",
    "migrat",
    "add",
    "build",
    "wire",
    "refactor",
    "rewrite",
    "code",
];

fn asks_for_code(title: &str) -> bool {
    CODE_WORDS.iter().any(|word| title.contains(word))
}

fn assert_failing_tests_come_first(name: &str, text: &str) {
    let lists = step_lists(text);
    let mut implementing_seen = false;
    for list in &lists {
        let implementing = list.iter().position(|step| {
            ["implement", "retrofit", "fix", "change"]
                .iter()
                .any(|word| step.title.contains(word))
        });
        let Some(implementing) = implementing else {
            continue;
        };
        implementing_seen = true;
        let failing = list.iter().position(|step| step.title.contains("fail"));
        assert!(
            failing.is_some_and(|failing| failing < implementing),
            "{name}: the step {:?} asks for an implementation, and no step before it in the same list asks for a failing test: {:?}",
            list[implementing].title,
            list.iter().map(|step| &step.title).collect::<Vec<_>>()
        );
    }
    assert!(
        implementing_seen,
        "{name}: needs a failing-test step and an implementing step, has {:?}",
        lists
            .iter()
            .flatten()
            .map(|step| &step.title)
            .collect::<Vec<_>>()
    );
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
        // A command's composed part is a copy of its headless prompt, kept
        // equal to it by `composed_commands_match_their_sources`.
        let text = composed_part(&text).map_or(text.as_str(), |composed| composed.head);
        // Front matter is configuration (tool lists), not prompt text.
        let body = text
            .strip_prefix("---\n")
            .and_then(|rest| rest.split_once("\n---\n"))
            .map_or(text, |(_, body)| body);
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

/// The line after which a command is a copy of a composed headless prompt.
/// Claude Code reads command files as they are (a generated project has no
/// compose step), so the copy is written by `prompts/compose --update`.
const COMPOSED_MARKER: &str = "<!-- Composed by inbox-kit's prompts/compose from prompts/";

/// A command file split at its composed-part marker.
struct Composed<'a> {
    /// Front matter and hand-written lines, the marker line included.
    head: &'a str,
    /// The headless prompt it is composed from (file stem).
    source: &'a str,
    /// The copy of the composed prompt.
    tail: &'a str,
}

fn composed_part(text: &str) -> Option<Composed<'_>> {
    let at = text.find(COMPOSED_MARKER)?;
    let line_end = at + text[at..].find('\n')? + 1;
    let source = text[at + COMPOSED_MARKER.len()..line_end]
        .split(".md")
        .next()?;
    Some(Composed {
        head: &text[..line_end],
        source,
        tail: &text[line_end..],
    })
}

#[test]
fn composed_commands_match_their_sources() {
    let mut composed = Vec::new();
    for command in commands() {
        let text = fs::read_to_string(&command).unwrap();
        let Some(part) = composed_part(&text) else {
            continue;
        };
        let expected = compose(
            &kit_root()
                .join("prompts")
                .join(format!("{}.md", part.source)),
        );
        assert!(
            part.tail == expected,
            "{} is out of date with prompts/{}.md: run prompts/compose --update",
            command.display(),
            part.source
        );
        composed.push(command.file_name().unwrap().to_owned());
    }
    assert!(
        composed.iter().any(|name| name == "retrofit-inbox.md"),
        "/retrofit-inbox must be composed from the retrofit prompt, so that both forms say the same; composed commands: {composed:?}"
    );
}

/// The retrofit prompt as an agent reads it in each of its two forms.
fn retrofit_texts() -> Vec<(String, String)> {
    let command = kit_root().join("template/.claude/commands/retrofit-inbox.md");
    vec![
        (
            "prompts/compose retrofit-existing-consumer".to_owned(),
            compose(&kit_root().join("prompts/retrofit-existing-consumer.md")),
        ),
        (
            command.display().to_string(),
            fs::read_to_string(&command).unwrap(),
        ),
    ]
}

/// Where a name that only a generated project has must not appear.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scope {
    /// Anywhere, as a whole word, in this exact case.
    Anywhere,
    /// Anywhere, as a whole word, in any case.
    AnyCase,
    /// Inside `code spans` only: an English word outside them is fine.
    CodeSpans,
}

#[derive(Debug)]
struct GeneratedOnly {
    name: String,
    what: &'static str,
    scope: Scope,
}

/// Every file of the template, relative, with `.liquid` dropped.
fn template_files() -> Vec<String> {
    let root = kit_root().join("template");
    let mut found = Vec::new();
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(&root).unwrap().to_string_lossy();
                found.push(relative.trim_end_matches(".liquid").replace('\\', "/"));
            }
        }
    }
    found.sort();
    found
}

/// File names any Rust project (or any Claude Code project) may have.
const COMMON_FILE_NAMES: [&str; 10] = [
    "Cargo.toml",
    "Cargo.lock",
    "README.md",
    "CLAUDE.md",
    "main.rs",
    "lib.rs",
    "mod.rs",
    ".gitignore",
    "settings.json",
    "ci.yml",
];

/// Folders any Rust or Claude Code project may have.
const COMMON_FOLDERS: [&str; 2] = [".claude/commands", ".github/workflows"];

/// Names from the template's code that are standard Rust, not its own.
const COMMON_IDENTIFIERS: [&str; 2] = ["as_str", "with_capacity"];

/// The names a generated project has and a retrofitted repository does not:
/// the template's files and folders, test targets, Claude Code commands,
/// business tables, Rust items and environment variables. Read from the
/// template itself, so the list grows with it. The inbox's own tables
/// (inbox, attempts, dead letters) are left out: a retrofit creates them too.
/// Test targets named after words of the pattern itself, which any
/// consumer's code and docs use: only `--test NAME` is the template's.
const PATTERN_WORDS: &[&str] = &["broker", "relay"];

fn generated_only_names() -> Vec<GeneratedOnly> {
    let mut names = Vec::new();
    let mut add = |name: &str, what: &'static str, scope: Scope| {
        if !names.iter().any(|known: &GeneratedOnly| known.name == name) {
            names.push(GeneratedOnly {
                name: name.to_owned(),
                what,
                scope,
            });
        }
    };
    let files = template_files();
    let read = |file: &str| {
        let path = kit_root().join("template").join(file);
        let path = if path.exists() {
            path
        } else {
            kit_root().join("template").join(format!("{file}.liquid"))
        };
        fs::read_to_string(path).unwrap_or_default()
    };
    // The pattern's own tables (inbox, attempts, dead letters): the
    // runtime's schema for each database.
    let inbox_tables: Vec<String> = [
        "vendor/inbox-kit-runtime/src/sqlite/schema.sql",
        "vendor/inbox-kit-runtime/src/postgres/schema.sql",
    ]
    .iter()
    .flat_map(|schema| {
        let text = read(schema);
        assert!(!text.is_empty(), "{schema} is missing");
        create_table_names(&text)
    })
    .collect();
    for file in &files {
        let parts: Vec<&str> = file.split('/').collect();
        let file_name = parts[parts.len() - 1];
        let folder = parts[..parts.len() - 1].join("/");
        let common_place = parts.len() <= 2 || COMMON_FOLDERS.contains(&folder.as_str());
        if !(common_place && COMMON_FILE_NAMES.contains(&file_name)) {
            add(file, "a file of the template", Scope::Anywhere);
        }
        for depth in 2..parts.len() {
            let folder = parts[..depth].join("/");
            if !COMMON_FOLDERS.contains(&folder.as_str()) {
                add(&folder, "a folder of the template", Scope::Anywhere);
            }
        }
        if !COMMON_FILE_NAMES.contains(&file_name) {
            add(file_name, "a file name of the template", Scope::Anywhere);
        }
        let test_target = match parts.as_slice() {
            ["tests", target, "main.rs"] => Some(target.to_string()),
            ["tests", file] if file.ends_with(".rs") => {
                Some(file.trim_end_matches(".rs").to_owned())
            }
            _ => None,
        };
        if let Some(target) = test_target {
            add(
                &format!("--test {target}"),
                "a test target of the template",
                Scope::Anywhere,
            );
            if !PATTERN_WORDS.contains(&target.as_str()) {
                add(&target, "a test target of the template", Scope::AnyCase);
            }
        }
        match parts.as_slice() {
            [".claude", "commands", command] => {
                let command = command.trim_end_matches(".md");
                add(
                    &format!("/{command}"),
                    "a Claude Code command of the template",
                    Scope::Anywhere,
                );
                add(
                    command,
                    "a Claude Code command of the template",
                    Scope::Anywhere,
                );
            }
            // The binary's commands: the project's own, and the runtime's
            // that every project has.
            ["src", "cli", command] | ["vendor", "inbox-kit-runtime", "src", "cli", command]
                if *command != "mod.rs" =>
            {
                let command = command.trim_end_matches(".rs").replace('_', "-");
                if command.contains('-') {
                    add(
                        &command,
                        "a command of the generated binary",
                        Scope::Anywhere,
                    );
                }
            }
            _ => {}
        }
        let text = read(file);
        for table in create_table_names(&text) {
            if !inbox_tables.contains(&table) {
                add(&table, "a business table of the template", Scope::Anywhere);
            }
        }
        for variable in environment_variables(&text) {
            if !variable.starts_with("CARGO") && !variable.starts_with("RUST") {
                add(
                    &variable,
                    "an environment variable of the template",
                    Scope::Anywhere,
                );
            }
        }
        if file.ends_with(".rs") {
            for (keyword, public, name) in rust_items(&text) {
                let humps = name.chars().filter(char::is_ascii_uppercase).count();
                match keyword {
                    // `mod tests` is every crate's unit tests.
                    "mod" if name == "tests" => {}
                    "mod" => add(
                        &format!("{name}::"),
                        "a module of the template",
                        Scope::Anywhere,
                    ),
                    "trait" => add(&name, "a trait of the template", Scope::Anywhere),
                    "struct" | "enum" | "type" if humps >= 2 => {
                        add(&name, "a type of the template", Scope::Anywhere)
                    }
                    "struct" | "enum" | "type" => {
                        add(&name, "a type of the template", Scope::CodeSpans)
                    }
                    "fn" | "const" | "static"
                        if public
                            && name.contains('_')
                            && !COMMON_IDENTIFIERS.contains(&name.as_str())
                            && !inbox_tables.contains(&name) =>
                    {
                        add(
                            &name,
                            "a function or constant of the template",
                            Scope::Anywhere,
                        )
                    }
                    _ => {}
                }
            }
        }
    }
    names
}

fn identifier_at(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// Tables created by `CREATE TABLE [IF NOT EXISTS] name` statements.
fn create_table_names(text: &str) -> Vec<String> {
    text.match_indices("CREATE TABLE ")
        .map(|(at, statement)| {
            let rest = &text[at + statement.len()..];
            identifier_at(
                rest.strip_prefix("IF NOT EXISTS")
                    .unwrap_or(rest)
                    .trim_start(),
            )
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// Variables read with `env::var("NAME")` or `${NAME` (shell).
fn environment_variables(text: &str) -> Vec<String> {
    ["env::var(\"", "${"]
        .iter()
        .flat_map(|opening| {
            text.match_indices(opening)
                .map(|(at, _)| identifier_at(&text[at + opening.len()..]))
        })
        .filter(|name| name.len() > 2 && name.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .collect()
}

/// Rust items: (keyword, whether `pub`, name).
fn rust_items(text: &str) -> Vec<(&'static str, bool, String)> {
    let mut items = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        let (public, rest) = match line.strip_prefix("pub") {
            Some(rest) => (true, rest.split_once(' ').map_or("", |(_, rest)| rest)),
            None => (false, line),
        };
        for keyword in [
            "struct", "enum", "trait", "type", "fn", "const", "static", "mod",
        ] {
            if let Some(rest) = rest
                .strip_prefix(keyword)
                .and_then(|rest| rest.strip_prefix(' '))
            {
                let name = identifier_at(rest);
                if !name.is_empty() {
                    items.push((keyword, public, name));
                }
            }
        }
    }
    items
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `text` holds `name` with no word character glued to either end
/// (an end of `name` that is not a word character needs no boundary).
fn contains_whole(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        let starts = !name.starts_with(is_word_char) || !before.is_some_and(is_word_char);
        let ends = !name.ends_with(is_word_char) || !after.is_some_and(is_word_char);
        starts && ends
    })
}

fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

fn mentions(text: &str, name: &GeneratedOnly) -> bool {
    match name.scope {
        Scope::Anywhere => contains_whole(text, &name.name),
        Scope::AnyCase => contains_whole(&text.to_lowercase(), &name.name.to_lowercase()),
        Scope::CodeSpans => code_spans(text)
            .iter()
            .any(|span| contains_whole(span, &name.name)),
    }
}

#[test]
fn generated_only_names_are_read_from_the_template() {
    let names = generated_only_names();
    for expected in [
        "notifications",
        "handlers::",
        "tests/support",
        "subjects.rs",
        "RealInbox",
        "scripts/stress.sh",
        "conformance",
        "Subject",
        "/add-handler",
        "dead-letters",
        "STOP_HOOK_MAX_BLOCKS",
    ] {
        assert!(
            names.iter().any(|name| name.name == expected),
            "`{expected}` should be among the names only a generated project has"
        );
    }
    for allowed in [
        "inbox",
        "attempts",
        "dead_letters",
        "Cargo.toml",
        "CLAUDE.md",
        "src/main.rs",
        ".claude/commands",
        ".claude/settings.json",
    ] {
        assert!(
            !names.iter().any(|name| name.name == allowed),
            "`{allowed}` exists outside generated projects too"
        );
    }
}

#[test]
fn retrofit_prompt_names_nothing_only_a_generated_project_has() {
    let names = generated_only_names();
    for (form, text) in retrofit_texts() {
        let found: Vec<String> = names
            .iter()
            .filter(|name| mentions(&text, name))
            .map(|name| format!("`{}` ({})", name.name, name.what))
            .collect();
        assert!(
            found.is_empty(),
            "{form} is read in repositories inbox-kit did not generate, yet mentions {}",
            found.join(", ")
        );
    }
}

/// The retrofit's procedure: its numbered list that asks for failing tests.
fn procedure(form: &str, text: &str) -> Vec<Step> {
    step_lists(text)
        .into_iter()
        .find(|list| {
            list.iter()
                .any(|step| step.title.contains("fail") && step.title.contains("test"))
        })
        .unwrap_or_else(|| panic!("{form}: no numbered step asks for failing tests"))
}

#[test]
fn every_retrofit_step_that_asks_for_code_has_its_tests_written_and_failing_first() {
    for (form, text) in retrofit_texts() {
        let steps = procedure(&form, &text);
        let titles: Vec<&str> = steps.iter().map(|step| step.title.as_str()).collect();
        let failing = steps
            .iter()
            .position(|step| step.title.contains("fail") && step.title.contains("test"))
            .unwrap();
        let committed = steps
            .iter()
            .position(|step| step.title.contains("commit") && step.title.contains("test"))
            .unwrap_or_else(|| {
                panic!("{form}: no step commits the tests on their own: {titles:?}")
            });
        assert!(
            failing < committed,
            "{form}: tests are committed before they are written: {titles:?}"
        );
        let code_steps: Vec<&Step> = steps
            .iter()
            .filter(|step| asks_for_code(&step.title))
            .collect();
        assert!(
            code_steps.len() >= 3,
            "{form}: expected separate code steps for the inbox, failure handling and the live data: {titles:?}"
        );
        let reference = format!("step {}", steps[failing].number);
        for step in code_steps {
            let at = steps
                .iter()
                .position(|other| std::ptr::eq(other, step))
                .unwrap();
            assert!(
                at > committed,
                "{form}: step {} ({:?}) asks for code before the tests are written, seen failing and committed: {titles:?}",
                step.number,
                step.title
            );
            let body = step.body.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                body.contains(&reference),
                "{form}: step {} ({:?}) asks for code without naming the tests from {reference} that it turns green",
                step.number,
                step.title
            );
        }
    }
}

#[test]
fn retrofit_prompt_asks_for_every_test_before_any_code() {
    for (form, text) in retrofit_texts() {
        let steps = procedure(&form, &text);
        let failing = steps
            .iter()
            .find(|step| step.title.contains("fail") && step.title.contains("test"))
            .unwrap();
        let asked = failing.body.to_lowercase();
        for test in [
            "run twice",
            "parallel",
            "failure then redelivery",
            "two consumers",
            "failure counting",
            "dead letter",
            "redelivery",
            "migration",
            "report",
        ] {
            assert!(
                asked.contains(test),
                "{form}: step {} does not ask for the {test} test",
                failing.number
            );
        }
        let lower = text.to_lowercase();
        // The rule for tests that pass against wrong code.
        for design in [
            "check-then-act",
            "record-first",
            "without the consumer",
            "ignored",
            "counted",
        ] {
            assert!(
                lower.contains(design),
                "{form}: says nothing of what the tests see of {design}"
            );
        }
        // How to make an update fail halfway, and what that does to the transaction.
        for fact in [
            "raise(abort",
            "raise(rollback",
            "25p02",
            "savepoint",
            "trigger",
            "check",
        ] {
            assert!(
                lower.contains(fact),
                "{form}: the failure-injection advice lacks {fact}"
            );
        }
        let titles: Vec<&str> = steps.iter().map(|step| step.title.as_str()).collect();
        for topic in ["redelivery", "live data", "deploy"] {
            assert!(
                titles.iter().any(|title| title.contains(topic)),
                "{form}: no step about {topic}: {titles:?}"
            );
        }
    }
}

/// `/add-handler` names the files a new consumer touches, and its replay
/// (which follows the command's steps) touches exactly those.
#[test]
fn add_handler_names_every_file_its_replay_touches() {
    let command =
        std::fs::read_to_string(kit_root().join("template/.claude/commands/add-handler.md"))
            .expect("add-handler.md");
    let start = command
        .find("A new consumer touches these files and no others:")
        .expect("add-handler.md lists the files a consumer touches");
    let paragraph = &command[start
        ..command[start..]
            .find("\n\n")
            .map_or(command.len(), |end| start + end)];
    let named: std::collections::BTreeSet<String> = paragraph
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|name| name.contains('.'))
        .map(|name| {
            name.replace("{{database}}", "{db}")
                .replace("<consumer>", "reserving")
        })
        .collect();
    let touched: std::collections::BTreeSet<String> = common::replay::RESERVING
        .touched_files()
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        named, touched,
        "add-handler.md's list of files (left) and the files its replay touches (right) differ"
    );
    assert!(named.len() <= 5, "a consumer touches {} files", named.len());
}
