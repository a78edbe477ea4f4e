//! [`GitRefs`]: the refs of the repository that holds a snapshot's root, so undo can put back what a `git commit`,
//! `git checkout`, `git reset` or `git stash` of the turn moved.
//!
//! The refs are read from the git folder itself (`HEAD`, the loose refs under `refs/heads/` and `refs/stash`, and
//! `packed-refs`, a loose ref winning over a packed one as in git), which costs a few reads where two git processes
//! cost several milliseconds each on every snapshot. Where that reading would not be exact, git is asked instead:
//! a reftable repository (its refs are in a binary table), a git folder owned by another user (git's
//! `safe.directory` decides whether it reads it at all), and any ref file that is not a plain object id.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
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
        let (git_dir, refs) = match read_direct(root) {
            Some(found) => found,
            None => read_with_git(root)?,
        };
        let head = fs::read_to_string(git_dir.join("HEAD")).ok()?.trim().to_owned();
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

/// The git folder and the refs of the repository holding `root`, asking git.
fn read_with_git(root: &Path) -> Option<(PathBuf, BTreeMap<String, String>)> {
    let git_dir = PathBuf::from(git(root, &["rev-parse", "--absolute-git-dir"])?.trim());
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
    Some((git_dir, refs))
}

/// The git folder and the refs of the repository holding `root`, read from the files; `None` when only git can say
/// exactly (see the module docs).
pub(super) fn read_direct(root: &Path) -> Option<(PathBuf, BTreeMap<String, String>)> {
    let git_dir = find_git_dir(root)?;
    // A linked worktree's refs are in the main repository's folder, named by `commondir`.
    let common = match fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => absolute_from(&git_dir, text.trim()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => git_dir.clone(),
        Err(_) => return None,
    };
    let owner = fs::metadata(&common).ok()?.uid();
    if owner != nix::unistd::geteuid().as_raw() || common.join("reftable").exists() {
        return None;
    }
    let mut refs = packed_refs(&common)?;
    loose_refs(&common, "refs/heads", &mut refs)?;
    match fs::read_to_string(common.join("refs/stash")) {
        Ok(text) => {
            refs.insert("refs/stash".to_owned(), object_id(&text)?);
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => return None,
    }
    Some((git_dir, refs))
}

/// The git folder of the repository holding `root` (absolute): the nearest `.git` folder, or the folder a `.git`
/// file names (`gitdir: <path>`, a linked worktree or a submodule).
fn find_git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root
        .ancestors()
        .map(|folder| folder.join(".git"))
        .find(|path| path.exists())?;
    let meta = fs::metadata(&dot_git).ok()?;
    let git_dir = if meta.is_dir() {
        dot_git
    } else {
        let text = fs::read_to_string(&dot_git).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        absolute_from(dot_git.parent()?, target)
    };
    // As `rev-parse --absolute-git-dir`: no symlinks, no `..`.
    let git_dir = fs::canonicalize(git_dir).ok()?;
    git_dir.join("HEAD").is_file().then_some(git_dir)
}

fn absolute_from(base: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

/// The branch heads and stash of `packed-refs` (none without the file); `None` when it cannot be read.
fn packed_refs(common: &Path) -> Option<BTreeMap<String, String>> {
    let text = match fs::read_to_string(common.join("packed-refs")) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Some(BTreeMap::new()),
        Err(_) => return None,
    };
    let mut refs = BTreeMap::new();
    // Comment lines (`# pack-refs with: ...`) and peeled lines (`^<id>`, the commit an annotated tag points to).
    for line in text
        .lines()
        .filter(|line| !line.starts_with('#') && !line.starts_with('^'))
    {
        let (id, name) = line.split_once(' ')?;
        if name.starts_with("refs/heads/") || name == "refs/stash" {
            refs.insert(name.to_owned(), object_id(id)?);
        }
    }
    Some(refs)
}

/// Adds the loose refs under `<common>/<prefix>` to `refs` (over packed ones of the same name); `None` when one
/// cannot be read or is not a plain object id (a symbolic ref).
fn loose_refs(common: &Path, prefix: &str, refs: &mut BTreeMap<String, String>) -> Option<()> {
    let entries = match fs::read_dir(common.join(prefix)) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Some(()),
        Err(_) => return None,
    };
    for entry in entries {
        let entry = entry.ok()?;
        let name = entry.file_name().into_string().ok()?;
        // A ref being written (`<name>.lock`) is not a ref yet, as for git.
        if name.ends_with(".lock") {
            continue;
        }
        let full = format!("{prefix}/{name}");
        if entry.file_type().ok()?.is_dir() {
            loose_refs(common, &full, refs)?;
        } else {
            let text = fs::read_to_string(entry.path()).ok()?;
            refs.insert(full, object_id(&text)?);
        }
    }
    Some(())
}

/// A ref file's object id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.
fn object_id(text: &str) -> Option<String> {
    let id = text.trim();
    (matches!(id.len(), 40 | 64) && id.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f')))
        .then(|| id.to_owned())
}

/// Runs efr's own git ([`efr_git::command`]) in `root`; its standard output when it succeeds.
#[must_use]
pub fn git(root: &Path, args: &[&str]) -> Option<String> {
    let output = efr_git::command()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &Path, args: &[&str]) {
        let status = std::process::Command::new("git")
            .current_dir(dir)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.invalid",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("git must be installed for this test");
        assert!(status.success(), "git {args:?}");
    }

    fn both(root: &Path) -> (PathBuf, BTreeMap<String, String>) {
        let direct = read_direct(root).expect("read from the files");
        assert_eq!(Some(&direct), read_with_git(root).as_ref(), "in {}", root.display());
        direct
    }

    #[test]
    fn refs_read_from_the_files_are_what_git_lists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        fs::create_dir(&repo).expect("mkdir");
        run(&repo, &["init", "-q"]);
        // No commit yet: no refs at all.
        assert!(both(&repo).1.is_empty());
        fs::write(repo.join("a.txt"), "a\n").expect("write");
        run(&repo, &["add", "-A"]);
        run(&repo, &["commit", "-q", "-m", "one"]);
        run(&repo, &["branch", "feature/deep/x"]);
        fs::write(repo.join("a.txt"), "b\n").expect("write");
        run(&repo, &["stash", "-q"]);
        let (_, refs) = both(&repo);
        assert_eq!(
            refs.keys().cloned().collect::<Vec<_>>(),
            ["refs/heads/feature/deep/x", "refs/heads/main", "refs/stash"]
        );
        // Packed, then one branch moved on as a loose ref over its packed line; a tag is not listed.
        run(&repo, &["tag", "-a", "-m", "t", "v1"]);
        run(&repo, &["pack-refs", "--all"]);
        assert!(!repo.join(".git/refs/heads/main").exists());
        both(&repo);
        run(&repo, &["commit", "-q", "--allow-empty", "-m", "two"]);
        let (git_dir, refs) = both(&repo);
        assert_eq!(git_dir, fs::canonicalize(repo.join(".git")).expect("canonical"));
        assert_ne!(refs["refs/heads/main"], refs["refs/heads/feature/deep/x"]);
        // A linked worktree (a `.git` file): its own folder, the main repository's refs; from a subfolder too.
        run(&repo, &["worktree", "add", "-q", "../tree", "feature/deep/x"]);
        let tree = dir.path().join("tree");
        fs::create_dir(tree.join("sub")).expect("mkdir");
        let (tree_dir, tree_refs) = both(&tree.join("sub"));
        assert!(tree_dir.ends_with(".git/worktrees/tree"), "{}", tree_dir.display());
        assert_eq!(tree_refs, refs);
        // A symbolic ref under refs/heads is left to git.
        fs::write(repo.join(".git/refs/heads/alias"), "ref: refs/heads/main\n").expect("write");
        assert_eq!(read_direct(&repo), None);
    }
}
