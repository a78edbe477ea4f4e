//! A project whose `.git` is a link: the link is read once when a contained call's plan is made, and put back when
//! the call ends if the call changed it (docs/adr/0004-contained-calls.md, decision 11).
//!
//! The plan protects the link's target as it was then (`protect.rs`), but the link itself is an entry of a writable
//! folder: bubblewrap cannot mount over a link (a bind follows it), and Landlock's rights are per folder. So a call
//! could point `.git` at a folder holding a config of its own, which git outside the sandbox would then read. efrd
//! compares the link with what it read before the call and, when it differs, moves what is there aside and makes the
//! link again, and tells the model.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A root's `.git` link as it was when the plan was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitLink {
    /// `<root>/.git`.
    pub link: PathBuf,
    /// What the link held (as written, often relative).
    pub target: PathBuf,
}

/// The `.git` links of `roots` now; a root whose `.git` is a folder, a file or missing has none.
pub fn git_links(roots: &[PathBuf]) -> Vec<GitLink> {
    roots
        .iter()
        .map(|root| root.join(".git"))
        .filter_map(|link| {
            let target = fs::read_link(&link).ok()?;
            Some(GitLink { link, target })
        })
        .collect()
}

/// Puts back each link of `links` that no longer holds its target, and returns a line for the model about each one
/// put back (or that could not be). What stands in the link's place is moved aside (a folder or file) or removed (a
/// link: it holds no data).
pub fn put_back(links: &[GitLink]) -> Vec<String> {
    let mut notes = Vec::new();
    for GitLink { link, target } in links {
        if fs::read_link(link).is_ok_and(|now| &now == target) {
            continue;
        }
        notes.push(match restore(link, target) {
            Ok(moved) => format!(
                "[efr put back the link {} -> {}: a contained call may not change which git folder the project \
                 uses, since git outside the sandbox would read its configuration{}]",
                link.display(),
                target.display(),
                moved
                    .map(|m| format!("; what the call put there is now {}", m.display()))
                    .unwrap_or_default()
            ),
            Err(err) => format!(
                "[efr could not put back the link {} -> {}: {err}; git outside the sandbox may read configuration \
                 this call wrote]",
                link.display(),
                target.display()
            ),
        });
    }
    notes
}

/// Makes `link` point at `target` again; returns where a folder or file that stood there was moved.
fn restore(link: &Path, target: &Path) -> io::Result<Option<PathBuf>> {
    let suffix = format!("{:08x}", rand::random::<u32>());
    let moved = match fs::symlink_metadata(link) {
        Ok(meta) if meta.file_type().is_symlink() => None,
        Ok(_) => {
            let aside = link.with_file_name(format!(".git.efr-moved-{suffix}"));
            fs::rename(link, &aside)?;
            Some(aside)
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(err),
    };
    // A new link under another name, renamed over the old one: no moment without a `.git`.
    let fresh = link.with_file_name(format!(".git.efr-link-{suffix}"));
    std::os::unix::fs::symlink(target, &fresh)?;
    fs::rename(&fresh, link).inspect_err(|_| {
        let _ = fs::remove_file(&fresh);
    })?;
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_link_is_put_back_and_what_stood_there_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::os::unix::fs::symlink("../repo.git", root.join(".git")).unwrap();
        let links = git_links(std::slice::from_ref(&root));
        assert_eq!(links.len(), 1);
        // Unchanged: nothing to say.
        assert!(put_back(&links).is_empty());
        // Pointed elsewhere: put back, nothing kept.
        fs::remove_file(root.join(".git")).unwrap();
        std::os::unix::fs::symlink("evil", root.join(".git")).unwrap();
        let notes = put_back(&links);
        assert!(notes[0].contains("efr put back"), "{notes:?}");
        assert_eq!(fs::read_link(root.join(".git")).unwrap(), Path::new("../repo.git"));
        // Replaced by a folder: moved aside, link back.
        fs::remove_file(root.join(".git")).unwrap();
        fs::create_dir(root.join(".git")).unwrap();
        fs::write(root.join(".git/config"), "[core]\n").unwrap();
        let notes = put_back(&links);
        assert!(notes[0].contains(".git.efr-moved-"), "{notes:?}");
        assert_eq!(fs::read_link(root.join(".git")).unwrap(), Path::new("../repo.git"));
        let kept: Vec<_> = fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(kept.len(), 2, "{kept:?}");
        // Removed: made again.
        fs::remove_file(root.join(".git")).unwrap();
        assert_eq!(put_back(&links).len(), 1);
        assert_eq!(fs::read_link(root.join(".git")).unwrap(), Path::new("../repo.git"));
    }
}
