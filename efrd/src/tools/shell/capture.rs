//! From pty bytes to markers and plain text.
//!
//! Every byte the hidden shell's terminal prints goes through a `vte` parser into [`Capture`]. The parser gives
//! characters (UTF-8 decoded across reads), C0 controls, and whole OSC strings, so a marker split over two reads is
//! still one marker, and an escape sequence never reaches the text. Markers are OSC strings of the form
//!
//! ```text
//! ESC ] 6973 ; <nonce> ; R BEL              the rc file ran: the shell is ready
//! ESC ] 6973 ; <nonce> ; S ; <run> BEL      the run's command starts (typed line)
//! ESC ] 6973 ; <nonce> ; E ; <run> ; <status> BEL
//!                                           the run ended (typed line, or the prompt hook after an interrupt)
//! ```
//!
//! where the nonce is random per shell, so output that merely looks like a marker is text. Text is captured only
//! between a run's start and end markers, which leaves out the echo of the typed line and the prompt.
//!
//! [`OscGuard`] bounds what an OSC string may cost: `vte` with `std` buffers an OSC without limit, and both this
//! parser and the screen's see every byte, so a command printing `ESC ]` and then 50 MiB would otherwise grow memory.

use super::output::OutputWindow;

/// The OSC number of efr's markers (no terminal assigns it).
pub(crate) const MARKER_OSC: &str = "6973";

/// The longest OSC string passed on; longer ones are ended early with a BEL.
const MAX_OSC_BYTES: usize = 4096;

/// A marker the shell printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    /// The rc file ran to its end.
    Ready,
    /// The run with this id started its command.
    Start(u64),
    /// The run with this id ended with this status (`$?`).
    End(u64, i32),
}

/// The `vte` performer of the hidden shell: finds markers, captures the active run's text.
#[derive(Debug)]
pub(crate) struct Capture {
    nonce: String,
    /// The run whose markers count; markers of any other run (a late prompt-hook marker) are ignored.
    active: Option<u64>,
    capturing: bool,
    /// Markers seen since the caller last took them, in order.
    pub(crate) markers: Vec<Marker>,
    /// The active run's text.
    pub(crate) window: OutputWindow,
    /// Bytes of text captured since the caller last reset it (used to see output go quiet).
    pub(crate) captured_since: u64,
    /// Set at a start marker: the parser stops right after it (`advance_until_terminated`), so the caller can mark
    /// the screen at that exact point; the caller clears it.
    pub(crate) paused: bool,
    /// Set once the run was moved to a background job: its text also goes to `tapped` (`\r` dropped), which the
    /// caller takes.
    pub(crate) tap: bool,
    /// The text captured for the tap since the caller last took it.
    pub(crate) tapped: String,
}

impl Capture {
    pub(crate) fn new(nonce: String) -> Self {
        Self {
            nonce,
            active: None,
            capturing: false,
            markers: Vec::new(),
            window: OutputWindow::for_client(),
            captured_since: 0,
            paused: false,
            tap: false,
            tapped: String::new(),
        }
    }

    /// Makes `run` the active run with a fresh window; its text is captured from its start marker on.
    pub(crate) fn begin(&mut self, run: u64) {
        self.active = Some(run);
        self.capturing = false;
        self.window = OutputWindow::for_client();
    }

    /// Ends capturing; markers of the last run are ignored from now on.
    pub(crate) fn finish(&mut self) {
        self.active = None;
        self.capturing = false;
        self.tap = false;
    }

    fn marker(&self, params: &[&[u8]]) -> Option<Marker> {
        let [osc, nonce, kind, rest @ ..] = params else {
            return None;
        };
        if *osc != MARKER_OSC.as_bytes() || *nonce != self.nonce.as_bytes() {
            return None;
        }
        let number = |bytes: &[u8]| std::str::from_utf8(bytes).ok()?.parse::<i64>().ok();
        match (*kind, rest) {
            (b"R", []) => Some(Marker::Ready),
            (b"S", [run]) => Some(Marker::Start(u64::try_from(number(run)?).ok()?)),
            (b"E", [run, status]) => {
                let run = u64::try_from(number(run)?).ok()?;
                let status = i32::try_from(number(status)?).ok()?;
                Some(Marker::End(run, status))
            }
            _ => None,
        }
    }
}

impl vte::Perform for Capture {
    fn print(&mut self, c: char) {
        if self.capturing {
            self.captured_since += c.len_utf8() as u64;
            self.window.push_char(c);
            if self.tap {
                self.tapped.push(c);
            }
        }
    }

    fn execute(&mut self, byte: u8) {
        if !self.capturing {
            return;
        }
        self.captured_since += 1;
        if self.tap && matches!(byte, b'\n' | b'\t') {
            self.tapped.push(char::from(byte));
        }
        match byte {
            b'\n' => self.window.newline(),
            b'\r' => self.window.carriage_return(),
            b'\t' => self.window.push_char('\t'),
            0x08 => self.window.backspace(),
            _ => {}
        }
    }

    fn osc_dispatch(&mut self, params: &[&[u8]], _bell_terminated: bool) {
        let Some(marker) = self.marker(params) else {
            return;
        };
        match marker {
            Marker::Ready => {}
            Marker::Start(run) | Marker::End(run, _) if Some(run) != self.active => return,
            Marker::Start(_) => {
                self.capturing = true;
                self.paused = true;
            }
            Marker::End(..) => self.capturing = false,
        }
        self.markers.push(marker);
    }

    fn terminated(&self) -> bool {
        self.paused
    }
}

/// Ends OSC strings that grow past [`MAX_OSC_BYTES`] by inserting a BEL, so no parser buffers more than that.
#[derive(Debug, Default)]
pub(crate) struct OscGuard {
    state: GuardState,
    len: usize,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum GuardState {
    #[default]
    Ground,
    Escape,
    Osc,
    OscEscape,
}

impl OscGuard {
    /// Returns `bytes`, or a copy with a BEL inserted where an OSC string reached the limit.
    pub(crate) fn filter<'a>(&mut self, bytes: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        let mut out: Option<Vec<u8>> = None;
        for (i, &byte) in bytes.iter().enumerate() {
            let mut cut = false;
            self.state = match (self.state, byte) {
                (GuardState::Ground, 0x1b) => GuardState::Escape,
                (GuardState::Ground, _) => GuardState::Ground,
                (GuardState::Escape, b']') => {
                    self.len = 0;
                    GuardState::Osc
                }
                (GuardState::Escape, 0x1b) => GuardState::Escape,
                (GuardState::Escape, _) => GuardState::Ground,
                (GuardState::Osc | GuardState::OscEscape, 0x07 | 0x18 | 0x1a) => GuardState::Ground,
                (GuardState::Osc | GuardState::OscEscape, 0x1b) => GuardState::OscEscape,
                (GuardState::OscEscape, b'\\') => GuardState::Ground,
                (GuardState::Osc | GuardState::OscEscape, _) => {
                    self.len += 1;
                    if self.len >= MAX_OSC_BYTES {
                        cut = true;
                        GuardState::Ground
                    } else {
                        GuardState::Osc
                    }
                }
            };
            if let Some(out) = out.as_mut() {
                out.push(byte);
            }
            if cut {
                let out = out.get_or_insert_with(|| bytes[..=i].to_vec());
                out.push(0x07);
            }
        }
        match out {
            Some(out) => std::borrow::Cow::Owned(out),
            None => std::borrow::Cow::Borrowed(bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(capture: &mut Capture, bytes: &[u8]) {
        let mut parser = vte::Parser::new();
        parser.advance(capture, bytes);
    }

    #[test]
    fn captures_only_between_the_active_runs_markers() {
        let mut capture = Capture::new("n0nce".into());
        capture.begin(7);
        let mut parser = vte::Parser::new();
        let stream =
            b"$ typed line\r\n\x1b]6973;n0nce;S;7\x07hello \x1b[31mred\x1b[0m\r\nno end\x1b]6973;n0nce;E;7;3\x07$ ";
        // Split at every position: markers and escapes must survive any read boundary.
        for chunk in stream.chunks(3) {
            parser.advance(&mut capture, chunk);
        }
        assert_eq!(capture.markers, vec![Marker::Start(7), Marker::End(7, 3)]);
        let out = capture.window.snapshot();
        assert_eq!(out.for_client(), "hello red\nno end");
    }

    #[test]
    fn ignores_markers_of_other_runs_and_other_nonces() {
        let mut capture = Capture::new("abc".into());
        capture.begin(2);
        feed(
            &mut capture,
            b"\x1b]6973;abc;E;1;0\x07\x1b]6973;xyz;S;2\x07\x1b]6973;abc;S;2\x07x\x1b]6973;abc;E;2;bad\x07",
        );
        assert_eq!(capture.markers, vec![Marker::Start(2)]);
        assert_eq!(capture.window.snapshot().for_client(), "x");
    }

    #[test]
    fn reads_the_ready_marker_and_unicode() {
        let mut capture = Capture::new("n".into());
        capture.begin(1);
        feed(
            &mut capture,
            "\x1b]6973;n;R\x07\x1b]6973;n;S;1\x07größe 🙂\r\n".as_bytes(),
        );
        assert_eq!(capture.markers, vec![Marker::Ready, Marker::Start(1)]);
        assert_eq!(capture.window.snapshot().for_client(), "größe 🙂\n");
    }

    #[test]
    fn guard_ends_a_runaway_osc() {
        let mut guard = OscGuard::default();
        let mut stream = b"\x1b]0;".to_vec();
        stream.extend(std::iter::repeat_n(b'a', MAX_OSC_BYTES * 3));
        let filtered: Vec<u8> = stream.chunks(1000).flat_map(|c| guard.filter(c).into_owned()).collect();
        assert_eq!(filtered.iter().filter(|b| **b == 0x07).count(), 1);
        assert_eq!(filtered.len(), stream.len() + 1);
        // A marker after the cut still parses as a marker, and short OSCs pass untouched.
        let marker = b"\x1b]6973;n;R\x07";
        assert!(matches!(guard.filter(marker), std::borrow::Cow::Borrowed(_)));
    }
}
