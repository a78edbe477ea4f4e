//! The picker of `efr resume` on a terminal, in the manner of fzf: type to filter, arrows (or Ctrl+P/Ctrl+N) to
//! move, Enter to choose, Esc or Ctrl+C to leave. [`Picker`] is the pure state (its keys and what it shows);
//! [`pick`] runs it on the terminal of stdin and draws on stderr, so that stdout stays free for `--print-dir`.

use std::io::{Read, Write};

use crate::tty::{TermGuard, TermMode};

/// One row to choose from: what it shows, and the text the filter reads (lowercased).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The row as shown.
    pub line: String,
    /// What the filter matches, lowercased.
    pub haystack: String,
}

/// A key the picker reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A character typed into the filter.
    Char(char),
    /// Backspace: the filter's last character goes.
    Backspace,
    /// The row above.
    Up,
    /// The row below.
    Down,
    /// Choose the selected row.
    Enter,
    /// Leave without a choice (Esc, Ctrl+C, Ctrl+D).
    Cancel,
}

/// What a key did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Go on reading keys.
    More,
    /// The row at this index of the choices was chosen.
    Chosen(usize),
    /// Left without a choice.
    Cancelled,
}

/// The picker's state: the choices, the filter and the selected row among those that match.
#[derive(Debug, Clone)]
pub struct Picker {
    choices: Vec<Choice>,
    query: String,
    selected: usize,
}

impl Picker {
    /// A picker of `choices`, the first selected.
    #[must_use]
    pub fn new(choices: Vec<Choice>) -> Self {
        Self {
            choices,
            query: String::new(),
            selected: 0,
        }
    }

    /// The indexes of the choices that match the filter: each of its words is in the row's text.
    #[must_use]
    pub fn matching(&self) -> Vec<usize> {
        let words: Vec<String> = self.query.split_whitespace().map(str::to_lowercase).collect();
        (0..self.choices.len())
            .filter(|&i| {
                words
                    .iter()
                    .all(|word| self.choices[i].haystack.contains(word.as_str()))
            })
            .collect()
    }

    /// Applies `key`.
    pub fn key(&mut self, key: Key) -> Outcome {
        match key {
            Key::Char(c) => {
                self.query.push(c);
                self.selected = 0;
            }
            Key::Backspace => {
                self.query.pop();
                self.selected = 0;
            }
            Key::Up => self.selected = self.selected.saturating_sub(1),
            Key::Down => {
                let last = self.matching().len().saturating_sub(1);
                self.selected = (self.selected + 1).min(last);
            }
            Key::Enter => {
                return self
                    .matching()
                    .get(self.selected)
                    .map_or(Outcome::More, |&i| Outcome::Chosen(i));
            }
            Key::Cancel => return Outcome::Cancelled,
        }
        Outcome::More
    }

    /// What the picker shows, at most `rows` matching rows: the filter's line, then the rows, the selected one marked
    /// `>`; each line cut to `width` characters.
    #[must_use]
    pub fn lines(&self, rows: usize, width: usize) -> Vec<String> {
        let matching = self.matching();
        let mut lines = vec![format!("resume> {}", self.query)];
        // The window of rows keeps the selected one in sight.
        let start = self.selected.saturating_sub(rows.saturating_sub(1));
        for (n, &i) in matching.iter().enumerate().skip(start).take(rows) {
            let mark = if n == self.selected { "> " } else { "  " };
            lines.push(format!("{mark}{}", self.choices[i].line));
        }
        if matching.is_empty() {
            lines.push("  (no conversation matches)".to_owned());
        }
        lines
            .into_iter()
            .map(|line| line.chars().take(width.max(1)).collect())
            .collect()
    }
}

/// The keys in `bytes` read from a terminal in raw mode: printable characters (UTF-8), Backspace (DEL or ^H),
/// Enter (CR or LF), the arrows (`ESC [ A`, `ESC [ B`, and `ESC O A`/`B`), Ctrl+P and Ctrl+N, and a lone Esc,
/// Ctrl+C or Ctrl+D as cancel. Other bytes are skipped.
#[must_use]
pub fn keys(bytes: &[u8]) -> Vec<Key> {
    let mut keys = Vec::new();
    let text = String::from_utf8_lossy(bytes);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' | '\n' => keys.push(Key::Enter),
            '\u{7f}' | '\u{8}' => keys.push(Key::Backspace),
            '\u{3}' | '\u{4}' => keys.push(Key::Cancel),
            '\u{10}' => keys.push(Key::Up),
            '\u{e}' => keys.push(Key::Down),
            '\u{1b}' => match (chars.peek().copied(), chars.clone().nth(1)) {
                (Some('[' | 'O'), Some('A')) => {
                    chars.nth(1);
                    keys.push(Key::Up);
                }
                (Some('[' | 'O'), Some('B')) => {
                    chars.nth(1);
                    keys.push(Key::Down);
                }
                (Some('[' | 'O'), Some(_)) => {
                    // Another sequence (right, left, a function key): its bytes up to the final letter go.
                    chars.next();
                    while chars.next().is_some_and(|c| !c.is_ascii_alphabetic() && c != '~') {}
                }
                _ => keys.push(Key::Cancel),
            },
            c if !c.is_control() => keys.push(Key::Char(c)),
            _ => {}
        }
    }
    keys
}

/// The most rows the picker shows.
const ROWS: usize = 12;

/// Runs `picker` on the terminal of stdin, drawing on stderr; the chosen index, or `None` when left.
///
/// # Errors
/// When stdin is not a terminal, or it cannot be read or written.
pub fn pick(mut picker: Picker) -> std::io::Result<Option<usize>> {
    let _raw = TermGuard::set(TermMode::Keys).map_err(std::io::Error::from)?;
    let width = terminal_width();
    let mut err = std::io::stderr();
    let mut drawn = 0;
    let mut buf = [0_u8; 64];
    loop {
        drawn = draw(&mut err, &picker.lines(ROWS, width), drawn)?;
        let n = std::io::stdin().read(&mut buf)?;
        if n == 0 {
            clear(&mut err, drawn)?;
            return Ok(None);
        }
        for key in keys(&buf[..n]) {
            match picker.key(key) {
                Outcome::More => {}
                Outcome::Chosen(i) => {
                    clear(&mut err, drawn)?;
                    return Ok(Some(i));
                }
                Outcome::Cancelled => {
                    clear(&mut err, drawn)?;
                    return Ok(None);
                }
            }
        }
    }
}

/// Draws `lines` over the `drawn` lines drawn before; returns how many are on the screen now.
fn draw(err: &mut impl Write, lines: &[String], drawn: usize) -> std::io::Result<usize> {
    clear(err, drawn)?;
    let text = lines.join("\r\n");
    write!(err, "{text}")?;
    err.flush()?;
    Ok(lines.len())
}

/// Moves up over `drawn` lines and clears them and what follows.
fn clear(err: &mut impl Write, drawn: usize) -> std::io::Result<()> {
    if drawn > 1 {
        write!(err, "\x1b[{}A", drawn - 1)?;
    }
    write!(err, "\r\x1b[J")?;
    err.flush()
}

/// The terminal's width in columns (80 when it cannot be read).
fn terminal_width() -> usize {
    let mut size = nix::libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes a winsize into the struct it is given, which lives for the call.
    let rc = unsafe { nix::libc::ioctl(2, nix::libc::TIOCGWINSZ, &raw mut size) };
    if rc == 0 && size.ws_col > 0 {
        usize::from(size.ws_col)
    } else {
        80
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picker() -> Picker {
        Picker::new(
            ["Fix the größe test", "Write the docs", "Fix the build"]
                .iter()
                .map(|t| Choice {
                    line: (*t).to_owned(),
                    haystack: t.to_lowercase(),
                })
                .collect(),
        )
    }

    #[test]
    fn typing_filters_by_every_word_and_enter_chooses_the_selected_match() {
        let mut p = picker();
        for c in "fix BUI".chars() {
            assert_eq!(p.key(Key::Char(c)), Outcome::More);
        }
        assert_eq!(p.matching(), vec![2]);
        assert_eq!(p.key(Key::Enter), Outcome::Chosen(2));
        // Backspace widens it again; the arrows move within the matches and stop at their ends.
        for _ in 0..3 {
            p.key(Key::Backspace);
        }
        assert_eq!(p.matching(), vec![0, 2]);
        p.key(Key::Down);
        p.key(Key::Down);
        assert_eq!(p.key(Key::Enter), Outcome::Chosen(2));
        p.key(Key::Up);
        p.key(Key::Up);
        assert_eq!(p.key(Key::Enter), Outcome::Chosen(0));
        assert_eq!(p.key(Key::Cancel), Outcome::Cancelled);
    }

    #[test]
    fn a_filter_that_matches_nothing_chooses_nothing_and_says_so() {
        let mut p = picker();
        p.key(Key::Char('ß'));
        p.key(Key::Char('x'));
        assert!(p.matching().is_empty());
        assert_eq!(p.key(Key::Enter), Outcome::More);
        assert_eq!(p.lines(5, 80), vec!["resume> ßx", "  (no conversation matches)"]);
    }

    #[test]
    fn the_lines_mark_the_selected_row_keep_it_in_sight_and_are_cut_to_the_width() {
        let mut p = picker();
        p.key(Key::Down);
        p.key(Key::Down);
        assert_eq!(p.lines(2, 12), vec!["resume> ", "  Write the ", "> Fix the bu"]);
    }

    #[test]
    fn raw_bytes_become_keys() {
        assert_eq!(
            keys("gr\u{f6}\x7f\x1b[A\x1bOB\x10\x0e\x1b[C\r".as_bytes()),
            vec![
                Key::Char('g'),
                Key::Char('r'),
                Key::Char('ö'),
                Key::Backspace,
                Key::Up,
                Key::Down,
                Key::Up,
                Key::Down,
                Key::Enter
            ]
        );
        assert_eq!(keys(b"\x1b"), vec![Key::Cancel]);
        assert_eq!(keys(b"\x03"), vec![Key::Cancel]);
    }
}
