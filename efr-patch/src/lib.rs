//! `apply_patch`: the parser and the atomic applier of the `*** Begin Patch` format (docs/architecture.md, "Tools").
//!
//! Current OpenAI/Codex models write file edits in this format, as the freeform input of the `apply_patch` tool:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path/new.txt
//! +line one
//! +line two
//! *** Delete File: path/old.txt
//! *** Update File: path/file.rs
//! *** Move to: path/renamed.rs
//! @@ fn context_line_or_empty
//!  context line
//! -removed line
//! +added line
//!  context line
//! *** End of File
//! *** End Patch
//! ```
//!
//! [`parse()`] turns the text into a typed [`Patch`] (the grammar is in [the `parse` module](mod@parse)); [`Plan::new`]
//! computes every new content without touching the disk; [`Plan::commit`] writes them all or none. [`apply`] and
//! [`apply_text`] do both steps.
//!
//! # Paths
//!
//! An absolute path stays as written; a relative one resolves against the call's working directory (`cwd`, which must
//! be absolute). Whether a path outside the project may change is for the policy to decide, from [`Plan::paths`],
//! before the commit. Adding a file that exists, updating or deleting one that does not, and moving onto a path that
//! exists are refused. A symlink to a file is updated through the link (the link stays a link); deleting it removes
//! the link.
//!
//! # Where a chunk goes
//!
//! - Lines are compared at four levels, strictest first: exact; ignoring trailing whitespace; ignoring leading and
//!   trailing whitespace; and that plus typographic dashes, quotes and spaces read as their ASCII forms. A looser
//!   level is tried only when no place matches at a stricter one.
//! - Chunks of a file are searched in order, each after the place of the one before.
//! - An `@@ header` line names a line of the file (compared the same way) that comes before the chunk, or is its
//!   first context line; several in a row narrow step by step (`@@ impl Foo`, then `@@ fn bar`). The chunk's lines are searched inside the header's
//!   section (the deeper-indented lines that follow it, such as a function's body), or, when nothing matches there or
//!   nothing deeper follows it, from the header on.
//! - Every place that the headers and the lines allow counts: two places at the best level make the chunk ambiguous,
//!   and the whole patch is refused with the lines of both, never a guess.
//! - `*** End of File`: the chunk's lines must be the last lines of the file.
//! - A chunk with only `+` lines goes right after its last `@@` header, or at the end of the file without one.
//! - A chunk that matches nowhere is tried once more without its trailing empty context lines.
//!
//! # What is kept
//!
//! Only the lines a chunk removes or adds change: a context line keeps the file's text even when it matched loosely.
//! A CRLF file keeps CRLF (new lines take the file's dominant ending); a file without a final newline still has none;
//! a UTF-8 byte order mark stays. Binary files (a NUL byte or invalid UTF-8) are refused for an update with chunks;
//! they may be deleted or moved as they are. File permission bits stay; new files get `0666` less the umask.
//!
//! # Atomic
//!
//! Every new content is computed first. Then each touched path must still be as it was read; each file is written to
//! a temporary file in its folder and renamed over the target; removals come last (a move writes the new path, then
//! removes the old one). If any step fails, everything already changed is restored from the originals kept in memory,
//! so every file changes or none does; [`ApplyError::RollbackIncomplete`] names what could not be restored in the
//! rare case that the restore fails too.
//!
//! ```no_run
//! # fn main() -> Result<(), efr_patch::ApplyError> {
//! use std::path::Path;
//! use efr_patch::{self as patch, Plan};
//!
//! let text = "*** Begin Patch\n*** Add File: hello.txt\n+Hello\n*** End Patch\n";
//! let plan = Plan::new(&patch::parse(text)?, Path::new("/home/me/project"))?;
//! for path in plan.paths() {
//!     println!("will change {}", path.display());
//! }
//! for file in plan.commit()? {
//!     println!("{:?} {} +{} -{}", file.kind, file.path.display(), file.added, file.removed);
//! }
//! # Ok(())
//! # }
//! ```

pub mod changes;
mod commit;
mod disk;
mod error;
mod folder;
pub mod parse;
mod plan;
mod seek;
mod text;
mod update;

use std::path::Path;

pub use error::ApplyError;
pub use parse::{Chunk, ChunkLine, FileOp, ParseError, Patch, parse};
pub use plan::{FileResult, Plan};
pub use update::{ChunkError, ChunkErrorKind};

/// Applies a parsed patch atomically, relative paths resolved against `cwd` (absolute); returns one
/// [`FileResult`] per file operation, in patch order.
///
/// # Errors
///
/// See [`Plan::new`] and [`Plan::commit`]; after an error no file has changed (except as
/// [`ApplyError::RollbackIncomplete`] says).
pub fn apply(patch: &Patch, cwd: &Path) -> Result<Vec<FileResult>, ApplyError> {
    Plan::new(patch, cwd)?.commit()
}

/// Parses and applies a patch text; see [`apply`].
///
/// # Errors
///
/// [`ApplyError::Parse`] for a text that is not a patch, else as [`apply`].
pub fn apply_text(text: &str, cwd: &Path) -> Result<Vec<FileResult>, ApplyError> {
    apply(&parse(text)?, cwd)
}

#[cfg(test)]
mod apply_tests;
#[cfg(test)]
mod atomic_tests;
#[cfg(test)]
mod proptests;
