//! Crash test: efrd is killed with SIGKILL at random moments during streaming turns, 20 rounds. After each restart
//! every conversation's seqs are contiguous, every event a subscriber saw is in the log as it was seen, and every
//! prompt that waited ends with turn_cancelled (none ever started). The moments come from a seed that the test prints
//! and takes from `EFR_CRASH_SEED` when set, so a failing run can be replayed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use efr_protocol::frame::ServerFrame;
use efr_test_support::scripted::Reply;
use rand::{Rng, SeedableRng};
use serde_json::json;

use common::{daemon, model, prompt, whole_log};

const ROUNDS: usize = 20;

/// The variable that sets the seed of the random kill moments and targets (printed by every run).
const SEED_VAR: &str = "EFR_CRASH_SEED";

/// A reply that streams for about a second, in many small pieces.
fn slow_reply(round: usize) -> Reply {
    Reply::streamed((0..40).map(|i| format!("r{round}-{i} größe 🙂 ")), 25)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_loses_nothing_and_leaves_no_gap() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let server = model((0..ROUNDS * 2).map(slow_reply).collect()).await;
    let mut efrd = daemon(home.path(), &server);
    // A failure is replayed with the seed it printed: `EFR_CRASH_SEED=<seed> cargo test -p efrd --test all daemon_crash`.
    let seed: u64 = match std::env::var(SEED_VAR) {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("{SEED_VAR}={text:?} is not a seed (an unsigned 64-bit number)")),
        Err(_) => rand::rng().random(),
    };
    eprintln!("crash test seed {seed} (replay with {SEED_VAR}={seed})");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut conversations: Vec<String> = Vec::new();
    let mut waiting_turns: HashSet<String> = HashSet::new();

    for round in 0..ROUNDS {
        let mut client = efrd.client().await.unwrap();
        // Half the rounds open a new conversation, the others go on with an older one.
        let target = if conversations.is_empty() || rng.random_bool(0.5) {
            None
        } else {
            Some(conversations[rng.random_range(0..conversations.len())].clone())
        };
        let first = prompt(
            &mut client,
            project.path(),
            target.as_deref(),
            &format!("round {round}"),
        )
        .await;
        let conversation = first["conversation_id"].as_str().unwrap().to_owned();
        if !conversations.contains(&conversation) {
            conversations.push(conversation.clone());
        }
        let second = prompt(
            &mut client,
            project.path(),
            Some(&conversation),
            &format!("round {round}, waiting"),
        )
        .await;

        let mut watcher = efrd.client().await.unwrap();
        let id = watcher
            .send(
                "conversation.subscribe",
                json!({"conversation_id": conversation, "after_seq": 0}),
                true,
            )
            .await
            .unwrap();
        let kill_after = Duration::from_millis(rng.random_range(0..600));
        let seen = tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                match watcher.read_frame().await {
                    Ok(Some(ServerFrame::Item { item, .. })) => seen.push(item["event"].clone()),
                    Ok(Some(ServerFrame::Ack(_))) => {}
                    Ok(Some(other)) => panic!("unexpected frame {other:?} (request {id})"),
                    Ok(None) | Err(_) => return seen,
                }
            }
        });
        tokio::time::sleep(kill_after).await;
        efrd.kill().unwrap();
        let seen = seen.await.unwrap();
        efrd.restart().unwrap();

        let mut client = efrd.client().await.unwrap();
        let log = whole_log(&mut client, &conversation).await;
        let seqs: Vec<u64> = log.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        assert_eq!(
            seqs,
            (1..=log.len() as u64).collect::<Vec<_>>(),
            "round {round} (seed {seed}): the log has a gap"
        );
        for event in &seen {
            let seq = event["seq"].as_u64().unwrap();
            assert_eq!(
                &log[usize::try_from(seq).unwrap() - 1],
                event,
                "round {round} (seed {seed}): a seen event is not in the log as seen"
            );
        }
        // Every turn of the log ended, exactly once; a turn that never started ended with turn_cancelled.
        let mut ends: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut started = HashSet::new();
        for event in &log {
            let turn = event["turn_id"].as_str().unwrap_or_default();
            match event["kind"].as_str().unwrap() {
                "turn_started" => {
                    started.insert(turn);
                }
                kind @ ("turn_completed" | "turn_failed" | "turn_interrupted" | "turn_cancelled") => {
                    ends.entry(turn).or_default().push(kind);
                }
                "prompt_queued" => {
                    ends.entry(turn).or_default();
                }
                _ => {}
            }
        }
        for (turn, kinds) in &ends {
            assert_eq!(
                kinds.len(),
                1,
                "round {round} (seed {seed}): turn {turn} has ends {kinds:?}"
            );
            if !started.contains(turn) {
                assert_eq!(
                    kinds[0], "turn_cancelled",
                    "round {round} (seed {seed}): a waiting prompt must end cancelled"
                );
            }
        }
        let waiting = second["turn_id"].as_str().unwrap();
        if !started.contains(waiting) {
            waiting_turns.insert(waiting.to_owned());
        }
    }
    assert!(
        !waiting_turns.is_empty(),
        "no round killed efrd while a prompt waited; the test proved nothing (seed {seed})"
    );
}
