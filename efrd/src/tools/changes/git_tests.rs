//! The unified diff against a real `git diff` in a real repository, and the helpers the snapshot tests share.
//!
//! git runs with no system or global config (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`), so its output
//! is the default one: renames detected, indent heuristic on, `core.quotePath` on.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use efr_protocol::wire::changes::FileChanges;

use super::{Change, DisplayRoots, IgnoreRules, file_changes, unified_diff};
use crate::tools::patch;

/// Runs git in `dir` and returns its stdout; panics with its stderr when it fails or is missing.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
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
pub(crate) fn init_repo(dir: &Path) {
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "base"]);
}

/// `git diff` output with its extended header lines left out (the form [`unified_diff`] has), and with the two
/// header lines written where git prints none: an empty file added or deleted, a pure rename, a mode change.
pub(crate) fn without_extended_headers(git_diff: &str) -> String {
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
pub(crate) fn git_numstat(dir: &Path) -> Vec<(String, u64, u64, bool)> {
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
pub(crate) fn stat_rows(stat: &FileChanges) -> Vec<(String, u64, u64, bool)> {
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

#[test]
fn a_patch_with_a_move_an_add_and_a_delete_diffs_as_git_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let lines: String = (1..=12).map(|n| format!("line {n}\n")).collect();
    std::fs::write(root.join("a.txt"), &lines).expect("write");
    std::fs::write(root.join("d.txt"), "bye\nnow\n").expect("write");
    std::fs::write(root.join("e.txt"), "fn main() {\n    let x = 1;\n}\n").expect("write");
    init_repo(root);

    let text = "*** Begin Patch\n\
                *** Update File: a.txt\n\
                *** Move to: b.txt\n\
                @@\n line 3\n-line 4\n+LINE 4\n line 5\n\
                @@\n line 11\n-line 12\n+line twelve\n\
                *** Add File: c.txt\n+new\n+file\n\
                *** Delete File: d.txt\n\
                *** Update File: e.txt\n\
                @@\n fn main() {\n-    let x = 1;\n+    let x = 2;\n+    println!(\"{x}\");\n }\n\
                *** End Patch\n";
    let results = patch::apply_text(text, root).expect("the patch applies");
    let mut rules = IgnoreRules::new(root);
    let changes: Vec<Change> = results
        .into_iter()
        .map(|result| {
            let ignored = rules.is_ignored(&result.path, false);
            Change::from_patch(result, ignored)
        })
        .collect();
    let roots = DisplayRoots {
        project: Some(root),
        ..DisplayRoots::default()
    };

    git(root, &["add", "-N", "b.txt", "c.txt"]);
    let want = without_extended_headers(&git(root, &["diff", "--no-color"]));
    assert_eq!(unified_diff(&changes, &roots, usize::MAX), want);
    assert!(
        want.contains("--- a/a.txt\n+++ b/b.txt\n@@ -1,7 +1,7 @@\n"),
        "git detected the move:\n{want}"
    );

    let stat = file_changes(&changes, &roots);
    assert_eq!(stat_rows(&stat), git_numstat(root));
    assert_eq!(stat.files[0].from.as_deref(), Some(Path::new("a.txt")));
    assert_eq!((stat.added, stat.removed, stat.more), (6, 5, 0));
}
