//! The all-or-nothing rule on real files: a later file that fails while planning or while writing leaves the earlier
//! ones as they were, a file changed after the plan is not overwritten, and several operations on one path.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use efr_protocol::wire::FileChangeKind;

use super::apply_tests::{get, put, run, snapshot, tmp, wrap};
use super::*;
#[test]
fn operations_on_one_path_follow_each_other() {
    let dir = tmp();
    put(dir.path(), "a.txt", "old\n");
    let files = run(
        dir.path(),
        "*** Delete File: a.txt\n*** Add File: a.txt\n+new\n*** Update File: a.txt\n@@\n-new\n+newer\n",
    )
    .unwrap();
    assert_eq!(get(dir.path(), "a.txt"), "newer\n");
    let kinds: Vec<_> = files.iter().map(|file| file.kind).collect();
    assert_eq!(
        kinds,
        [FileChangeKind::Deleted, FileChangeKind::Added, FileChangeKind::Modified]
    );
    // Adding a file that an earlier operation added is refused like any existing file.
    let error = run(dir.path(), "*** Add File: b.txt\n+1\n*** Add File: b.txt\n+2\n").unwrap_err();
    assert!(matches!(error, ApplyError::AlreadyExists { .. }), "{error:?}");
    assert!(!dir.path().join("b.txt").exists());
}

#[test]
fn a_failing_second_file_leaves_the_first_unchanged() {
    let dir = tmp();
    put(dir.path(), "first.txt", "one\n");
    put(dir.path(), "second.txt", "two\n");
    put(dir.path(), "gone.txt", "still here\n");
    let before = snapshot(dir.path());
    let error = run(
        dir.path(),
        "*** Update File: first.txt\n@@\n-one\n+ONE\n*** Add File: new/added.txt\n+x\n*** Delete File: gone.txt\n\
         *** Update File: second.txt\n@@\n-no such line\n+x\n",
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("second.txt: the chunk at patch line 10"),
        "{error}"
    );
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn a_failure_while_writing_restores_what_was_written() {
    let dir = tmp();
    put(dir.path(), "first.txt", "one\n");
    put(dir.path(), "gone.txt", "keep me\n");
    // `blocker` is a regular file, so no folder can be made under it: the plan passes and the write fails, even as
    // root (permissions would not stop root).
    put(dir.path(), "blocker", "a file\n");
    let before = snapshot(dir.path());
    let error = run(
        dir.path(),
        "*** Update File: first.txt\n@@\n-one\n+ONE\n*** Add File: fresh/deeper/new.txt\n+x\n\
         *** Delete File: gone.txt\n*** Add File: blocker/sub/new.txt\n+y\n",
    )
    .unwrap_err();
    assert!(
        matches!(
            error,
            ApplyError::Io {
                op: "create the folder of",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("blocker/sub/new.txt") && error.to_string().ends_with("no file was changed"),
        "{error}"
    );
    // first.txt has its old text, fresh/ (made for the second file) is gone again, gone.txt was never removed.
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn a_link_to_delete_stays_when_a_write_fails() {
    let dir = tmp();
    put(dir.path(), "target.txt", "t\n");
    let link = dir.path().join("link.txt");
    std::os::unix::fs::symlink("target.txt", &link).unwrap();
    put(dir.path(), "blocker", "file\n");
    let error = run(
        dir.path(),
        "*** Delete File: link.txt\n*** Add File: blocker/x/y.txt\n+y\n",
    )
    .unwrap_err();
    assert!(matches!(error, ApplyError::Io { .. }), "{error:?}");
    // The write fails before the removal runs; the link is untouched.
    assert_eq!(fs::read_link(&link).unwrap(), Path::new("target.txt"));
}

#[test]
fn a_file_changed_after_the_plan_is_not_overwritten() {
    let dir = tmp();
    put(dir.path(), "a.txt", "a\n");
    put(dir.path(), "b.txt", "b\n");
    let patch = parse(&wrap(
        "*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-b\n+B\n",
    ))
    .unwrap();
    let plan = Plan::new(&patch, dir.path()).unwrap();
    let paths: Vec<&Path> = plan.paths().collect();
    assert_eq!(paths, [dir.path().join("a.txt"), dir.path().join("b.txt")]);
    assert_eq!(plan.files().len(), 2);
    put(dir.path(), "b.txt", "someone else\n");
    let error = plan.commit().unwrap_err();
    assert!(matches!(error, ApplyError::Changed { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("b.txt changed while the patch was prepared; nothing was written"),
        "{error}"
    );
    assert_eq!(
        (get(dir.path(), "a.txt"), get(dir.path(), "b.txt")),
        ("a\n".into(), "someone else\n".into())
    );
}

#[test]
fn an_unreadable_path_is_an_io_error() {
    let dir = tmp();
    // A name longer than any file system allows: not "missing", an error the model should see.
    let long = "n".repeat(300);
    let error = run(dir.path(), &format!("*** Update File: {long}\n@@\n-a\n+b\n")).unwrap_err();
    assert!(matches!(error, ApplyError::Io { op: "read", .. }), "{error:?}");
}

#[test]
fn an_update_that_changes_nothing_writes_nothing() {
    let dir = tmp();
    let path = put(dir.path(), "same.txt", "a\nb\n");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    let inode = std::os::unix::fs::MetadataExt::ino(&fs::metadata(&path).unwrap());
    let patch = parse(&wrap("*** Update File: same.txt\n@@\n a\n-b\n+b\n")).unwrap();
    let plan = Plan::new(&patch, dir.path()).unwrap();
    assert_eq!(plan.paths().count(), 0);
    let files = plan.commit().unwrap();
    assert_eq!((files[0].added, files[0].removed), (0, 0));
    assert_eq!(
        std::os::unix::fs::MetadataExt::ino(&fs::metadata(&path).unwrap()),
        inode,
        "not rewritten"
    );
    // A real update keeps the mode.
    run(dir.path(), "*** Update File: same.txt\n@@\n-b\n+c\n").unwrap();
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o7777, 0o640);
}

#[test]
fn a_link_swapped_in_after_the_check_fails_the_commit_and_nothing_lands_outside() {
    let dir = tmp();
    let base = fs::canonicalize(dir.path()).unwrap();
    let (project, outside) = (base.join("p"), base.join("outside"));
    fs::create_dir_all(project.join("d")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    put(&project, "first.txt", "one\n");
    let patch = parse(
        "*** Begin Patch\n*** Update File: first.txt\n@@\n-one\n+ONE\n*** Add File: d/new.txt\n+x\n*** End Patch",
    )
    .unwrap();
    let plan = Plan::new(&patch, &project).unwrap();
    // What the caller judged: the paths as they resolved then.
    let allowed = vec![project.join("first.txt"), project.join("d/new.txt")];
    // Then something swaps the folder for a link out of the project.
    fs::rename(project.join("d"), project.join("d-old")).unwrap();
    std::os::unix::fs::symlink(&outside, project.join("d")).unwrap();
    let error = plan.commit_within(&allowed).unwrap_err();
    assert!(error.to_string().contains("not where the patch was checked"), "{error}");
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0, "nothing outside");
    assert_eq!(get(&project, "first.txt"), "one\n", "the first write was undone");
}
