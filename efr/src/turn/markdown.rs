//! Streamed Markdown, rendered per finished block.
//!
//! Text deltas arrive in pieces of any size. [`Blocks`] holds them until a block is finished: a blank line outside
//! a code fence, or the line that closes a fence. Each finished part is rendered whole by termimad (headings, lists,
//! code blocks, inline code, wrapped to the terminal's width), so a half-written `**bold` or an open fence never
//! shows raw. The end of the message renders what is left.

use termimad::{FmtText, MadSkin};

/// The text of a message not yet rendered.
#[derive(Debug, Default)]
pub struct Blocks {
    pending: String,
}

fn is_fence(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("```") || line.starts_with("~~~")
}

impl Blocks {
    /// Adds a delta; returns the finished part of the text (one or more whole blocks), if any.
    pub fn push(&mut self, delta: &str) -> Option<String> {
        self.pending.push_str(delta);
        let mut cut = 0;
        let mut in_fence = false;
        let mut seen_text = false;
        let mut at = 0;
        while let Some(end) = self.pending[at..].find('\n') {
            let line = &self.pending[at..at + end];
            let next = at + end + 1;
            if is_fence(line) {
                if in_fence {
                    in_fence = false;
                    cut = next;
                    seen_text = false;
                } else {
                    in_fence = true;
                }
            } else if !in_fence && line.trim().is_empty() {
                if seen_text {
                    cut = next;
                    seen_text = false;
                }
            } else if !in_fence {
                seen_text = true;
            }
            at = next;
        }
        if cut == 0 {
            return None;
        }
        let rest = self.pending.split_off(cut);
        Some(std::mem::replace(&mut self.pending, rest))
    }

    /// What is left at the end of the message; `None` when nothing.
    pub fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.pending);
        (!rest.trim().is_empty()).then_some(rest)
    }
}

/// Renders Markdown for a terminal of `width` columns (ANSI styles included).
#[must_use]
pub fn render(skin: &MadSkin, markdown: &str, width: usize) -> String {
    FmtText::from(skin, markdown.trim_end_matches('\n'), Some(width)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(pieces: &[&str]) -> (Vec<String>, Option<String>) {
        let mut blocks = Blocks::default();
        let done = pieces.iter().filter_map(|p| blocks.push(p)).collect();
        (done, blocks.finish())
    }

    #[test]
    fn a_paragraph_is_released_at_its_blank_line() {
        let (done, rest) = feed(&["# Ti", "tle\n\nSome **bo", "ld** text", "\n\nend"]);
        assert_eq!(done, ["# Title\n\n", "Some **bold** text\n\n"]);
        assert_eq!(rest.as_deref(), Some("end"));
    }

    #[test]
    fn a_code_block_is_held_until_its_fence_closes() {
        let (done, rest) = feed(&["```rust\nfn a() {}\n\n", "fn b() {}\n", "```\nafter"]);
        assert_eq!(done, ["```rust\nfn a() {}\n\nfn b() {}\n```\n"]);
        assert_eq!(rest.as_deref(), Some("after"));
    }

    #[test]
    fn nothing_left_is_none() {
        let (done, rest) = feed(&["one\n\n"]);
        assert_eq!(done, ["one\n\n"]);
        assert_eq!(rest, None);
    }

    #[test]
    fn termimad_renders_inline_code_and_lists_without_the_markers() {
        let skin = MadSkin::no_style();
        let out = render(&skin, "* item `code`\n* **two**\n", 40);
        assert!(out.contains("code") && out.contains("two"), "{out}");
        assert!(!out.contains("**") && !out.contains('`'), "{out}");
    }
}
