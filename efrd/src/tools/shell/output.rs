//! A run's output as text: bounded while it is captured, bounded again for the model.
//!
//! The hidden shell turns the bytes of a run into plain text (see `capture`) and pushes that text here, one character
//! or line end at a time. [`OutputWindow`] keeps a *head* (the first lines, up to a byte cap) and a *tail* (the last
//! bytes, as a ring cut at line starts); everything between them is only counted. Memory stays bounded by the two caps
//! however much a command prints (50 MiB of output included: `efrd/tests/hidden_shell_memory.rs`).
//!
//! [`RunOutput`] is the frozen result. Clients get [`RunOutput::for_client`], at most [`CLIENT_OUTPUT_CAP`] bytes of
//! text plus one elision line; the model gets [`RunOutput::for_model`] with the limits the caller chooses
//! ([`OutputLimits::MODEL`] by default), head and tail kept and the middle elided with a count of lines and bytes
//! (docs/architecture.md, "Tools").

use std::collections::VecDeque;

/// The most text, in bytes of UTF-8, that a run keeps for clients: half for the head, half for the tail, plus one
/// elision line between them. This is the per-call cap of `tool_call_completed.output` that docs/architecture.md
/// states ("Tools"); the event log and the 16 MiB frame limit stay far away.
pub const CLIENT_OUTPUT_CAP: usize = 1024 * 1024;

/// The longest line kept, in bytes. Longer lines keep their first `MAX_LINE_BYTES` bytes and end with a note that
/// counts the bytes cut, so that one line without a line end (`head -c 50M /dev/zero | tr ...`) stays bounded too.
pub const MAX_LINE_BYTES: usize = 16 * 1024;

/// Limits for [`RunOutput::for_model`] and [`bound_output`]: how much of the start and of the end to keep. A side
/// keeps whole lines while they fit both its byte and its line limit; a single line longer than the byte limit is
/// cut at a character boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    /// Bytes of UTF-8 kept from the start.
    pub head_bytes: usize,
    /// Lines kept from the start.
    pub head_lines: usize,
    /// Bytes of UTF-8 kept from the end.
    pub tail_bytes: usize,
    /// Lines kept from the end.
    pub tail_lines: usize,
}

impl OutputLimits {
    /// The default for tool output returned to the model: 8 KiB / 200 lines of head and of tail.
    pub const MODEL: Self = Self {
        head_bytes: 8 * 1024,
        head_lines: 200,
        tail_bytes: 8 * 1024,
        tail_lines: 200,
    };
    /// What a client gets: [`CLIENT_OUTPUT_CAP`] split in two, with no line limit.
    pub const CLIENT: Self = Self {
        head_bytes: CLIENT_OUTPUT_CAP / 2,
        head_lines: usize::MAX,
        tail_bytes: CLIENT_OUTPUT_CAP / 2,
        tail_lines: usize::MAX,
    };
}

/// The text of one run, ANSI removed, as captured: a head, a tail and what was elided between them at capture time.
///
/// `total_bytes` and `total_lines` count the whole text the run printed (after ANSI removal and line folding), also
/// the elided middle. A last line without a line end counts as a line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOutput {
    head: String,
    tail: String,
    elided_bytes: u64,
    elided_lines: u64,
    /// Bytes of text the run printed, in UTF-8.
    pub total_bytes: u64,
    /// Lines the run printed.
    pub total_lines: u64,
}

impl RunOutput {
    /// Builds an output from plain text, as if the run had printed it with no cap (tests and callers that already
    /// hold text).
    pub fn from_text(text: &str) -> Self {
        Self {
            head: text.to_owned(),
            tail: String::new(),
            elided_bytes: 0,
            elided_lines: 0,
            total_bytes: text.len() as u64,
            total_lines: count_lines(text),
        }
    }

    /// Replaces each `from` in the text with `to`: the path of efr's run file in a shell's own messages (a syntax
    /// error says `/run/.../run-3: line 1: ...`), which would only puzzle the reader. The totals stay as printed.
    #[must_use]
    pub fn replaced(mut self, from: &str, to: &str) -> Self {
        if !from.is_empty() {
            self.head = self.head.replace(from, to);
            self.tail = self.tail.replace(from, to);
        }
        self
    }

    /// True when the capture already dropped a middle part (the run printed more than [`CLIENT_OUTPUT_CAP`]).
    pub fn is_truncated(&self) -> bool {
        self.elided_bytes > 0
    }

    /// The output for clients (`tool_call_completed.output`): at most [`CLIENT_OUTPUT_CAP`] bytes of text and one
    /// elision line `[... N lines (M bytes) elided ...]` where the capture dropped the middle.
    pub fn for_client(&self) -> String {
        bound_output(self, OutputLimits::CLIENT)
    }

    /// The output for the model, bounded by `limits` (see [`bound_output`]).
    pub fn for_model(&self, limits: OutputLimits) -> String {
        bound_output(self, limits)
    }
}

/// Bounds `output` to `limits`: the first lines up to `head_bytes`/`head_lines`, then one line
/// `[... N lines (M bytes) elided ...]` that counts everything left out (also what the capture dropped), then the last
/// lines up to `tail_bytes`/`tail_lines`. Output within the limits comes back whole.
pub fn bound_output(output: &RunOutput, limits: OutputLimits) -> String {
    if output.elided_bytes == 0 {
        let text = [output.head.as_str(), output.tail.as_str()].concat();
        let head = prefix(&text, limits.head_bytes, limits.head_lines);
        let rest = &text[head.len()..];
        let tail = suffix(rest, limits.tail_bytes, limits.tail_lines);
        if head.len() + tail.len() == text.len() {
            return text;
        }
        let bytes = (text.len() - head.len() - tail.len()) as u64;
        let lines = count_lines(&text).saturating_sub(count_lines(head) + count_lines(tail));
        return join(head, lines, bytes, tail);
    }
    let head = prefix(&output.head, limits.head_bytes, limits.head_lines);
    let tail = suffix(&output.tail, limits.tail_bytes, limits.tail_lines);
    let bytes = output.total_bytes - (head.len() + tail.len()) as u64;
    let lines = output.total_lines.saturating_sub(count_lines(head) + count_lines(tail));
    join(head, lines, bytes, tail)
}

fn join(head: &str, lines: u64, bytes: u64, tail: &str) -> String {
    let mut out = String::with_capacity(head.len() + tail.len() + 64);
    out.push_str(head);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("[... {lines} lines ({bytes} bytes) elided ...]\n"));
    out.push_str(tail);
    out
}

/// Lines in `text`: line ends, plus one for a last line without a line end.
fn count_lines(text: &str) -> u64 {
    let ends = text.bytes().filter(|b| *b == b'\n').count() as u64;
    ends + u64::from(!text.is_empty() && !text.ends_with('\n'))
}

/// The longest prefix of whole lines within both limits; a first line longer than `max_bytes` is cut at a char
/// boundary.
fn prefix(text: &str, max_bytes: usize, max_lines: usize) -> &str {
    if max_lines == 0 || max_bytes == 0 {
        return "";
    }
    let mut end = 0;
    for (lines, line) in text.split_inclusive('\n').enumerate() {
        if lines >= max_lines || end + line.len() > max_bytes {
            break;
        }
        end += line.len();
    }
    if end == 0 && !text.is_empty() {
        end = floor_char_boundary(text, max_bytes.min(text.len()));
    }
    &text[..end]
}

/// The longest suffix of whole lines within both limits; a last line longer than `max_bytes` keeps its end.
fn suffix(text: &str, max_bytes: usize, max_lines: usize) -> &str {
    if max_lines == 0 || max_bytes == 0 {
        return "";
    }
    let mut start = text.len();
    for (lines, line) in text.split_inclusive('\n').rev().enumerate() {
        if lines >= max_lines || text.len() - start + line.len() > max_bytes {
            break;
        }
        start -= line.len();
    }
    if start == text.len() && !text.is_empty() {
        start = ceil_char_boundary(text, text.len() - max_bytes.min(text.len()));
    }
    &text[start..]
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The live capture of a run's text: a head, a tail ring and counts, with one line in the making.
///
/// The line model is that of a terminal line reduced to what text output needs: `\r` followed by more text replaces
/// the line (progress bars redraw that way), backspace removes the last character, `\n` ends the line. Cursor moves
/// and other controls are ignored.
#[derive(Debug)]
pub(crate) struct OutputWindow {
    head: String,
    head_cap: usize,
    head_closed: bool,
    tail: VecDeque<u8>,
    tail_cap: usize,
    elided_bytes: u64,
    elided_lines: u64,
    total_bytes: u64,
    total_lines: u64,
    line: String,
    line_cut: u64,
    pending_cr: bool,
}

impl OutputWindow {
    /// A window that keeps `head_cap` bytes of head and `tail_cap` bytes of tail.
    pub(crate) fn new(head_cap: usize, tail_cap: usize) -> Self {
        Self {
            head: String::new(),
            head_cap,
            head_closed: false,
            tail: VecDeque::new(),
            tail_cap,
            elided_bytes: 0,
            elided_lines: 0,
            total_bytes: 0,
            total_lines: 0,
            line: String::new(),
            line_cut: 0,
            pending_cr: false,
        }
    }

    /// A window with the client cap ([`CLIENT_OUTPUT_CAP`]).
    pub(crate) fn for_client() -> Self {
        Self::new(CLIENT_OUTPUT_CAP / 2, CLIENT_OUTPUT_CAP / 2)
    }

    pub(crate) fn push_char(&mut self, c: char) {
        if self.pending_cr {
            self.pending_cr = false;
            self.line.clear();
            self.line_cut = 0;
        }
        if self.line.len() + c.len_utf8() > MAX_LINE_BYTES {
            self.line_cut += c.len_utf8() as u64;
        } else {
            self.line.push(c);
        }
    }

    pub(crate) fn carriage_return(&mut self) {
        self.pending_cr = true;
    }

    pub(crate) fn backspace(&mut self) {
        if !self.pending_cr && self.line_cut == 0 {
            self.line.pop();
        }
    }

    pub(crate) fn newline(&mut self) {
        self.pending_cr = false;
        let mut line = std::mem::take(&mut self.line);
        if self.line_cut > 0 {
            line.push_str(&format!(" [... {} more bytes in this line]", self.line_cut));
            self.line_cut = 0;
        }
        line.push('\n');
        self.commit(&line);
        // Reuse the allocation for the next line.
        line.clear();
        self.line = line;
    }

    fn commit(&mut self, line: &str) {
        self.total_bytes += line.len() as u64;
        self.total_lines += 1;
        if !self.head_closed && self.head.len() + line.len() <= self.head_cap {
            self.head.push_str(line);
            return;
        }
        self.head_closed = true;
        self.tail.extend(line.as_bytes());
        // Trim in batches (a quarter of the cap) so that each byte is scanned O(1) times.
        if self.tail.len() > self.tail_cap + self.tail_cap / 4 {
            self.trim_tail();
        }
    }

    /// Drops whole lines from the front of the tail until it fits its cap.
    fn trim_tail(&mut self) {
        let excess = self.tail.len().saturating_sub(self.tail_cap);
        if excess == 0 {
            return;
        }
        // Cut after the first line end at or past `excess`, so the tail starts at a line start.
        let cut = self
            .tail
            .range(excess - 1..)
            .position(|b| *b == b'\n')
            .map(|p| excess + p);
        let cut = cut.unwrap_or(self.tail.len());
        let lines = self.tail.range(..cut).filter(|b| **b == b'\n').count();
        self.tail.drain(..cut);
        self.elided_bytes += cut as u64;
        self.elided_lines += lines as u64;
    }

    /// The output so far, with the line in the making as a last line without a line end.
    pub(crate) fn snapshot(&mut self) -> RunOutput {
        self.trim_tail();
        let mut tail = String::from_utf8_lossy(&self.tail.iter().copied().collect::<Vec<u8>>()).into_owned();
        let mut total_bytes = self.total_bytes;
        let mut total_lines = self.total_lines;
        if !self.line.is_empty() || self.line_cut > 0 {
            let mut line = self.line.clone();
            if self.line_cut > 0 {
                line.push_str(&format!(" [... {} more bytes in this line]", self.line_cut));
            }
            total_bytes += line.len() as u64;
            total_lines += 1;
            if !self.head_closed && self.head.len() + line.len() <= self.head_cap {
                return RunOutput {
                    head: format!("{}{line}", self.head),
                    tail,
                    elided_bytes: self.elided_bytes,
                    elided_lines: self.elided_lines,
                    total_bytes,
                    total_lines,
                };
            }
            tail.push_str(&line);
        }
        RunOutput {
            head: self.head.clone(),
            tail,
            elided_bytes: self.elided_bytes,
            elided_lines: self.elided_lines,
            total_bytes,
            total_lines,
        }
    }
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
