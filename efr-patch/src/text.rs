//! A text file as lines that remember their own line ending, so that an edit changes only the lines it names.
//!
//! A file is text when it holds no NUL byte and is valid UTF-8; anything else is binary and is never edited. Each
//! line keeps its terminator (`\n`, `\r\n`, or none for a last line without a final newline), and a leading UTF-8
//! byte order mark is set aside so that it never takes part in matching. New lines get the file's dominant ending:
//! `\r\n` when most terminated lines use it, else `\n`.

/// Why bytes are not text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    /// A NUL byte at this byte offset.
    Nul(usize),
    /// Invalid UTF-8 at this byte offset.
    InvalidUtf8(usize),
}

impl std::fmt::Display for Binary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Nul(at) => write!(f, "a NUL byte at byte {at}"),
            Self::InvalidUtf8(at) => write!(f, "invalid UTF-8 at byte {at}"),
        }
    }
}

/// Returns the bytes as text, or why they are binary.
///
/// # Errors
///
/// [`Binary`] when the bytes hold a NUL byte or are not valid UTF-8.
pub fn as_text(bytes: &[u8]) -> Result<&str, Binary> {
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return Err(Binary::Nul(at));
    }
    std::str::from_utf8(bytes).map_err(|e| Binary::InvalidUtf8(e.valid_up_to()))
}

/// The terminator of one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eol {
    /// `\n`.
    Lf,
    /// `\r\n`.
    CrLf,
    /// No terminator: the last line of a file without a final newline.
    None,
}

impl Eol {
    fn as_str(self) -> &'static str {
        match self {
            Self::Lf => "\n",
            Self::CrLf => "\r\n",
            Self::None => "",
        }
    }
}

/// One line: its text without the terminator, and the terminator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The text, without `\n` or `\r\n`.
    pub text: String,
    /// How the line ends.
    pub eol: Eol,
}

/// A text file split into lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    /// Whether the file starts with a UTF-8 byte order mark (kept out of the first line's text).
    pub bom: bool,
    /// The lines, in order; empty for an empty file.
    pub lines: Vec<Line>,
    /// The ending for new lines.
    pub eol: Eol,
}

const BOM: char = '\u{feff}';

impl TextFile {
    /// Splits text into lines.
    #[must_use]
    pub fn parse(text: &str) -> Self {
        let (bom, text) = match text.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let mut lines = Vec::new();
        let (mut lf, mut crlf) = (0_usize, 0_usize);
        for piece in text.split_inclusive('\n') {
            let line = if let Some(body) = piece.strip_suffix("\r\n") {
                crlf += 1;
                Line {
                    text: body.to_owned(),
                    eol: Eol::CrLf,
                }
            } else if let Some(body) = piece.strip_suffix('\n') {
                lf += 1;
                Line {
                    text: body.to_owned(),
                    eol: Eol::Lf,
                }
            } else {
                Line {
                    text: piece.to_owned(),
                    eol: Eol::None,
                }
            };
            lines.push(line);
        }
        let eol = if crlf > lf { Eol::CrLf } else { Eol::Lf };
        Self { bom, lines, eol }
    }

    /// Whether the last line ends with a terminator; true for an empty file, so that lines added to it end with one.
    #[must_use]
    pub fn ends_with_newline(&self) -> bool {
        self.lines.last().is_none_or(|line| line.eol != Eol::None)
    }

    /// The texts of the lines, for matching.
    #[must_use]
    pub fn texts(&self) -> Vec<&str> {
        self.lines.iter().map(|line| line.text.as_str()).collect()
    }

    /// The file's text: the byte order mark, then each line and its terminator.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(self.lines.iter().map(|line| line.text.len() + 2).sum::<usize>() + 3);
        if self.bom {
            out.push(BOM);
        }
        for line in &self.lines {
            out.push_str(&line.text);
            out.push_str(line.eol.as_str());
        }
        out
    }

    /// Makes every line but the last end with a terminator, and the last one end with one exactly when
    /// `final_newline` says so; lines that already have a terminator keep theirs.
    pub fn settle_endings(&mut self, final_newline: bool) {
        let eol = self.eol;
        let count = self.lines.len();
        for (index, line) in self.lines.iter_mut().enumerate() {
            let last = index + 1 == count;
            if last && !final_newline {
                line.eol = Eol::None;
            } else if line.eol == Eol::None {
                line.eol = eol;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_endings() {
        let file = TextFile::parse("a\r\nb\nc");
        assert_eq!(file.texts(), ["a", "b", "c"]);
        assert_eq!(
            file.lines.iter().map(|l| l.eol).collect::<Vec<_>>(),
            [Eol::CrLf, Eol::Lf, Eol::None]
        );
        assert!(!file.ends_with_newline());
        assert_eq!(file.render(), "a\r\nb\nc");
    }

    #[test]
    fn dominant_ending_is_the_majority() {
        assert_eq!(TextFile::parse("a\r\nb\r\nc\n").eol, Eol::CrLf);
        assert_eq!(TextFile::parse("a\r\nb\nc\n").eol, Eol::Lf);
        assert_eq!(TextFile::parse("").eol, Eol::Lf);
    }

    #[test]
    fn bom_stays_out_of_the_first_line() {
        let file = TextFile::parse("\u{feff}fn main() {}\n");
        assert!(file.bom);
        assert_eq!(file.texts(), ["fn main() {}"]);
        assert_eq!(file.render(), "\u{feff}fn main() {}\n");
    }

    #[test]
    fn binary_is_told_apart() {
        assert_eq!(as_text(b"ok\n"), Ok("ok\n"));
        assert_eq!(as_text(b"a\0b"), Err(Binary::Nul(1)));
        assert_eq!(as_text(b"ab\xff"), Err(Binary::InvalidUtf8(2)));
    }

    #[test]
    fn settle_endings_follows_the_final_newline_rule() {
        let mut file = TextFile::parse("a\r\nb\r\n");
        file.lines.push(Line {
            text: "c".into(),
            eol: Eol::None,
        });
        file.settle_endings(true);
        assert_eq!(file.render(), "a\r\nb\r\nc\r\n");
        let mut file = TextFile::parse("a\nb");
        file.lines.push(Line {
            text: "c".into(),
            eol: Eol::Lf,
        });
        file.settle_endings(false);
        assert_eq!(file.render(), "a\nb\nc");
    }
}
