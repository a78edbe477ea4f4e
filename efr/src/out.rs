//! stdout of the thin commands, where a reader that left is not an error.
//!
//! `efr status | head -1` closes the pipe before efr is done writing. efr keeps SIGPIPE ignored (Rust's default),
//! so that its socket to efrd fails with an error instead of killing it; a write to a closed stdout then fails
//! with `EPIPE`, which `print!` turns into a panic. [`print_exact`] (under every print here) takes it as "the reader left": efr exits at once,
//! quietly, with status 0 (the reader took what it wanted, as ripgrep does; a shell's 141 would fail a
//! `set -o pipefail` pipeline for nothing). Any other write error prints `efr: cannot write to stdout: ...` and
//! exits 1.
//!
//! # Text from others
//!
//! What the thin commands print readably holds text that efr did not write: efrd's messages (which quote
//! config.toml), paths, model ids, key hints, a command's line. [`print()`] and [`println()`] print it
//! [`printable`]: without terminal control sequences (one could retitle the
//! terminal, colour it or write the clipboard) and bidi overrides. They clean on a terminal and off one alike, as
//! the turn's plain transcript does: the readable forms are for reading (a pager, a log viewed later); scripts take
//! `--json`. efr's own words hold no control characters, so cleaning all the text costs them nothing; styled output
//! must not go through them.
//!
//! [`println_json`] writes `--json` output: efrd's result as it came, with the control characters that JSON leaves
//! raw written as `\u` escapes ([`json_text`]), so the same value and nothing a terminal would act on.
//! [`print_exact`] writes byte for byte: the shell-init script, and `efr diff` when stdout is
//! not a terminal (a patch must stay a patch; see [`crate::commands::diff`]).
//!
//! The turn's views write their own way (a turn must end its subscription, not exit mid-way).

use std::io::Write;

use crate::clean::{json_text, printable};

/// The exit status when the reader of stdout left (`EPIPE`): 0, see the module doc.
pub const READER_LEFT: i32 = 0;

/// Writes `text` to stdout, [`printable`] (see the module doc), and flushes it. Exits as [`print_exact`] does.
pub fn print(text: &str) {
    print_exact(&printable(text));
}

/// [`print()`] with a newline after `text`.
pub fn println(text: &str) {
    print(&format!("{text}\n"));
}

/// Writes one line of `--json` output: `json` (compact JSON text, as serde_json writes it) [`json_text`] (see the
/// module doc), then a newline. Exits as [`print_exact`] does.
pub fn println_json(json: &str) {
    print_exact(&format!("{}\n", json_text(json)));
}

/// Writes `text` to stdout byte for byte and flushes it.
///
/// Exits the process with [`READER_LEFT`] when the reader of stdout left, or with 1 (after a message on stderr)
/// when stdout cannot be written for another reason; returns only when all of `text` was written.
pub fn print_exact(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(error) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        drop(out);
        exit_after(&error);
    }
}

/// What efr does after a failed write to stdout: the exit status, and the message for stderr (none when the reader
/// left).
#[must_use]
pub fn after_write_error(error: &std::io::Error) -> (i32, Option<String>) {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        (READER_LEFT, None)
    } else {
        (1, Some(format!("efr: cannot write to stdout: {error}")))
    }
}

fn exit_after(error: &std::io::Error) -> ! {
    let (code, message) = after_write_error(error);
    if let Some(message) = message {
        // stderr may be gone too: nothing more to say then.
        let _ = writeln!(std::io::stderr(), "{message}");
    }
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_that_left_is_quiet_and_other_errors_are_told() {
        let gone = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert_eq!(after_write_error(&gone), (READER_LEFT, None));
        let full = std::io::Error::from_raw_os_error(28); // ENOSPC
        let (code, message) = after_write_error(&full);
        assert_eq!(code, 1);
        assert!(message.unwrap().starts_with("efr: cannot write to stdout: "));
    }
}
