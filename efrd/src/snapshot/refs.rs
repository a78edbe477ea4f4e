//! [`GitRefs`]: the refs of the repository that holds a snapshot's root, so undo can put back what a `git commit`,
//! `git checkout`, `git reset` or `git stash` of the turn moved.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde::{Deserialize, Serialize};

use super::cover::store_file;

/// The refs recorded with a covered snapshot: HEAD, the branch heads and the stash, and the index file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitRefs {
    /// The repository's git folder (absolute).
    pub git_dir: PathBuf,
    /// The content of `HEAD`, trimmed: `ref: refs/heads/<branch>`, or an object id when detached.
    pub head: String,
    /// Each ref under `refs/heads/` and `refs/stash`, by its full name, with its object id.
    pub refs: BTreeMap<String, String>,
    /// The SHA-256 of the index file (`<git_dir>/index`) in the store's blobs; absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
}

impl GitRefs {
    /// The refs of the repository that holds `root`, with its index stored in `blobs` (a blob written is added to
    /// `unsynced`); `None` outside a repository or when git cannot read it (git is needed for refs only, never for
    /// files).
    #[must_use]
    pub(crate) fn read(root: &Path, blobs: &Path, unsynced: &super::Unsynced) -> Option<Self> {
        if !root.ancestors().any(|folder| folder.join(".git").exists()) {
            return None;
        }
        let git_dir = PathBuf::from(git(root, &["rev-parse", "--absolute-git-dir"])?.trim());
        let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?.trim().to_owned();
        let listing = git(
            root,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                "refs/heads",
                "refs/stash",
            ],
        )?;
        let refs = listing
            .lines()
            .filter_map(|line| line.split_once(' '))
            .map(|(name, id)| (name.to_owned(), id.to_owned()))
            .collect();
        let index_path = git_dir.join("index");
        let index = index_path
            .is_file()
            .then(|| store_file(blobs, &index_path).ok())
            .flatten()
            .map(|(hash, _, written)| {
                unsynced.add(written);
                hash
            });
        Some(Self {
            git_dir,
            head,
            refs,
            index,
        })
    }
}

/// Runs efr's own git ([`crate::git::command`]) in `root`; its standard output when it succeeds.
#[must_use]
pub fn git(root: &Path, args: &[&str]) -> Option<String> {
    let output = crate::git::command()
        .arg("-C")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8(output.stdout).ok())
        .flatten()
}
