//! The collection of old snapshots (`docs/undo.md`, "What the store keeps"): at efrd's start, before any turn, the
//! snapshots of each conversation's turns older than its newest `[undo] keep_turns` with snapshots are removed, and
//! those of turns that no conversation holds any more (a deleted conversation); then the contents that no kept
//! snapshot holds. A turn's snapshots are named `<turn_id>-pre`, `<turn_id>-post` and `<turn_id>-{pre,post}-<n>`
//! ([`super::root_id`]); a snapshot of another name is left alone.

use std::collections::{HashMap, HashSet};

use efr_protocol::ids::{ConversationId, TurnId};

use efr_snapshot::{SnapshotError, SnapshotStore};

/// The length of a turn id's text (a hyphenated UUID).
const TURN_ID_LEN: usize = 36;

/// The turn a snapshot id belongs to, when it is a turn's.
fn turn_of(id: &str) -> Option<TurnId> {
    let (turn, rest) = id.split_at_checked(TURN_ID_LEN)?;
    (rest.starts_with("-pre") || rest.starts_with("-post"))
        .then(|| turn.parse().ok())
        .flatten()
}

/// The turns whose snapshots are kept: of each conversation, the newest `keep_turns` that have snapshots. `turns`
/// is every turn with its conversation, oldest first (the event log's order).
#[must_use]
pub fn kept_turns(
    turns: &[(ConversationId, TurnId)],
    with_snapshots: &HashSet<TurnId>,
    keep_turns: usize,
) -> HashSet<TurnId> {
    let mut per: HashMap<ConversationId, Vec<TurnId>> = HashMap::new();
    for (conversation, turn) in turns {
        if with_snapshots.contains(turn) {
            per.entry(*conversation).or_default().push(*turn);
        }
    }
    per.into_values()
        .flat_map(|turns| {
            let skip = turns.len().saturating_sub(keep_turns);
            turns.into_iter().skip(skip)
        })
        .collect()
}

/// Removes the snapshots of the turns [`kept_turns`] does not keep, then the contents no kept snapshot holds;
/// returns (snapshots removed, contents removed). Blocks: call it from `spawn_blocking`, while no turn runs.
///
/// # Errors
/// [`SnapshotError`] from the store (what was removed before it stays removed).
pub fn collect(
    store: &SnapshotStore,
    turns: &[(ConversationId, TurnId)],
    keep_turns: usize,
) -> Result<(u64, u64), SnapshotError> {
    let with_snapshots: HashSet<TurnId> = store.ids()?.iter().filter_map(|id| turn_of(id)).collect();
    let kept = kept_turns(turns, &with_snapshots, keep_turns);
    let removed = store.prune(|id| turn_of(id).is_some_and(|turn| !kept.contains(&turn)))?;
    for turn in with_snapshots.difference(&kept) {
        efr_snapshot::others::remove(store.dir(), *turn);
        // The copies of the floor files it wrote go with its snapshots.
        let _ = std::fs::remove_dir_all(super::home::folder(store.dir(), *turn));
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_id_names_its_turn_and_other_ids_name_none() {
        let turn = TurnId::new();
        for id in [format!("{turn}-pre"), format!("{turn}-post"), format!("{turn}-post-2")] {
            assert_eq!(turn_of(&id), Some(turn), "{id}");
        }
        for id in ["first", "warm-0", &format!("{turn}-other"), &format!("{turn}")] {
            assert_eq!(turn_of(id), None, "{id}");
        }
    }

    /// Collecting old turns never takes a kept turn's parent: the snapshots of a conversation's turns form one
    /// chain of deltas (each saved after the last), and the kept turns read back whole after the old ones go.
    #[test]
    fn collecting_old_turns_keeps_every_kept_snapshot_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("project");
        std::fs::create_dir(&root).expect("mkdir");
        let store = SnapshotStore::open(&dir.path().join("state")).expect("store");
        let limits = efr_snapshot::Limits {
            cover: Some(efr_snapshot::Cover {
                blobs: store.blobs(),
                max_file_bytes: 1 << 20,
                max_bytes: 1 << 30,
            }),
            ..efr_snapshot::Limits::default()
        };
        for i in 0..10 {
            std::fs::write(root.join(format!("f{i}.txt")), format!("{i}\n")).expect("write");
        }
        let conversation = ConversationId::new();
        let mut turns = Vec::new();
        let mut taken = Vec::new();
        for n in 0..4 {
            let turn = TurnId::new();
            turns.push((conversation, turn));
            for phase in ["pre", "post"] {
                if phase == "post" {
                    std::fs::write(root.join("f0.txt"), format!("turn {n}\n")).expect("write");
                }
                let previous = store.last_of(&root);
                let snapshot = efr_snapshot::Snapshot::take(&root, &limits, previous.as_deref()).expect("take");
                let snapshot = store.remember(snapshot);
                let id = format!("{turn}-{phase}");
                store.save(&id, &snapshot).expect("save");
                taken.push((id, snapshot));
            }
        }
        let manifest = |id: &str| std::fs::read_to_string(store.dir().join(format!("manifests/{id}.json")));
        assert!(manifest(&taken[3].0).expect("read").contains("\"parent\""), "a delta");

        // The first two turns go; the third's pre was a delta on the second's post.
        let (snapshots, contents) = collect(&store, &turns, 2).expect("collect");
        assert_eq!(snapshots, 4);
        assert_eq!(contents, 2, "f0.txt as the first two turns left it");
        for (id, _) in &taken[..4] {
            assert!(manifest(id).is_err(), "{id} is gone");
            assert!(store.load(id).is_err());
        }
        for (id, snapshot) in &taken[4..] {
            let loaded = store.load(id).expect("a kept snapshot reads");
            assert_eq!(loaded.files, snapshot.files, "{id}");
            for entry in loaded.files.values() {
                let hash = entry.sha256.as_deref().expect("hash");
                assert!(
                    efr_snapshot::blob_path(&store.blobs(), hash).is_file(),
                    "{id}: a content is gone"
                );
            }
        }
        // Collecting again at the next start: nothing more goes.
        assert_eq!(collect(&store, &turns, 2).expect("collect"), (0, 0));
    }

    #[test]
    fn each_conversation_keeps_its_newest_turns_with_snapshots() {
        let (a, b) = (ConversationId::new(), ConversationId::new());
        let t: Vec<TurnId> = (0..6).map(|_| TurnId::new()).collect();
        // a: t0, t1 (no snapshots), t2, t3; b: t4, t5.
        let turns = [(a, t[0]), (a, t[1]), (b, t[4]), (a, t[2]), (a, t[3]), (b, t[5])];
        let with: HashSet<TurnId> = [t[0], t[2], t[3], t[4], t[5]].into();
        let kept = kept_turns(&turns, &with, 2);
        assert_eq!(kept, [t[2], t[3], t[4], t[5]].into());
        assert_eq!(kept_turns(&turns, &with, 0), HashSet::new());
    }
}
