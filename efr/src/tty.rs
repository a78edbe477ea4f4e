//! The terminal modes that efr sets on stdin, restored when the guard drops (also on an early return or a panic).
//!
//! - [`TermMode::Keys`] for a turn: no line buffering, no echo, no signal keys, output processing kept. efr then
//!   reads every key itself: `y`/`n`/`a` without Enter, an answer's line with its own echo (or none, for a hidden
//!   wait), Ctrl+C as byte 0x03 (so only efr sees it, not a shell that started efr), and Ctrl+B as byte 0x02. Keeping
//!   output processing means `\n` still moves to the next line's start, so rendered text needs no `\r`.
//! - [`TermMode::Hidden`] for `efr login`: line buffering kept, echo off, so a key typed at the prompt never shows.
//!
//! termios through `nix` (a well-kept binding); crossterm's raw mode would also clear output processing.

use std::io::{BufRead, Write};
use std::os::fd::AsFd;

use nix::sys::termios::{self, LocalFlags, SetArg, SpecialCharacterIndices, Termios};

/// A mode to set on the terminal of stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TermMode {
    /// Key by key, no echo, no signal keys.
    Keys,
    /// Lines, no echo.
    Hidden,
}

/// Restores the terminal of stdin to the mode it had when dropped.
#[derive(Debug)]
pub struct TermGuard {
    saved: Termios,
}

/// Whether stdin is a terminal.
#[must_use]
pub fn stdin_is_tty() -> bool {
    nix::unistd::isatty(std::io::stdin().as_fd()).unwrap_or(false)
}

/// Whether stderr is a terminal.
#[must_use]
pub fn stderr_is_tty() -> bool {
    nix::unistd::isatty(std::io::stderr().as_fd()).unwrap_or(false)
}

/// Whether stdout is a terminal.
#[must_use]
pub fn stdout_is_tty() -> bool {
    nix::unistd::isatty(std::io::stdout().as_fd()).unwrap_or(false)
}

impl TermGuard {
    /// Sets `mode` on the terminal of stdin.
    ///
    /// # Errors
    /// When stdin is not a terminal or its mode cannot be read or set.
    pub fn set(mode: TermMode) -> nix::Result<Self> {
        let saved = termios::tcgetattr(std::io::stdin())?;
        let mut next = saved.clone();
        match mode {
            TermMode::Keys => {
                next.local_flags
                    .remove(LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ISIG | LocalFlags::IEXTEN);
                next.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
                next.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
            }
            TermMode::Hidden => {
                next.local_flags.remove(LocalFlags::ECHO);
                next.local_flags.insert(LocalFlags::ECHONL);
            }
        }
        termios::tcsetattr(std::io::stdin(), SetArg::TCSADRAIN, &next)?;
        Ok(Self { saved })
    }
}

impl Drop for TermGuard {
    fn drop(&mut self) {
        let _ = termios::tcsetattr(std::io::stdin(), SetArg::TCSADRAIN, &self.saved);
    }
}

/// Asks for one line on the terminal with echo off (a key, a password): `prompt` goes to stderr.
///
/// # Errors
/// When the terminal mode cannot be set or stdin cannot be read.
pub fn read_hidden_line(prompt: &str) -> std::io::Result<String> {
    let mut err = std::io::stderr();
    err.write_all(prompt.as_bytes())?;
    err.flush()?;
    let _guard = TermGuard::set(TermMode::Hidden).map_err(std::io::Error::from)?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}
