//! The delete of a conversation: what stays, what goes, later commits refused, and the bytes gone from the file.

use efr_protocol::ids::{CommandId, ConversationId};

use super::{all_events, at, command, event, summary, temp_store};
use crate::search::{IndexEntry, IndexQuery};
use crate::{Commit, EventRow, StoreError};

/// A text that only the deleted conversation holds, long enough that no page of another one holds it by chance.
const SECRET_WORD: &str = "zanzibar-quokka-7f3e9a1c";

fn entry(conversation_id: ConversationId, seq: u64, text: &str) -> IndexEntry {
    IndexEntry {
        conversation_id,
        seq,
        kind: "prompt".into(),
        turn_id: None,
        at: at(1_000),
        text: text.into(),
    }
}

/// Event `seq` of `id` whose body holds `text` (about 4 KiB, so the pages of the log fill).
fn event_with(id: ConversationId, seq: u64, text: &str) -> EventRow {
    let mut row = event(id, seq, "prompt_queued", None);
    let mut body: serde_json::Value = serde_json::from_str(&row.body).unwrap();
    body["text"] = format!("{text} {}", "x".repeat(4000)).into();
    row.body = body.to_string();
    row
}

/// Counts the places where `needle` is in the database file and its WAL.
fn occurrences(path: &std::path::Path, needle: &str) -> usize {
    let mut count = 0;
    for file in [path.to_path_buf(), path.with_extension("db-wal")] {
        let bytes = std::fs::read(&file).unwrap_or_default();
        count += bytes.windows(needle.len()).filter(|w| *w == needle.as_bytes()).count();
    }
    count
}

#[tokio::test]
async fn a_delete_leaves_one_event_refuses_later_commits_and_frees_the_file() {
    let (dir, store) = temp_store().await;
    let path = dir.path().join("efr.db");
    let (doomed, kept) = (ConversationId::new(), ConversationId::new());
    // Two conversations whose events interleave in the file's pages.
    for id in [doomed, kept] {
        store
            .commit(
                Commit::events(vec![event(id, 1, "conversation_created", None)]).with_conversation(summary(id, 2_000)),
            )
            .await
            .unwrap();
    }
    let earlier_write = CommandId::new();
    for seq in 2..=300 {
        let text = format!("{SECRET_WORD} prompt {seq}");
        let commit = Commit::events(vec![event_with(doomed, seq, &text)]).with_index(vec![entry(doomed, seq, &text)]);
        let commit = if seq == 2 {
            commit.with_command(command(
                earlier_write,
                Some(doomed),
                &format!("{{\"echo\":\"{SECRET_WORD}\"}}"),
            ))
        } else {
            commit
        };
        store.commit(commit).await.unwrap();
        store
            .commit(Commit::events(vec![event_with(kept, seq, "kept words")]))
            .await
            .unwrap();
    }
    store.close().await.unwrap();
    let big = std::fs::metadata(&path).unwrap().len();
    assert!(
        occurrences(&path, SECRET_WORD) > 0,
        "the test's text is in the file before the delete"
    );
    let store = crate::Store::open(&path).await.unwrap();

    let delete = CommandId::new();
    let deleted = Commit::events(vec![event(doomed, 301, "conversation_deleted", None)])
        .with_command(command(delete, Some(doomed), "{\"kind\":\"deleted\"}"))
        .deleting(doomed);
    store.commit(deleted).await.unwrap();

    // Only conversation_deleted stays; the summary is not found; the other conversation is whole.
    let left = all_events(&store, doomed).await;
    assert_eq!(
        left.iter().map(|e| (e.seq, e.kind.as_str())).collect::<Vec<_>>(),
        [(301, "conversation_deleted")]
    );
    assert_eq!(store.conversation(doomed).await.unwrap(), None);
    assert_eq!(store.last_seq(doomed).await.unwrap(), 301);
    assert_eq!(all_events(&store, kept).await.len(), 300);
    let listed = store
        .list_conversations(crate::PageRequest { limit: 10, after: None })
        .await
        .unwrap();
    assert_eq!(listed.conversations.iter().map(|s| s.id).collect::<Vec<_>>(), [kept]);
    // The index holds nothing of it; its earlier write is forgotten, the delete's own outcome stays.
    let found = store
        .search_index(IndexQuery {
            terms: vec![SECRET_WORD.into()],
            row_cap: 100,
            time_cap: std::time::Duration::from_secs(5),
        })
        .await
        .unwrap();
    assert!(found.entries.is_empty(), "{:?}", found.entries.len());
    assert_eq!(store.command_outcome(earlier_write).await.unwrap(), None);
    assert!(store.command_outcome(delete).await.unwrap().is_some());
    // A later commit of it is refused as for a conversation that does not exist, and writes nothing.
    let late = store
        .commit(Commit::events(vec![event(doomed, 302, "prompt_queued", None)]))
        .await;
    assert!(matches!(late, Err(StoreError::UnknownConversation { .. })), "{late:?}");
    let again = store
        .commit(Commit::events(vec![event(doomed, 302, "x", None)]).deleting(doomed))
        .await;
    assert!(again.is_err(), "a second delete is refused: {again:?}");

    // The bytes are gone from the file and its WAL, and the file shrank.
    assert_eq!(
        occurrences(&path, SECRET_WORD),
        0,
        "the deleted conversation's text is still in the file"
    );
    let small = std::fs::metadata(&path).unwrap().len();
    assert!(
        small < big * 3 / 4,
        "the file did not shrink: {big} bytes before, {small} after"
    );
    // The reclaim emptied the WAL; it has its room of zeros again for the next commits (`crate::wal`).
    let wal = std::fs::metadata(dir.path().join("efr.db-wal")).unwrap().len();
    assert_eq!(wal, crate::wal::room(4096));
    store.close().await.unwrap();
}

#[tokio::test]
async fn a_file_from_before_takes_incremental_vacuum_when_it_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("efr.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (randomblob(9000));")
            .unwrap();
        let mode: i64 = conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, 0);
    }
    // The old table is not efr's: the migrations run beside it.
    let store = crate::Store::open(&path).await.unwrap();
    assert_eq!(store.writer_pragma("auto_vacuum").await.unwrap(), "2");
    store.close().await.unwrap();
    let (_dir, fresh) = temp_store().await;
    assert_eq!(fresh.writer_pragma("auto_vacuum").await.unwrap(), "2", "a new file");
}
