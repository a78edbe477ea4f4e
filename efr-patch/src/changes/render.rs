//! The unified diff of several files, one after the other, bounded to a number of lines.
//!
//! The format and the bounds are in the module docs of [`super`].

use std::fmt::Write as _;
use std::path::PathBuf;

use efr_protocol::wire::changes::FileChangeKind;

use super::display::{DisplayRoots, display_path};
use super::unified::{hunks, label};
use super::{Body, Change};

/// The most lines of a tool call's diff (spec: "at most 2000 lines and then ... N more lines").
pub const TOOL_CALL_DIFF_LINES: usize = 2000;

/// The most lines of `conversation.diff`'s diff (spec: "the unified diff, at most 20000 lines").
pub const CONVERSATION_DIFF_LINES: usize = 20_000;

/// The unified diff of `changes` in the order given, paths shown as [`display_path`] makes them, at most
/// `max_lines` lines and then the line `... N more lines` for the N lines left out. Every line ends with `\n`; no
/// change gives an empty text.
pub fn unified_diff(changes: &[Change], roots: &DisplayRoots<'_>, max_lines: usize) -> String {
    let mut out = String::new();
    let mut kept = 0usize;
    let mut left_out = 0u64;
    for change in changes {
        let text = file_diff(change, roots);
        for line in text.split_inclusive('\n') {
            if kept < max_lines {
                out.push_str(line);
                kept += 1;
            } else {
                left_out += 1;
            }
        }
    }
    if left_out > 0 {
        let _ = writeln!(out, "... {left_out} more lines");
    }
    out
}

/// The diff of one file: two header lines and hunks, or the one line of a binary, ignored or unknown file.
fn file_diff(change: &Change, roots: &DisplayRoots<'_>) -> String {
    let shown = display_path(&change.path, roots);
    if change.ignored {
        return format!("{}: ignored file, content not shown\n", shown.display());
    }
    if matches!(change.old, Body::Unknown) || matches!(change.new, Body::Unknown) {
        return format!("{}: content not kept, not shown\n", shown.display());
    }
    let from: PathBuf = change
        .from
        .as_deref()
        .map_or_else(|| shown.clone(), |from| display_path(from, roots));
    let old_label = match change.old {
        Body::Absent => "/dev/null".to_owned(),
        _ => label("a/", &from),
    };
    let new_label = match change.new {
        Body::Absent => "/dev/null".to_owned(),
        _ => label("b/", &shown),
    };
    let binary = matches!(change.old, Body::Binary) || matches!(change.new, Body::Binary);
    // A binary file that only moved has nothing to compare: it shows like a pure rename of a text file.
    if binary && !(change.kind == FileChangeKind::Renamed && change.old == change.new) {
        return format!("Binary files {old_label} and {new_label} differ\n");
    }
    let mut out = header('-', &old_label);
    out.push_str(&header('+', &new_label));
    if let (Some(old), Some(new)) = (text_or_empty(&change.old), text_or_empty(&change.new)) {
        out.push_str(&hunks(old, new).0);
    }
    out
}

/// A `---` or `+++` line; git adds a tab after a label that holds a space, so the name's end is unambiguous.
fn header(mark: char, label: &str) -> String {
    let tab = if label.contains(' ') { "\t" } else { "" };
    format!("{mark}{mark}{mark} {label}{tab}\n")
}

/// The text of a side, `""` for an absent one, `None` for a side without text.
fn text_or_empty(body: &Body) -> Option<&str> {
    match body {
        Body::Absent => Some(""),
        Body::Text(text) => Some(text),
        Body::Binary | Body::Unknown => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn change(path: &str, kind: FileChangeKind, old: Body, new: Body) -> Change {
        Change {
            path: PathBuf::from(path),
            from: None,
            kind,
            old,
            new,
            ignored: false,
        }
    }

    #[test]
    fn the_bound_keeps_the_first_lines_and_counts_the_rest() {
        let new: String = (0..3000).map(|n| format!("line {n}\n")).collect();
        let changes = [
            change("/p/big.txt", FileChangeKind::Added, Body::Absent, Body::Text(new)),
            change(
                "/p/small.txt",
                FileChangeKind::Added,
                Body::Absent,
                Body::Text("x\n".into()),
            ),
        ];
        let roots = DisplayRoots {
            project: Some(Path::new("/p")),
            ..DisplayRoots::default()
        };
        let whole = unified_diff(&changes, &roots, usize::MAX);
        // 3 lines of headers and hunk header + 3000 lines, then 4 lines for the small file.
        assert_eq!(whole.lines().count(), 3007);
        let cut = unified_diff(&changes, &roots, TOOL_CALL_DIFF_LINES);
        let lines: Vec<&str> = cut.lines().collect();
        assert_eq!(lines.len(), TOOL_CALL_DIFF_LINES + 1);
        assert_eq!(
            lines[..TOOL_CALL_DIFF_LINES],
            whole.lines().take(TOOL_CALL_DIFF_LINES).collect::<Vec<_>>()[..]
        );
        assert_eq!(lines[TOOL_CALL_DIFF_LINES], "... 1007 more lines");
        // Exactly at the bound: nothing is left out and no marker is added.
        assert_eq!(unified_diff(&changes, &roots, 3007), whole);
        assert_eq!(unified_diff(&[], &roots, 10), "");
    }

    #[test]
    fn ignored_unknown_binary_and_renamed_files() {
        let roots = DisplayRoots {
            project: Some(Path::new("/p")),
            home: Some(Path::new("/home/me")),
            scratch: None,
        };
        let mut ignored = change(
            "/p/.env",
            FileChangeKind::Modified,
            Body::Text("A=1\n".into()),
            Body::Text("A=2\n".into()),
        );
        ignored.ignored = true;
        assert_eq!(
            unified_diff(&[ignored], &roots, 10),
            ".env: ignored file, content not shown\n"
        );
        let unknown = change(
            "/home/me/big.log",
            FileChangeKind::Modified,
            Body::Unknown,
            Body::Text("x\n".into()),
        );
        assert_eq!(
            unified_diff(&[unknown], &roots, 10),
            "~/big.log: content not kept, not shown\n"
        );
        let binary = change("/etc/x.bin", FileChangeKind::Added, Body::Absent, Body::Binary);
        assert_eq!(
            unified_diff(&[binary], &roots, 10),
            "Binary files /dev/null and b/etc/x.bin differ\n"
        );
        let mut moved = change("/p/new.bin", FileChangeKind::Renamed, Body::Binary, Body::Binary);
        moved.from = Some(PathBuf::from("/p/old.bin"));
        assert_eq!(unified_diff(&[moved], &roots, 10), "--- a/old.bin\n+++ b/new.bin\n");
        let deleted = change(
            "/p/gone.txt",
            FileChangeKind::Deleted,
            Body::Text("a\n".into()),
            Body::Absent,
        );
        assert_eq!(
            unified_diff(&[deleted], &roots, 10),
            "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n"
        );
    }
}
