//! The rollback itself, driven step by step on real files: a removal and a write that fail after other steps, and a
//! restore that fails in turn. (`Plan::commit` checks the files first, so these failures cannot be staged through
//! it; `apply_tests` covers the failures it can meet.)

use std::fs;
use std::os::unix::fs::PermissionsExt;

use super::*;

fn file_step(path: &Path, state: State) -> Step {
    Step {
        path: path.to_owned(),
        original: Disk::load(path).unwrap(),
        state,
    }
}

#[test]
fn a_failed_removal_undoes_every_step_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.txt");
    let b = dir.path().join("b.txt");
    let c = dir.path().join("c.txt");
    fs::write(&a, "a\n").unwrap();
    fs::write(&b, "b\n").unwrap();
    fs::write(&c, "c\n").unwrap();
    fs::set_permissions(&b, fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.path().join("link.txt");
    std::os::unix::fs::symlink("a.txt", &link).unwrap();
    let new = dir.path().join("sub/new.txt");
    let steps = vec![
        file_step(
            &a,
            State::File {
                bytes: b"A\n".to_vec(),
                mode: Some(0o644),
            },
        ),
        Step {
            path: new.clone(),
            original: Disk::Missing,
            state: State::File {
                bytes: b"n\n".to_vec(),
                mode: None,
            },
        },
        file_step(&b, State::Missing),
        file_step(&link, State::Missing),
        file_step(&c, State::Missing),
    ];
    // c.txt goes away behind the commit's back, so its removal fails after a.txt, sub/new.txt and b.txt are done.
    fs::remove_file(&c).unwrap();
    let mut done = Vec::new();
    let Err(failure) = run(&steps, None, &mut done) else {
        panic!("the removal of c.txt should fail")
    };
    assert_eq!((failure.op, failure.path.as_path()), ("remove", c.as_path()));
    assert_eq!(
        done.len(),
        5,
        "a written, folder made, new written, b and the link removed"
    );
    assert_eq!(fs::read_to_string(&a).unwrap(), "A\n");
    assert!(!b.exists());
    assert!(fs::symlink_metadata(&link).is_err());

    assert_eq!(undo(done), Vec::<PathBuf>::new());
    assert_eq!(fs::read_to_string(&a).unwrap(), "a\n");
    assert_eq!(fs::read_to_string(&b).unwrap(), "b\n");
    assert_eq!(
        fs::metadata(&b).unwrap().permissions().mode() & 0o777,
        0o600,
        "the mode comes back too"
    );
    assert!(!dir.path().join("sub").exists(), "the folder made for new.txt is gone");
    assert_eq!(
        fs::read_link(&link).unwrap(),
        Path::new("a.txt"),
        "a removed link comes back as a link"
    );
}

#[test]
fn a_failed_write_undoes_the_writes_before_it_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.txt");
    fs::write(&a, "a\n").unwrap();
    let folder = dir.path().join("folder");
    fs::create_dir(&folder).unwrap();
    fs::write(folder.join("inside"), "x").unwrap();
    let steps = vec![
        file_step(
            &a,
            State::File {
                bytes: b"A\n".to_vec(),
                mode: None,
            },
        ),
        // A rename over a non-empty folder fails.
        Step {
            path: folder.clone(),
            original: Disk::Missing,
            state: State::File {
                bytes: b"f".to_vec(),
                mode: None,
            },
        },
    ];
    let mut done = Vec::new();
    let Err(failure) = run(&steps, None, &mut done) else {
        panic!("the write over a folder should fail")
    };
    assert_eq!((failure.op, failure.path.as_path()), ("write", folder.as_path()));
    assert_eq!(undo(done), Vec::<PathBuf>::new());
    assert_eq!(fs::read_to_string(&a).unwrap(), "a\n");
    let mut names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "folder"], "no temporary file is left");
}

#[test]
fn a_restore_that_fails_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let new = dir.path().join("sub/new.txt");
    let missing = dir.path().join("missing.txt");
    fs::write(&missing, "m\n").unwrap();
    let steps = vec![
        Step {
            path: new.clone(),
            original: Disk::Missing,
            state: State::File {
                bytes: b"n\n".to_vec(),
                mode: None,
            },
        },
        file_step(&missing, State::Missing),
    ];
    fs::remove_file(&missing).unwrap();
    let mut done = Vec::new();
    assert!(run(&steps, None, &mut done).is_err());
    // Something puts a non-empty folder where new.txt was written: the undo cannot remove it.
    fs::remove_file(&new).unwrap();
    fs::create_dir(&new).unwrap();
    fs::write(new.join("inner"), "x").unwrap();
    assert_eq!(undo(done), vec![new.clone()]);

    let error = ApplyError::RollbackIncomplete {
        op: "remove",
        path: missing,
        source: io::Error::from(io::ErrorKind::NotFound),
        unrestored: vec![new.clone()],
    };
    let message = error.to_string();
    assert!(
        message.contains("restoring the files already written failed too, these are left changed:"),
        "{message}"
    );
    assert!(message.ends_with(&new.display().to_string()), "{message}");
}
