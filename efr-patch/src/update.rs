//! The new text of an updated file: place each chunk ([`super::seek`]), then rebuild the file around the places.
//!
//! Only the lines a chunk removes or adds change. A context line keeps the file's own text and ending, even when it
//! matched at a whitespace-tolerant level; an added line takes the file's dominant ending (`\r\n` in a CRLF file);
//! a file without a final newline still has none after the edit, and one with a final newline keeps it.
//!
//! A chunk that is not found is tried once more without its trailing empty context lines, since models often write
//! one for the file's final newline or as a separator.

use super::parse::{Chunk, ChunkLine};
use super::seek::{Keys, Miss, Target, locate};
use super::text::{Line, TextFile};

/// Why a chunk could not be applied to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkError {
    /// The patch line (1-based) where the chunk starts.
    pub chunk_line: usize,
    /// What went wrong.
    pub kind: ChunkErrorKind,
}

/// What went wrong with a chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkErrorKind {
    /// An `@@` header matched no line at or after `from_line` (1-based).
    HeaderNotFound {
        /// The header as the patch wrote it.
        header: String,
        /// The file line (1-based) where the search started.
        from_line: usize,
    },
    /// The chunk's context and removed lines matched nowhere at or after `from_line` (1-based).
    LinesNotFound {
        /// The lines the chunk expected.
        expected: Vec<String>,
        /// The file line (1-based) where the search started.
        from_line: usize,
        /// Whether the lines had to end the file (`*** End of File`).
        end_of_file: bool,
    },
    /// The chunk matched at more than one place; `lines` are their first lines (1-based).
    Ambiguous {
        /// The file lines (1-based) where the matches start.
        lines: Vec<usize>,
    },
}

/// One placed chunk: where it starts in the old file, and the lines it applies (trailing empty context maybe gone).
struct Placed<'c> {
    start: usize,
    lines: &'c [ChunkLine],
}

/// Applies `chunks` to `text`.
///
/// # Errors
///
/// [`ChunkError`] for the first chunk that has no place or more than one.
pub fn apply_chunks(text: &str, chunks: &[Chunk]) -> Result<String, ChunkError> {
    let file = TextFile::parse(text);
    let final_newline = file.ends_with_newline();
    let texts = file.texts();
    let keys = Keys::new(&texts);
    let mut cursor = 0;
    let mut placed: Vec<Placed<'_>> = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let (start, lines) = place(&keys, chunk, cursor)?;
        let expected = lines.iter().filter(|line| !matches!(line, ChunkLine::Add(_))).count();
        // An append at the end (no header, no expected lines) leaves the cursor: later chunks still search from it.
        if expected > 0 || !chunk.headers.is_empty() {
            cursor = start + expected;
        }
        placed.push(Placed { start, lines });
    }
    // Places only move forward (the cursor never goes back) except appends, which sit at the very end; a stable sort
    // puts those last and keeps the patch's order among insertions at one point.
    placed.sort_by_key(|placed| placed.start);

    let mut lines: Vec<Line> = Vec::with_capacity(file.lines.len());
    let mut at = 0;
    for Placed {
        start,
        lines: chunk_lines,
    } in placed
    {
        lines.extend_from_slice(&file.lines[at..start]);
        at = start;
        for line in chunk_lines {
            match line {
                ChunkLine::Context(_) => {
                    lines.push(file.lines[at].clone());
                    at += 1;
                }
                ChunkLine::Remove(_) => at += 1,
                ChunkLine::Add(text) => lines.push(Line {
                    text: text.clone(),
                    eol: file.eol,
                }),
            }
        }
    }
    lines.extend_from_slice(&file.lines[at..]);
    let mut new = TextFile {
        bom: file.bom,
        lines,
        eol: file.eol,
    };
    new.settle_endings(final_newline);
    Ok(new.render())
}

/// The place of one chunk, retried without trailing empty context lines when it is not found.
fn place<'c>(keys: &Keys<'_>, chunk: &'c Chunk, cursor: usize) -> Result<(usize, &'c [ChunkLine]), ChunkError> {
    let error = |kind| ChunkError {
        chunk_line: chunk.line,
        kind,
    };
    let all = chunk.lines.as_slice();
    let miss = match try_place(keys, chunk, all, cursor) {
        Ok(start) => return Ok((start, all)),
        Err(Miss::Ambiguous(starts)) => return Err(error(ambiguous(&starts))),
        Err(miss) => miss,
    };
    let blank = ChunkLine::Context(String::new());
    let trimmed_len = all.iter().rposition(|line| *line != blank).map_or(0, |last| last + 1);
    if trimmed_len < all.len() {
        let trimmed = &all[..trimmed_len];
        match try_place(keys, chunk, trimmed, cursor) {
            Ok(start) => return Ok((start, trimmed)),
            Err(Miss::Ambiguous(starts)) => return Err(error(ambiguous(&starts))),
            Err(_) => {}
        }
    }
    let from_line = cursor + 1;
    Err(error(match miss {
        Miss::Header(index) => ChunkErrorKind::HeaderNotFound {
            header: chunk.headers[index].clone(),
            from_line,
        },
        Miss::Lines | Miss::Ambiguous(_) => ChunkErrorKind::LinesNotFound {
            expected: chunk.old_lines().map(str::to_owned).collect(),
            from_line,
            end_of_file: chunk.end_of_file,
        },
    }))
}

fn try_place(keys: &Keys<'_>, chunk: &Chunk, lines: &[ChunkLine], cursor: usize) -> Result<usize, Miss> {
    let expected: Vec<&str> = lines
        .iter()
        .filter_map(|line| match line {
            ChunkLine::Context(text) | ChunkLine::Remove(text) => Some(text.as_str()),
            ChunkLine::Add(_) => None,
        })
        .collect();
    let target = Target {
        headers: &chunk.headers,
        lines: &expected,
        end_of_file: chunk.end_of_file,
    };
    locate(keys, target, cursor).map(|place| place.start)
}

fn ambiguous(starts: &[usize]) -> ChunkErrorKind {
    ChunkErrorKind::Ambiguous {
        lines: starts.iter().map(|start| start + 1).collect(),
    }
}
