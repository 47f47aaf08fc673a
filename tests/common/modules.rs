//! A crate's module graph, read from its sources: which top-level module
//! (a file or folder right under `src/`) names which other one. It is the
//! graph a reader walks (and `farm-studio look` draws): a circle in it
//! means no module can be read, changed or moved on its own, and a crate
//! root that imports one of its own modules runs an arrow back up from the
//! ground floor.
//!
//! A module names another through `crate::other` (or `<lib>::other` from
//! the binary's modules), a `super::other` that leaves its folder, or, in a
//! crate root, a plain `use other`. Comments are left out: a doc link is
//! not an import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// An import of one top-level module by another, with where it is.
#[derive(Clone, Debug)]
pub struct Import {
    pub from: String,
    pub to: String,
    pub at: String,
}

/// Every import between the top-level modules of the crate whose `src/`
/// is `src`; `lib` is the library's name as the binary names it.
pub fn imports(src: &Path, lib: &str) -> Vec<Import> {
    let files = rust_files(src);
    let modules: BTreeSet<String> = files.iter().map(|file| top_module(file)).collect();
    let mut found = Vec::new();
    for file in &files {
        let from = top_module(file);
        let code = without_comments(&std::fs::read_to_string(src.join(file)).expect("source"));
        for (line, text) in code.lines().enumerate() {
            for to in named_modules(text, file, lib, &modules) {
                if to != from {
                    let at = format!("src/{file}:{}: {}", line + 1, text.trim());
                    found.push(Import {
                        from: from.clone(),
                        to,
                        at,
                    });
                }
            }
        }
    }
    found
}

/// A circle of modules, each importing the next and the last the first,
/// if there is one.
pub fn circle(imports: &[Import]) -> Option<Vec<Import>> {
    let mut edges: BTreeMap<&str, Vec<&Import>> = BTreeMap::new();
    for import in imports {
        edges.entry(&import.from).or_default().push(import);
    }
    let mut done = BTreeSet::new();
    for start in edges.keys() {
        let mut path = Vec::new();
        if let Some(found) = walk(start, &edges, &mut path, &mut done) {
            return Some(found);
        }
    }
    None
}

fn walk<'a>(
    module: &'a str,
    edges: &BTreeMap<&'a str, Vec<&'a Import>>,
    path: &mut Vec<&'a Import>,
    done: &mut BTreeSet<&'a str>,
) -> Option<Vec<Import>> {
    if done.contains(module) {
        return None;
    }
    if let Some(at) = path.iter().position(|import| import.from == module) {
        return Some(path[at..].iter().map(|import| (*import).clone()).collect());
    }
    for import in edges.get(module).into_iter().flatten() {
        path.push(import);
        if let Some(found) = walk(&import.to, edges, path, done) {
            return Some(found);
        }
        path.pop();
    }
    done.insert(module);
    None
}

/// Which modules of `modules` one line of `file` names.
fn named_modules(text: &str, file: &str, lib: &str, modules: &BTreeSet<String>) -> Vec<String> {
    let mut named = Vec::new();
    let mut prefixes = vec!["crate::".to_owned(), format!("{lib}::")];
    // As many `super::` as the file's module path has segments lead to the
    // crate root: one from `inbox.rs` or `inbox/mod.rs`, two from
    // `inbox/apply.rs`. Fewer stay inside the file's own top-level module.
    let depth = file.matches('/').count() + 1 - usize::from(file.ends_with("/mod.rs"));
    prefixes.push("super::".repeat(depth));
    if is_root(file) {
        prefixes.push("use ".to_owned());
    }
    for prefix in &prefixes {
        for (at, _) in text.match_indices(prefix.as_str()) {
            let preceded_by_path =
                text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':');
            if preceded_by_path {
                continue;
            }
            let rest = &text[at + prefix.len()..];
            for name in first_segments(rest) {
                if modules.contains(&name) && !is_root(&format!("{name}.rs")) {
                    named.push(name);
                }
            }
        }
    }
    named
}

/// The first path segments at the head of `rest`: `inbox::Outcome` gives
/// `inbox`, `{inbox::Outcome, event::Event}` gives both.
fn first_segments(rest: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)];
    };
    let mut segments = Vec::new();
    let mut depth = 0;
    let mut start = true;
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => start = true,
            c if start && !c.is_whitespace() => {
                segments.push(ident(&group[at..]));
                start = false;
            }
            _ => {}
        }
    }
    segments
}

fn is_root(file: &str) -> bool {
    file == "lib.rs" || file == "main.rs"
}

/// The top-level module a file belongs to: `inbox` for `inbox/apply.rs`,
/// `lib` and `main` for the crate roots.
fn top_module(file: &str) -> String {
    let first = file.split('/').next().expect("a path");
    first.trim_end_matches(".rs").to_owned()
}

/// Every `.rs` file under `src`, relative to it.
fn rust_files(src: &Path) -> Vec<String> {
    super::files(src)
        .into_iter()
        .filter(|file| file.ends_with(".rs"))
        .collect()
}

/// `code` with its line comments blanked (lines kept, so line numbers
/// hold). Block comments are not used in these crates.
fn without_comments(code: &str) -> String {
    code.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
