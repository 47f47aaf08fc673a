//! A generated project under git, committing as a fixed identity so the
//! tests do not depend on the machine's git configuration.

use std::path::Path;
use std::process::Command;

pub struct Repo<'a> {
    pub root: &'a Path,
}

impl<'a> Repo<'a> {
    /// `git init` on branch `main` with everything committed as
    /// "generated". Cargo.lock is settled first: the template's lock keeps
    /// the project's own entry where another name would sort, and cargo
    /// rewrites it on the first build, which would leave the tree dirty.
    pub fn init(root: &'a Path) -> Self {
        super::cargo_ok(root, &["update", "--workspace", "--quiet"]);
        let repo = Self { root };
        repo.git(&["init", "--quiet", "--initial-branch=main"]);
        repo.commit_all("generated");
        repo
    }

    /// `git ARGS`; fails the test unless it succeeds. Returns stdout.
    pub fn git(&self, args: &[&str]) -> String {
        let output = Command::new("git")
            .args([
                "-c",
                "commit.gpgsign=false",
                "-c",
                "core.hooksPath=/dev/null",
            ])
            .args(args)
            .current_dir(self.root)
            .env("GIT_AUTHOR_NAME", "inbox-kit test")
            .env("GIT_AUTHOR_EMAIL", "test@inbox-kit.invalid")
            .env("GIT_COMMITTER_NAME", "inbox-kit test")
            .env("GIT_COMMITTER_EMAIL", "test@inbox-kit.invalid")
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_WORK_TREE")
            .output()
            .expect("run git");
        assert!(
            output.status.success(),
            "git {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// Commits every change in the tree.
    pub fn commit_all(&self, message: &str) -> String {
        self.git(&["add", "--all"]);
        self.git(&["commit", "--quiet", "--message", message]);
        self.short("HEAD")
    }

    /// Commits the changes under `paths` only.
    pub fn commit_paths(&self, paths: &[&str], message: &str) -> String {
        let mut args = vec!["add", "--all", "--"];
        args.extend_from_slice(paths);
        self.git(&args);
        self.git(&["commit", "--quiet", "--message", message]);
        self.short("HEAD")
    }

    /// Switches to a new branch `name` at `start`, discarding changes.
    pub fn branch(&self, name: &str, start: &str) {
        self.git(&["checkout", "--quiet", "--force", "-B", name, start]);
        self.git(&["clean", "--quiet", "--force", "-d"]);
    }

    pub fn short(&self, rev: &str) -> String {
        self.git(&["rev-parse", "--short", rev])
    }
}
