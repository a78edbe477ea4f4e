//! Keys from the terminal during a turn: a thread reads stdin byte by byte (the terminal is in
//! [`TermMode::Keys`](crate::tty::TermMode::Keys)) and sends decoded [`Key`]s to the turn's loop.
//!
//! The keys efr acts on: `y`/`n`/`a` for a question, a line (Enter ends it, Backspace edits it) for an input wait,
//! a line while the turn runs (Enter steers it, Tab queues it, Ctrl+X withdraws the last queued prompt; see
//! [`super::steer`]), Ctrl+C (interrupt, then leave), and Ctrl+B (move the running shell command to a background
//! job, [`super::background`]). Escape sequences (arrows, function keys) are read whole and dropped, so they never land in an answer.

use std::io::Read;

use tokio::sync::mpsc;

/// One key press.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// A printable character (UTF-8 decoded).
    Char(char),
    /// Enter (CR or LF).
    Enter,
    /// Backspace or DEL.
    Backspace,
    /// Ctrl+U: clear the line.
    ClearLine,
    /// Ctrl+C.
    CtrlC,
    /// Ctrl+B: move the running shell command to a background job.
    CtrlB,
    /// Ctrl+D on an empty line: no answer.
    CtrlD,
    /// Tab: queue the typed line as the next prompt.
    Tab,
    /// Ctrl+X: withdraw the newest prompt queued from here.
    CtrlX,
}

/// Decodes a byte stream into keys; bytes may arrive split anywhere.
#[derive(Debug, Default)]
pub struct Decoder {
    utf8: Vec<u8>,
    escape: Escape,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Escape {
    #[default]
    None,
    /// After ESC.
    Start,
    /// Inside `ESC [` or `ESC O`, until a final byte.
    Sequence,
}

impl Decoder {
    /// Feeds one byte; returns the key it completes, if any.
    pub fn push(&mut self, byte: u8) -> Option<Key> {
        match self.escape {
            Escape::Start => {
                self.escape = if matches!(byte, b'[' | b'O') {
                    Escape::Sequence
                } else {
                    Escape::None
                };
                return None;
            }
            Escape::Sequence => {
                if (0x40..=0x7e).contains(&byte) {
                    self.escape = Escape::None;
                }
                return None;
            }
            Escape::None => {}
        }
        if !self.utf8.is_empty() || byte >= 0x80 {
            self.utf8.push(byte);
            return match std::str::from_utf8(&self.utf8) {
                Ok(text) => {
                    let key = text.chars().next().map(Key::Char);
                    self.utf8.clear();
                    key
                }
                Err(error) if error.error_len().is_some() || self.utf8.len() >= 4 => {
                    // Not UTF-8: drop the bytes rather than guess.
                    self.utf8.clear();
                    None
                }
                Err(_) => None,
            };
        }
        match byte {
            0x03 => Some(Key::CtrlC),
            0x02 => Some(Key::CtrlB),
            0x04 => Some(Key::CtrlD),
            0x15 => Some(Key::ClearLine),
            0x09 => Some(Key::Tab),
            0x18 => Some(Key::CtrlX),
            b'\r' | b'\n' => Some(Key::Enter),
            0x7f | 0x08 => Some(Key::Backspace),
            0x1b => {
                self.escape = Escape::Start;
                None
            }
            0x20..=0x7e => Some(Key::Char(char::from(byte))),
            _ => None,
        }
    }
}

/// Starts the thread that reads stdin and sends its keys. It ends when stdin closes or the receiver is gone; a read
/// that blocks when efr exits ends with the process.
pub fn spawn_reader() -> mpsc::UnboundedReceiver<Key> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut decoder = Decoder::default();
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0u8; 256];
        loop {
            let n = match stdin.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            for &byte in &buf[..n] {
                if let Some(key) = decoder.push(byte)
                    && tx.send(key).is_err()
                {
                    return;
                }
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(bytes: &[u8]) -> Vec<Key> {
        let mut decoder = Decoder::default();
        bytes.iter().filter_map(|&b| decoder.push(b)).collect()
    }

    #[test]
    fn control_keys_and_text_decode() {
        assert_eq!(
            keys(b"y\x03\x02a\r\x7f"),
            [
                Key::Char('y'),
                Key::CtrlC,
                Key::CtrlB,
                Key::Char('a'),
                Key::Enter,
                Key::Backspace
            ]
        );
    }

    #[test]
    fn utf8_split_across_bytes_is_one_char_and_bad_bytes_are_dropped() {
        assert_eq!(keys("gr\u{f6}\u{df}e".as_bytes()).len(), 5);
        assert_eq!(keys("🙂".as_bytes()), [Key::Char('🙂')]);
        assert_eq!(keys(b"\xff\xfeok"), [Key::Char('o'), Key::Char('k')]);
    }

    #[test]
    fn escape_sequences_never_reach_an_answer() {
        assert_eq!(keys(b"\x1b[A\x1bOPx\x1b[1;5Cy"), [Key::Char('x'), Key::Char('y')]);
    }
}
