//! Where the terms of a query are in a text, as half-open ranges of Unicode code points (spec: "A range is a
//! half-open pair of Unicode code points"), and the lines of a hit with their ranges.
//!
//! Matching folds case one code point at a time (the first code point of `char::to_lowercase`), so a position in
//! the folded text is the same position in the text: `Größe` matches `größe` and `GRÖSSE` does not. Combining marks
//! are code points of their own, matched as written (`e` + U+0301 is not `é`).

use efr_protocol::wire::{RangedText, TextRange};

/// The most lines of a hit that a result shows.
pub const MAX_LINES: usize = 3;

/// The most code points of one line that a result shows; a longer line is cut around its first match.
pub const MAX_LINE_CHARS: usize = 200;

/// How many code points before its first match a cut line keeps.
const LEAD_CHARS: usize = 40;

/// A code point folded for matching.
fn fold(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// The terms of a query, folded: its words split on whitespace, each distinct, in order.
#[must_use]
pub fn folded_terms(terms: &[String]) -> Vec<Vec<char>> {
    let mut folded: Vec<Vec<char>> = Vec::new();
    for term in terms {
        let chars: Vec<char> = term.chars().map(fold).collect();
        if !chars.is_empty() && !folded.contains(&chars) {
            folded.push(chars);
        }
    }
    folded
}

/// Every match of every term in `text`, sorted, overlapping ones merged (adjacent ones not); `None` when a term does not occur (every
/// term must).
#[must_use]
pub fn ranges(text: &str, terms: &[Vec<char>]) -> Option<Vec<(usize, usize)>> {
    let hay: Vec<char> = text.chars().map(fold).collect();
    let mut found: Vec<(usize, usize)> = Vec::new();
    for term in terms {
        let before = found.len();
        if term.len() <= hay.len() {
            let mut at = 0;
            while at + term.len() <= hay.len() {
                if hay[at..at + term.len()] == term[..] {
                    found.push((at, at + term.len()));
                    at += term.len();
                } else {
                    at += 1;
                }
            }
        }
        if found.len() == before {
            return None;
        }
    }
    found.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(found.len());
    for (start, end) in found {
        match merged.last_mut() {
            // Overlapping matches merge; adjacent ones stay apart (`🙂🙂` is two matches of `🙂`).
            Some(last) if start < last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    Some(merged)
}

fn wire(start: usize, end: usize) -> TextRange {
    TextRange {
        start: u32::try_from(start).unwrap_or(u32::MAX),
        end: u32::try_from(end).unwrap_or(u32::MAX),
    }
}

/// The ranges of a whole short text (a title), for the wire.
#[must_use]
pub fn text_ranges(found: &[(usize, usize)]) -> Vec<TextRange> {
    found.iter().map(|&(s, e)| wire(s, e)).collect()
}

/// The lines of `text` that hold a match of `found` (ranges of the whole text), at most [`MAX_LINES`], each at most
/// [`MAX_LINE_CHARS`] code points (`…` marks a cut), with the ranges moved into the line.
#[must_use]
pub fn hit_lines(text: &str, found: &[(usize, usize)]) -> Vec<RangedText> {
    let mut lines = Vec::new();
    let mut line_start = 0;
    for line in text.split('\n') {
        let length = line.chars().count();
        let line_end = line_start + length;
        let inside: Vec<(usize, usize)> = found
            .iter()
            .filter(|&&(s, _)| s >= line_start && s < line_end)
            .map(|&(s, e)| (s - line_start, e.min(line_end) - line_start))
            .collect();
        if !inside.is_empty() {
            lines.push(cut_line(line, length, &inside));
            if lines.len() == MAX_LINES {
                break;
            }
        }
        line_start = line_end + 1;
    }
    lines
}

/// One line cut to [`MAX_LINE_CHARS`] around its first match, the ranges that stay in it moved to match.
fn cut_line(line: &str, length: usize, inside: &[(usize, usize)]) -> RangedText {
    let trimmed_end = line.trim_end_matches('\r').chars().count().min(length);
    if trimmed_end <= MAX_LINE_CHARS {
        return RangedText {
            text: line.chars().take(trimmed_end).collect(),
            ranges: inside
                .iter()
                .filter(|&&(s, _)| s < trimmed_end)
                .map(|&(s, e)| wire(s, e.min(trimmed_end)))
                .collect(),
        };
    }
    let first = inside[0].0;
    let from = first.saturating_sub(LEAD_CHARS);
    let lead = usize::from(from > 0);
    let keep = MAX_LINE_CHARS - lead - 1;
    let to = (from + keep).min(trimmed_end);
    let mut text = String::new();
    if from > 0 {
        text.push('…');
    }
    text.extend(line.chars().skip(from).take(to - from));
    if to < trimmed_end {
        text.push('…');
    }
    let ranges = inside
        .iter()
        .filter(|&&(s, _)| s >= from && s < to)
        .map(|&(s, e)| wire(s - from + lead, e.min(to) - from + lead))
        .collect();
    RangedText { text, ranges }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn terms(words: &[&str]) -> Vec<Vec<char>> {
        folded_terms(&words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn ranges_count_code_points_and_every_term_must_match() {
        assert_eq!(
            ranges("Die Größe 🙂 größe", &terms(&["größe"])),
            Some(vec![(4, 9), (12, 17)])
        );
        assert_eq!(ranges("中文文档", &terms(&["文档"])), Some(vec![(2, 4)]));
        assert_eq!(ranges("abc", &terms(&["abc", "x"])), None);
        assert_eq!(
            ranges("aaaa", &terms(&["aa", "aaa"])),
            Some(vec![(0, 4)]),
            "overlaps merge"
        );
    }

    #[test]
    fn long_lines_are_cut_around_their_first_match_and_the_ranges_follow() {
        let line = format!("{}needle{}", "x".repeat(300), "y".repeat(300));
        let found = ranges(&line, &terms(&["needle"])).unwrap();
        let lines = hit_lines(&format!("first\n{line}\nlast"), &[(found[0].0 + 6, found[0].1 + 6)]);
        assert_eq!(lines.len(), 1);
        let shown: Vec<char> = lines[0].text.chars().collect();
        assert_eq!(shown.len(), MAX_LINE_CHARS);
        let r = lines[0].ranges[0];
        let matched: String = shown[r.start as usize..r.end as usize].iter().collect();
        assert_eq!(matched, "needle");
    }
}
