//! SIGKILL at a random moment: every acknowledged commit survives, and each log is a contiguous prefix.
//!
//! The test runs this same test binary again as the child (`--exact` on this test, with [`CHILD_DB`] set). The
//! child opens the store and commits from one task per conversation, in a loop, printing `ack <conversation> <seq>`
//! after each commit returned. The parent kills it with SIGKILL at a random moment, reads every ack the child
//! printed, reopens the store and checks.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use efr_protocol::ids::ConversationId;

use super::*;

/// Set in the child: the database path. Its presence makes the test act as the child.
const CHILD_DB: &str = "EFR_STORE_KILL_CHILD_DB";
/// Set in the child: the conversation ids, comma separated.
const CHILD_CONVERSATIONS: &str = "EFR_STORE_KILL_CHILD_CONVERSATIONS";

const ROUNDS: usize = 6;
const CONVERSATIONS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_commits_survive_sigkill() {
    if let Ok(path) = std::env::var(CHILD_DB) {
        child(&path).await;
        return;
    }

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("efr.db");
    let ids: Vec<ConversationId> = (0..CONVERSATIONS).map(|_| ConversationId::new()).collect();
    {
        let store = Store::open(&path).await.unwrap();
        for id in &ids {
            create(&store, *id, 1).await;
        }
        store.close().await.unwrap();
    }
    let test_name = format!("{}::acknowledged_commits_survive_sigkill", module_path!());
    let test_name = test_name
        .split_once("::")
        .map_or(test_name.as_str(), |(_, rest)| rest)
        .to_owned();
    let id_list = ids.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");

    for round in 0..ROUNDS {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([test_name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_DB, &path)
            .env(CHILD_CONVERSATIONS, &id_list)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        // Read acks on a thread; the first one says the child is committing.
        let stdout = child.stdout.take().unwrap();
        let (first_tx, first_rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut acks: Vec<(ConversationId, u64)> = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let line = line.unwrap();
                let Some(rest) = line.strip_prefix("ack ") else {
                    continue;
                };
                let (id, seq) = rest.split_once(' ').unwrap();
                acks.push((id.parse().unwrap(), seq.parse().unwrap()));
                if acks.len() == 1 {
                    let _ = first_tx.send(());
                }
            }
            acks
        });
        first_rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("round {round}: the child never acknowledged a commit"));
        std::thread::sleep(Duration::from_millis(rand::random_range(10..400)));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "round {round}: the child ended on its own: {status}"
        );
        let acks = reader.join().unwrap();
        assert!(!acks.is_empty());

        let store = Store::open(&path).await.unwrap();
        for id in &ids {
            let all = all_events(&store, *id).await;
            assert_contiguous(*id, &all);
            let last = all.last().map_or(0, |e| e.seq);
            assert_eq!(store.last_seq(*id).await.unwrap(), last);
            let acked = acks.iter().filter(|(c, _)| c == id).map(|(_, s)| *s).max().unwrap_or(0);
            assert!(
                acked <= last,
                "round {round}: conversation {id} acknowledged seq {acked} but holds {last}"
            );
        }
        store.close().await.unwrap();
        eprintln!("kill round {round}: {} acknowledged commits survived", acks.len());
    }
}

/// The child: commit forever, one task per conversation, printing each acknowledged last seq.
async fn child(path: &str) {
    let store = Store::open(path).await.unwrap();
    let ids: Vec<ConversationId> = std::env::var(CHILD_CONVERSATIONS)
        .unwrap()
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    let mut tasks = Vec::new();
    for id in ids {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut next = store.last_seq(id).await.unwrap() + 1;
            loop {
                let count = rand::random_range(1..=20);
                store
                    .commit(Commit::events(events(id, next, next + count - 1)))
                    .await
                    .unwrap();
                next += count;
                // One write per line, far below PIPE_BUF: a line is in the pipe whole or not at all.
                let line = format!("ack {id} {}\n", next - 1);
                std::io::stdout().lock().write_all(line.as_bytes()).unwrap();
            }
        }));
    }
    // The tasks commit until the parent kills the process; one that ends has failed.
    let (ended, _, _) = futures::future::select_all(tasks).await;
    ended.unwrap();
    panic!("a committing task ended");
}
