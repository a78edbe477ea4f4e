//! The hidden shell's screen, kept by a VT parser (`vt100`), and the row that holds the cursor.
//!
//! efrd keeps the screen so it can say what a command that waits for input shows next to the cursor (`prompt` in
//! `tool_call_input_changed` and `shell_command_detached`, at most 200 characters; docs/protocol.md, "The contract": "a
//! command left running in the hidden shell"). The screen has no scrollback, so it costs the same after 50 MiB of
//! output as after none.

use std::num::NonZeroU16;

/// The fixed size of the hidden shell's terminal: 50 rows of 200 columns. Fixed so output does not depend on a
/// client's window; wide so that few lines wrap.
pub const SCREEN_ROWS: u16 = 50;
/// See [`SCREEN_ROWS`].
pub const SCREEN_COLS: u16 = 200;

/// The most characters of `prompt` (spec: "the row of the screen that holds the cursor, at most 200 characters").
pub const PROMPT_MAX_CHARS: usize = 200;

/// The terminal screen of one hidden shell.
pub(crate) struct Screen {
    parser: vt100::Parser,
}

impl std::fmt::Debug for Screen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Screen")
            .field("cursor", &self.parser.screen().cursor_position())
            .finish()
    }
}

impl Screen {
    pub(crate) fn new() -> Self {
        let rows = NonZeroU16::new(SCREEN_ROWS).unwrap_or(NonZeroU16::MIN);
        let cols = NonZeroU16::new(SCREEN_COLS).unwrap_or(NonZeroU16::MIN);
        Self {
            parser: vt100::Parser::new(rows, cols, 0),
        }
    }

    pub(crate) fn process(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
    }

    /// Blanks the row that holds the cursor and moves the cursor to its start.
    pub(crate) fn clear_cursor_row(&mut self) {
        self.parser.process(b"\x1b[2K\r");
    }

    /// The screen's non-blank rows, one per line, at most 1000 characters (for error messages).
    pub(crate) fn text(&self) -> String {
        let rows: Vec<String> = self
            .parser
            .screen()
            .rows(0, SCREEN_COLS)
            .map(|r| r.trim_end().to_owned())
            .collect();
        let text = rows
            .iter()
            .filter(|r| !r.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
        text.chars().take(1000).collect()
    }

    /// The row that holds the cursor, trailing blanks removed, at most [`PROMPT_MAX_CHARS`] characters; `None` when
    /// the row is blank.
    pub(crate) fn prompt(&self) -> Option<String> {
        let screen = self.parser.screen();
        let (row, _) = screen.cursor_position();
        let text = screen.rows(0, SCREEN_COLS).nth(usize::from(row))?;
        let text = text.trim_end();
        if text.trim_start().is_empty() {
            return None;
        }
        Some(text.chars().take(PROMPT_MAX_CHARS).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_is_the_cursor_row() {
        let mut screen = Screen::new();
        assert_eq!(screen.prompt(), None);
        screen.process(b"line one\r\n\x1b[1mPassword:\x1b[0m ");
        assert_eq!(screen.prompt().as_deref(), Some("Password:"));
        screen.process(b"\r\n");
        assert_eq!(screen.prompt(), None);
        screen.process(&[b'x'; 300]);
        // The row wrapped: the cursor row holds the last 100 characters.
        assert_eq!(screen.prompt().map(|p| p.len()), Some(100));
    }
}
