//! Reads: paging of events and conversations, open turns, and the query plans that keep recovery cheap.

use efr_protocol::ids::{ConversationId, TurnId};

use super::*;
use crate::{ConversationCursor, MAX_PAGE, PageRequest, StoreError, read, schema};

#[tokio::test]
async fn events_after_pages_in_seq_order() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    let other = ConversationId::new();
    create(&store, id, 25).await;
    create(&store, other, 3).await;

    let page = store.events_after(id, 0, 10).await.unwrap();
    assert_eq!(
        page.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=10).collect::<Vec<_>>()
    );
    let page = store.events_after(id, 20, 10).await.unwrap();
    assert_eq!(
        page.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (21..=25).collect::<Vec<_>>()
    );
    assert!(store.events_after(id, 25, 10).await.unwrap().is_empty());
    assert!(store.events_after(id, u64::MAX, 10).await.unwrap().is_empty());
    let all = all_events(&store, id).await;
    assert_eq!(all.len(), 25);
    assert_contiguous(id, &all);

    for limit in [0, MAX_PAGE + 1] {
        let err = store.events_after(id, 0, limit).await.unwrap_err();
        assert!(
            matches!(&err, StoreError::Invalid { what } if what.contains("limit")),
            "{err:?}"
        );
    }
    assert_eq!(store.events_after(id, 0, MAX_PAGE).await.unwrap().len(), 25);
}

#[tokio::test]
async fn conversations_list_newest_first_in_pages() {
    let (_dir, store) = temp_store().await;
    // Seven conversations; three share one updated_at, so the id breaks the tie.
    let mut made = Vec::new();
    for updated in [5_000, 3_000, 3_000, 9_000, 3_000, 1_000, 7_000] {
        let id = ConversationId::new();
        store
            .commit(Commit::default().with_conversation(summary(id, updated)))
            .await
            .unwrap();
        made.push((updated, id));
    }
    made.sort_by_key(|(updated, id)| std::cmp::Reverse((*updated, id.to_string())));
    let want: Vec<ConversationId> = made.iter().map(|(_, id)| *id).collect();

    let mut got = Vec::new();
    let mut after = None;
    let mut pages = 0;
    loop {
        let page = store.list_conversations(PageRequest { limit: 3, after }).await.unwrap();
        pages += 1;
        assert!(page.conversations.len() <= 3);
        got.extend(page.conversations.iter().map(|c| c.id));
        match page.next {
            Some(next) => {
                // The cursor survives its text form, as a wire cursor would.
                after = Some(next.to_string().parse::<ConversationCursor>().unwrap());
            }
            None => break,
        }
    }
    assert_eq!(got, want);
    assert_eq!(pages, 3);

    // A page exactly as long as what is left says there is no next page.
    let page = store
        .list_conversations(PageRequest { limit: 7, after: None })
        .await
        .unwrap();
    assert_eq!(page.conversations.len(), 7);
    assert_eq!(page.next, None);

    for limit in [0, MAX_PAGE + 1] {
        let err = store
            .list_conversations(PageRequest { limit, after: None })
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Invalid { .. }), "{err:?}");
    }
}

#[tokio::test]
async fn open_turns_are_the_queued_and_running_ones() {
    let (_dir, store) = temp_store().await;
    let a = ConversationId::new();
    let b = ConversationId::new();
    let done = TurnId::new();
    let running = TurnId::new();
    let waiting = TurnId::new();
    let interrupting = TurnId::new();
    let withdrawn = TurnId::new();
    let waiting_b = TurnId::new();
    // Conversation a: a finished turn, a running turn with a prompt queued behind it (queued before the running
    // turn's deltas, as happens), a withdrawn prompt.
    let a_events = vec![
        event(a, 1, "conversation_created", None),
        event(a, 2, "prompt_queued", Some(done)),
        event(a, 3, "turn_started", Some(done)),
        event(a, 4, "turn_completed", Some(done)),
        event(a, 5, "prompt_queued", Some(running)),
        event(a, 6, "turn_started", Some(running)),
        event(a, 7, "prompt_queued", Some(waiting)),
        event(a, 8, "assistant_message_updated", Some(running)),
        event(a, 9, "prompt_queued", Some(withdrawn)),
        event(a, 10, "prompt_withdrawn", Some(withdrawn)),
        event(a, 11, "note", None),
    ];
    store
        .commit(Commit::events(a_events).with_conversation(summary(a, 2_000)))
        .await
        .unwrap();
    let b_events = vec![
        event(b, 1, "conversation_created", None),
        event(b, 2, "prompt_queued", Some(interrupting)),
        event(b, 3, "turn_started", Some(interrupting)),
        event(b, 4, "turn_interrupt_requested", Some(interrupting)),
        event(b, 5, "prompt_queued", Some(waiting_b)),
    ];
    store
        .commit(Commit::events(b_events).with_conversation(summary(b, 2_000)))
        .await
        .unwrap();

    let terminal = [
        "turn_completed",
        "turn_failed",
        "turn_interrupted",
        "turn_cancelled",
        "prompt_withdrawn",
    ];
    let open = store.open_turns(&["prompt_queued"], &terminal).await.unwrap();
    let mut by_conversation: Vec<(ConversationId, TurnId, u64, String, u64, Vec<String>)> = open
        .iter()
        .map(|t| {
            (
                t.conversation_id,
                t.turn_id,
                t.first.seq,
                t.last_kind.clone(),
                t.last_seq,
                t.kinds.clone(),
            )
        })
        .collect();
    // Ordered by conversation id text, then first seq.
    let mut want = vec![
        (
            a,
            running,
            5,
            "assistant_message_updated".to_owned(),
            8,
            vec![
                "assistant_message_updated".to_owned(),
                "prompt_queued".to_owned(),
                "turn_started".to_owned(),
            ],
        ),
        (
            a,
            waiting,
            7,
            "prompt_queued".to_owned(),
            7,
            vec!["prompt_queued".to_owned()],
        ),
        (
            b,
            interrupting,
            2,
            "turn_interrupt_requested".to_owned(),
            4,
            vec![
                "prompt_queued".to_owned(),
                "turn_interrupt_requested".to_owned(),
                "turn_started".to_owned(),
            ],
        ),
        (
            b,
            waiting_b,
            5,
            "prompt_queued".to_owned(),
            5,
            vec!["prompt_queued".to_owned()],
        ),
    ];
    want.sort_by_key(|x| (x.0.to_string(), x.2));
    assert_eq!(by_conversation, want);
    // The first event is the whole prompt_queued row, body included.
    let first = &open.iter().find(|t| t.turn_id == waiting).unwrap().first;
    assert_eq!(*first, event(a, 7, "prompt_queued", Some(waiting)));

    // Once recovery records the terminal events, nothing is open.
    store
        .commit(Commit::events(vec![
            event(a, 12, "turn_interrupted", Some(running)),
            event(a, 13, "turn_cancelled", Some(waiting)),
        ]))
        .await
        .unwrap();
    store
        .commit(Commit::events(vec![
            event(b, 6, "turn_interrupted", Some(interrupting)),
            event(b, 7, "turn_cancelled", Some(waiting_b)),
        ]))
        .await
        .unwrap();
    assert!(
        store
            .open_turns(&["prompt_queued"], &terminal)
            .await
            .unwrap()
            .is_empty()
    );

    // With no terminal kinds every opened turn is open; with no opening kinds the question is meaningless.
    by_conversation = Vec::new();
    for t in store.open_turns(&["prompt_queued"], &[]).await.unwrap() {
        by_conversation.push((
            t.conversation_id,
            t.turn_id,
            t.first.seq,
            t.last_kind,
            t.last_seq,
            t.kinds,
        ));
    }
    assert_eq!(by_conversation.len(), 6, "every turn that has a prompt_queued");
    let err = store.open_turns(&[], &terminal).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Invalid { what } if what.contains("opening_kinds")),
        "{err:?}"
    );
}

#[test]
fn recovery_and_paging_use_indexes_not_scans() {
    let dir = tempfile::tempdir().unwrap();
    let conn = schema::open_writer(&dir.path().join("efr.db")).unwrap();
    let plan = |sql: &str| -> String {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
        let rows = stmt
            .query_map(rusqlite::params_from_iter(nulls), |row| row.get::<_, String>(3))
            .unwrap();
        rows.map(Result::unwrap).collect::<Vec<_>>().join("\n")
    };
    let recovery = plan(&read::open_turns_sql(1, 5));
    assert_eq!(recovery.matches("USING INDEX events_by_kind").count(), 2, "{recovery}");
    assert!(!recovery.contains("SCAN"), "recovery must not scan the log: {recovery}");
    let tail = plan(&format!("SELECT DISTINCT kind {} ORDER BY kind", read::TURN_TAIL));
    assert!(
        tail.contains("(conversation_id=? AND seq>?)") && !tail.contains("SCAN"),
        "{tail}"
    );

    let after = plan(&read::events_after_sql());
    assert!(after.contains("SEARCH") && !after.contains("TEMP B-TREE"), "{after}");
    for with_cursor in [false, true] {
        let list = plan(&read::list_sql(with_cursor));
        assert!(
            list.contains("conversations_by_updated") && !list.contains("TEMP B-TREE"),
            "{list}"
        );
    }
}

#[tokio::test]
async fn releasing_the_caches_loses_nothing_and_the_store_goes_on() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    create(&store, id, 50).await;
    // Caches warm on both sides: the writer wrote, a reader read.
    assert_eq!(store.last_seq(id).await.unwrap(), 50);
    store.release_memory().await.unwrap();
    assert_eq!(store.last_seq(id).await.unwrap(), 50);
    store.commit(Commit::events(events(id, 51, 60))).await.unwrap();
    assert_eq!(store.last_seq(id).await.unwrap(), 60);
    store.close().await.unwrap();
    assert!(matches!(store.release_memory().await, Err(StoreError::Closed)));
}
