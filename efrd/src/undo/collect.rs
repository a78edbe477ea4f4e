//! The collection of old snapshots (`docs/undo.md`, "What the store keeps"): the snapshots of each conversation's
//! turns older than its newest `[undo] keep_turns` with snapshots are removed, and those of turns that no
//! conversation holds any more (a deleted conversation); then the contents that no kept snapshot holds. A turn's
//! snapshots are named `<turn_id>-pre`, `<turn_id>-post` and `<turn_id>-{pre,post}-<n>` ([`super::root_id`]); a
//! snapshot of another name is left alone.
//!
//! It runs while efrd runs ([`pass`]: once right after the start, then every `[undo] collect_secs`), and also
//! removes the undo journals of the turns whose snapshots went, the `$SCRATCH` folders of conversations that no
//! longer exist and the trash past its age. A pass holds the snapshot store alone
//! ([`efr_snapshot::SnapshotStore::exclusive`]: no walk, save or undo runs meanwhile), never removes a turn that has
//! not ended, takes at most [`PASS_TURNS`] turns and stops at its deadline; what it left, the next pass takes.
//! [`remove_conversation`] is the part of conversation.delete on disk.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

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

/// The most turns whose snapshots one pass removes: a pass reads every manifest once, and removing a turn costs
/// a few file operations and the rewrite of a delta that named it.
pub const PASS_TURNS: usize = 500;

/// What one pass removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Collected {
    /// Snapshots (manifests).
    pub snapshots: u64,
    /// Contents that no kept snapshot holds.
    pub contents: u64,
    /// Undo journals (a turn's record and its undo's log count one each).
    pub journals: u64,
    /// `$SCRATCH` folders.
    pub scratch: u64,
    /// Undos' folders of the trash.
    pub trash: u64,
    /// The pass stopped at its deadline or at [`PASS_TURNS`]: more is left for the next.
    pub cut: bool,
}

/// What a pass works on.
#[derive(Debug)]
pub struct PassInput<'a> {
    /// Every turn with its conversation, oldest first.
    pub turns: &'a [(ConversationId, TurnId)],
    /// The turns that have not ended: never collected.
    pub open: &'a HashSet<TurnId>,
    /// `[undo] keep_turns`.
    pub keep_turns: usize,
    /// The `$SCRATCH` folders to remove (of conversations that no longer exist).
    pub orphan_scratch: &'a [PathBuf],
    /// When the pass stops.
    pub deadline: Instant,
}

/// One pass of the collection while efrd runs (see the module docs). Blocks: call it from `spawn_blocking`, holding
/// [`efr_snapshot::SnapshotStore::exclusive`].
///
/// # Errors
/// [`SnapshotError`] from the store (what was removed before it stays removed).
pub fn pass(store: &SnapshotStore, input: &PassInput<'_>) -> Result<Collected, SnapshotError> {
    let mut done = Collected::default();
    let with_snapshots: HashSet<TurnId> = store.ids()?.iter().filter_map(|id| turn_of(id)).collect();
    let mut kept = kept_turns(input.turns, &with_snapshots, input.keep_turns);
    kept.extend(input.open.iter().copied());
    let mut dropped: Vec<TurnId> = with_snapshots.difference(&kept).copied().collect();
    if dropped.len() > PASS_TURNS {
        // The oldest first: the order of the log.
        let order: HashMap<TurnId, usize> = input.turns.iter().enumerate().map(|(i, (_, t))| (*t, i)).collect();
        dropped.sort_by_key(|turn| order.get(turn).copied().unwrap_or(0));
        dropped.truncate(PASS_TURNS);
        done.cut = true;
    }
    let dropping: HashSet<TurnId> = dropped.iter().copied().collect();
    (done.snapshots, done.contents) = store.prune(|id| turn_of(id).is_some_and(|turn| dropping.contains(&turn)))?;
    for turn in &dropped {
        done.journals += remove_turn_files(store.dir(), *turn, &mut Vec::new());
    }
    done.journals += collect_journals(&store.dir().join("undo"), &kept, input.deadline);
    for folder in input.orphan_scratch {
        if Instant::now() >= input.deadline {
            done.cut = true;
            break;
        }
        if std::fs::remove_dir_all(folder).is_ok() {
            done.scratch += 1;
        }
    }
    if Instant::now() < input.deadline {
        done.trash = super::trash::expire(&store.trash_dir(), store.trash_bounds(), None) as u64;
    } else {
        done.cut = true;
    }
    Ok(done)
}

/// Removes the files beside a turn's snapshots: the changes that may be another turn's, the copies of the floor
/// files it wrote, and its undo journal. What could not be removed is added to `left`; returns how many journal
/// files went.
fn remove_turn_files(store_dir: &Path, turn: TurnId, left: &mut Vec<PathBuf>) -> u64 {
    efr_snapshot::others::remove(store_dir, turn);
    remove_all(&super::home::folder(store_dir, turn), left);
    let journals = store_dir.join("undo");
    let mut removed = 0;
    if let Some(record) = super::journal::read(&journals, &turn.to_string()) {
        removed += u64::from(remove_file(&journals.join(format!("{}.log", record.undo_id)), left));
    }
    removed + u64::from(remove_file(&journals.join(format!("{turn}.json")), left))
}

/// Removes the journals of the turns not in `kept` (their snapshots are gone: nothing can undo them), and the logs
/// of undos that no turn's record names; returns how many files went.
fn collect_journals(dir: &Path, kept: &HashSet<TurnId>, deadline: Instant) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let names: Vec<String> = entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    let mut named_logs = HashSet::new();
    let mut removed = 0;
    for name in names.iter().filter_map(|n| n.strip_suffix(".json")) {
        let Ok(turn) = name.parse::<TurnId>() else { continue };
        let record = super::journal::read(dir, name);
        if kept.contains(&turn) {
            named_logs.extend(record.map(|r| format!("{}.log", r.undo_id)));
        } else if Instant::now() < deadline && std::fs::remove_file(dir.join(format!("{name}.json"))).is_ok() {
            removed += 1;
        }
    }
    for log in names.iter().filter(|n| n.ends_with(".log") && !named_logs.contains(*n)) {
        if Instant::now() >= deadline {
            break;
        }
        if std::fs::remove_file(dir.join(log)).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Removes what conversation.delete removes on disk: the snapshots of `turns` (with their contents that no kept
/// snapshot holds), the files beside them, and `scratch`. Blocks: call it from `spawn_blocking`, holding
/// [`efr_snapshot::SnapshotStore::exclusive`]. Returns what could not be removed.
#[must_use]
pub fn remove_conversation(store: &SnapshotStore, turns: &HashSet<TurnId>, scratch: &Path) -> Vec<PathBuf> {
    let mut left = Vec::new();
    if let Err(error) = store.prune(|id| turn_of(id).is_some_and(|turn| turns.contains(&turn))) {
        tracing::warn!(%error, "the snapshots of a deleted conversation were not all removed");
        left.push(store.dir().join("manifests"));
    }
    for turn in turns {
        remove_turn_files(store.dir(), *turn, &mut left);
    }
    remove_all(scratch, &mut left);
    left
}

fn remove_all(path: &Path, left: &mut Vec<PathBuf>) {
    match std::fs::remove_dir_all(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => left.push(path.to_path_buf()),
        _ => {}
    }
}

/// Removes the file `path`; `true` when it was there and went.
fn remove_file(path: &Path, left: &mut Vec<PathBuf>) -> bool {
    match std::fs::remove_file(path) {
        Ok(()) => true,
        Err(error) => {
            if error.kind() != std::io::ErrorKind::NotFound {
                left.push(path.to_path_buf());
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(turns: &'a [(ConversationId, TurnId)], open: &'a HashSet<TurnId>, keep_turns: usize) -> PassInput<'a> {
        PassInput {
            turns,
            open,
            keep_turns,
            orphan_scratch: &[],
            deadline: Instant::now() + std::time::Duration::from_secs(60),
        }
    }

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
        let collected = pass(&store, &input(&turns, &HashSet::new(), 2)).expect("collect");
        let (snapshots, contents) = (collected.snapshots, collected.contents);
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
        // Collecting again: nothing more goes.
        assert_eq!(
            pass(&store, &input(&turns, &HashSet::new(), 2)).expect("collect"),
            Collected::default()
        );
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

    /// A pass never takes a turn that has not ended, removes the journals of the turns it collects and the logs
    /// that no turn's record names, and the scratch folders it is given.
    #[test]
    fn a_pass_keeps_open_turns_and_takes_the_journals_of_the_turns_it_collects() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("project");
        std::fs::create_dir(&root).expect("mkdir");
        std::fs::write(root.join("f.txt"), "x\n").expect("write");
        let store = SnapshotStore::open(&dir.path().join("state")).expect("store");
        let conversation = ConversationId::new();
        let t: Vec<TurnId> = (0..3).map(|_| TurnId::new()).collect();
        let turns: Vec<(ConversationId, TurnId)> = t.iter().map(|turn| (conversation, *turn)).collect();
        for turn in &t {
            let snapshot = efr_snapshot::Snapshot::take(&root, &efr_snapshot::Limits::default(), None).expect("take");
            store
                .save(&format!("{turn}-pre"), &std::sync::Arc::new(snapshot))
                .expect("save");
            super::super::journal::Journal::begin(
                &store.dir().join("undo"),
                &turn.to_string(),
                &format!("u-{turn}"),
                false,
            )
            .expect("journal")
            .finish(super::super::journal::State::Done)
            .expect("finish");
        }
        let undo = store.dir().join("undo");
        std::fs::write(undo.join("u-orphan.log"), "").expect("orphan log");
        let scratch = dir.path().join("scratch-of-a-deleted-conversation");
        std::fs::create_dir(&scratch).expect("scratch");
        std::fs::write(scratch.join("notes.txt"), "n").expect("scratch file");

        // t0 has not ended: kept although it is past keep_turns; t1 goes; t2 is the newest.
        let open: HashSet<TurnId> = [t[0]].into();
        let mut input = input(&turns, &open, 1);
        let orphans = [scratch.clone()];
        input.orphan_scratch = &orphans;
        let collected = pass(&store, &input).expect("pass");
        assert_eq!((collected.snapshots, collected.scratch, collected.cut), (1, 1, false));
        let ids = store.ids().expect("ids");
        assert_eq!(ids.len(), 2);
        assert!(!ids.contains(&format!("{}-pre", t[1])));
        assert!(
            !undo.join(format!("{}.json", t[1])).exists(),
            "the collected turn's journal"
        );
        assert!(!undo.join(format!("u-{}.log", t[1])).exists(), "and its undo's log");
        assert!(!undo.join("u-orphan.log").exists(), "a log no record names");
        for kept in [t[0], t[2]] {
            assert!(undo.join(format!("{kept}.json")).is_file());
            assert!(undo.join(format!("u-{kept}.log")).is_file());
        }
        assert_eq!(collected.journals, 3);
        assert!(!scratch.exists());

        // A deadline already past: the pass stops before the scratch folders and the trash, and says so.
        let late = [dir.path().join("late")];
        std::fs::create_dir(&late[0]).expect("late");
        input.orphan_scratch = &late;
        input.deadline = Instant::now();
        assert!(pass(&store, &input).expect("pass").cut);
        assert!(late[0].exists());
    }
}
