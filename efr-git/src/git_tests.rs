//! [`command`] against a real repository whose config names a program for every way git has to start one: plain
//! git starts them (so the repository is really planted), efr's git starts none, and neither do efr's snapshots and
//! diffs of it.

use std::path::Path;
use std::process::{Output, Stdio};

use super::*;
use crate::testing::{plain_git, planted};

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
