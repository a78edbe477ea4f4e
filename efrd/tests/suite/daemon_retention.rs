//! Retention while efrd runs: a soak of turns with a small `[undo] keep_turns` and a collection every second, on
//! one efrd with no restart, an undo every 20 turns. The snapshot store, the scratch folders and the undo journals
//! stay bounded; their sizes
//! are printed after the warm-up and at the end. `EFR_RETENTION_TURNS` sets the count of turns (200 by default; the
//! issue's soak is 2,000).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use efr_test_support::client::Client;
use serde_json::json;

use common::tools::{prompt_to, shell_call, text};
use common::{command_id, events_through, model, project, subscribe};
use efr_test_support::daemon::{TestDaemon, config_for};

/// The bytes and the count of files under `path` (0, 0 when it does not exist).
fn usage(path: &Path) -> (u64, u64) {
    let mut total = (0, 0);
    let mut stack = vec![path.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().filter_map(Result::ok) {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                total.0 += meta.len();
                total.1 += 1;
            }
        }
    }
    total
}

/// The sizes the soak watches: the snapshot store's manifests and contents, the scratch folders, the journals.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    manifests: u64,
    blobs: (u64, u64),
    scratch: (u64, u64),
    journals: (u64, u64),
}

fn sizes(state: &Path) -> Sizes {
    Sizes {
        manifests: usage(&state.join("snapshots/manifests")).1,
        blobs: usage(&state.join("snapshots/blobs")),
        scratch: usage(&state.join("scratch")),
        journals: usage(&state.join("snapshots/undo")),
    }
}

/// One turn in `conversation`: a shell call that changes a file of the project (new contents for the snapshots),
/// then an answer.
async fn turn(client: &mut Client, conversation: &str, cwd: &Path) {
    let sent = prompt_to(client, Some(conversation), cwd, "full", "change it").await;
    assert_eq!(sent["conversation_id"], json!(conversation));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_soak_with_small_keep_turns_keeps_snapshots_scratch_and_journals_bounded() {
    let turns: usize = std::env::var("EFR_RETENTION_TURNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    const CONVERSATIONS: usize = 3;
    const KEEP_TURNS: u64 = 2;
    let home = tempfile::tempdir().unwrap();
    let cwd = project();
    let mut replies = Vec::new();
    for n in 0..turns + CONVERSATIONS + 1 {
        replies.push(shell_call(
            &format!("call_{n}"),
            &format!("echo 'version {n}' > state.txt"),
        ));
        replies.push(text("changed"));
    }
    let server = model(replies).await;
    let config = format!(
        "{}\n[undo]\nkeep_turns = {KEEP_TURNS}\ncollect_secs = 1\n",
        config_for(&server.base_url())
    );
    let mut efrd = TestDaemon::start(
        common::efrd_binary(),
        home.path(),
        Some(&config),
        &[("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")],
    )
    .unwrap();
    let mut client = efrd.client().await.unwrap();
    let state = home.path().join("state");

    // The conversations, each with its first turn, and a subscription to each.
    let mut conversations = Vec::new();
    for _ in 0..CONVERSATIONS {
        let sent = common::tools::prompt_in(&mut client, cwd.path(), "full", "start").await;
        let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
        let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
        events_through(&mut client, id, "turn_completed").await;
        conversations.push((conversation, id));
    }
    let started = Instant::now();
    let mut warm = None;
    for n in 0..turns {
        let (conversation, id) = conversations[n % CONVERSATIONS].clone();
        turn(&mut client, &conversation, cwd.path()).await;
        events_through(&mut client, id, "turn_completed").await;
        if n % 20 == 19 {
            // An undo of the turn just ended: its journal, which goes once the turn's snapshots go.
            let undone = client
                .ok(
                    "turn.undo",
                    json!({"command_id": command_id(), "conversation_id": conversation}),
                )
                .await
                .unwrap();
            assert!(undone["undo_id"].is_string(), "{undone}");
            events_through(&mut client, id, "undo_applied").await;
        }
        if n + 1 == turns / 10 {
            warm = Some(sizes(&state));
        }
    }
    // One more conversation, deleted: its scratch goes with it.
    let sent = common::tools::prompt_in(&mut client, cwd.path(), "full", "scratch").await;
    let doomed = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &doomed, Some(0)).await;
    events_through(&mut client, id, "turn_completed").await;
    assert!(state.join("scratch").join(&doomed).is_dir());
    client
        .ok(
            "conversation.delete",
            json!({"command_id": command_id(), "conversation_id": doomed}),
        )
        .await
        .unwrap();
    assert!(!state.join("scratch").join(&doomed).exists());

    // A pass after the last turn (one a second): the kept turns are each conversation's newest.
    let bound = CONVERSATIONS as u64 * KEEP_TURNS * 4;
    let waited = Instant::now();
    while sizes(&state).manifests > bound && waited.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let warm = warm.unwrap();
    let end = sizes(&state);
    eprintln!(
        "retention soak: {turns} turns in {:.1} s, keep_turns {KEEP_TURNS}\n\
         after the warm-up: manifests {}, contents {} files {} bytes, scratch {} files {} bytes, journals {} files\n\
         at the end:        manifests {}, contents {} files {} bytes, scratch {} files {} bytes, journals {} files",
        started.elapsed().as_secs_f64(),
        warm.manifests,
        warm.blobs.1,
        warm.blobs.0,
        warm.scratch.1,
        warm.scratch.0,
        warm.journals.1,
        end.manifests,
        end.blobs.1,
        end.blobs.0,
        end.scratch.1,
        end.scratch.0,
        end.journals.1,
    );
    // Each kept turn has at most a pre and a post snapshot of the project and of $SCRATCH.
    assert!(end.manifests <= bound, "{} manifests, more than {bound}", end.manifests);
    // The contents: at most those of the kept snapshots (one small file each, plus the project's others).
    assert!(
        end.blobs.1 <= warm.blobs.1.max(bound),
        "{end:?} against the warm-up's {warm:?}"
    );
    assert!(end.scratch.1 <= warm.scratch.1, "{end:?} against {warm:?}");
    assert!(end.journals.1 <= warm.journals.1, "{end:?} against {warm:?}");
    // No restart: the same efrd served every turn.
    assert!(efrd.try_wait().unwrap().is_none());
}
