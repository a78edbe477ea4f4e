//! A snapshot and a diff of a repository whose config plants a program for every way git has to start one
//! (`efr_git::testing`): efr's snapshots and diffs start none of them.

use efr_git::testing::planted;
use efr_patch::changes::{DisplayRoots, file_changes, unified_diff};

use crate::{Limits, Snapshot, compare};

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
