//! Commits: round trips, the invariants, bad input, and that a bad commit fails alone in its batch.

use efr_protocol::ids::{CommandId, ConversationId, TurnId};

use super::*;
use crate::{StoreError, schema, writer};

#[tokio::test]
async fn a_commit_round_trips_summary_events_and_command() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    let turn = TurnId::new();
    let cmd = CommandId::new();
    let mut sum = summary(id, 3_000);
    sum.extra.insert("scope".into(), serde_json::json!({"kind": "outside"}));
    let evs = vec![
        event(id, 1, "conversation_created", None),
        event(id, 2, "prompt_queued", Some(turn)),
    ];
    let result = r#"{"turn_id":"x","seq":2}"#;
    let record = command(cmd, Some(id), result);
    let commit = Commit::events(evs.clone())
        .with_conversation(sum.clone())
        .with_command(record.clone());
    store.commit(commit).await.unwrap();

    assert_eq!(store.conversation(id).await.unwrap(), Some(sum));
    assert_eq!(store.events_after(id, 0, 10).await.unwrap(), evs);
    assert_eq!(store.last_seq(id).await.unwrap(), 2);
    let stored = store.command_outcome(cmd).await.unwrap().unwrap();
    assert_eq!(stored, record);

    // Unknown things read as absent, not as errors.
    assert_eq!(store.conversation(ConversationId::new()).await.unwrap(), None);
    assert_eq!(store.command_outcome(CommandId::new()).await.unwrap(), None);
    assert_eq!(store.last_seq(ConversationId::new()).await.unwrap(), 0);
    assert!(
        store
            .events_after(ConversationId::new(), 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_summary_upsert_replaces_all_but_created_at() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    store
        .commit(Commit::default().with_conversation(summary(id, 2_000)))
        .await
        .unwrap();
    let mut changed = summary(id, 9_000);
    changed.created_at = at(7_777);
    changed.title = None;
    changed.status = "running".into();
    changed.cwd = None;
    changed.turn_count = 3;
    changed.extra.insert("project".into(), "efr".into());
    store
        .commit(Commit::default().with_conversation(changed.clone()))
        .await
        .unwrap();

    let stored = store.conversation(id).await.unwrap().unwrap();
    assert_eq!(stored.created_at, at(1_000), "created_at keeps its first value");
    assert_eq!(
        ConversationSummary {
            created_at: at(7_777),
            ..stored
        },
        changed
    );
}

#[tokio::test]
async fn seqs_must_continue_the_log_exactly() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();

    // The first event of a log is seq 1.
    let err = store
        .commit(Commit::events(events(id, 2, 2)).with_conversation(summary(id, 2_000)))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::SeqGap { expected: 1, got: 2, conversation_id } if conversation_id == id),
        "{err:?}"
    );
    assert_eq!(
        store.conversation(id).await.unwrap(),
        None,
        "the summary of the refused commit was not written"
    );

    create(&store, id, 3).await;
    for (bad, what) in [(3, "a repeat"), (5, "a gap"), (1, "a restart")] {
        let err = store.commit(Commit::events(events(id, bad, bad))).await.unwrap_err();
        assert!(
            matches!(err, StoreError::SeqGap { expected: 4, got, .. } if got == bad),
            "{what}: {err:?}"
        );
    }

    // A gap in the middle of a commit refuses the whole commit: seq 4 is not written either.
    let mut evs = events(id, 4, 5);
    evs.push(event(id, 7, "note", None));
    let err = store.commit(Commit::events(evs)).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::SeqGap {
                expected: 6,
                got: 7,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(store.last_seq(id).await.unwrap(), 3);

    // Two conversations in one commit, interleaved, each continuing its own log.
    let other = ConversationId::new();
    let commit = Commit::events(vec![
        event(other, 1, "note", None),
        event(id, 4, "note", None),
        event(other, 2, "note", None),
        event(id, 5, "note", None),
    ])
    .with_conversation(summary(other, 2_000));
    store.commit(commit).await.unwrap();
    assert_contiguous(id, &all_events(&store, id).await);
    assert_contiguous(other, &all_events(&store, other).await);
    assert_eq!(store.last_seq(id).await.unwrap(), 5);
    assert_eq!(store.last_seq(other).await.unwrap(), 2);
    // The error's code for a server that has to answer.
    assert_eq!(err.code(), efr_protocol::ErrorCode::Internal);
}

#[tokio::test]
async fn an_event_needs_its_conversation() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    let err = store.commit(Commit::events(events(id, 1, 1))).await.unwrap_err();
    assert!(
        matches!(err, StoreError::UnknownConversation { conversation_id } if conversation_id == id),
        "{err:?}"
    );
    assert_eq!(store.last_seq(id).await.unwrap(), 0);
}

#[tokio::test]
async fn a_repeated_command_id_returns_the_first_outcome_and_changes_nothing() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    let cmd = CommandId::new();
    let first = command(cmd, Some(id), r#"{"seq":1}"#);
    store
        .commit(
            Commit::events(events(id, 1, 1))
                .with_conversation(summary(id, 2_000))
                .with_command(first.clone()),
        )
        .await
        .unwrap();

    // The retry carries other events, another summary and another result: none of it may land.
    let retry = Commit::events(events(id, 2, 3))
        .with_conversation(summary(id, 99_000))
        .with_command(command(cmd, Some(id), r#"{"seq":2}"#));
    let err = store.commit(retry.clone()).await.unwrap_err();
    let StoreError::DuplicateCommand { command_id, stored } = &err else {
        panic!("expected DuplicateCommand, got {err:?}");
    };
    assert_eq!(*command_id, cmd);
    assert_eq!(**stored, first);
    assert_eq!(err.code(), efr_protocol::ErrorCode::Conflict);
    assert_eq!(store.last_seq(id).await.unwrap(), 1);
    assert_eq!(store.conversation(id).await.unwrap().unwrap().updated_at, at(2_000));
    assert_eq!(store.command_outcome(cmd).await.unwrap(), Some(first.clone()));

    // Again, the same answer: a retry is idempotent however often it comes.
    let err = store.commit(retry).await.unwrap_err();
    assert!(matches!(err, StoreError::DuplicateCommand { stored, .. } if *stored == first));

    // A command outcome alone (a failed write stores its error body) for a conversation that does not exist.
    let lone = command(CommandId::new(), Some(ConversationId::new()), r#"{"code":"not_found"}"#);
    store
        .commit(Commit::default().with_command(lone.clone()))
        .await
        .unwrap();
    assert_eq!(store.command_outcome(lone.command_id).await.unwrap(), Some(lone));
}

#[tokio::test]
async fn bad_input_is_refused_before_it_is_queued() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    create(&store, id, 1).await;

    let with = |f: &dyn Fn(&mut EventRow)| {
        let mut e = event(id, 2, "note", None);
        f(&mut e);
        Commit::events(vec![e])
    };
    let cases: Vec<(Commit, &str)> = vec![
        (Commit::default(), "empty commit"),
        (
            with(&|e| e.body = "[1, 2]".into()),
            "events[0].body is not a JSON object",
        ),
        (
            with(&|e| e.body = r#"{"seq": 2"#.into()),
            "events[0].body is not a JSON object",
        ),
        (with(&|e| e.body = String::new()), "events[0].body is not a JSON object"),
        (with(&|e| e.seq = 0), "events[0].seq is 0"),
        (with(&|e| e.seq = u64::MAX), "events[0].seq is over i64::MAX"),
        (with(&|e| e.kind = String::new()), "events[0].kind is empty"),
        (
            Commit::default().with_command(command(CommandId::new(), None, "not json")),
            "command.result is not JSON",
        ),
        (
            Commit::default().with_conversation(ConversationSummary {
                turn_count: u64::MAX,
                ..summary(id, 2_000)
            }),
            "conversation.turn_count is over i64::MAX",
        ),
    ];
    for (commit, want) in cases {
        let err = store.commit(commit).await.unwrap_err();
        let StoreError::Invalid { what } = &err else {
            panic!("{want}: expected Invalid, got {err:?}");
        };
        assert!(what.contains(want), "{what:?} does not say {want:?}");
        assert_eq!(err.code(), efr_protocol::ErrorCode::Invalid);
    }
    // Nothing was lost or added, and the store still takes good commits.
    assert_eq!(store.last_seq(id).await.unwrap(), 1);
    store.commit(Commit::events(events(id, 2, 2))).await.unwrap();
    assert_contiguous(id, &all_events(&store, id).await);
}

#[test]
fn a_bad_commit_fails_alone_in_its_batch() {
    // The batch function directly, so that the commits surely share one transaction.
    let dir = tempfile::tempdir().unwrap();
    let conn = schema::open_writer(&dir.path().join("efr.db")).unwrap();
    let a = ConversationId::new();
    let b = ConversationId::new();
    let cmd = CommandId::new();
    let batch = vec![
        Commit::events(events(a, 1, 2)).with_conversation(summary(a, 2_000)),
        Commit::events(events(a, 4, 4)),                                           // gap
        Commit::events(events(b, 1, 1)).with_command(command(cmd, Some(b), "{}")), // no summary for b
        Commit::events(events(a, 3, 3)).with_command(command(cmd, Some(a), "{}")),
        Commit::default().with_command(command(cmd, None, "{}")), // duplicate of the one just above
        Commit::events(events(b, 1, 1)).with_conversation(summary(b, 2_000)),
    ];
    let outcomes = writer::commit_batch(&conn, &batch);
    assert_eq!(outcomes.len(), 6);
    assert!(outcomes[0].is_ok(), "{:?}", outcomes[0]);
    assert!(
        matches!(
            outcomes[1],
            Err(StoreError::SeqGap {
                expected: 3,
                got: 4,
                ..
            })
        ),
        "{:?}",
        outcomes[1]
    );
    assert!(
        matches!(outcomes[2], Err(StoreError::UnknownConversation { .. })),
        "{:?}",
        outcomes[2]
    );
    assert!(outcomes[3].is_ok(), "{:?}", outcomes[3]);
    assert!(
        matches!(outcomes[4], Err(StoreError::DuplicateCommand { .. })),
        "{:?}",
        outcomes[4]
    );
    assert!(outcomes[5].is_ok(), "{:?}", outcomes[5]);

    assert!(conn.is_autocommit(), "the batch's transaction is closed");
    let seqs = |id: ConversationId| -> Vec<u64> {
        crate::read::events_after(&conn, id, 0, 100)
            .unwrap()
            .into_iter()
            .map(|e| e.seq)
            .collect()
    };
    assert_eq!(seqs(a), [1, 2, 3]);
    assert_eq!(seqs(b), [1]);
    // The failed commit 2 tried to store `cmd` first; the stored outcome is commit 3's.
    let stored = crate::read::command_outcome(&conn, cmd).unwrap().unwrap();
    assert_eq!(stored.conversation_id, Some(a));
}

#[tokio::test]
async fn command_ids_past_the_retention_are_pruned_when_the_store_opens_and_a_retry_inside_it_still_conflicts() {
    const DAY: i64 = 86_400_000;
    let retention = i64::try_from(crate::COMMAND_RETENTION.as_millis()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("efr.db");
    let now = Timestamp::now().as_millis();
    let old = CommandRecord {
        at: at(now - retention - DAY),
        ..command(CommandId::new(), None, r#"{"old":true}"#)
    };
    let recent = CommandRecord {
        at: at(now - retention + DAY),
        ..command(CommandId::new(), None, r#"{"recent":true}"#)
    };
    let store = Store::open(&path).await.unwrap();
    for record in [&old, &recent] {
        store
            .commit(Commit::default().with_command(record.clone()))
            .await
            .unwrap();
    }
    store.close().await.unwrap();

    let store = Store::open(&path).await.unwrap();
    assert_eq!(
        store.command_outcome(old.command_id).await.unwrap(),
        None,
        "past the retention"
    );
    // A retry inside the retention still gets the first outcome and changes nothing.
    let retry = Commit::default().with_command(command(recent.command_id, None, r#"{"again":true}"#));
    let err = store.commit(retry).await.unwrap_err();
    assert!(matches!(err, StoreError::DuplicateCommand { stored, .. } if *stored == recent));
    store.close().await.unwrap();
}
