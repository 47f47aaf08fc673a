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
    let args = GenerateArgs {
        template_path: TemplatePath {
            path: Some(kit_root().display().to_string()),
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
    };
    let before = entries(destination)?;
    let project = std::fs::canonicalize(destination)
        .unwrap_or_else(|_| destination.to_path_buf())
        .join(name);
    // cargo-generate reports on stderr, with every path shortened to its
    // first letters (`/tmp/nc/x` reads `t/nc/x`): its report is captured
    // and passed on with the real path. When stderr cannot be redirected
    // (another redirect is active), the report goes out as it is.
    let capture = gag::BufferRedirect::stderr().ok();
    let generated = cargo_generate(args);
    if let Some(mut capture) = capture {
        let mut report = String::new();
        let _ = capture.read_to_string(&mut report);
        drop(capture);
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
