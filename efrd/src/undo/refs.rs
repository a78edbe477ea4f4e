//! The git refs of an undo: HEAD, the branch heads and the stash moved back (or forward, for a redo) with
//! `git update-ref`, and the index file put back, each only when it is as the turn left it (else a conflict).

use std::path::Path;

use efr_snapshot::{GitRefs, blob_path};

/// What undo did to one ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefMove {
    /// The ref's full name (`HEAD`, `refs/heads/main`, `refs/stash`) or `index` for the index file.
    pub name: String,
    /// Its value as the turn left it (absent: it did not exist).
    pub from: Option<String>,
    /// The value undo puts back (absent: it is deleted).
    pub to: Option<String>,
    /// It was moved.
    pub applied: bool,
    /// It changed since the turn: left alone unless force.
    pub conflict: bool,
}

/// One ref: its name, and its value as the turn left it, in the target state and now.
type Wanted = (String, Option<String>, Option<String>, Option<String>);

/// Plans the refs' move from `from` to `to` against `current`, and with `apply` makes it (git in `root`). A ref
/// that is neither as the turn left it nor already moved is a conflict: moved only with `force`.
#[must_use]
pub fn move_refs(
    root: &Path,
    blobs: &Path,
    from: &GitRefs,
    to: &GitRefs,
    current: &GitRefs,
    force: bool,
    apply: bool,
) -> Vec<RefMove> {
    let mut moves = Vec::new();
    let names: std::collections::BTreeSet<&String> = from.refs.keys().chain(to.refs.keys()).collect();
    let mut wanted: Vec<Wanted> = names
        .into_iter()
        .map(|name| {
            (
                name.clone(),
                from.refs.get(name).cloned(),
                to.refs.get(name).cloned(),
                current.refs.get(name).cloned(),
            )
        })
        .collect();
    wanted.push((
        "HEAD".to_owned(),
        Some(from.head.clone()),
        Some(to.head.clone()),
        Some(current.head.clone()),
    ));
    wanted.push((
        "index".to_owned(),
        from.index.clone(),
        to.index.clone(),
        current.index.clone(),
    ));
    for (name, source, target, now) in wanted {
        if source == target {
            continue;
        }
        // The index is git's cache of the work tree: any git command may rewrite its bytes (a `git status`
        // refreshes its stat data), so it is never a conflict; it is put back when it is as the turn left it, or
        // when this undo moves a ref (HEAD and the index go together).
        let is_index = name == "index";
        let moved = moves
            .iter()
            .any(|one: &RefMove| one.applied || (!apply && !one.conflict));
        let conflict = !is_index && now != source && now != target;
        let mut applied = false;
        let allowed = if is_index {
            now == source || moved || force
        } else {
            !conflict || force
        };
        if apply && now != target && allowed {
            applied = write_ref(root, blobs, to, &name, target.as_deref(), now.as_deref());
        }
        moves.push(RefMove {
            name,
            from: source,
            to: target,
            applied,
            conflict,
        });
    }
    moves
}

fn write_ref(root: &Path, blobs: &Path, to: &GitRefs, name: &str, target: Option<&str>, now: Option<&str>) -> bool {
    let git = |args: &[&str]| efr_snapshot::git_in(root, args).is_some();
    match (name, target) {
        ("index", Some(hash)) => {
            let index = to.git_dir.join("index");
            let Ok(bytes) = std::fs::read(blob_path(blobs, hash)) else {
                return false;
            };
            let temporary = to.git_dir.join("index.efr-undo");
            std::fs::write(&temporary, bytes).is_ok() && std::fs::rename(&temporary, index).is_ok()
        }
        ("index", None) => std::fs::remove_file(to.git_dir.join("index")).is_ok(),
        ("HEAD", Some(head)) => match head.strip_prefix("ref: ") {
            Some(branch) => git(&["symbolic-ref", "HEAD", branch]),
            None => git(&["update-ref", "--no-deref", "HEAD", head]),
        },
        (_, Some(id)) => git(&["update-ref", name, id, now.unwrap_or("")]),
        (_, None) => git(&["update-ref", "-d", name, now.unwrap_or("")]),
    }
}
