//! What a tool call or a turn changed in files: `file_change`, `file_changes` and unified diffs
//! (docs/architecture.md, "Tools").
//!
//! The input is a list of [`Change`]s, one per file, with what is known of the file before and after ([`Body`]).
//! They come from an `apply_patch` call ([`FileResult::into_change`](crate::FileResult::into_change)) or from comparing two snapshots of a project
//! (efr-snapshot's `compare`). From them this module makes the two things the spec puts into events and into
//! `conversation.diff`:
//!
//! - [`file_changes`]: the wire's [`FileChanges`](efr_protocol::wire::changes::FileChanges);
//! - [`unified_diff`]: the unified diff text, bounded to a number of lines.
//!
//! # Paths as a client shows them
//!
//! Spec (changelog, "what the agent changed in files"): a path is shown relative to the turn's project root, under
//! `$SCRATCH/`, under `~/`, or absolute. [`display_path`] applies that rule: the path is normalized lexically (`.`
//! dropped, `..` taken back), then the deepest root that holds it wins (so `$SCRATCH` inside `~` shows as
//! `$SCRATCH/...`); a tie goes to the project, then `$SCRATCH`, then `~`. The root itself shows as `.`, `$SCRATCH`
//! or `~`.
//!
//! # `file_changes`
//!
//! At most [`FileChanges::MAX_FILES`](efr_protocol::wire::changes::FileChanges::MAX_FILES) files, sorted by their
//! shown path (byte order, as git sorts); `more` counts the files left out; `added` and `removed` add up every file,
//! those left out included. The line counts are those of the unified diff below. A binary file (a NUL byte or
//! invalid UTF-8 on either side) counts 0 lines and sets `binary`; so does a file whose content is not known (an
//! ignored file, or one a snapshot did not keep).
//!
//! # The unified diff
//!
//! Per file, in the order given (a patch's order; a snapshot comparison sorts by path): the spec's two header lines
//! `--- a/<path>` and `+++ b/<path>` (`/dev/null` for the side of an added or a deleted file; a rename shows
//! `a/<from>` and `b/<path>`), then the hunks. The text below the header lines is git's, byte for byte:
//!
//! - Myers' diff with git's indent heuristic for sliding blocks (the `imara-diff` crate), 3 lines of context, hunks
//!   less than 7 lines apart merged into one;
//! - hunk headers `@@ -a,b +c,d @@` (`,b` left out when b is 1) followed by git's default function line: the nearest
//!   line before the hunk that starts with an ASCII letter, `_` or `$`, cut to 80 bytes, trailing whitespace trimmed,
//!   and the one of the hunk before when none is between them;
//! - `\ No newline at end of file` after a last line that has none; CR stays part of a line (a CRLF file shows
//!   `\r` at the end of each line, as git shows it);
//! - a path with a byte under 0x20, `"`, `\`, DEL or a non-ASCII byte is C-quoted as git's `core.quotePath` does
//!   (`"a/\303\274.txt"`), and a header label with a space gets a trailing tab;
//! - a binary file has the single line `Binary files a/<path> and b/<path> differ` instead of header lines and hunks.
//!
//! So the diff equals `git diff --no-color` (renames detected, new files added with `git add -N`) with git's
//! extended header lines (`diff --git`, `index`, modes, `similarity`, `rename from/to`) left out. They are left out
//! because the spec gives each file its two header lines, and because the `index` line names git blob ids that efr
//! does not compute (and abbreviates them by the size of the repository). The differences left:
//!
//! - a change with nothing to show line by line (an empty file added or deleted, a pure rename, a change of the
//!   mode only) still has its two header lines, where git prints only its extended header;
//! - a file with invalid UTF-8 is binary here (git shows a text diff), and one with a NUL byte after its first
//!   8000 bytes is binary here too (git looks only there);
//! - a function line that 80 bytes would cut inside a UTF-8 character is cut before that character;
//! - where a change can be placed in several equally short ways, `imara-diff`'s choice may rarely differ from
//!   git's (on 500 random edits of code-like text it differed on 3; the `similar` crate's Myers on 57, which is why
//!   it is not used here);
//! - a file whose content is not known shows one line instead of a diff: a changed ignored file (per the
//!   `.gitignore` rules, [`IgnoreRules`]; spec: "a changed ignored file such as .env has only a line") shows
//!   `<path>: ignored file, content not shown`, and a file that a snapshot did not keep (too big, or past the
//!   snapshot's byte budget) shows `<path>: content not kept, not shown`.
//!
//! # Bounds
//!
//! [`unified_diff`] keeps at most `max_lines` lines, then adds `... N more lines` for the N lines it left out. The
//! spec's bounds: [`TOOL_CALL_DIFF_LINES`] (2000) for a tool call's diff and [`CONVERSATION_DIFF_LINES`] (20000) for
//! `conversation.diff`.

mod display;
mod ignored;
mod render;
mod stat;
mod unified;

#[cfg(test)]
mod git_tests;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::path::PathBuf;

use efr_protocol::wire::changes::FileChangeKind;

pub use display::{DisplayRoots, display_path};
pub use ignored::IgnoreRules;
pub use ignored::walk_builder;
pub use render::{CONVERSATION_DIFF_LINES, TOOL_CALL_DIFF_LINES, unified_diff};
pub use stat::{file_changes, file_changes_marked};
pub(crate) use unified::counts as line_counts;

/// What is known of one side of a changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// No file on this side: the "before" of an added file, the "after" of a deleted one.
    Absent,
    /// A text file (valid UTF-8 without a NUL byte) and its whole content.
    Text(String),
    /// A binary file: a NUL byte or invalid UTF-8.
    Binary,
    /// A file whose content is not known (not kept by a snapshot).
    Unknown,
}

impl Body {
    /// Classifies a file's bytes: [`Body::Binary`] for a NUL byte or invalid UTF-8, else [`Body::Text`].
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        if is_binary(&bytes) {
            return Self::Binary;
        }
        match String::from_utf8(bytes) {
            Ok(text) => Self::Text(text),
            Err(_) => Self::Binary,
        }
    }

    /// The text, for [`Body::Text`].
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            _ => None,
        }
    }
}

/// Whether bytes are binary for efr: a NUL byte anywhere, or invalid UTF-8.
pub fn is_binary(bytes: &[u8]) -> bool {
    bytes.contains(&0) || std::str::from_utf8(bytes).is_err()
}

/// One changed file: where it is, how it changed and what is known of it before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The absolute path (for a rename, where the file is now).
    pub path: PathBuf,
    /// For [`FileChangeKind::Renamed`]: the absolute path the file had.
    pub from: Option<PathBuf>,
    /// Added, modified, deleted or renamed.
    pub kind: FileChangeKind,
    /// The file before ([`Body::Absent`] when added).
    pub old: Body,
    /// The file after ([`Body::Absent`] when deleted).
    pub new: Body,
    /// The file is ignored by the project's `.gitignore` rules: its content is never shown, whatever the bodies say.
    pub ignored: bool,
}
