//! The `undo` member of a turn's end events: per root, what undo of the turn can restore, and what it cannot.

use efr_protocol::wire::{TurnUndoSummary, UndoRoot};

use efr_snapshot::{NotCovered, Snapshot};

/// The most paths of `not_covered`.
pub const MAX_NOT_COVERED: usize = 20;

/// Adds the root `shown` (its pre and post snapshots) to `summary`: the changed files undo can restore, the refs the
/// turn moved, the changed paths it cannot restore and the build outputs it does not cover.
pub fn add_root(summary: &mut TurnUndoSummary, shown: &str, pre: &Snapshot, post: &Snapshot) {
    let plan = super::plan::plan(post, pre, post, std::path::PathBuf::new(), false, &Default::default());
    let mut files = 0;
    let mut missing: Vec<String> = Vec::new();
    for entry in &plan.entries {
        if entry.action == super::Action::NotCovered {
            missing.push(show(shown, &entry.path));
        } else {
            files += 1;
        }
    }
    for (path, reason) in &post.not_covered {
        // Tools' caches are never changes (efr_patch::changes::CACHE_FOLDERS): not worth a line either.
        if *reason == NotCovered::BuildOutput && !is_tool_cache(path) {
            missing.push(show(shown, path));
        }
    }
    let refs = match (&pre.refs, &post.refs) {
        (Some(pre), Some(post)) => {
            post.refs
                .iter()
                .filter(|(name, id)| pre.refs.get(*name) != Some(id))
                .count()
                + pre.refs.keys().filter(|name| !post.refs.contains_key(*name)).count()
                + usize::from(pre.head != post.head)
        }
        _ => 0,
    };
    summary.roots.push(UndoRoot {
        shown: shown.to_owned(),
        files,
        refs: refs as u64,
    });
    for path in missing {
        if summary.not_covered.len() < MAX_NOT_COVERED {
            summary.not_covered.push(path);
        } else {
            summary.not_covered_more += 1;
        }
    }
}

/// Whether a build output folder (`a/b/`) is one of the tools' caches that changes never show.
fn is_tool_cache(folder: &str) -> bool {
    let name = folder.trim_end_matches('/').rsplit('/').next().unwrap_or_default();
    matches!(name, "__pycache__" | ".pytest_cache" | ".mypy_cache" | ".ruff_cache")
        || folder.ends_with("node_modules/.cache/")
}

/// A path below the root `shown` as a client shows it.
#[must_use]
pub fn show(shown: &str, path: &str) -> String {
    if shown == "." {
        path.to_owned()
    } else {
        format!("{shown}/{path}")
    }
}
