//! Patches applied to real files in temporary folders: every operation, what is kept, and the refusals of an
//! operation that does not fit the files. The helpers here serve `atomic_tests` too.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use efr_protocol::wire::FileChangeKind;
use tempfile::TempDir;

use super::*;

pub(super) fn tmp() -> TempDir {
    tempfile::tempdir().unwrap()
}

pub(super) fn put(dir: &Path, name: &str, content: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(&path, content).unwrap();
    path
}

pub(super) fn get(dir: &Path, name: &str) -> String {
    fs::read_to_string(dir.join(name)).unwrap()
}

pub(super) fn wrap(body: &str) -> String {
    format!("*** Begin Patch\n{body}*** End Patch\n")
}

pub(super) fn run(dir: &Path, body: &str) -> Result<Vec<FileResult>, ApplyError> {
    apply_text(&wrap(body), dir)
}

/// Every file under `dir` with its bytes, to prove that a refused patch changed nothing (temporary files included).
pub(super) fn snapshot(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path.clone());
                out.push((path, None));
            } else {
                out.push((path.clone(), Some(fs::read(&path).unwrap_or_default())));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn add_creates_the_file_and_its_folders() {
    let dir = tmp();
    let files = run(dir.path(), "*** Add File: src/deep/new.txt\n+line one\n+line two\n").unwrap();
    assert_eq!(get(dir.path(), "src/deep/new.txt"), "line one\nline two\n");
    assert_eq!(
        files,
        vec![FileResult {
            path: dir.path().join("src/deep/new.txt"),
            kind: FileChangeKind::Added,
            from: None,
            added: 2,
            removed: 0,
            binary: false,
            old: None,
            new: Some("line one\nline two\n".into()),
        }]
    );
    // A new file is an ordinary file (0666 less the umask), not the temporary file's 0600.
    let mode = fs::metadata(dir.path().join("src/deep/new.txt"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode & 0o044, 0o044, "mode {mode:o}");
    assert_eq!(
        fs::read_dir(dir.path().join("src/deep")).unwrap().count(),
        1,
        "no temporary file is left"
    );
}

#[test]
fn add_refuses_an_existing_file() {
    let dir = tmp();
    put(dir.path(), "a.txt", "old\n");
    let error = run(dir.path(), "*** Add File: a.txt\n+new\n").unwrap_err();
    assert!(matches!(error, ApplyError::AlreadyExists { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("a.txt: it already exists; use `*** Update File: `"),
        "{error}"
    );
    assert_eq!(get(dir.path(), "a.txt"), "old\n");
    // A folder exists too.
    fs::create_dir(dir.path().join("folder")).unwrap();
    let error = run(dir.path(), "*** Add File: folder\n+x\n").unwrap_err();
    assert!(matches!(error, ApplyError::AlreadyExists { .. }), "{error:?}");
}

#[test]
fn delete_removes_the_file() {
    let dir = tmp();
    put(dir.path(), "old.txt", "one\ntwo\n");
    put(dir.path(), "keep.txt", "keep\n");
    let files = run(dir.path(), "*** Delete File: old.txt\n").unwrap();
    assert!(!dir.path().join("old.txt").exists());
    assert_eq!(get(dir.path(), "keep.txt"), "keep\n");
    assert_eq!(files[0].kind, FileChangeKind::Deleted);
    assert_eq!((files[0].added, files[0].removed), (0, 2));
    assert_eq!(files[0].old.as_deref(), Some("one\ntwo\n"));
    assert_eq!(files[0].new, None);
}

#[test]
fn update_and_delete_refuse_a_missing_file_or_a_folder() {
    let dir = tmp();
    let error = run(dir.path(), "*** Delete File: nope.txt\n").unwrap_err();
    assert!(
        error.to_string().contains("cannot delete") && error.to_string().contains("no such file"),
        "{error}"
    );
    let error = run(dir.path(), "*** Update File: nope.txt\n@@\n-a\n+b\n").unwrap_err();
    assert!(matches!(error, ApplyError::NotFound { op: "update", .. }), "{error:?}");
    fs::create_dir(dir.path().join("folder")).unwrap();
    let error = run(dir.path(), "*** Update File: folder\n@@\n-a\n+b\n").unwrap_err();
    assert!(error.to_string().contains("folder: not a regular file"), "{error}");
    let error = run(dir.path(), "*** Delete File: folder\n").unwrap_err();
    assert!(matches!(error, ApplyError::NotAFile { op: "delete", .. }), "{error:?}");
    assert!(dir.path().join("folder").is_dir());
}

#[test]
fn update_with_several_chunks() {
    let dir = tmp();
    let original = "\
use std::io;

fn one() {
    let a = 1;
    println!(\"{a}\");
}

fn two() {
    let b = 2;
    println!(\"{b}\");
}
";
    put(dir.path(), "lib.rs", original);
    let files = run(
        dir.path(),
        "\
*** Update File: lib.rs
@@
 use std::io;
+use std::fs;
@@ fn one() {
-    let a = 1;
+    let a = 10;
     println!(\"{a}\");
@@ fn two() {
-    let b = 2;
-    println!(\"{b}\");
+    let b = 20;
",
    )
    .unwrap();
    let expected = "\
use std::io;
use std::fs;

fn one() {
    let a = 10;
    println!(\"{a}\");
}

fn two() {
    let b = 20;
}
";
    assert_eq!(get(dir.path(), "lib.rs"), expected);
    let file = &files[0];
    assert_eq!(file.kind, FileChangeKind::Modified);
    assert_eq!((file.added, file.removed), (3, 3));
    assert_eq!(file.old.as_deref(), Some(original));
    assert_eq!(file.new.as_deref(), Some(expected));
}

#[test]
fn move_writes_the_new_path_and_removes_the_old_one() {
    let dir = tmp();
    let old = put(dir.path(), "old/name.sh", "#!/bin/sh\necho old\n");
    fs::set_permissions(&old, fs::Permissions::from_mode(0o754)).unwrap();
    put(dir.path(), "old/other.txt", "stays\n");
    let files = run(
        dir.path(),
        "*** Update File: old/name.sh\n*** Move to: renamed/dir/name.sh\n@@\n-echo old\n+echo new\n",
    )
    .unwrap();
    assert!(!old.exists());
    let new = dir.path().join("renamed/dir/name.sh");
    assert_eq!(fs::read_to_string(&new).unwrap(), "#!/bin/sh\necho new\n");
    assert_eq!(
        fs::metadata(&new).unwrap().permissions().mode() & 0o7777,
        0o754,
        "the mode moves with the file"
    );
    assert_eq!(get(dir.path(), "old/other.txt"), "stays\n");
    assert_eq!(files[0].kind, FileChangeKind::Renamed);
    assert_eq!(files[0].path, new);
    assert_eq!(files[0].from.as_deref(), Some(old.as_path()));
    assert_eq!((files[0].added, files[0].removed), (1, 1));
}

#[test]
fn move_refuses_an_existing_target() {
    let dir = tmp();
    put(dir.path(), "a.txt", "a\n");
    put(dir.path(), "b.txt", "b\n");
    let error = run(dir.path(), "*** Update File: a.txt\n*** Move to: b.txt\n@@\n-a\n+c\n").unwrap_err();
    assert!(matches!(error, ApplyError::MoveTargetExists { .. }), "{error:?}");
    assert!(error.to_string().contains("the target already exists"), "{error}");
    assert_eq!(
        (get(dir.path(), "a.txt"), get(dir.path(), "b.txt")),
        ("a\n".into(), "b\n".into())
    );
}

#[test]
fn a_pure_rename_moves_even_a_binary_file() {
    let dir = tmp();
    put(dir.path(), "logo.png", b"\x89PNG\r\n\x1a\n\0\0\xff");
    let files = run(dir.path(), "*** Update File: logo.png\n*** Move to: img/logo.png\n").unwrap();
    assert_eq!(
        fs::read(dir.path().join("img/logo.png")).unwrap(),
        b"\x89PNG\r\n\x1a\n\0\0\xff"
    );
    assert!(!dir.path().join("logo.png").exists());
    assert!(files[0].binary);
    assert_eq!(
        (files[0].added, files[0].removed, files[0].old.as_deref()),
        (0, 0, None)
    );
}

#[test]
fn crlf_files_keep_crlf() {
    let dir = tmp();
    put(dir.path(), "win.txt", "one\r\ntwo\r\nthree\r\n");
    run(
        dir.path(),
        "*** Update File: win.txt\n@@\n one\n-two\n+TWO\n+two and a half\n three\n",
    )
    .unwrap();
    assert_eq!(get(dir.path(), "win.txt"), "one\r\nTWO\r\ntwo and a half\r\nthree\r\n");
    // Appending at the end keeps the ending too.
    run(
        dir.path(),
        "*** Update File: win.txt\n@@\n three\n+four\n*** End of File\n",
    )
    .unwrap();
    assert_eq!(
        get(dir.path(), "win.txt"),
        "one\r\nTWO\r\ntwo and a half\r\nthree\r\nfour\r\n"
    );
}

#[test]
fn a_file_without_a_final_newline_keeps_that() {
    let dir = tmp();
    put(dir.path(), "tail.txt", "first\nlast");
    let files = run(dir.path(), "*** Update File: tail.txt\n@@\n first\n-last\n+final\n").unwrap();
    assert_eq!(get(dir.path(), "tail.txt"), "first\nfinal");
    assert_eq!((files[0].added, files[0].removed), (1, 1));
    run(
        dir.path(),
        "*** Update File: tail.txt\n@@\n final\n+after\n*** End of File\n",
    )
    .unwrap();
    assert_eq!(get(dir.path(), "tail.txt"), "first\nfinal\nafter");
    // An edit away from the end leaves the end alone.
    run(dir.path(), "*** Update File: tail.txt\n@@\n-first\n+start\n").unwrap();
    assert_eq!(get(dir.path(), "tail.txt"), "start\nfinal\nafter");
}

#[test]
fn a_file_with_a_final_newline_keeps_it() {
    let dir = tmp();
    put(dir.path(), "a.txt", "a\nb\n");
    run(dir.path(), "*** Update File: a.txt\n@@\n-b\n+c\n").unwrap();
    assert_eq!(get(dir.path(), "a.txt"), "a\nc\n");
}

#[test]
fn a_binary_file_is_refused_for_an_update() {
    let dir = tmp();
    put(dir.path(), "nul.bin", b"text\0more\n");
    put(dir.path(), "latin1.txt", b"caf\xe9\n");
    let error = run(dir.path(), "*** Update File: nul.bin\n@@\n-text\n+x\n").unwrap_err();
    assert!(matches!(error, ApplyError::Binary { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("nul.bin: it is a binary file (a NUL byte at byte 4)"),
        "{error}"
    );
    let error = run(dir.path(), "*** Update File: latin1.txt\n@@\n-caf\n+x\n").unwrap_err();
    assert!(
        error
            .to_string()
            .contains("binary file (invalid UTF-8 at byte 3); apply_patch edits text files only"),
        "{error}"
    );
    assert_eq!(fs::read(dir.path().join("nul.bin")).unwrap(), b"text\0more\n");
    // Deleting one is fine, and says it was binary.
    let files = run(dir.path(), "*** Delete File: nul.bin\n").unwrap();
    assert!(files[0].binary && files[0].old.is_none());
}

#[test]
fn an_ambiguous_chunk_is_refused() {
    let dir = tmp();
    let text = "fn a() {\n    x += 1;\n}\nfn b() {\n    x += 1;\n}\n";
    put(dir.path(), "dup.rs", text);
    let error = run(dir.path(), "*** Update File: dup.rs\n@@\n-    x += 1;\n+    x += 2;\n").unwrap_err();
    let message = error.to_string();
    assert!(matches!(
        &error,
        ApplyError::Chunk {
            error: ChunkError {
                kind: ChunkErrorKind::Ambiguous { .. },
                ..
            },
            ..
        }
    ));
    assert!(
        message.contains("dup.rs: the chunk at patch line 3 matches 2 places (file lines 2, 5)"),
        "{message}"
    );
    assert!(
        message.contains("add context lines or an `@@` line that tells them apart"),
        "{message}"
    );
    assert_eq!(get(dir.path(), "dup.rs"), text);
}

#[test]
fn at_at_narrowing_picks_the_named_function() {
    let dir = tmp();
    put(
        dir.path(),
        "dup.rs",
        "fn a() {\n    x += 1;\n}\nfn b() {\n    x += 1;\n}\n",
    );
    run(
        dir.path(),
        "*** Update File: dup.rs\n@@ fn b() {\n-    x += 1;\n+    x += 2;\n",
    )
    .unwrap();
    assert_eq!(
        get(dir.path(), "dup.rs"),
        "fn a() {\n    x += 1;\n}\nfn b() {\n    x += 2;\n}\n"
    );
    // Only `+` lines after a header go right below it.
    run(dir.path(), "*** Update File: dup.rs\n@@ fn a() {\n+    // first in a\n").unwrap();
    assert_eq!(
        get(dir.path(), "dup.rs"),
        "fn a() {\n    // first in a\n    x += 1;\n}\nfn b() {\n    x += 2;\n}\n"
    );
}

#[test]
fn whitespace_tolerant_match_keeps_the_files_own_context() {
    let dir = tmp();
    put(dir.path(), "ws.py", "def f():\n\tif x:   \n\t\treturn 1\n");
    // The model wrote spaces for tabs and dropped the trailing blanks.
    run(
        dir.path(),
        "*** Update File: ws.py\n@@\n     if x:\n-        return 1\n+\t\treturn 2\n",
    )
    .unwrap();
    assert_eq!(get(dir.path(), "ws.py"), "def f():\n\tif x:   \n\t\treturn 2\n");
    // Typographic quotes in the file, ASCII in the patch.
    put(dir.path(), "quote.md", "He said “hi” — twice.\nend\n");
    run(
        dir.path(),
        "*** Update File: quote.md\n@@\n-He said \"hi\" - twice.\n+He said hello.\n",
    )
    .unwrap();
    assert_eq!(get(dir.path(), "quote.md"), "He said hello.\nend\n");
}

#[test]
fn unicode_content() {
    let dir = tmp();
    put(dir.path(), "größe.txt", "Größe: 7 Bytes\n🙂 smile\n日本語\n");
    let files = run(
        dir.path(),
        "*** Update File: größe.txt\n@@ Größe: 7 Bytes\n-🙂 smile\n+😀 grin\n 日本語\n*** Add File: ñ/ü.txt\n+ça va\n",
    )
    .unwrap();
    assert_eq!(get(dir.path(), "größe.txt"), "Größe: 7 Bytes\n😀 grin\n日本語\n");
    assert_eq!(get(dir.path(), "ñ/ü.txt"), "ça va\n");
    assert_eq!(files.len(), 2);
}

#[test]
fn a_bom_stays() {
    let dir = tmp();
    put(dir.path(), "bom.txt", "\u{feff}first\nsecond\n");
    run(dir.path(), "*** Update File: bom.txt\n@@\n-first\n+one\n").unwrap();
    assert_eq!(get(dir.path(), "bom.txt"), "\u{feff}one\nsecond\n");
}

#[test]
fn a_trailing_blank_context_line_is_forgiven() {
    let dir = tmp();
    put(dir.path(), "a.txt", "x\ny");
    // The empty context line stands for a final newline that the file does not have.
    run(
        dir.path(),
        "*** Update File: a.txt\n@@\n x\n-y\n+z\n \n*** End of File\n",
    )
    .unwrap();
    assert_eq!(get(dir.path(), "a.txt"), "x\nz");
}

#[test]
fn a_chunk_that_matches_nowhere_says_what_it_expected() {
    let dir = tmp();
    put(dir.path(), "a.txt", "one\ntwo\n");
    let error = run(dir.path(), "*** Update File: a.txt\n@@\n one\n-three\n+four\n").unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains(
            "a.txt: the chunk at patch line 3: its context and removed lines match nowhere from file line 1 on"
        ),
        "{message}"
    );
    assert!(message.ends_with("\n  one\n  three"), "{message}");
    let error = run(dir.path(), "*** Update File: a.txt\n@@ fn missing()\n-one\n+1\n").unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`@@ fn missing()` matches no line of the file from line 1 on"),
        "{error}"
    );
    let error = run(dir.path(), "*** Update File: a.txt\n@@\n-one\n*** End of File\n").unwrap_err();
    assert!(error.to_string().contains("at the end of the file"), "{error}");
    // The second chunk is searched after the first.
    let error = run(dir.path(), "*** Update File: a.txt\n@@\n-two\n+2\n@@\n-one\n+1\n").unwrap_err();
    assert!(
        error
            .to_string()
            .contains("the chunk at patch line 6: its context and removed lines match nowhere from file line 3 on"),
        "{error}"
    );
    assert_eq!(get(dir.path(), "a.txt"), "one\ntwo\n");
}

#[test]
fn a_malformed_patch_is_refused_with_its_line() {
    let dir = tmp();
    put(dir.path(), "a.txt", "a\n");
    let error = apply_text(
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\nb\n*** End Patch\n",
        dir.path(),
    )
    .unwrap_err();
    assert!(
        matches!(error, ApplyError::Parse(ParseError { line: 6, .. })),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "invalid patch, line 6: expected a chunk line starting with ` ` (context), `-` (removed), `+` (added) or \
         `@@`, found `b`"
    );
    assert_eq!(get(dir.path(), "a.txt"), "a\n");
}

#[test]
fn paths_resolve_against_the_cwd_and_absolute_ones_stay() {
    let cwd = tmp();
    let elsewhere = tmp();
    let absolute = elsewhere.path().join("abs.txt");
    let files = run(
        cwd.path(),
        &format!(
            "*** Add File: ./rel.txt\n+r\n*** Add File: {}\n+a\n",
            absolute.display()
        ),
    )
    .unwrap();
    assert_eq!(get(cwd.path(), "rel.txt"), "r\n");
    assert_eq!(fs::read_to_string(&absolute).unwrap(), "a\n");
    assert_eq!(files[0].path, cwd.path().join("rel.txt"), "`.` is dropped");
    assert_eq!(files[1].path, absolute);
    let error = apply_text(&wrap("*** Add File: x\n+x\n"), Path::new("relative/cwd")).unwrap_err();
    assert!(matches!(error, ApplyError::RelativeCwd(_)), "{error:?}");
    assert!(error.to_string().contains("must be an absolute path"), "{error}");
}

#[test]
fn an_update_through_a_symlink_changes_the_target_and_keeps_the_link() {
    let dir = tmp();
    put(dir.path(), "real/target.txt", "old\n");
    let link = dir.path().join("link.txt");
    std::os::unix::fs::symlink("real/target.txt", &link).unwrap();
    let plan = Plan::new(
        &parse(&wrap("*** Update File: link.txt\n@@\n-old\n+new\n")).unwrap(),
        dir.path(),
    )
    .unwrap();
    let target = fs::canonicalize(dir.path().join("real/target.txt")).unwrap();
    assert_eq!(
        plan.paths().collect::<Vec<_>>(),
        [target.as_path()],
        "the policy sees the file that changes"
    );
    assert_eq!(plan.files()[0].path, link, "the result names the path the patch named");
    plan.commit().unwrap();
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(get(dir.path(), "real/target.txt"), "new\n");
    run(dir.path(), "*** Delete File: link.txt\n").unwrap();
    assert!(fs::symlink_metadata(&link).is_err());
    assert_eq!(
        get(dir.path(), "real/target.txt"),
        "new\n",
        "deleting a link leaves its target"
    );
}
