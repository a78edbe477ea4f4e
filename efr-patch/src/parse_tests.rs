//! The grammar: every kind of operation, the leniencies models need, and each refusal with its line.

use super::*;

fn err(text: &str) -> ParseError {
    parse(text).expect_err("the patch should be refused")
}

fn context(text: &str) -> ChunkLine {
    ChunkLine::Context(text.into())
}
fn remove(text: &str) -> ChunkLine {
    ChunkLine::Remove(text.into())
}
fn add(text: &str) -> ChunkLine {
    ChunkLine::Add(text.into())
}

#[test]
fn every_operation() {
    let text = "\
*** Begin Patch
*** Add File: path/new.txt
+line one
+
+line two
*** Delete File: path/old.txt
*** Update File: path/file.rs
*** Move to: path/renamed.rs
@@ fn context_line_or_empty
 context line
-removed line
+added line
 context line
*** End of File
*** End Patch
";
    let patch = parse(text).unwrap();
    assert_eq!(
        patch.hunks,
        vec![
            FileOp::Add {
                path: "path/new.txt".into(),
                content: "line one\n\nline two\n".into(),
                line: 2
            },
            FileOp::Delete {
                path: "path/old.txt".into(),
                line: 6
            },
            FileOp::Update {
                path: "path/file.rs".into(),
                move_to: Some("path/renamed.rs".into()),
                chunks: vec![Chunk {
                    headers: vec!["fn context_line_or_empty".into()],
                    lines: vec![
                        context("context line"),
                        remove("removed line"),
                        add("added line"),
                        context("context line")
                    ],
                    end_of_file: true,
                    line: 9,
                }],
                line: 7,
            },
        ]
    );
    let FileOp::Update { chunks, .. } = &patch.hunks[2] else {
        unreachable!()
    };
    assert_eq!(
        chunks[0].old_lines().collect::<Vec<_>>(),
        ["context line", "removed line", "context line"]
    );
    assert_eq!(
        chunks[0].new_lines().collect::<Vec<_>>(),
        ["context line", "added line", "context line"]
    );
    assert_eq!(patch.hunks[2].path(), std::path::Path::new("path/file.rs"));
}

#[test]
fn several_chunks_nested_headers_and_a_first_chunk_without_at_at() {
    let text = "\
*** Begin Patch
*** Update File: a.rs
 use std::io;
+use std::fs;
@@ impl Foo
@@     fn bar(&self) {
-        1
+        2

@@
-x
+y
*** End Patch";
    let patch = parse(text).unwrap();
    let FileOp::Update { chunks, move_to, .. } = &patch.hunks[0] else {
        panic!("{patch:?}")
    };
    assert_eq!(*move_to, None);
    assert_eq!(chunks.len(), 3);
    assert_eq!(chunks[0].headers, Vec::<String>::new());
    assert_eq!(chunks[0].lines, [context("use std::io;"), add("use std::fs;")]);
    assert_eq!(chunks[0].line, 3);
    assert_eq!(chunks[1].headers, ["impl Foo", "    fn bar(&self) {"]);
    // The empty line inside the chunk is an empty context line; the matcher may drop it when it is trailing.
    assert_eq!(chunks[1].lines, [remove("        1"), add("        2"), context("")]);
    assert_eq!(chunks[1].line, 5);
    assert_eq!(chunks[2].headers, Vec::<String>::new());
    assert_eq!(chunks[2].lines, [remove("x"), add("y")]);
}

#[test]
fn crlf_text_padding_and_blank_lines_are_tolerated() {
    let text = "\r\n  *** Begin Patch \r\n*** Add File: a.txt\r\n+one\r\n\r\n *** Delete File:  b.txt \r\n\r\n*** End Patch  \r\n\r\n";
    let patch = parse(text).unwrap();
    assert_eq!(
        patch.hunks,
        vec![
            FileOp::Add {
                path: "a.txt".into(),
                content: "one\n".into(),
                line: 3
            },
            FileOp::Delete {
                path: "b.txt".into(),
                line: 6
            },
        ]
    );
}

#[test]
fn an_empty_add_and_a_pure_rename() {
    let text = "*** Begin Patch\n*** Add File: empty\n*** Update File: a\n*** Move to: b\n*** End Patch";
    let patch = parse(text).unwrap();
    assert_eq!(
        patch.hunks,
        vec![
            FileOp::Add {
                path: "empty".into(),
                content: String::new(),
                line: 2
            },
            FileOp::Update {
                path: "a".into(),
                move_to: Some("b".into()),
                chunks: vec![],
                line: 3
            },
        ]
    );
}

#[test]
fn unicode_lines_stay_whole() {
    let text =
        "*** Begin Patch\n*** Update File: größe.txt\n@@ ## Größe 🙂\n-naïve “quote”\n+naïve \"quote\"\n*** End Patch";
    let patch = parse(text).unwrap();
    let FileOp::Update { path, chunks, .. } = &patch.hunks[0] else {
        panic!()
    };
    assert_eq!(path, std::path::Path::new("größe.txt"));
    assert_eq!(chunks[0].headers, ["## Größe 🙂"]);
    assert_eq!(chunks[0].lines, [remove("naïve “quote”"), add("naïve \"quote\"")]);
}

#[test]
fn refusals_name_the_line_and_what_was_expected() {
    let cases: &[(&str, usize, &str)] = &[
        ("", 1, "the patch is empty"),
        ("hello\n*** End Patch", 1, "expected `*** Begin Patch`, found `hello`"),
        (
            "*** Begin Patch\n*** Add File: a\n+x\n",
            3,
            "expected `*** End Patch` as the last line, found `+x`",
        ),
        ("*** Begin Patch", 1, "expected `*** End Patch` as the last line"),
        ("*** Begin Patch\n*** End Patch", 2, "the patch has no file operation"),
        (
            "*** Begin Patch\n*** Rename File: a\n*** End Patch",
            2,
            "expected `*** Add File: `, `*** Delete File: ` or `*** Update File: `, found `*** Rename File: a`",
        ),
        (
            "*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch",
            4,
            "every line of an added file starts with `+`",
        ),
        (
            "*** Begin Patch\n*** Add File: a\n+x\n\n+y\n*** End Patch",
            4,
            "every line of an added file starts with `+`",
        ),
        (
            "*** Begin Patch\n*** Delete File: a\n-x\n*** End Patch",
            3,
            "`*** Delete File: ` takes no lines, found `-x`",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n*** End Patch",
            2,
            "needs at least one chunk",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@ fn f\n*** End Patch",
            3,
            "the chunk has no lines",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@ -1,3 +1,4 @@\n-x\n*** End Patch",
            3,
            "is a unified-diff line range",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@@ x\n-x\n*** End Patch",
            3,
            "expected `@@` or `@@ <a line of the file>`",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n-x\n\tfoo\n*** End Patch",
            5,
            "expected a chunk line starting with ` ` (context), `-` (removed), `+` (added) or `@@`, found `\tfoo`",
        ),
        (
            "*** Begin Patch\n*** Add File: \n+x\n*** End Patch",
            2,
            "`*** Add File: ` needs a path",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n*** Move to:\n-x\n*** End Patch",
            3,
            "`*** Move to: ` needs a path",
        ),
        (
            "*** Begin Patch\n*** Delete File: a\0b\n*** End Patch",
            2,
            "holds a NUL byte",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n*** End of File\n*** End Patch",
            3,
            "`*** End of File` must follow the lines of a chunk",
        ),
        (
            "*** Begin Patch\n*** End of File\n*** End Patch",
            2,
            "outside an Update File chunk",
        ),
        (
            "*** Begin Patch\n*** Move to: b\n*** End Patch",
            2,
            "that does not follow its `*** Update File: ` line",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n-x\n*** End of File\n+y\n*** End Patch",
            5,
            "expected `@@` to start the next chunk after `*** End of File`",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@ x\n\n@@ y\n-z\n*** End Patch",
            3,
            "the chunk has no lines",
        ),
    ];
    for (text, line, message) in cases {
        let error = err(text);
        assert_eq!(error.line, *line, "{text:?}: {error}");
        assert!(error.message.contains(message), "{text:?}: {error}");
        assert!(
            error.to_string().starts_with(&format!("invalid patch, line {line}: ")),
            "{error}"
        );
    }
}

#[test]
fn a_long_line_is_cut_in_the_message() {
    let long = "x".repeat(500);
    let error = err(&format!("{long}\n*** End Patch"));
    assert!(error.message.len() < 200, "{error}");
    assert!(error.message.contains('…'));
}

#[test]
fn an_indented_marker_inside_a_chunk_is_a_context_line() {
    let text = "*** Begin Patch\n*** Update File: notes.md\n@@\n *** End Patch\n-*** Add File: x\n+@@ y\n*** End Patch";
    let patch = parse(text).unwrap();
    let FileOp::Update { chunks, .. } = &patch.hunks[0] else {
        panic!()
    };
    assert_eq!(
        chunks[0].lines,
        [context("*** End Patch"), remove("*** Add File: x"), add("@@ y")]
    );
}
