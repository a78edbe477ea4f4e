//! Many tasks committing to many conversations at once, as the conversation actors do.

use std::sync::Arc;

use efr_protocol::ids::{CommandId, ConversationId};
use tokio::sync::Mutex;

use super::*;
use crate::StoreError;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_commits_keep_every_log_contiguous() {
    const CONVERSATIONS: usize = 12;
    const TASKS: usize = 48;
    const COMMITS_PER_TASK: usize = 40;

    let (_dir, store) = temp_store().await;
    // Each conversation's next seq sits behind a lock, as an actor owns it; tasks pick conversations at random, so
    // commits of different conversations interleave and share the writer's batches.
    let mut logs = Vec::new();
    for _ in 0..CONVERSATIONS {
        let id = ConversationId::new();
        create(&store, id, 1).await;
        logs.push((id, Arc::new(Mutex::new(2u64))));
    }
    let logs = Arc::new(logs);
    // Every task also races for one shared command id: exactly one may store it.
    let shared = CommandId::new();

    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let store = store.clone();
        let logs = Arc::clone(&logs);
        tasks.push(tokio::spawn(async move {
            let mut won = 0;
            for n in 0..COMMITS_PER_TASK {
                let (id, next) = &logs[rand::random_range(0..CONVERSATIONS)];
                let mut next = next.lock().await;
                let count = rand::random_range(1..=3);
                let mut commit = Commit::events(events(*id, *next, *next + count - 1));
                if n == task % COMMITS_PER_TASK {
                    commit = commit.with_command(command(shared, Some(*id), &format!(r#"{{"task":{task}}}"#)));
                }
                match store.commit(commit).await {
                    Ok(()) => {
                        *next += count;
                        if n == task % COMMITS_PER_TASK {
                            won += 1;
                        }
                    }
                    // The loser of the command race wrote nothing; its seqs stay free.
                    Err(StoreError::DuplicateCommand { command_id, .. }) if command_id == shared => {}
                    Err(e) => panic!("task {task}: {e:?}"),
                }
            }
            won
        }));
    }
    let mut winners = 0;
    for task in tasks {
        winners += task.await.unwrap();
    }
    assert_eq!(winners, 1, "exactly one task stored the shared command id");

    let mut total = 0;
    for (id, next) in logs.iter() {
        let all = all_events(&store, *id).await;
        assert_contiguous(*id, &all);
        let next = *next.lock().await;
        assert_eq!(
            all.len() as u64,
            next - 1,
            "conversation {id}: every acknowledged event and no other"
        );
        total += all.len();
    }
    assert!(total > TASKS * COMMITS_PER_TASK, "{total}");
    let stored = store.command_outcome(shared).await.unwrap().unwrap();
    assert!(stored.result.starts_with(r#"{"task":"#));
    store.close().await.unwrap();
}
