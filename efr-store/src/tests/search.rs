//! The search index: entries written with their events, the title replaced, terms as literals, the caps, and the
//! rebuild of an index for events older than it.

use std::time::Duration;

use efr_protocol::ids::ConversationId;

use super::{at, create, events, summary, temp_store};
use crate::search::{IndexEntry, IndexQuery, Stopped, TITLE_KIND};
use crate::{Commit, StoreError};

fn entry(conversation_id: ConversationId, seq: u64, kind: &str, text: &str) -> IndexEntry {
    IndexEntry {
        conversation_id,
        seq,
        kind: kind.into(),
        turn_id: None,
        at: at(1_000 + i64::try_from(seq).unwrap()),
        text: text.into(),
    }
}

fn query(terms: &[&str]) -> IndexQuery {
    IndexQuery {
        terms: terms.iter().map(|t| (*t).to_owned()).collect(),
        row_cap: 1000,
        time_cap: Duration::from_secs(5),
    }
}

async fn texts(store: &crate::Store, terms: &[&str]) -> Vec<String> {
    let found = store.search_index(query(terms)).await.unwrap();
    found.entries.into_iter().map(|f| f.entry.text).collect()
}

#[tokio::test]
async fn entries_come_with_their_events_and_a_failed_commit_indexes_nothing() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    create(&store, id, 1).await;
    let commit = Commit::events(events(id, 2, 3)).with_index(vec![
        entry(id, 2, "prompt", "Fix the Größe of the 🙂 button"),
        entry(id, 3, "command", "grep -rn 中文文档 src/"),
    ]);
    store.commit(commit).await.unwrap();
    assert_eq!(texts(&store, &["größe"]).await, ["Fix the Größe of the 🙂 button"]);
    assert_eq!(texts(&store, &["文文档"]).await, ["grep -rn 中文文档 src/"]);
    assert_eq!(texts(&store, &["button", "fix"]).await.len(), 1);
    assert!(
        texts(&store, &["button", "grep"]).await.is_empty(),
        "every term must match"
    );
    // A seq gap fails the commit: its entry is not written either.
    let bad = Commit::events(events(id, 9, 9)).with_index(vec![entry(id, 9, "prompt", "never indexed")]);
    assert!(matches!(store.commit(bad).await, Err(StoreError::SeqGap { .. })));
    assert!(texts(&store, &["never indexed"]).await.is_empty());
}

#[tokio::test]
async fn a_new_title_replaces_the_old_one() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    store
        .commit(
            Commit::events(events(id, 1, 1))
                .with_conversation(summary(id, 2_000))
                .with_index(vec![entry(id, 0, TITLE_KIND, "first title")]),
        )
        .await
        .unwrap();
    store
        .commit(Commit::events(events(id, 2, 2)).with_index(vec![entry(id, 0, TITLE_KIND, "second title")]))
        .await
        .unwrap();
    assert_eq!(texts(&store, &["title"]).await, ["second title"]);
    let scanned = store.search_entries(id, 10, Duration::from_secs(1)).await.unwrap();
    assert_eq!(scanned.entries.len(), 1);
}

#[tokio::test]
async fn query_syntax_is_literal_short_terms_match_and_caps_say_partial() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    create(&store, id, 1).await;
    let mut index = vec![
        entry(id, 2, "answer", r#"say "hi" NEAR the -x flag and a* glob"#),
        entry(id, 3, "answer", "go to 50% of it_now"),
    ];
    for seq in 4..=30 {
        index.push(entry(id, seq, "answer", &format!("filler number {seq}")));
    }
    let last = index.last().map_or(0, |e| e.seq);
    store
        .commit(Commit::events(events(id, 2, last)).with_index(index))
        .await
        .unwrap();
    for terms in [&[r#""hi""#][..], &["NEAR"], &["-x"], &["a*"], &[r#"""#, "say"]] {
        let found = texts(&store, terms).await;
        assert_eq!(found.len(), 1, "{terms:?}: {found:?}");
    }
    assert!(texts(&store, &["NEAR(say hi)"]).await.is_empty());
    assert_eq!(texts(&store, &["go"]).await, ["go to 50% of it_now"]);
    assert_eq!(texts(&store, &["%"]).await, ["go to 50% of it_now"]);
    assert_eq!(texts(&store, &["_"]).await, ["go to 50% of it_now"]);
    assert!(texts(&store, &["o_x"]).await.is_empty(), "_ is no wildcard");
    let capped = store
        .search_index(IndexQuery {
            row_cap: 5,
            ..query(&["filler"])
        })
        .await
        .unwrap();
    assert_eq!(capped.entries.len(), 5);
    assert_eq!(capped.stopped, Some(Stopped::RowCap));
    assert_eq!(capped.entries[0].entry.seq, 30, "newest first");
    let all = store.search_index(query(&["filler"])).await.unwrap();
    assert_eq!((all.entries.len(), all.stopped), (27, None));
    assert!(matches!(
        store.search_index(query(&[""])).await,
        Err(StoreError::Invalid { .. })
    ));
}

#[tokio::test]
async fn a_rebuild_reads_older_events_and_reports_its_progress() {
    let (_dir, store) = temp_store().await;
    // A database from before the index: pretend its events were there when the index was made.
    let id = ConversationId::new();
    create(&store, id, 4).await;
    store
        .write(|tx| {
            tx.execute_batch("UPDATE search_rebuild SET done = 0, target = (SELECT max(rowid) FROM events)")?;
            Ok(())
        })
        .await
        .unwrap();
    let state = store.search_rebuild_state().await.unwrap();
    assert_eq!((state.done, state.target, state.percent()), (0, 4, 0));
    let page = store.search_rebuild_events(0, state.target, 3).await.unwrap();
    assert_eq!(page.iter().map(|(_, e)| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
    store
        .index_backfill(vec![entry(id, 2, "prompt", "an old prompt")], page[2].0)
        .await
        .unwrap();
    assert_eq!(store.search_rebuild_state().await.unwrap().percent(), 75);
    assert_eq!(texts(&store, &["old prompt"]).await, ["an old prompt"]);
    store.index_backfill(Vec::new(), 4).await.unwrap();
    assert!(store.search_rebuild_state().await.unwrap().complete());
}

#[tokio::test]
async fn an_entry_that_is_not_utf8_is_found_with_replacement_characters() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    create(&store, id, 1).await;
    // Written around the store, as a damaged file or an older writer could: the text's bytes are not UTF-8.
    let conversation = id.to_string();
    store
        .write(move |tx| {
            tx.execute(
                "INSERT INTO search_entries (conversation_id, seq, kind, at, text) \
                 VALUES (?1, 1, 'command', 1000, CAST(x'6361742062ff61642e62696e' AS TEXT))",
                [conversation],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(texts(&store, &["cat"]).await, ["cat b\u{fffd}ad.bin"]);
    let scanned = store.search_entries(id, 10, Duration::from_secs(1)).await.unwrap();
    assert_eq!(scanned.entries[0].entry.text, "cat b\u{fffd}ad.bin");
}
