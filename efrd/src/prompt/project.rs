//! Project instructions: the `AGENTS.md` files (the agents.md convention) that efr reads into the model's
//! instructions, with their fallbacks, their size bound and the files it refuses (docs/context.md, "Project
//! instructions").
//!
//! The folders, most general first (a later file is more specific and wins where they disagree):
//! 1. efr's config root (`~/.config/efr`): the user's own global file;
//! 2. the project root, then each folder below it down to the working directory.
//!
//! In each folder the first of [`NAMES`] that exists is read: `AGENTS.md`, else `CLAUDE.md`, else `GEMINI.md`.
//! Without a project root (a prompt typed in the home folder) only the global file is read.
//!
//! What is not read, and why (each still listed, so `efr context` shows it):
//! - a file in a folder the sandbox masks (`[sandbox] extra_masks`, the credential stores): efr never sends what its
//!   own sandbox hides;
//! - a link whose target is outside the project root, or in a masked folder: refused
//!   (docs/adr/0012-what-the-model-is-told.md, "Links"). A link inside the project is followed. The global file is
//!   the user's own and may link anywhere.
//!
//! The size bound ([`crate::config::instructions::InstructionsSection::max_bytes`]) covers the files together, in
//! order: a file past the budget is cut at its last whole line that fits, with a line that says so, and the files
//! after it are listed as not read.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The names read in each folder, in order of preference: the first that exists is read.
pub const NAMES: &[&str] = &["AGENTS.md", "CLAUDE.md", "GEMINI.md"];

/// Where a file sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's global file, in efr's config root.
    Global,
    /// A folder from the project root down to the working directory.
    Project,
}

/// What became of one file that exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Read: `bytes` of its `total` bytes are in the instructions (fewer when cut).
    Read {
        /// The bytes sent.
        bytes: u64,
        /// The file's size.
        total: u64,
    },
    /// In a folder the sandbox masks: not read.
    Masked,
    /// A link whose target is outside the project root (or masked): not read.
    LinkOutside {
        /// Where the link leads.
        target: PathBuf,
    },
    /// The size bound was used up by the files before it: not read.
    OverBudget {
        /// The file's size.
        total: u64,
    },
    /// It could not be read (not UTF-8, not a regular file, an I/O error): the reason.
    Unreadable(String),
}

/// One file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocFile {
    /// The path as found (a link's own path, not its target).
    pub path: PathBuf,
    /// Global or the project's.
    pub scope: Scope,
    /// Read, or why not.
    pub outcome: Outcome,
    /// The text sent (with the cut line when cut); empty when not read.
    pub text: String,
}

impl DocFile {
    /// Whether its text is in the instructions.
    #[must_use]
    pub fn is_read(&self) -> bool {
        matches!(self.outcome, Outcome::Read { .. })
    }

    /// Whether it was cut by the size bound.
    #[must_use]
    pub fn is_cut(&self) -> bool {
        matches!(self.outcome, Outcome::Read { bytes, total } if bytes < total)
    }
}

/// Where to look and what bounds apply.
#[derive(Debug, Clone)]
pub struct Lookup<'a> {
    /// efr's config root, the folder of the global file; `None` for none.
    pub global_dir: Option<&'a Path>,
    /// The project root (absolute, links resolved); `None` outside a project.
    pub project_root: Option<&'a Path>,
    /// The working directory (absolute, links resolved); used when it is at or under the project root.
    pub cwd: &'a Path,
    /// The paths the sandbox masks (absolute).
    pub masks: &'a [PathBuf],
    /// The size bound of all files together, in bytes.
    pub max_bytes: u64,
}

/// Finds and reads the files of `lookup`, most general first (see the module docs). Never fails: a file that
/// cannot be read is listed with the reason.
#[must_use]
pub fn read(lookup: &Lookup<'_>) -> Vec<DocFile> {
    let mut found = Vec::new();
    if let Some(dir) = lookup.global_dir
        && let Some(path) = first_existing(dir)
    {
        found.push((path, Scope::Global));
    }
    for dir in project_folders(lookup.project_root, lookup.cwd) {
        if let Some(path) = first_existing(&dir) {
            found.push((path, Scope::Project));
        }
    }
    let mut budget = lookup.max_bytes;
    found
        .into_iter()
        .map(|(path, scope)| {
            let (outcome, text) = match refusal(&path, scope, lookup) {
                Some(outcome) => (outcome, String::new()),
                None => read_bounded(&path, &mut budget, lookup.max_bytes),
            };
            DocFile {
                path,
                scope,
                outcome,
                text,
            }
        })
        .collect()
}

/// The folders from the project root down to `cwd`; only the root when `cwd` is not under it.
fn project_folders(root: Option<&Path>, cwd: &Path) -> Vec<PathBuf> {
    let Some(root) = root else { return Vec::new() };
    let mut folders = vec![root.to_path_buf()];
    if let Ok(rest) = cwd.strip_prefix(root) {
        let mut dir = root.to_path_buf();
        for part in rest.components() {
            dir.push(part);
            folders.push(dir.clone());
        }
    }
    folders
}

/// The first of [`NAMES`] in `dir` that exists (a link counts, whatever it points at).
fn first_existing(dir: &Path) -> Option<PathBuf> {
    NAMES
        .iter()
        .map(|name| dir.join(name))
        .find(|path| std::fs::symlink_metadata(path).is_ok())
}

fn is_masked(path: &Path, masks: &[PathBuf]) -> bool {
    masks.iter().any(|mask| path.starts_with(mask))
}

/// Why `path` is not read, or `None` when it may be.
fn refusal(path: &Path, scope: Scope, lookup: &Lookup<'_>) -> Option<Outcome> {
    if scope == Scope::Global {
        return None;
    }
    if is_masked(path, lookup.masks) {
        return Some(Outcome::Masked);
    }
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link {
        let target = match std::fs::canonicalize(path) {
            Ok(target) => target,
            Err(error) => return Some(Outcome::Unreadable(format!("a link that leads nowhere: {error}"))),
        };
        let inside = lookup.project_root.is_some_and(|root| target.starts_with(root));
        if !inside || is_masked(&target, lookup.masks) {
            return Some(Outcome::LinkOutside { target });
        }
    }
    None
}

/// Reads `path` within what is left of `budget`: whole, cut at a line, or not at all.
fn read_bounded(path: &Path, budget: &mut u64, max_bytes: u64) -> (Outcome, String) {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) => return (Outcome::Unreadable(error.to_string()), String::new()),
    };
    let total = match file.metadata() {
        Ok(meta) if meta.is_file() => meta.len(),
        Ok(_) => return (Outcome::Unreadable("not a regular file".to_owned()), String::new()),
        Err(error) => return (Outcome::Unreadable(error.to_string()), String::new()),
    };
    if *budget == 0 {
        return (Outcome::OverBudget { total }, String::new());
    }
    // Never more than the budget is read, whatever the file's size says now.
    let mut bytes = Vec::new();
    if let Err(error) = file.take(*budget).read_to_end(&mut bytes) {
        return (Outcome::Unreadable(error.to_string()), String::new());
    }
    let total = total.max(bytes.len() as u64);
    let whole = (bytes.len() as u64) == total;
    let mut text = match String::from_utf8(bytes) {
        Ok(text) => text,
        // A cut may split a character: keep the valid part.
        Err(error) if !whole => {
            let valid = error.utf8_error().valid_up_to();
            let mut bytes = error.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
        Err(_) => return (Outcome::Unreadable("not UTF-8 text".to_owned()), String::new()),
    };
    if !whole {
        // Cut at the last whole line; a file with no newline in the budget is cut where the budget ends.
        if let Some(end) = text.rfind('\n') {
            text.truncate(end + 1);
        }
    }
    let sent = text.len() as u64;
    *budget = budget.saturating_sub(if whole { sent } else { *budget });
    if !whole {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let _ = writeln!(
            text,
            "[efr: this file is cut here: {sent} of its {total} bytes are above ([instructions] max_bytes = \
             {max_bytes} for all files together)]"
        );
    }
    (Outcome::Read { bytes: sent, total }, text)
}

#[cfg(test)]
#[path = "project_tests.rs"]
mod tests;
