//! [`command`] against a real repository whose config names a program for every way git has to start one: plain
//! git starts them (so the repository is really planted), efr's git starts none, and neither do efr's snapshots and
//! diffs of it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::*;
use crate::snapshot::{Limits, Snapshot, compare};
use crate::tools::changes::{DisplayRoots, file_changes, unified_diff};

/// A repository with every planted program, and the file each of them appends its name to when it runs.
struct Planted {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    marker: PathBuf,
}

impl Planted {
    /// The names of the planted programs that ran, in order.
    fn ran(&self) -> Vec<String> {
        std::fs::read_to_string(&self.marker)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

fn plain_git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("git must be installed (apt-get install git)")
}

fn set(dir: &Path, key: &str, value: &str) {
    let out = plain_git(dir, &["config", key, value]);
    assert!(
        out.status.success(),
        "git config {key}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A script `bin/<name>` that appends `name` to the marker; a filter's or a textconv's also passes its input
/// through, so that git goes on.
fn program(bin: &Path, marker: &Path, name: &str) -> String {
    let path = bin.join(name);
    let pass = if name.starts_with("filter") || name == "textconv" {
        "cat\n"
    } else {
        ""
    };
    std::fs::write(
        &path,
        format!("#!/bin/sh\necho {name} >> '{}'\n{pass}", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// A repository with one commit and a changed file, whose config, attributes and hooks name a program for each of:
/// fsmonitor, hooks (in `.git/hooks` and in `core.hooksPath`), a diff driver's textconv and command,
/// `diff.external`, a filter's clean and smudge, pagers, editors, ssh, askpass, a credential helper, a
/// proxy, gpg with `log.showSignature` and signed commits, and a remote whose transport (`ext::`) runs a command.
fn planted() -> Planted {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let bin = dir.path().join("bin");
    let hooks = dir.path().join("hooks");
    let marker = dir.path().join("ran");
    for folder in [&repo, &bin, &hooks] {
        std::fs::create_dir_all(folder).unwrap();
    }
    assert!(plain_git(&repo, &["init", "-q"]).status.success(), "git init");
    set(&repo, "user.name", "T");
    set(&repo, "user.email", "t@example.invalid");
    std::fs::write(repo.join("file.txt"), "one\ntwo\n").unwrap();
    assert!(plain_git(&repo, &["add", "file.txt"]).status.success());
    assert!(plain_git(&repo, &["commit", "-qm", "one"]).status.success());

    for hook in [
        "post-index-change",
        "pre-commit",
        "commit-msg",
        "post-commit",
        "reference-transaction",
    ] {
        let script = program(&hooks, &marker, hook);
        let local = repo.join(".git/hooks").join(hook);
        std::fs::copy(&script, &local).unwrap();
    }
    std::fs::write(repo.join(".gitattributes"), "* diff=evil filter=evil\n").unwrap();
    std::fs::write(repo.join(".git/info/attributes"), "* diff=evil filter=evil\n").unwrap();
    let keys = [
        ("core.fsmonitor", "fsmonitor"),
        ("diff.evil.textconv", "textconv"),
        ("diff.evil.command", "diff-command"),
        ("diff.external", "diff-external"),
        ("filter.evil.clean", "filter-clean"),
        ("filter.evil.smudge", "filter-smudge"),
        ("core.pager", "pager"),
        ("pager.log", "pager-log"),
        ("core.editor", "editor"),
        ("sequence.editor", "sequence-editor"),
        ("core.sshCommand", "ssh"),
        ("core.askPass", "askpass"),
        ("credential.helper", "credential"),
        ("core.gitProxy", "proxy"),
        ("gpg.program", "gpg"),
        ("gpg.ssh.program", "gpg-ssh"),
    ];
    for (key, name) in keys {
        set(&repo, key, &program(&bin, &marker, name));
    }
    set(&repo, "filter.evil.required", "true");
    set(&repo, "core.hooksPath", &hooks.display().to_string());
    set(&repo, "log.showSignature", "true");
    set(&repo, "commit.gpgSign", "true");
    let ext = format!("ext::{}", program(&bin, &marker, "ext-transport"));
    set(&repo, "remote.origin.url", &ext);
    set(&repo, "protocol.allow", "always");
    // A change whose stat differs from the index: `status` and `diff` re-read it through the clean filter.
    std::fs::write(repo.join("file.txt"), "one\nTWO\n").unwrap();
    Planted {
        _dir: dir,
        repo,
        marker,
    }
}

/// Runs efr's git with `args` in `dir`, with the filter drivers blanked first; its output.
fn efr_git(dir: &Path, args: &[&str]) -> Output {
    let listing = command()
        .args(["config", "-z", "--get-regexp", r"^filter\."])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let mut git = command();
    blank_filters(&mut git, &listing.stdout).unwrap();
    git.args(args).current_dir(dir).stdin(Stdio::null()).output().unwrap()
}

#[test]
fn plain_git_runs_the_planted_programs() {
    let planted = planted();
    plain_git(&planted.repo, &["status", "--porcelain"]);
    plain_git(&planted.repo, &["diff"]);
    plain_git(&planted.repo, &["ls-remote", "origin"]);
    let ran = planted.ran();
    for name in [
        "fsmonitor",
        "filter-clean",
        "post-index-change",
        "diff-command",
        "ext-transport",
    ] {
        assert!(ran.iter().any(|r| r == name), "{name} did not run; ran: {ran:?}");
    }
}

#[test]
fn efr_git_runs_none_of_them() {
    let planted = planted();
    let repo = &planted.repo;
    let diff: Vec<&str> = ["diff"].iter().chain(DIFF_OPTIONS).copied().collect();
    let log: Vec<&str> = ["log", "-p", "-1"].iter().chain(DIFF_OPTIONS).copied().collect();
    let succeed: [&[&str]; 7] = [
        &["status", "--porcelain"],
        &diff,
        &log,
        &["config", "--list", "--show-scope", "-z"],
        &["rev-parse", "--show-toplevel", "--git-path", "hooks/post-index-change"],
        &["ls-files", "--stage", "-z"],
        &["commit", "-qam", "two"],
    ];
    for args in succeed {
        let out = efr_git(repo, args);
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // No transport but `file`: the ext:: remote is refused before its command starts.
    let out = efr_git(repo, &["ls-remote", "origin"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not allowed"), "{out:?}");
    assert_eq!(planted.ran(), Vec::<String>::new());
}

#[test]
fn an_external_diff_fails_instead_of_starting_and_the_diff_options_skip_it() {
    let planted = planted();
    let repo = &planted.repo;
    // Without a driver from the attributes, `diff.external` is what plain git starts.
    std::fs::remove_file(repo.join(".gitattributes")).unwrap();
    std::fs::remove_file(repo.join(".git/info/attributes")).unwrap();
    plain_git(repo, &["diff"]);
    assert!(
        planted.ran().contains(&"diff-external".to_owned()),
        "{:?}",
        planted.ran()
    );
    std::fs::remove_file(&planted.marker).unwrap();
    let out = efr_git(repo, &["diff"]);
    assert!(!out.status.success(), "an empty diff.external must fail: {out:?}");
    let diff: Vec<&str> = ["diff"].iter().chain(DIFF_OPTIONS).copied().collect();
    assert!(efr_git(repo, &diff).status.success());
    assert_eq!(planted.ran(), Vec::<String>::new());
}

#[test]
fn the_diff_options_still_diff_and_blanked_filters_keep_the_text() {
    let planted = planted();
    let diff: Vec<&str> = ["diff"].iter().chain(DIFF_OPTIONS).copied().collect();
    let out = efr_git(&planted.repo, &diff);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("-two\n+TWO\n"), "{text}");
    assert_eq!(planted.ran(), Vec::<String>::new());
}

#[test]
fn a_filter_driver_named_with_an_equals_sign_is_refused() {
    let mut git = command();
    assert!(blank_filters(&mut git, b"filter.a=b.clean\nx\0").is_err());
    assert!(
        blank_filters(
            &mut git,
            b"filter.lfs.clean\ngit-lfs clean -- %f\0filter.lfs.required\ntrue\0"
        )
        .is_ok()
    );
    let args: Vec<String> = git.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    assert!(args.contains(&"filter.lfs.clean=".to_owned()), "{args:?}");
    assert!(args.contains(&"filter.lfs.required=false".to_owned()), "{args:?}");
}

#[test]
fn efrs_snapshots_and_diffs_of_a_planted_repository_run_nothing() {
    let planted = planted();
    let repo = &planted.repo;
    let limits = Limits::default();
    let before = Snapshot::take(repo, &limits, None).unwrap();
    std::fs::write(repo.join("file.txt"), "one\nthree\n").unwrap();
    let after = Snapshot::take(repo, &limits, Some(&before)).unwrap();
    let comparison = compare(&before, &after).unwrap();
    let roots = DisplayRoots {
        project: Some(repo),
        scratch: None,
        home: None,
    };
    let diff = unified_diff(&comparison.changes, &roots, 100);
    assert!(diff.contains("-TWO\n+three\n"), "{diff}");
    assert_eq!(file_changes(&comparison.changes, &roots).added, 1);
    assert_eq!(planted.ran(), Vec::<String>::new());
}
