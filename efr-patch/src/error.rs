//! Why a patch was not applied. Every message names the file and says what to change, since it goes back to the
//! model as the tool's output; after any of these errors no file has changed, except as
//! [`ApplyError::RollbackIncomplete`] says.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use super::parse::ParseError;
use super::update::{ChunkError, ChunkErrorKind};

/// A patch that was refused, or that failed and was rolled back.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The text is not a patch.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The working directory given with the call is relative, so relative paths would have no meaning.
    #[error("the working directory must be an absolute path, got {}", .0.display())]
    RelativeCwd(PathBuf),
    /// `*** Add File` names a path that exists.
    #[error("cannot add {}: it already exists; use `*** Update File: ` to change it", .path.display())]
    AlreadyExists {
        /// The resolved path.
        path: PathBuf,
    },
    /// `*** Update File` or `*** Delete File` names a path that does not exist.
    #[error("cannot {op} {}: no such file", .path.display())]
    NotFound {
        /// `update` or `delete`.
        op: &'static str,
        /// The resolved path.
        path: PathBuf,
    },
    /// `*** Update File` or `*** Delete File` names a directory or another file that is not a regular file.
    #[error("cannot {op} {}: not a regular file", .path.display())]
    NotAFile {
        /// `update` or `delete`.
        op: &'static str,
        /// The resolved path.
        path: PathBuf,
    },
    /// `*** Update File` with chunks names a binary file.
    #[error("cannot update {}: it is a binary file ({why}); apply_patch edits text files only", .path.display())]
    Binary {
        /// The resolved path.
        path: PathBuf,
        /// What makes it binary: a NUL byte or invalid UTF-8, and where.
        why: String,
    },
    /// `*** Move to` names a path that exists.
    #[error("cannot move {} to {}: the target already exists", .from.display(), .path.display())]
    MoveTargetExists {
        /// The file that would move.
        from: PathBuf,
        /// The resolved target.
        path: PathBuf,
    },
    /// A chunk of an update has no place in the file, or more than one.
    #[error("{}", chunk_message(.path, .error))]
    Chunk {
        /// The resolved path.
        path: PathBuf,
        /// Which chunk, and what went wrong.
        error: ChunkError,
    },
    /// A file changed on disk between the plan and the write.
    #[error("{} changed while the patch was prepared; nothing was written, apply the patch again", .path.display())]
    Changed {
        /// The resolved path.
        path: PathBuf,
    },
    /// Reading or writing a file failed; whatever the patch had written before was restored.
    #[error("cannot {op} {}: {source}; no file was changed", .path.display())]
    Io {
        /// What was being done: `read`, `write`, `remove`, `create the folder of`.
        op: &'static str,
        /// The path at fault.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// A write failed and the restore of what was already written failed too: the files listed are left changed.
    #[error(
        "cannot {op} {}: {source}; restoring the files already written failed too, these are left changed: {}",
        .path.display(), paths(.unrestored)
    )]
    RollbackIncomplete {
        /// What was being done when the first failure happened.
        op: &'static str,
        /// The path of the first failure.
        path: PathBuf,
        /// The first failure.
        source: io::Error,
        /// The paths that could not be put back.
        unrestored: Vec<PathBuf>,
    },
}

fn paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lines of a chunk shown in an error: at most this many, each cut to 200 characters.
const SHOWN_LINES: usize = 12;

fn chunk_message(path: &Path, error: &ChunkError) -> String {
    let path = path.display();
    let at = error.chunk_line;
    match &error.kind {
        ChunkErrorKind::HeaderNotFound { header, from_line } => {
            format!(
                "{path}: the chunk at patch line {at}: `@@ {header}` matches no line of the file from line {from_line} on"
            )
        }
        ChunkErrorKind::LinesNotFound {
            expected,
            from_line,
            end_of_file,
        } => {
            let mut message = format!(
                "{path}: the chunk at patch line {at}: its context and removed lines match nowhere from file line \
                 {from_line} on{}; the file must hold these lines{}:",
                if *end_of_file { " at the end of the file" } else { "" },
                if *end_of_file { " as its last lines" } else { "" },
            );
            for line in expected.iter().take(SHOWN_LINES) {
                let cut = line
                    .char_indices()
                    .nth(200)
                    .map_or(line.as_str(), |(end, _)| &line[..end]);
                let _ = write!(message, "\n  {cut}");
            }
            if expected.len() > SHOWN_LINES {
                let _ = write!(message, "\n  ... {} more lines", expected.len() - SHOWN_LINES);
            }
            message
        }
        ChunkErrorKind::Ambiguous { lines } => {
            let places = lines.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
            format!(
                "{path}: the chunk at patch line {at} matches {} places (file lines {places}); add context lines or \
                 an `@@` line that tells them apart",
                lines.len()
            )
        }
    }
}
