//! The paths a patch really touches, for the policy and the sandbox check.
//!
//! efrd applies a patch itself, as the user, and the file system follows symbolic links: `*** Update File: link.txt`
//! with `link.txt -> /outside/x` writes `/outside/x`, and `*** Add File: dir/new.toml` with `dir -> ~/.config/efr`
//! writes into efr's config. The policy and the sandbox check compare paths lexically
//! ([`efr_policy::paths`]), so every path is resolved first ([`efr_policy::paths::resolve`]): the longest part
//! that exists is canonicalized. A deleted file and a move's source are the exception: removing or renaming a link
//! acts on the link, not on its target, so only their folder is resolved. The project roots are resolved the same
//! way, so a project reached through a link still holds its own files.
//!
//! What is checked is the disk at decision time. A command left running could swap a folder for a link before the
//! patch is written, so the commit checks again: each place it writes, resolved when it writes, must be one of these
//! paths, and it writes inside folders opened with no link on their path (`Plan::commit_within`,
//! tools/patch/folder.rs).

use std::path::{Path, PathBuf};

use efr_protocol::wire::FileChangeKind;

use efr_patch::FileResult;
use efr_policy::paths::resolve;
use efr_policy::{ChangeKind, EfrDirs, PatchChange};

/// What the policy judges of one file of a planned patch, with its paths resolved: a move is judged at its old path,
/// with its new one.
///
/// # Errors
/// A message for the model when a path cannot be resolved (such as a folder on the way that cannot be read): the
/// patch is then refused, never judged at a path that may not be the real one.
pub fn resolved_change(result: &FileResult) -> Result<PatchChange, String> {
    Ok(match (result.kind, &result.from) {
        (FileChangeKind::Added, _) => PatchChange {
            path: through_links(&result.path)?,
            kind: ChangeKind::Add,
        },
        (FileChangeKind::Deleted, _) => PatchChange {
            path: link_itself(&result.path)?,
            kind: ChangeKind::Delete,
        },
        (FileChangeKind::Renamed, Some(from)) => PatchChange {
            path: link_itself(from)?,
            kind: ChangeKind::Move {
                to: through_links(&result.path)?,
            },
        },
        _ => PatchChange {
            path: through_links(&result.path)?,
            kind: ChangeKind::Update,
        },
    })
}

/// Every path the changes write or remove: each change's path, and a move's new one too.
pub fn touched(changes: &[PatchChange]) -> impl Iterator<Item = &Path> {
    changes.iter().flat_map(|change| {
        let to = match &change.kind {
            ChangeKind::Move { to } => Some(to.as_path()),
            _ => None,
        };
        std::iter::once(change.path.as_path()).chain(to)
    })
}

/// The project roots resolved like patch paths; a root that cannot be resolved stays as it is (it then holds only
/// what it holds lexically, which is never more).
#[must_use]
pub fn resolved_roots(roots: &[PathBuf]) -> Vec<PathBuf> {
    roots
        .iter()
        .map(|root| resolve(root).unwrap_or_else(|_| root.clone()))
        .collect()
}

/// efr's own roots resolved like patch paths, so that the floors see a patch that reaches them through a link.
#[must_use]
pub fn resolved_dirs(dirs: &EfrDirs) -> EfrDirs {
    let one = |dir: &Option<PathBuf>| dir.as_ref().map(|d| resolve(d).unwrap_or_else(|_| d.clone()));
    EfrDirs {
        config: one(&dirs.config),
        data: one(&dirs.data),
        state: one(&dirs.state),
        runtime: one(&dirs.runtime),
        scratch: one(&dirs.scratch),
    }
}

/// Every link on the way followed, the last one too (a write goes to the link's target).
///
/// The policy folds `..` before it resolves links (`a/link/..` is `a`), while the kernel follows `link` first and
/// then goes up from its target; a patch path where the two differ is refused rather than judged at one place and
/// read at the other.
fn through_links(path: &Path) -> Result<PathBuf, String> {
    let judged = resolve(path).map_err(|e| format!("cannot tell where {} leads: {e}", path.display()))?;
    if path.components().any(|c| c == std::path::Component::ParentDir)
        && efr_policy::paths::resolve_as_written(path).ok().as_ref() != Some(&judged)
    {
        return Err(format!(
            "{} goes up (`..`) from a folder that is a link, so it names another place than it seems; write the \
             path without `..`",
            path.display()
        ));
    }
    Ok(judged)
}

/// The folder resolved, the name kept (a removal or rename acts on the link itself).
fn link_itself(path: &Path) -> Result<PathBuf, String> {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => Ok(through_links(parent)?.join(name)),
        _ => through_links(path),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::symlink;

    fn result(path: &Path, kind: FileChangeKind, from: Option<&Path>) -> FileResult {
        FileResult {
            path: path.to_owned(),
            kind,
            from: from.map(Path::to_owned),
            added: 0,
            removed: 0,
            binary: false,
            old: None,
            new: None,
        }
    }

    #[test]
    fn links_in_the_project_resolve_to_where_the_write_goes() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let (project, outside) = (base.join("p"), base.join("outside"));
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("x.txt"), "x").unwrap();
        symlink(outside.join("x.txt"), project.join("link.txt")).unwrap();
        symlink(&outside, project.join("dir")).unwrap();

        let update = resolved_change(&result(&project.join("link.txt"), FileChangeKind::Modified, None)).unwrap();
        assert_eq!(update.path, outside.join("x.txt"));
        let add = resolved_change(&result(&project.join("dir/new.sh"), FileChangeKind::Added, None)).unwrap();
        assert_eq!(add.path, outside.join("new.sh"));
        // Deleting the link removes the link, in the project.
        let delete = resolved_change(&result(&project.join("link.txt"), FileChangeKind::Deleted, None)).unwrap();
        assert_eq!(delete.path, project.join("link.txt"));
        // A move out of a linked folder takes the file from outside.
        let moved = result(
            &project.join("dir/y.txt"),
            FileChangeKind::Renamed,
            Some(&project.join("link.txt")),
        );
        let moved = resolved_change(&moved).unwrap();
        assert_eq!(moved.path, project.join("link.txt"));
        assert_eq!(
            moved.kind,
            ChangeKind::Move {
                to: outside.join("y.txt")
            }
        );
    }

    #[test]
    fn dot_dot_after_a_link_is_refused_and_plain_dot_dot_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let (project, outside) = (base.join("p"), base.join("outside/deep"));
        std::fs::create_dir_all(project.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        symlink(&outside, project.join("link")).unwrap();
        std::fs::write(base.join("outside/secret"), "s").unwrap();
        // The kernel reads outside/secret; the policy would have judged p/secret.
        let sneaky = result(&project.join("link/../secret"), FileChangeKind::Modified, None);
        let error = resolved_change(&sneaky).unwrap_err();
        assert!(error.contains("without `..`"), "{error}");
        let plain = result(&project.join("sub/../new.txt"), FileChangeKind::Added, None);
        assert_eq!(resolved_change(&plain).unwrap().path, project.join("new.txt"));
    }

    #[test]
    fn a_project_reached_through_a_link_is_resolved_too() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        symlink(base.join("real"), base.join("via")).unwrap();
        assert_eq!(resolved_roots(&[base.join("via")]), vec![base.join("real")]);
    }
}
