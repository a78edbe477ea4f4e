//! The live line of a terminal view: what the running turn's drafts say before its events do (spec, "drafts").
//!
//! The reasoning draft shows as one dim line (its newest words), which the message's text replaces as soon as it
//! comes. The text draft shows its unfinished line plainly, as it streams; the finished Markdown blocks still come
//! from the committed events ([`super::markdown`]), so the live line only ever shows what no block has yet. Drafts
//! that repeat bytes already seen (the first drafts of a resumed subscription start from offset 0) are cut by offset.

use std::collections::HashMap;

use efr_protocol::wire::DraftPart;

use crate::clean::printable;

/// The state behind the live line.
#[derive(Debug, Default)]
pub struct LiveLine {
    /// The bytes of the turn's reasoning seen so far.
    reasoning_len: u64,
    /// The newest words of the reasoning (one line).
    reasoning: String,
    /// The bytes seen so far of each message's text.
    text_len: HashMap<u32, u64>,
    /// The unfinished line of the message that streams.
    text: String,
}

impl LiveLine {
    /// Takes a draft; `true` when the line changed.
    pub fn take(&mut self, part: &DraftPart) -> bool {
        match part {
            DraftPart::Reasoning { offset, delta, .. } => {
                let Some(new) = unseen(&mut self.reasoning_len, *offset, delta) else {
                    return false;
                };
                self.reasoning.push_str(&new.replace(['\n', '\r'], " "));
                keep_tail(&mut self.reasoning, 400);
                true
            }
            DraftPart::Text { index, offset, delta } => {
                let seen = self.text_len.entry(*index).or_default();
                let Some(new) = unseen(seen, *offset, delta) else {
                    return false;
                };
                // The message replaces the reasoning.
                self.reasoning.clear();
                match new.rfind('\n') {
                    Some(at) => self.text = new[at + 1..].to_owned(),
                    None => self.text.push_str(new),
                }
                keep_tail(&mut self.text, 400);
                true
            }
            _ => false,
        }
    }

    /// The message's text finished (or a tool call began): its unfinished line is gone.
    pub fn end_message(&mut self) {
        self.text.clear();
        self.reasoning.clear();
    }

    /// The line to draw, at most `width` columns (its newest characters), or `None`.
    #[must_use]
    pub fn line(&self, width: usize, dim: &str, reset: &str) -> Option<String> {
        let room = width.saturating_sub(2);
        if !self.text.is_empty() {
            return Some(tail_chars(&printable(&self.text), room));
        }
        if !self.reasoning.trim().is_empty() {
            return Some(format!(
                "{dim}{}{reset}",
                tail_chars(&printable(self.reasoning.trim()), room)
            ));
        }
        None
    }
}

/// The part of `delta` (at `offset`) after the `seen` bytes, moving `seen` on; `None` when all of it was seen or it
/// leaves a gap.
fn unseen<'a>(seen: &mut u64, offset: u64, delta: &'a str) -> Option<&'a str> {
    let end = offset + delta.len() as u64;
    if offset > *seen || end <= *seen {
        return None;
    }
    let skip = usize::try_from(*seen - offset).ok()?;
    let new = delta.get(skip..)?;
    *seen = end;
    Some(new)
}

fn keep_tail(text: &mut String, bytes: usize) {
    if text.len() > bytes {
        let mut cut = text.len() - bytes;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text.drain(..cut);
    }
}

fn tail_chars(text: &str, chars: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(chars)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(offset: u64, delta: &str) -> DraftPart {
        DraftPart::Text {
            index: 0,
            offset,
            delta: delta.into(),
        }
    }

    #[test]
    fn reasoning_is_dim_until_the_text_replaces_it_and_repeats_are_cut() {
        let mut live = LiveLine::default();
        assert!(live.take(&DraftPart::Reasoning {
            offset: 0,
            delta: "weigh\nthe größe".into(),
            title: None,
        }));
        assert_eq!(live.line(80, "<", ">").unwrap(), "<weigh the größe>");
        assert!(live.take(&text(0, "first line\nsecond ")));
        assert!(
            !live.take(&text(0, "first line\nsecond ")),
            "a repeat from offset 0 is cut"
        );
        assert!(live.take(&text(0, "first line\nsecond half")));
        assert_eq!(live.line(80, "<", ">").unwrap(), "second half");
        assert!(!live.take(&text(40, "gap")), "a gap is not shown");
        live.end_message();
        assert_eq!(live.line(80, "<", ">"), None);
    }
}
