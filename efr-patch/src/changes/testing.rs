//! Real git for tests: a repository, `git diff` in the form [`unified_diff`](super::unified_diff) has, and
//! `--numstat` rows, for the tests of this crate and of the crates that compare snapshots.
//!
//! git runs with no system or global config (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`), so its output
//! is the default one: renames detected, indent heuristic on, `core.quotePath` on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use efr_protocol::wire::changes::FileChanges;

/// Runs git in `dir` and returns its stdout; panics with its stderr when it fails or is missing.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=efr",
            "-c",
            "user.email=efr@example.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git must be installed to run these tests");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("git's output is UTF-8 here")
}

/// A new repository in `dir` with every file there committed.
pub fn init_repo(dir: &Path) {
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "base"]);
}

/// `git diff` output with its extended header lines left out (the form [`unified_diff`] has), and with the two
/// header lines written where git prints none: an empty file added or deleted, a pure rename, a mode change.
pub fn without_extended_headers(git_diff: &str) -> String {
    let mut out = String::new();
    for block in git_diff.split("diff --git ").filter(|block| !block.is_empty()) {
        let lines: Vec<&str> = block.split_inclusive('\n').collect();
        let body = lines
            .iter()
            .position(|line| line.starts_with("--- ") || line.starts_with("Binary files "));
        if let Some(body) = body {
            out.extend(lines[body..].iter().copied());
            continue;
        }
        // No body: only names in the extended header. These tests use names without spaces or quotes here.
        let pair = lines[0].trim_end();
        let name = &pair[2..2 + (pair.len() - 5) / 2];
        let field = |key: &str| lines.iter().find_map(|line| line.strip_prefix(key)).map(str::trim_end);
        let (old, new) = if let (Some(from), Some(to)) = (field("rename from "), field("rename to ")) {
            (format!("a/{from}"), format!("b/{to}"))
        } else if field("new file mode ").is_some() {
            ("/dev/null".to_owned(), format!("b/{name}"))
        } else if field("deleted file mode ").is_some() {
            (format!("a/{name}"), "/dev/null".to_owned())
        } else {
            (format!("a/{name}"), format!("b/{name}"))
        };
        out.push_str(&format!("--- {old}\n+++ {new}\n"));
    }
    out
}

/// `git diff --numstat -z` as (path, added, removed, binary), a rename under its new path.
pub fn git_numstat(dir: &Path) -> Vec<(String, u64, u64, bool)> {
    let raw = git(dir, &["diff", "--numstat", "-z"]);
    let mut fields = raw.split('\0');
    let mut rows = Vec::new();
    while let Some(head) = fields.next().filter(|head| !head.is_empty()) {
        let mut parts = head.splitn(3, '\t');
        let (added, removed, path) = (
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
        );
        let path = if path.is_empty() {
            let _from = fields.next();
            fields.next().unwrap_or("").to_owned()
        } else {
            path.to_owned()
        };
        let binary = added == "-";
        rows.push((path, added.parse().unwrap_or(0), removed.parse().unwrap_or(0), binary));
    }
    rows
}

/// [`FileChanges`] rows in the form of [`git_numstat`].
pub fn stat_rows(stat: &FileChanges) -> Vec<(String, u64, u64, bool)> {
    stat.files
        .iter()
        .map(|file| {
            (
                String::from_utf8_lossy(file.path.as_os_str().as_bytes()).into_owned(),
                file.added,
                file.removed,
                file.binary,
            )
        })
        .collect()
}
