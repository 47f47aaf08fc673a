//! Generating a consumer from the template in this repository.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use cargo_generate::{GenerateArgs, TemplatePath, Vcs, generate as cargo_generate};

/// The kit's root: where `cargo-generate.toml` and `template/` live.
pub fn kit_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Generates project `name` into `destination/name` and returns its path.
///
/// Every placeholder has a default, so this never prompts. The project is
/// never added to an enclosing Cargo workspace. cargo-generate needs an
/// author name in the environment (`USER`, `CARGO_NAME`...); the
/// `inbox-kit` binary provides one when there is none.
///
/// With `format`, the generated Rust files go through rustfmt, so they are
/// formatted whatever the project name's length; without it they are left
/// exactly as the template renders them (what cargo-generate 0.23 does).
pub fn generate(
    name: &str,
    destination: &Path,
    define: Vec<String>,
    format: bool,
) -> anyhow::Result<PathBuf> {
    if !destination.is_dir() {
        bail!("destination {} is not a folder", destination.display());
    }
    let args = generate_args(kit_root(), name, destination, define, format);
    let before = entries(destination)?;
    let project = std::fs::canonicalize(destination)
        .unwrap_or_else(|_| destination.to_path_buf())
        .join(name);
    // cargo-generate reports on stderr, with every path shortened to its
    // first letters (`/tmp/nc/x` reads `t/nc/x`): its report is captured
    // and passed on with the real path. When stderr cannot be redirected
    // (another redirect is active), the report goes out as it is.
    let (generated, report) = with_stderr_captured(|| cargo_generate(args));
    if let Some(report) = report {
        let project = generated.as_deref().unwrap_or(&project);
        eprint!("{}", with_real_path(&report, project));
    }
    generated
        .with_context(|| format!("could not generate {name}"))
        .inspect_err(|_| {
            // cargo-generate creates the project folder before it validates
            // every option; a failed run must not leave that half-made folder.
            if let Ok(after) = entries(destination) {
                for leftover in after.difference(&before) {
                    let _ = std::fs::remove_dir_all(leftover);
                }
            }
        })
}

/// Renders the kit's own suites (`template/kit-suites/`: crash-kill, schedules, fuzz,
/// faults, the relay, the brokers end to end) for project `name`, with
/// the `define`s it was generated with, and moves them into
/// `project/tests/`. They test the kit's code through the template's
/// example consumers, so the kit runs them on its generated copies of
/// those; a consumer's project does not carry them. Refuses, changing
/// nothing, when `project/tests/` already has an entry of the same name.
pub fn add_kit_suites(
    name: &str,
    project: &Path,
    define: Vec<String>,
    format: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    let tests = project.join("tests");
    if !tests.is_dir() {
        bail!(
            "{} has no tests folder: is it a generated project?",
            project.display()
        );
    }
    let scratch = tempfile::Builder::new()
        .prefix("inbox-kit-suites-")
        .tempdir()
        .context("could not make a folder to render the kit's suites in")?;
    // The suites sit inside the template, which must not see a second
    // `cargo-generate.toml` (cargo-generate would take it for the
    // template): their configuration is `kit-suites.toml`, given its
    // real name in a copy.
    let template = scratch.path().join("template");
    copy_tree(
        &kit_root().join("template/kit-suites"),
        &template,
        &mut Vec::new(),
    )?;
    std::fs::rename(
        template.join("kit-suites.toml"),
        template.join("cargo-generate.toml"),
    )
    .context("the kit's suites have no kit-suites.toml")?;
    let rendered_into = scratch.path().join("rendered");
    std::fs::create_dir(&rendered_into).context("could not make the suites' folder")?;
    let args = generate_args(&template, name, &rendered_into, define, format);
    // Its report names the scratch folder, which is gone by the end: kept
    // back, and shown only when the rendering failed.
    let (rendered, report) = with_stderr_captured(|| cargo_generate(args));
    if let (Err(_), Some(report)) = (&rendered, report) {
        eprint!("{report}");
    }
    let rendered = rendered.context("could not render the kit's suites")?;
    let suites: Vec<(PathBuf, PathBuf)> = entries(&rendered.join("tests"))?
        .into_iter()
        .map(|suite| {
            let target = tests.join(suite.file_name().expect("an entry has a name"));
            (suite, target)
        })
        .collect();
    if let Some((_, taken)) = suites.iter().find(|(_, target)| target.exists()) {
        bail!(
            "{} already exists: the kit's suites are added once",
            taken.display()
        );
    }
    let mut copied = Vec::new();
    for (suite, target) in &suites {
        copy_tree(suite, target, &mut copied)?;
    }
    if format {
        let rust: Vec<&PathBuf> = copied
            .iter()
            .filter(|file| file.extension().is_some_and(|extension| extension == "rs"))
            .collect();
        format_rust_files(project, &rust);
    }
    Ok(suites.into_iter().map(|(_, target)| target).collect())
}

/// Runs rustfmt, with `project`'s edition, over `files`.
/// cargo-generate formats only files inside a cargo project, which the
/// suites' own template is not. Like its formatting, a courtesy: a missing
/// or failing rustfmt is a warning, not a failed generation.
fn format_rust_files(project: &Path, files: &[&PathBuf]) {
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap_or_default();
    let edition = manifest
        .lines()
        .find_map(|line| line.trim().strip_prefix("edition = "))
        .map_or("2024", |value| value.trim_matches('"'));
    let formatted = std::process::Command::new("rustfmt")
        .args(["--edition", edition])
        .args(files)
        .status();
    if !formatted.is_ok_and(|status| status.success()) {
        eprintln!("warning: could not format the kit's suites with rustfmt");
    }
}

/// What cargo-generate needs to render `template` for project `name` into
/// `destination`, silently, with the `define`s, formatted or not.
fn generate_args(
    template: &Path,
    name: &str,
    destination: &Path,
    define: Vec<String>,
    format: bool,
) -> GenerateArgs {
    GenerateArgs {
        template_path: TemplatePath {
            path: Some(template.display().to_string()),
            ..TemplatePath::default()
        },
        name: Some(name.to_owned()),
        silent: true,
        vcs: Some(Vcs::None),
        destination: Some(destination.to_path_buf()),
        no_workspace: true,
        define,
        no_fmt: !format,
        // The library defaults to a library crate; the CLI (and this
        // template) make a binary one.
        lib: false,
        bin: true,
        ..GenerateArgs::default()
    }
}

/// Runs `work` with stderr captured, and returns what it wrote there;
/// `None` when stderr cannot be redirected (another redirect is active),
/// and what `work` wrote went out as it is.
fn with_stderr_captured<T>(work: impl FnOnce() -> T) -> (T, Option<String>) {
    let capture = gag::BufferRedirect::stderr().ok();
    let result = work();
    let report = capture.map(|mut capture| {
        let mut report = String::new();
        let _ = capture.read_to_string(&mut report);
        report
    });
    (result, report)
}

/// Copies the file or folder `from` to `to`, which must not exist, and
/// adds each file it wrote to `copied`.
fn copy_tree(from: &Path, to: &Path, copied: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    if from.is_dir() {
        std::fs::create_dir(to).with_context(|| format!("could not create {}", to.display()))?;
        for entry in entries(from)? {
            let name = entry.file_name().expect("an entry has a name");
            copy_tree(&entry, &to.join(name), copied)?;
        }
        Ok(())
    } else {
        std::fs::copy(from, to)
            .with_context(|| format!("could not copy {} to {}", from.display(), to.display()))?;
        copied.push(to.to_path_buf());
        Ok(())
    }
}

/// Where cargo-generate's report names the project's folder, `project`
/// instead of its shortened form.
pub fn with_real_path(report: &str, project: &Path) -> String {
    const PATH_FOLLOWS: [&str; 3] = [
        "Destination: ",
        "Moving generated files into: ",
        "New project created ",
    ];
    let mut fixed = String::with_capacity(report.len());
    for line in report.lines() {
        match PATH_FOLLOWS
            .iter()
            .find_map(|label| line.find(label).map(|at| at + label.len()))
        {
            Some(end) => {
                fixed.push_str(&line[..end]);
                fixed.push_str(&project.display().to_string());
            }
            None => fixed.push_str(line),
        }
        fixed.push('\n');
    }
    fixed
}

fn entries(folder: &Path) -> anyhow::Result<BTreeSet<PathBuf>> {
    let listing = std::fs::read_dir(folder)
        .with_context(|| format!("could not read {}", folder.display()))?;
    Ok(listing
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .collect())
}
