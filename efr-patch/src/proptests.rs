//! Random valid edits of random text, written as a patch the way a model would (context grown until the place is
//! unique), must apply to exactly the expected text: line endings, final newline and all.

use std::fs;

use proptest::prelude::*;

use super::*;

/// Lines from a small set, so that repeats (and thus ambiguity to avoid) are common, plus lines that look like the
/// format's own markers and lines that only whitespace or typography tells apart.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "", "a", "b", "a ", " a", "\ta", "}", "fn x() {", "    y();", "*** Begin Patch", "*** End Patch",
            "*** End of File", "@@ x", "+p", "-m", "ünï €", "“q” — r", " ",
        ])
        .prop_map(str::to_owned),
        1 => "[a-c ]{0,4}",
    ]
}

/// One edit before normalisation: where (a fraction of the file), how many lines go, which lines come.
fn edit() -> impl Strategy<Value = (f64, usize, Vec<String>)> {
    (0.0..=1.0_f64, 0_usize..3, prop::collection::vec(line(), 0..3))
}

/// An edit of the original lines: `[start, end)` is replaced by `new`.
#[derive(Debug, Clone)]
struct Edit {
    start: usize,
    end: usize,
    new: Vec<String>,
}

/// Sorted, non-overlapping edits; edits that touch are merged.
fn normalise(count: usize, raw: Vec<(f64, usize, Vec<String>)>) -> Vec<Edit> {
    let mut raw: Vec<(usize, usize, Vec<String>)> = raw
        .into_iter()
        .map(|(at, removed, new)| {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let start = ((at * count as f64) as usize).min(count);
            (start, removed, new)
        })
        .collect();
    raw.sort_by_key(|(start, _, _)| *start);
    let mut edits: Vec<Edit> = Vec::new();
    for (start, removed, new) in raw {
        let end = (start + removed).min(count);
        match edits.last_mut() {
            Some(last) if start <= last.end => {
                last.end = last.end.max(end);
                last.new.extend(new);
            }
            _ => edits.push(Edit { start, end, new }),
        }
    }
    edits.retain(|edit| edit.end > edit.start || !edit.new.is_empty());
    edits
}

/// Whether `lines[lo..hi]` occurs exactly once among the places that start at or after `cursor`.
fn unique(lines: &[String], lo: usize, hi: usize, cursor: usize) -> bool {
    let pattern = &lines[lo..hi];
    (cursor..=lines.len() - pattern.len())
        .filter(|&at| lines[at..at + pattern.len()] == *pattern)
        .count()
        == 1
}

/// The patch body (chunks) for `edits`, each chunk grown with context until its place is unique.
fn chunks(lines: &[String], edits: &[Edit]) -> String {
    let count = lines.len();
    let mut out = String::new();
    let mut cursor = 0;
    let mut next = 0;
    while next < edits.len() {
        let (mut lo, mut hi) = (edits[next].start, edits[next].end);
        let mut group = next..next + 1;
        loop {
            let placed = if hi > lo {
                unique(lines, lo, hi, cursor)
            } else {
                lo == count
            };
            if placed {
                break;
            }
            if lo > cursor {
                lo -= 1;
            } else if hi < count {
                hi += 1;
                // Context that reaches the next edit takes it into this chunk.
                while group.end < edits.len() && edits[group.end].start < hi {
                    hi = hi.max(edits[group.end].end);
                    group.end += 1;
                }
            } else {
                break;
            }
        }
        out.push_str("@@\n");
        let mut at = lo;
        for edit in &edits[group.clone()] {
            for line in &lines[at..edit.start] {
                out.push_str(&format!(" {line}\n"));
            }
            for line in &lines[edit.start..edit.end] {
                out.push_str(&format!("-{line}\n"));
            }
            for line in &edit.new {
                out.push_str(&format!("+{line}\n"));
            }
            at = edit.end;
        }
        for line in &lines[at..hi] {
            out.push_str(&format!(" {line}\n"));
        }
        if hi == count && hi > lo {
            out.push_str("*** End of File\n");
        }
        cursor = hi;
        next = group.end;
    }
    out
}

fn render(lines: &[String], eol: &str, final_newline: bool) -> String {
    let mut text = lines.join(eol);
    if final_newline && !lines.is_empty() {
        text.push_str(eol);
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_edits_apply_back_to_the_expected_text(
        original in prop::collection::vec(line(), 0..30),
        raw in prop::collection::vec(edit(), 1..5),
        final_newline in any::<bool>(),
        crlf in any::<bool>(),
    ) {
        // A last empty line only exists when a newline follows it.
        let final_newline = final_newline || original.last().is_none_or(String::is_empty);
        let eol = if crlf { "\r\n" } else { "\n" };
        let edits = normalise(original.len(), raw);
        prop_assume!(!edits.is_empty());

        let mut expected_lines = Vec::new();
        let mut at = 0;
        for edit in &edits {
            expected_lines.extend_from_slice(&original[at..edit.start]);
            expected_lines.extend(edit.new.iter().cloned());
            at = edit.end;
        }
        expected_lines.extend_from_slice(&original[at..]);
        // New lines take the file's ending; a file with no terminated line has LF as its ending.
        let terminated = original.len() > 1 || (original.len() == 1 && final_newline);
        let new_eol = if crlf && terminated { "\r\n" } else { "\n" };
        let expected = render(&expected_lines, new_eol, final_newline);

        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f.txt"), render(&original, eol, final_newline)).unwrap();
        let text = format!("*** Begin Patch\n*** Update File: f.txt\n{}*** End Patch\n", chunks(&original, &edits));
        let files = apply_text(&text, dir.path()).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let written = fs::read_to_string(dir.path().join("f.txt")).unwrap();
        prop_assert_eq!(&written, &expected, "patch:\n{}", text);
        prop_assert_eq!(files[0].new.as_deref(), Some(expected.as_str()));
    }
}
