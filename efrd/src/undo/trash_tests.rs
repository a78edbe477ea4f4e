//! The trash with real files: one folder per root of an undo, list, find, restore (never over a file, or to another
//! path, a symlink as a symlink), and the bounds on age and bytes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::*;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Makes the undo folder `folder` look trashed `age` ago.
fn age(dir: &Path, folder: &str, age: Duration) {
    let root = fs::File::options()
        .write(true)
        .open(dir.join(folder).join("root"))
        .unwrap();
    root.set_modified(SystemTime::now() - age).unwrap();
}

#[test]
fn each_root_of_an_undo_has_its_folder_and_a_file_goes_back_where_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let (project, scratch, trash) = (dir.path().join("p"), dir.path().join("s"), dir.path().join("trash"));
    write(&project.join("src/a.txt"), "the user's a\n");
    write(&scratch.join("notes"), "scratch notes\n");
    std::os::unix::fs::symlink("src/a.txt", project.join("link")).unwrap();
    Trash::new(&trash, "undo-1", 0).put(&project, "src/a.txt").unwrap();
    Trash::new(&trash, "undo-1", 0).put(&project, "link").unwrap();
    Trash::new(&trash, "undo-1", 1).put(&scratch, "notes").unwrap();
    assert!(!project.join("src/a.txt").exists() && !scratch.join("notes").exists());

    let items = list(&trash);
    let shown: Vec<(&str, &str, std::path::PathBuf, u64)> = items
        .iter()
        .map(|item| (item.id.as_str(), item.undo_id.as_str(), item.original(), item.size))
        .collect();
    assert_eq!(
        shown,
        vec![
            ("undo-1.1/notes", "undo-1", scratch.join("notes"), 14),
            ("undo-1/link", "undo-1", project.join("link"), 9),
            ("undo-1/src/a.txt", "undo-1", project.join("src/a.txt"), 13),
        ]
    );
    // The files, and each folder's `root` (the root's path).
    let roots = (project.as_os_str().len() + scratch.as_os_str().len()) as u64;
    assert_eq!(bytes(&trash), 14 + 9 + 13 + roots);

    // An id outside the trash is none of its entries.
    for bad in [
        "undo-1/../undo-1/link",
        "../x/y",
        "/etc/passwd",
        "undo-1",
        "undo-1/src",
        "nope/a",
    ] {
        assert_eq!(find(&trash, bad), None, "{bad}");
    }
    let a = find(&trash, "undo-1/src/a.txt").unwrap();
    // Something is there now: refused, nothing moves.
    write(&project.join("src/a.txt"), "written since\n");
    let refused = restore(&trash, &a, None).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::AlreadyExists);
    assert_eq!(
        fs::read_to_string(project.join("src/a.txt")).unwrap(),
        "written since\n"
    );
    assert!(find(&trash, "undo-1/src/a.txt").is_some());
    // A relative path is refused; another free path takes it.
    assert_eq!(
        restore(&trash, &a, Some(Path::new("rel"))).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let other = project.join("src/a.mine.txt");
    assert_eq!(restore(&trash, &a, Some(&other)).unwrap(), other);
    assert_eq!(fs::read_to_string(&other).unwrap(), "the user's a\n");
    assert_eq!(find(&trash, "undo-1/src/a.txt"), None);
    // A symlink comes back as the same symlink.
    let link = find(&trash, "undo-1/link").unwrap();
    restore(&trash, &link, None).unwrap();
    assert_eq!(fs::read_link(project.join("link")).unwrap(), Path::new("src/a.txt"));
    // The project's trash folder is gone with its last file; the scratch one stays.
    assert!(!trash.join("undo-1").exists());
    assert_eq!(list(&trash).len(), 1);
    let notes = find(&trash, "undo-1.1/notes").unwrap();
    assert_eq!(restore(&trash, &notes, None).unwrap(), scratch.join("notes"));
    assert_eq!(fs::read_to_string(scratch.join("notes")).unwrap(), "scratch notes\n");
    assert!(list(&trash).is_empty());
}

#[test]
fn the_trash_drops_old_undos_then_the_oldest_past_its_bytes_but_never_the_undo_that_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let (root, trash) = (dir.path().join("p"), dir.path().join("trash"));
    for (undo, days) in [("undo-old", 40), ("undo-mid", 5), ("undo-new", 1), ("undo-now", 0)] {
        write(&root.join(format!("{undo}.txt")), &"x".repeat(1000));
        Trash::new(&trash, undo, 0).put(&root, &format!("{undo}.txt")).unwrap();
        age(&trash, undo, Duration::from_secs(days * 86_400));
    }
    let undos = || -> Vec<String> {
        let mut found: Vec<String> = list(&trash).into_iter().map(|item| item.undo_id).collect();
        found.sort();
        found
    };
    let bounds = TrashBounds {
        max_bytes: 1 << 20,
        max_age: Duration::from_secs(30 * 86_400),
    };
    // Age: the 40-day-old undo goes.
    assert_eq!(expire(&trash, bounds, None), 1);
    assert_eq!(undos(), ["undo-mid", "undo-new", "undo-now"]);
    // Bytes: at most two files' worth (and their root files): the oldest goes first.
    let bounds = TrashBounds {
        max_bytes: 2 * 1000 + 2 * root.as_os_str().len() as u64,
        ..bounds
    };
    assert_eq!(expire(&trash, bounds, None), 1);
    assert_eq!(undos(), ["undo-new", "undo-now"]);
    // Nothing fits, but the undo that just wrote keeps its files.
    let nothing = TrashBounds {
        max_bytes: 0,
        max_age: Duration::ZERO,
    };
    assert_eq!(expire(&trash, nothing, Some("undo-now")), 1);
    assert_eq!(undos(), ["undo-now"]);
}
