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
        row_cap: 5_000,
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

/// The last entry id that the FTS5 index holds, and the last entry id written.
async fn follow_state(store: &crate::Store) -> (i64, i64) {
    store
        .read(|conn| {
            Ok(conn.query_row(
                "SELECT (SELECT indexed FROM search_follow), (SELECT coalesce(max(id), 0) FROM search_entries)",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?)
        })
        .await
        .unwrap()
}

/// The entry ids that the FTS5 index itself (not the tail) finds for `phrase`.
async fn indexed_ids(store: &crate::Store, phrase: &str) -> Vec<i64> {
    let phrase = format!("\"{phrase}\"");
    store
        .read(move |conn| {
            let mut statement = conn.prepare("SELECT rowid FROM search_index WHERE search_index MATCH ?1")?;
            let ids = statement
                .query_map([phrase], |row| row.get(0))?
                .collect::<rusqlite::Result<Vec<i64>>>()?;
            Ok(ids)
        })
        .await
        .unwrap()
}

/// FTS5's own check of the index against `search_entries` (a command written as an insert, so on the writer).
async fn index_is_sound(store: &crate::Store) -> crate::Result<()> {
    store
        .write(|conn| {
            conn.execute_batch("INSERT INTO search_index (search_index, rank) VALUES ('integrity-check', 1)")?;
            Ok(())
        })
        .await
}

/// Waits (at most 2 s, well past the follower's lag) until the index holds every entry written.
async fn until_followed(store: &crate::Store) -> (i64, i64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        let (indexed, last) = follow_state(store).await;
        if indexed == last || std::time::Instant::now() > deadline {
            return (indexed, last);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn an_entry_is_found_before_the_follower_indexes_it_and_indexed_within_the_lag() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    create(&store, id, 1).await;
    store
        .commit(Commit::events(events(id, 2, 2)).with_index(vec![entry(id, 2, "prompt", "fresh größe words")]))
        .await
        .unwrap();
    // Right after the commit: fewer than FOLLOW_ENTRIES entries, younger than FOLLOW_LAG, so not indexed yet,
    // and found all the same (the tail), by a long term, a short one, and both.
    let (indexed, last) = follow_state(&store).await;
    assert!(
        indexed < last,
        "one entry written just now is not indexed yet ({indexed} of {last})"
    );
    assert_eq!(texts(&store, &["größe"]).await, ["fresh größe words"]);
    assert_eq!(texts(&store, &["words", "fr"]).await, ["fresh größe words"]);
    assert!(indexed_ids(&store, "größe").await.is_empty());
    let (indexed, last) = until_followed(&store).await;
    assert_eq!(indexed, last, "indexed within the follower's lag");
    assert_eq!(indexed_ids(&store, "größe").await, [last]);
    // Found once, not once from the tail and once from the index.
    assert_eq!(texts(&store, &["größe"]).await, ["fresh größe words"]);
    index_is_sound(&store).await.unwrap();
}

#[tokio::test]
async fn many_entries_at_once_are_indexed_right_after_their_batch() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    create(&store, id, 1).await;
    let count = usize::try_from(crate::follow::FOLLOW_ENTRIES).unwrap() + 10;
    let index: Vec<IndexEntry> = (0..count)
        .map(|n| entry(id, 2 + n as u64, "answer", &format!("answer number {n}")))
        .collect();
    store
        .commit(Commit::events(events(id, 2, 1 + count as u64)).with_index(index))
        .await
        .unwrap();
    // The pass ran after the batch, before the writer took the next request: this read's answer follows it.
    store
        .commit(Commit::events(events(id, 2 + count as u64, 2 + count as u64)))
        .await
        .unwrap();
    let (indexed, last) = follow_state(&store).await;
    assert_eq!(indexed, last);
    assert_eq!(texts(&store, &["number"]).await.len(), count);
    index_is_sound(&store).await.unwrap();
}

#[tokio::test]
async fn entries_not_indexed_yet_can_be_deleted_and_replaced() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    // The second title replaces the first in the same commit: the first is deleted before any pass could index it.
    store
        .commit(
            Commit::events(events(id, 1, 1))
                .with_conversation(summary(id, 2_000))
                .with_index(vec![
                    entry(id, 0, TITLE_KIND, "first title"),
                    entry(id, 1, "prompt", "gone soon"),
                    entry(id, 0, TITLE_KIND, "second title"),
                ]),
        )
        .await
        .unwrap();
    assert_eq!(texts(&store, &["title"]).await, ["second title"]);
    // The delete's own commit writes an entry and deletes it with the rest: never indexed either.
    store
        .commit(
            Commit::events(events(id, 2, 2))
                .with_index(vec![entry(id, 2, "prompt", "gone at once")])
                .deleting(id),
        )
        .await
        .unwrap();
    assert!(texts(&store, &["gone"]).await.is_empty());
    assert!(texts(&store, &["title"]).await.is_empty());
    let (indexed, last) = until_followed(&store).await;
    assert_eq!(indexed, last);
    index_is_sound(&store).await.unwrap();
    assert!(indexed_ids(&store, "title").await.is_empty());
    assert!(indexed_ids(&store, "gone").await.is_empty());
}

#[tokio::test]
async fn an_id_never_comes_back_after_a_delete() {
    let (_dir, store) = temp_store().await;
    let doomed = ConversationId::new();
    create(&store, doomed, 1).await;
    store
        .commit(Commit::events(events(doomed, 2, 2)).with_index(vec![entry(doomed, 2, "prompt", "first words")]))
        .await
        .unwrap();
    until_followed(&store).await;
    let (indexed, _) = follow_state(&store).await;
    assert!(indexed > 0);
    // The delete empties search_entries: SQLite alone would give the next entry the id 1, at or below `indexed`.
    store
        .commit(Commit::events(events(doomed, 3, 3)).deleting(doomed))
        .await
        .unwrap();
    let kept = ConversationId::new();
    create(&store, kept, 1).await;
    store
        .commit(Commit::events(events(kept, 2, 2)).with_index(vec![entry(kept, 2, "prompt", "later words")]))
        .await
        .unwrap();
    let (_, last) = follow_state(&store).await;
    assert!(
        last > indexed,
        "the new entry's id {last} is above the indexed {indexed}"
    );
    let (indexed, last) = until_followed(&store).await;
    assert_eq!(indexed, last);
    assert_eq!(
        indexed_ids(&store, "later").await,
        [last],
        "the new entry reached the index"
    );
    assert_eq!(texts(&store, &["words"]).await, ["later words"]);
    index_is_sound(&store).await.unwrap();
}

#[tokio::test]
async fn a_crash_before_the_pass_is_repaired_at_the_next_start() {
    let (dir, store) = temp_store().await;
    let id = ConversationId::new();
    create(&store, id, 1).await;
    store.close().await.unwrap();
    // What a crash between a commit and its pass leaves: entries above `indexed` (written as the writer writes
    // them, with no index).
    let path = dir.path().join("efr.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        for n in 0..5 {
            conn.execute(
                "INSERT INTO search_entries (conversation_id, seq, kind, at, text) VALUES (?1, 1, 'prompt', 1000, ?2)",
                rusqlite::params![id.to_string(), format!("left behind {n}")],
            )
            .unwrap();
        }
    }
    let store = crate::Store::open(&path).await.unwrap();
    assert_eq!(texts(&store, &["behind"]).await.len(), 5, "found from the tail at once");
    let (indexed, last) = until_followed(&store).await;
    assert_eq!(indexed, last, "the start caught up without any new commit");
    assert_eq!(indexed_ids(&store, "behind").await.len(), 5);
    index_is_sound(&store).await.unwrap();
    store.close().await.unwrap();
}

#[tokio::test]
async fn a_close_leaves_every_entry_indexed() {
    let (dir, store) = temp_store().await;
    let id = ConversationId::new();
    create(&store, id, 1).await;
    store
        .commit(Commit::events(events(id, 2, 2)).with_index(vec![entry(id, 2, "prompt", "closing words")]))
        .await
        .unwrap();
    store.close().await.unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("efr.db")).unwrap();
    let (indexed, last): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT indexed FROM search_follow), (SELECT max(id) FROM search_entries)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!(indexed, last);
}

#[tokio::test]
async fn a_file_indexed_inline_before_the_follower_keeps_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("efr.db");
    let id = ConversationId::new();
    {
        // A file of schema 4, whose trigger indexed each entry as it was written.
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        let before = &crate::schema::MIGRATIONS[..4];
        assert_eq!(crate::schema::migrate(&mut conn, &path, before).unwrap(), 4);
        conn.execute(
            "INSERT INTO conversations (id, status, created_at, updated_at, turn_count, extra) \
             VALUES (?1, 'idle', 1000, 1000, 0, '{}')",
            [id.to_string()],
        )
        .unwrap();
        for n in 0..3 {
            conn.execute(
                "INSERT INTO search_entries (conversation_id, seq, kind, at, text) VALUES (?1, 1, 'prompt', 1000, ?2)",
                rusqlite::params![id.to_string(), format!("older words {n}")],
            )
            .unwrap();
        }
    }
    let store = crate::Store::open(&path).await.unwrap();
    assert_eq!(
        follow_state(&store).await,
        (3, 3),
        "what the trigger indexed counts as indexed"
    );
    assert_eq!(indexed_ids(&store, "older").await.len(), 3);
    assert_eq!(texts(&store, &["older"]).await.len(), 3, "found once each");
    index_is_sound(&store).await.unwrap();
    store.close().await.unwrap();
}

#[tokio::test]
async fn a_store_without_the_index_finds_by_reading_and_indexes_when_opened_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("efr.db");
    let off = crate::Store::open_with(&path, crate::StoreOptions { index: false })
        .await
        .unwrap();
    let id = ConversationId::new();
    create(&off, id, 1).await;
    let count = usize::try_from(crate::follow::FOLLOW_ENTRIES).unwrap() + 10;
    let index: Vec<IndexEntry> = (0..count)
        .map(|n| entry(id, 2 + n as u64, "answer", &format!("answer number {n} größe")))
        .collect();
    off.commit(Commit::events(events(id, 2, 1 + count as u64)).with_index(index))
        .await
        .unwrap();
    // Past the follower's batch size and its lag: a store with the index on would have indexed them all.
    tokio::time::sleep(crate::follow::FOLLOW_LAG * 4).await;
    let (indexed, last) = follow_state(&off).await;
    assert_eq!(indexed, 0, "nothing indexed without the index ({last} entries)");
    assert!(indexed_ids(&off, "größe").await.is_empty());
    // Found all the same, by long and short terms.
    assert_eq!(texts(&off, &["größe"]).await.len(), count);
    assert_eq!(texts(&off, &["number 7 g"]).await, ["answer number 7 größe"]);
    off.close().await.unwrap();
    // Opened with the index (the default), the writer indexes what is pending.
    let on = crate::Store::open(&path).await.unwrap();
    let (indexed, last) = until_followed(&on).await;
    assert_eq!(indexed, last, "indexed once the index is on");
    assert_eq!(indexed_ids(&on, "größe").await.len(), count);
    assert_eq!(texts(&on, &["größe"]).await.len(), count);
    index_is_sound(&on).await.unwrap();
}
