//! The `*** Begin Patch` text to a typed [`Patch`], or a [`ParseError`] that names the line and what was expected.
//!
//! The grammar, as current OpenAI/Codex models write it (a line is a line of the text; `*` markers may carry
//! whitespace around them):
//!
//! ```text
//! patch   := "*** Begin Patch" { file-op } "*** End Patch"
//! file-op := "*** Add File: " path { "+" text }
//!          | "*** Delete File: " path
//!          | "*** Update File: " path [ "*** Move to: " path ] { chunk }
//! chunk   := { "@@" [ " " header ] } { " " text | "-" text | "+" text | "" } [ "*** End of File" ]
//! ```
//!
//! The first chunk of an update may leave out its `@@` line. Several `@@ header` lines in a row narrow the search
//! step by step (`@@ impl Foo`, then `@@ fn bar`). An empty line inside a chunk is an empty context line. Blank lines
//! before and after the whole patch are ignored; text outside the two envelope lines is an error, not a guess.

use std::fmt;
use std::path::PathBuf;

/// The first line of a patch.
pub const BEGIN_PATCH: &str = "*** Begin Patch";
/// The last line of a patch.
pub const END_PATCH: &str = "*** End Patch";
const ADD_FILE: &str = "*** Add File: ";
const DELETE_FILE: &str = "*** Delete File: ";
const UPDATE_FILE: &str = "*** Update File: ";
const MOVE_TO: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// A parsed patch: its file operations in the order the text gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// One entry per `*** Add File`, `*** Delete File` or `*** Update File` section; never empty.
    pub hunks: Vec<FileOp>,
}

/// One file operation of a patch. Paths are as written: relative ones resolve against the call's working directory
/// when the patch is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// `*** Add File`: create a file that must not exist yet.
    Add {
        /// The new file.
        path: PathBuf,
        /// Its text: every `+` line followed by `\n` (an added file always ends with a newline; empty when the
        /// section has no line).
        content: String,
        /// The patch line (1-based) of the header.
        line: usize,
    },
    /// `*** Delete File`: remove a file that must exist.
    Delete {
        /// The file to remove.
        path: PathBuf,
        /// The patch line (1-based) of the header.
        line: usize,
    },
    /// `*** Update File`: change a text file in place, and with `move_to` rename it.
    Update {
        /// The file to change.
        path: PathBuf,
        /// `*** Move to`: where the file goes; it must not exist yet.
        move_to: Option<PathBuf>,
        /// The chunks in file order; empty only for a pure rename.
        chunks: Vec<Chunk>,
        /// The patch line (1-based) of the header.
        line: usize,
    },
}

impl FileOp {
    /// The path the operation names first (the source of a move).
    #[must_use]
    pub fn path(&self) -> &std::path::Path {
        match self {
            Self::Add { path, .. } | Self::Delete { path, .. } | Self::Update { path, .. } => path,
        }
    }
}

/// One chunk of an update: where it goes (`@@` headers and context) and what it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The `@@ header` lines, outermost first; each is a line of the file (compared as context lines are) that the
    /// chunk's lines follow. Empty for a bare `@@` or none.
    pub headers: Vec<String>,
    /// The lines in order; context and removed lines are the lines the chunk expects in the file.
    pub lines: Vec<ChunkLine>,
    /// `*** End of File`: the chunk's expected lines end the file.
    pub end_of_file: bool,
    /// The patch line (1-based) where the chunk starts (its first `@@` or first line).
    pub line: usize,
}

impl Chunk {
    /// The lines the chunk expects in the file: context and removed lines, in order.
    pub fn old_lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter_map(|line| match line {
            ChunkLine::Context(text) | ChunkLine::Remove(text) => Some(text.as_str()),
            ChunkLine::Add(_) => None,
        })
    }

    /// The lines the chunk leaves: context and added lines, in order.
    pub fn new_lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter_map(|line| match line {
            ChunkLine::Context(text) | ChunkLine::Add(text) => Some(text.as_str()),
            ChunkLine::Remove(_) => None,
        })
    }
}

/// One line of a chunk, without its one-character prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkLine {
    /// ` text` (or an empty line): a line that stays.
    Context(String),
    /// `-text`: a line that goes.
    Remove(String),
    /// `+text`: a line that comes.
    Add(String),
}

/// A patch text that does not follow the grammar: where, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// The patch line (1-based) at fault.
    pub line: usize,
    /// What was expected and what was found, in a sentence.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid patch, line {}: {}", self.line, self.message)
    }
}

fn error(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

/// Shortens a patch line for an error message, so that a long line does not flood the model's context.
fn shown(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("`{}…`", &text[..cut]),
        None => format!("`{text}`"),
    }
}

/// Parses a patch.
///
/// # Errors
///
/// [`ParseError`] with the 1-based line and what was expected: a missing `*** Begin Patch` first line or
/// `*** End Patch` last line, an unknown header, an Add File line without `+`, a Delete File with lines, an Update File
/// without chunks, a chunk without lines, a unified-diff range (`@@ -1,3 +1,4 @@`) in place of a header, a line that
/// is no chunk line, an empty path, or a patch without file operations.
pub fn parse(text: &str) -> Result<Patch, ParseError> {
    // `str::lines` also drops a `\r` before each `\n`, so a patch written with CRLF parses the same.
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.iter().position(|line| !line.trim().is_empty());
    let last = lines.iter().rposition(|line| !line.trim().is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return Err(error(
            1,
            format!("the patch is empty; it must start with `{BEGIN_PATCH}`"),
        ));
    };
    if lines[first].trim() != BEGIN_PATCH {
        return Err(error(
            first + 1,
            format!("expected `{BEGIN_PATCH}`, found {}", shown(lines[first])),
        ));
    }
    if last == first || lines[last].trim() != END_PATCH {
        return Err(error(
            last + 1,
            format!("expected `{END_PATCH}` as the last line, found {}", shown(lines[last])),
        ));
    }
    let mut parser = Parser {
        lines: &lines,
        at: first + 1,
        end: last,
    };
    let mut hunks = Vec::new();
    while let Some(op) = parser.file_op()? {
        hunks.push(op);
    }
    if hunks.is_empty() {
        return Err(error(
            last + 1,
            "the patch has no file operation; expected `*** Add File: `, `*** Delete File: ` or `*** Update File: `",
        ));
    }
    Ok(Patch { hunks })
}

/// A cursor over the lines between the envelope lines; `at` and `end` are 0-based indexes.
struct Parser<'a> {
    lines: &'a [&'a str],
    at: usize,
    end: usize,
}

impl Parser<'_> {
    /// The 1-based number of the line at `index`.
    fn number(index: usize) -> usize {
        index + 1
    }

    fn skip_blank(&mut self) {
        while self.at < self.end && self.lines[self.at].trim().is_empty() {
            self.at += 1;
        }
    }

    /// A line that ends an Add or Delete section: any `***` marker, even indented.
    fn is_marker(line: &str) -> bool {
        line.trim_start().starts_with("***")
    }

    /// A line that ends an Update chunk: a `***` marker at the start of the line. An indented one is a context line
    /// (` *** x` is the line `*** x` of the file), since every chunk line starts with its one-character prefix.
    fn is_chunk_marker(line: &str) -> bool {
        line.starts_with("***")
    }

    fn file_op(&mut self) -> Result<Option<FileOp>, ParseError> {
        self.skip_blank();
        if self.at >= self.end {
            return Ok(None);
        }
        let index = self.at;
        let line = self.lines[index].trim();
        self.at += 1;
        if let Some(path) = line.strip_prefix(ADD_FILE.trim_end()) {
            let path = path_of(path, index, "Add File")?;
            return self.add(path, index).map(Some);
        }
        if let Some(path) = line.strip_prefix(DELETE_FILE.trim_end()) {
            let path = path_of(path, index, "Delete File")?;
            self.expect_no_lines("Delete File")?;
            return Ok(Some(FileOp::Delete {
                path,
                line: Self::number(index),
            }));
        }
        if let Some(path) = line.strip_prefix(UPDATE_FILE.trim_end()) {
            let path = path_of(path, index, "Update File")?;
            return self.update(path, index).map(Some);
        }
        let found = if line == END_OF_FILE {
            format!("{} outside an Update File chunk", shown(line))
        } else if line.starts_with(MOVE_TO.trim_end()) {
            format!("{} that does not follow its `*** Update File: ` line", shown(line))
        } else {
            shown(self.lines[index])
        };
        Err(error(
            Self::number(index),
            format!("expected `*** Add File: `, `*** Delete File: ` or `*** Update File: `, found {found}"),
        ))
    }

    fn add(&mut self, path: PathBuf, header: usize) -> Result<FileOp, ParseError> {
        let mut content = String::new();
        while self.at < self.end && !Self::is_marker(self.lines[self.at]) {
            let index = self.at;
            let line = self.lines[index];
            if let Some(text) = line.strip_prefix('+') {
                content.push_str(text);
                content.push('\n');
            } else if line.trim().is_empty() && self.only_blank_until_marker(index) {
                // Blank lines between sections are separators, not content.
                break;
            } else {
                return Err(error(
                    Self::number(index),
                    format!(
                        "every line of an added file starts with `+` (an empty line is a lone `+`), found {}",
                        shown(line)
                    ),
                ));
            }
            self.at += 1;
        }
        Ok(FileOp::Add {
            path,
            content,
            line: Self::number(header),
        })
    }

    /// Whether every line from `index` to the next marker (or the end) is blank.
    fn only_blank_until_marker(&self, index: usize) -> bool {
        self.lines[index..self.end]
            .iter()
            .take_while(|line| !Self::is_marker(line))
            .all(|line| line.trim().is_empty())
    }

    fn expect_no_lines(&mut self, what: &str) -> Result<(), ParseError> {
        self.skip_blank();
        if self.at < self.end && !Self::is_marker(self.lines[self.at]) {
            return Err(error(
                Self::number(self.at),
                format!("`*** {what}: ` takes no lines, found {}", shown(self.lines[self.at])),
            ));
        }
        Ok(())
    }

    fn update(&mut self, path: PathBuf, header: usize) -> Result<FileOp, ParseError> {
        let mut move_to = None;
        if self.at < self.end
            && let Some(target) = self.lines[self.at].trim().strip_prefix(MOVE_TO.trim_end())
        {
            move_to = Some(path_of(target, self.at, "Move to")?);
            self.at += 1;
        }
        let chunks = self.chunks()?;
        for chunk in &chunks {
            // Blank lines alone say nothing: they are separators, not a change.
            if chunk
                .lines
                .iter()
                .all(|line| *line == ChunkLine::Context(String::new()))
            {
                return Err(error(
                    chunk.line,
                    "the chunk has no lines; expected ` `, `-` or `+` lines after `@@`",
                ));
            }
        }
        if chunks.is_empty() && move_to.is_none() {
            return Err(error(
                Self::number(header),
                "`*** Update File: ` needs at least one chunk (or a `*** Move to: ` line)",
            ));
        }
        Ok(FileOp::Update {
            path,
            move_to,
            chunks,
            line: Self::number(header),
        })
    }

    /// The chunks of an update, up to the next file's marker: `@@` lines start (or narrow) a chunk, `*** End of
    /// File` ends one at the file's end, blank lines between chunks separate them.
    fn chunks(&mut self) -> Result<Vec<Chunk>, ParseError> {
        let mut chunks: Vec<Chunk> = Vec::new();
        // The chunk being read; `None` between chunks.
        let mut current: Option<Chunk> = None;
        while self.at < self.end {
            let index = self.at;
            let line = self.lines[index];
            if Self::is_chunk_marker(line) {
                if line.trim() != END_OF_FILE {
                    break;
                }
                let Some(mut chunk) = current.take().filter(|chunk| !chunk.lines.is_empty()) else {
                    return Err(error(
                        Self::number(index),
                        "`*** End of File` must follow the lines of a chunk",
                    ));
                };
                chunk.end_of_file = true;
                chunks.push(chunk);
                self.at += 1;
                continue;
            }
            if let Some(rest) = line.strip_prefix("@@") {
                let header = header_of(rest, index)?;
                match current.as_mut() {
                    // `@@` lines in a row narrow one chunk.
                    Some(chunk) if chunk.lines.is_empty() => chunk.headers.extend(header),
                    _ => {
                        if let Some(done) = current.take() {
                            chunks.push(done);
                        }
                        current = Some(Chunk {
                            headers: header.into_iter().collect(),
                            lines: Vec::new(),
                            end_of_file: false,
                            line: Self::number(index),
                        });
                    }
                }
                self.at += 1;
                continue;
            }
            if current.is_none() && line.trim().is_empty() {
                // Blank lines between chunks are separators.
                self.at += 1;
                continue;
            }
            let chunk_line = Self::chunk_line(line, index)?;
            match current.as_mut() {
                Some(chunk) => chunk.lines.push(chunk_line),
                None if chunks.is_empty() => {
                    // The first chunk may leave out its `@@` line.
                    current = Some(Chunk {
                        headers: Vec::new(),
                        lines: vec![chunk_line],
                        end_of_file: false,
                        line: Self::number(index),
                    });
                }
                None => {
                    return Err(error(
                        Self::number(index),
                        format!(
                            "expected `@@` to start the next chunk after `*** End of File`, found {}",
                            shown(line)
                        ),
                    ));
                }
            }
            self.at += 1;
        }
        if let Some(chunk) = current.take() {
            chunks.push(chunk);
        }
        Ok(chunks)
    }

    /// One line of a chunk: context, removed or added.
    fn chunk_line(line: &str, index: usize) -> Result<ChunkLine, ParseError> {
        Ok(match line.chars().next() {
            None => ChunkLine::Context(String::new()),
            Some(' ') => ChunkLine::Context(line[1..].to_owned()),
            Some('-') => ChunkLine::Remove(line[1..].to_owned()),
            Some('+') => ChunkLine::Add(line[1..].to_owned()),
            Some(_) => {
                return Err(error(
                    Self::number(index),
                    format!(
                        "expected a chunk line starting with ` ` (context), `-` (removed), `+` (added) or `@@`, \
                         found {}",
                        shown(line)
                    ),
                ));
            }
        })
    }
}

/// The path after a header marker, trimmed; an empty one is an error.
fn path_of(text: &str, index: usize, what: &str) -> Result<PathBuf, ParseError> {
    let path = text.trim();
    if path.is_empty() {
        return Err(error(index + 1, format!("`*** {what}: ` needs a path")));
    }
    if path.contains('\0') {
        return Err(error(index + 1, format!("the path of `*** {what}: ` holds a NUL byte")));
    }
    Ok(PathBuf::from(path))
}

/// The header of an `@@` line (`rest` is what follows `@@`): `None` for a bare `@@`.
fn header_of(rest: &str, index: usize) -> Result<Option<String>, ParseError> {
    if rest.trim().is_empty() {
        return Ok(None);
    }
    let Some(header) = rest.strip_prefix(' ') else {
        return Err(error(
            index + 1,
            format!("expected `@@` or `@@ <a line of the file>`, found {}", shown(rest)),
        ));
    };
    if is_unified_range(header) {
        return Err(error(
            index + 1,
            format!(
                "{} is a unified-diff line range; this format takes `@@` or `@@ <a line of the file>` and finds the \
                 place by its context lines",
                shown(&format!("@@{rest}"))
            ),
        ));
    }
    Ok(Some(header.to_owned()))
}

/// Whether `text` starts like `-12,3 +12,4 @@` (the range of a unified diff hunk).
fn is_unified_range(text: &str) -> bool {
    let mut parts = text.split_whitespace();
    let is_range = |part: Option<&str>, sign: char| {
        part.and_then(|part| part.strip_prefix(sign)).is_some_and(|range| {
            !range.is_empty()
                && range
                    .split(',')
                    .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    is_range(parts.next(), '-') && is_range(parts.next(), '+')
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
