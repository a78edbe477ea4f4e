//! The hunks of one text file, in git's unified format, and git's quoting of a header label.
//!
//! The rules (and how they match `git diff`) are in the module docs of [`super`]. The edit script is Myers' diff
//! with git's indent heuristic from `imara-diff`; the grouping into hunks, the hunk headers and the function line
//! follow git's `xdiff/xemit.c` (`xdl_get_hunk`, `get_func_line`, `def_ff`).

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use imara_diff::{Algorithm, Diff, Hunk, InternedInput};

/// Lines of context around a change (git's default, `-U3`).
const CONTEXT: u32 = 3;

/// The most bytes of a function line in a hunk header (git's `struct func_line` buffer).
const FUNCTION_LINE_BYTES: usize = 80;

/// The edit script of two texts, line by line, as git would slide it.
struct EditScript<'a> {
    old: Vec<&'a str>,
    new: Vec<&'a str>,
    hunks: Vec<Hunk>,
}

impl<'a> EditScript<'a> {
    fn new(old: &'a str, new: &'a str) -> Self {
        let input = InternedInput::new(old, new);
        let mut diff = Diff::compute(Algorithm::Myers, &input);
        diff.postprocess_lines(&input);
        let hunks = diff.hunks().collect();
        let old = input.before.iter().map(|&token| input.interner[token]).collect();
        let new = input.after.iter().map(|&token| input.interner[token]).collect();
        Self { old, new, hunks }
    }

    fn counts(&self) -> (u64, u64) {
        let added = self
            .hunks
            .iter()
            .map(|hunk| u64::from(hunk.after.end - hunk.after.start))
            .sum();
        let removed = self
            .hunks
            .iter()
            .map(|hunk| u64::from(hunk.before.end - hunk.before.start))
            .sum();
        (added, removed)
    }
}

/// Lines added and removed between two texts (the `+` and `-` lines of [`hunks`]; a line that only gains or loses
/// its final newline counts as removed and added, as in `git diff`). Every line count of efrd comes from here, so a
/// patch's results, `file_changes` and the unified diff never disagree.
pub(crate) fn counts(old: &str, new: &str) -> (u64, u64) {
    EditScript::new(old, new).counts()
}

/// The hunks between two texts (each line ends with `\n`; empty when the texts are equal), and the lines added and
/// removed.
pub(super) fn hunks(old: &str, new: &str) -> (String, u64, u64) {
    let script = EditScript::new(old, new);
    let (added, removed) = script.counts();
    let mut out = String::new();
    let hunks = &script.hunks;
    let old_len = u32::try_from(script.old.len()).unwrap_or(u32::MAX);
    // The function line of the hunk before, kept when no new one is found (as git does).
    let mut function = String::new();
    let mut searched_down_to: i64 = -1;
    let mut first = 0;
    while first < hunks.len() {
        // Merge the following changes that are at most twice the context apart (git's `xdl_get_hunk`).
        let mut last = first;
        while last + 1 < hunks.len() && hunks[last + 1].before.start - hunks[last].before.end <= 2 * CONTEXT {
            last += 1;
        }
        let old_start = hunks[first].before.start.saturating_sub(CONTEXT);
        let old_end = (hunks[last].before.end + CONTEXT).min(old_len);
        let new_start = hunks[first].after.start - (hunks[first].before.start - old_start);
        let new_end = hunks[last].after.end + (old_end - hunks[last].before.end);

        let start = i64::from(old_start) - 1;
        let mut line = start;
        while line > searched_down_to {
            let text = usize::try_from(line).ok().and_then(|index| script.old.get(index));
            if let Some(found) = text.and_then(|text| function_line(text)) {
                function = found;
                break;
            }
            line -= 1;
        }
        searched_down_to = start;

        out.push_str("@@ -");
        out.push_str(&range(old_start, old_end - old_start));
        out.push_str(" +");
        out.push_str(&range(new_start, new_end - new_start));
        out.push_str(" @@");
        if !function.is_empty() {
            out.push(' ');
            out.push_str(&function);
        }
        out.push('\n');

        let mut at = old_start;
        for hunk in &hunks[first..=last] {
            for line in &script.old[at as usize..hunk.before.start as usize] {
                push_line(&mut out, ' ', line);
            }
            for line in &script.old[hunk.before.start as usize..hunk.before.end as usize] {
                push_line(&mut out, '-', line);
            }
            for line in &script.new[hunk.after.start as usize..hunk.after.end as usize] {
                push_line(&mut out, '+', line);
            }
            at = hunk.before.end;
        }
        for line in &script.old[at as usize..old_end as usize] {
            push_line(&mut out, ' ', line);
        }
        first = last + 1;
    }
    (out, added, removed)
}

/// `a,b` of a hunk header from a 0-based start and a count: git prints the 1-based start, or the line before for an
/// empty range, and leaves `,b` out when b is 1.
fn range(start: u32, count: u32) -> String {
    match count {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{count}", start + 1),
    }
}

fn push_line(out: &mut String, mark: char, line: &str) {
    out.push(mark);
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
}

/// git's default function line (`def_ff`): a line that starts with an ASCII letter, `_` or `$`, cut to 80 bytes,
/// trailing whitespace trimmed. A cut inside a UTF-8 character moves back before it.
fn function_line(line: &str) -> Option<String> {
    let first = *line.as_bytes().first()?;
    if !(first.is_ascii_alphabetic() || first == b'_' || first == b'$') {
        return None;
    }
    let mut end = line.len().min(FUNCTION_LINE_BYTES);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    let kept = line[..end].trim_end_matches([' ', '\t', '\n', '\r']);
    Some(kept.to_owned())
}

/// A header label as git writes it: `prefix` and the path without a leading `/`, C-quoted when a byte needs it
/// (git's `quote_c_style` with `core.quotePath` on).
pub(super) fn label(prefix: &str, path: &Path) -> String {
    let bytes = path.as_os_str().as_bytes();
    let bytes = bytes.strip_prefix(b"/").unwrap_or(bytes);
    let name: Vec<u8> = [prefix.as_bytes(), bytes].concat();
    if !name.iter().copied().any(needs_quote) {
        return String::from_utf8_lossy(&name).into_owned();
    }
    let mut out = String::from("\"");
    for byte in name {
        match byte {
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            0x0b => out.push_str("\\v"),
            0x0c => out.push_str("\\f"),
            b'\r' => out.push_str("\\r"),
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            byte if needs_quote(byte) => out.push_str(&format!("\\{byte:03o}")),
            byte => out.push(char::from(byte)),
        }
    }
    out.push('"');
    out
}

fn needs_quote(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\' || byte == 0x7f || byte >= 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_headers_ranges_and_missing_newlines() {
        assert_eq!(hunks("a\n", "a\n").0, "");
        assert_eq!(hunks("", "x\ny\n"), ("@@ -0,0 +1,2 @@\n+x\n+y\n".to_owned(), 2, 0));
        assert_eq!(hunks("x\n", ""), ("@@ -1 +0,0 @@\n-x\n".to_owned(), 0, 1));
        assert_eq!(
            hunks("a\nb", "a\nb\n").0,
            "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
        );
        assert_eq!(
            hunks("a\r\nb\r\n", "a\r\nc\r\n").0,
            "@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n"
        );
    }

    #[test]
    fn changes_seven_lines_apart_make_two_hunks_six_make_one() {
        let old: String = (1..=20).map(|n| format!("{n}\n")).collect();
        let far = old.replace("2\n", "two\n").replace("\n10\n", "\nten\n");
        assert_eq!(hunks(&old, &far).0.matches("@@ -").count(), 2);
        let near = old.replace("2\n", "two\n").replace("\n9\n", "\nnine\n");
        assert_eq!(hunks(&old, &near).0.matches("@@ -").count(), 1);
    }

    #[test]
    fn function_lines_follow_gits_default() {
        assert_eq!(function_line("fn main() {  \r\n").as_deref(), Some("fn main() {"));
        assert_eq!(function_line("_start:\n").as_deref(), Some("_start:"));
        assert_eq!(function_line("$x\n").as_deref(), Some("$x"));
        assert_eq!(function_line("    nested\n"), None);
        assert_eq!(function_line("\n"), None);
        assert_eq!(function_line("# comment\n"), None);
        assert_eq!(
            function_line(&format!("{}\n", "a".repeat(100))).map(|line| line.len()),
            Some(80)
        );
        assert_eq!(
            function_line(&format!("{}é\n", "a".repeat(79))).map(|line| line.len()),
            Some(79)
        );
    }

    #[test]
    fn labels_are_quoted_as_git_quotes_them() {
        assert_eq!(label("a/", Path::new("src/main.rs")), "a/src/main.rs");
        assert_eq!(label("a/", Path::new("/etc/hosts")), "a/etc/hosts");
        assert_eq!(label("b/", Path::new("sp ace.txt")), "b/sp ace.txt");
        assert_eq!(label("a/", Path::new("ü.txt")), "\"a/\\303\\274.txt\"");
        assert_eq!(label("a/", Path::new("t\tab\"q\\.txt")), "\"a/t\\tab\\\"q\\\\.txt\"");
        assert_eq!(label("a/", Path::new("bell\u{7}\u{1}")), "\"a/bell\\a\\001\"");
    }
}
