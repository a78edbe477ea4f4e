//! Durability and the errors of a real file: disk full, reopen, close, newer schema, not a database, corruption.

use std::os::unix::fs::PermissionsExt;

use efr_protocol::ids::{CommandId, ConversationId};
use rusqlite::Connection;

use super::*;
use crate::{SCHEMA_VERSION, StoreError, schema, writer};

/// A body of `len` bytes of padding, so that a few events fill a page.
fn big_event(id: ConversationId, seq: u64, len: usize) -> EventRow {
    let mut e = event(id, seq, "note", None);
    e.body = serde_json::json!({"seq": seq, "pad": "x".repeat(len)}).to_string();
    e
}

#[tokio::test]
async fn disk_full_refuses_the_commit_whole_and_the_store_recovers() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    create(&store, id, 3).await;

    // SQLite's own SQLITE_FULL: cap the file a few pages above its size (the cap is per connection, so it is set on
    // the writer's).
    let pages: i64 = {
        let conn = Connection::open(store.path()).unwrap();
        conn.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap()
    };
    store
        .exec_on_writer(&format!("PRAGMA max_page_count = {}", pages + 4))
        .await
        .unwrap();

    // Small commits still fit; then a commit of 64 KiB bodies cannot.
    store.commit(Commit::events(events(id, 4, 4))).await.unwrap();
    let cmd = CommandId::new();
    let too_big = Commit::events((5..=8).map(|seq| big_event(id, seq, 64 * 1024)).collect()).with_command(command(
        cmd,
        Some(id),
        "{}",
    ));
    let err = store.commit(too_big.clone()).await.unwrap_err();
    assert!(matches!(err, StoreError::DiskFull), "{err:?}");
    assert_eq!(err.code(), efr_protocol::ErrorCode::Unavailable);
    // Nothing of it was written: no event, no command outcome.
    assert_eq!(store.last_seq(id).await.unwrap(), 4);
    assert_eq!(store.command_outcome(cmd).await.unwrap(), None);
    // The store keeps serving while the disk is full: reads, and commits that fit.
    store.commit(Commit::events(events(id, 5, 5))).await.unwrap();
    assert_contiguous(id, &all_events(&store, id).await);

    // Space comes back: the same write, renumbered, now succeeds.
    store
        .exec_on_writer("PRAGMA max_page_count = 1073741823")
        .await
        .unwrap();
    let retry = Commit::events((6..=9).map(|seq| big_event(id, seq, 64 * 1024)).collect()).with_command(command(
        cmd,
        Some(id),
        "{}",
    ));
    store.commit(retry).await.unwrap();
    assert_eq!(store.last_seq(id).await.unwrap(), 9);
    assert!(store.command_outcome(cmd).await.unwrap().is_some());
    store.close().await.unwrap();
}

#[test]
fn disk_full_in_a_batch_keeps_the_commits_before_it() {
    // Directly on the batch function, so the commits share a transaction: whether SQLite keeps the transaction
    // after SQLITE_FULL or drops it, the commit before the full one must end up committed.
    let dir = tempfile::tempdir().unwrap();
    let conn = schema::open_writer(&dir.path().join("efr.db")).unwrap();
    let id = ConversationId::new();
    let other = ConversationId::new();
    let setup = [
        Commit::events(events(id, 1, 1)).with_conversation(summary(id, 2_000)),
        Commit::events(events(other, 1, 1)).with_conversation(summary(other, 2_000)),
    ];
    assert!(writer::commit_batch(&conn, &setup).iter().all(Result::is_ok));
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
    conn.execute_batch(&format!("PRAGMA max_page_count = {}", pages + 3))
        .unwrap();

    let batch = [
        Commit::events(events(id, 2, 2)),
        Commit::events((2..=9).map(|seq| big_event(other, seq, 64 * 1024)).collect()),
        Commit::events(events(id, 3, 3)),
    ];
    let outcomes = writer::commit_batch(&conn, &batch);
    assert!(outcomes[0].is_ok(), "{:?}", outcomes[0]);
    assert!(matches!(outcomes[1], Err(StoreError::DiskFull)), "{:?}", outcomes[1]);
    assert!(outcomes[2].is_ok(), "{:?}", outcomes[2]);
    assert!(conn.is_autocommit());
    let last = |c: ConversationId| crate::read::last_seq(&conn, c).unwrap();
    assert_eq!(last(id), 3);
    assert_eq!(last(other), 1);
}

#[tokio::test]
async fn a_reopened_store_has_everything_committed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("efr.db");
    let id = ConversationId::new();
    let cmd = CommandId::new();
    {
        let store = Store::open(&path).await.unwrap();
        create(&store, id, 10).await;
        store
            .commit(Commit::events(events(id, 11, 12)).with_command(command(cmd, Some(id), r#"{"ok":true}"#)))
            .await
            .unwrap();
        // Dropped without close: the writer finishes on its own.
    }
    let store = Store::open(&path).await.unwrap();
    let all = all_events(&store, id).await;
    assert_eq!(all.len(), 12);
    assert_contiguous(id, &all);
    assert_eq!(store.conversation(id).await.unwrap(), Some(summary(id, 2_000)));
    assert_eq!(
        store.command_outcome(cmd).await.unwrap().unwrap().result,
        r#"{"ok":true}"#
    );
    // And it continues the log where it stopped.
    store.commit(Commit::events(events(id, 13, 13))).await.unwrap();
    store.close().await.unwrap();

    // The database and its WAL files hold prompts: private to the user.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let entry = entry.unwrap();
        let mode = entry.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", entry.path().display());
    }
}

#[tokio::test]
async fn close_writes_what_was_queued_then_refuses_everything() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    create(&store, id, 1).await;

    // Commits queued before the close are written and acknowledged.
    let pending: Vec<_> = (2..=50)
        .map(|seq| {
            let store = store.clone();
            async move { store.commit(Commit::events(events(id, seq, seq))).await }
        })
        .collect();
    let clone = store.clone();
    let (results, closed) = tokio::join!(futures::future::join_all(pending), async {
        tokio::task::yield_now().await;
        clone.close().await
    });
    closed.unwrap();
    // join_all polls in order, so the commits are queued in seq order; each either landed or was refused as
    // Closed, and what landed is a prefix.
    let mut landed = 1;
    for (result, seq) in results.into_iter().zip(2..) {
        match result {
            Ok(()) => {
                assert_eq!(seq, landed + 1, "commits landed in order");
                landed = seq;
            }
            Err(StoreError::Closed) => {}
            Err(e) => panic!("seq {seq}: {e:?}"),
        }
    }

    assert!(matches!(
        store.commit(Commit::events(events(id, 51, 51))).await,
        Err(StoreError::Closed)
    ));
    assert!(matches!(store.last_seq(id).await, Err(StoreError::Closed)));
    assert!(matches!(store.conversation(id).await, Err(StoreError::Closed)));
    assert!(matches!(store.events_after(id, 0, 5).await, Err(StoreError::Closed)));
    assert!(matches!(
        store.command_outcome(CommandId::new()).await,
        Err(StoreError::Closed)
    ));
    assert_eq!(StoreError::Closed.code(), efr_protocol::ErrorCode::Unavailable);
    store.close().await.unwrap();

    // After the close the WAL was checkpointed into the file.
    let wal = store.path().with_extension("db-wal");
    assert!(
        std::fs::metadata(&wal).map_or(0, |m| m.len()) == 0,
        "WAL left non-empty"
    );
    let store = Store::open(store.path()).await.unwrap();
    assert_eq!(store.last_seq(id).await.unwrap(), landed);
    assert_contiguous(id, &all_events(&store, id).await);
}

#[tokio::test]
async fn a_newer_schema_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("efr.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE future (x INTEGER); PRAGMA user_version = {}",
            SCHEMA_VERSION + 1
        ))
        .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = Store::open(&path).await.unwrap_err();
    assert!(
        matches!(err, StoreError::NewerSchema { found, supported } if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION),
        "{err:?}"
    );
    assert!(err.to_string().contains("newer"), "{err}");
    let conn = Connection::open(&path).unwrap();
    assert_eq!(schema::user_version(&conn).unwrap(), SCHEMA_VERSION + 1);
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master WHERE name = 'events'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(tables, 0);
    drop(conn);
    assert!(std::fs::read(&path).unwrap() == before, "the file changed");
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("efr.db");
    let garbage = b"this is a shell history, not an SQLite database\n".repeat(200);
    std::fs::write(&path, &garbage).unwrap();
    let err = Store::open(&path).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::NotADatabase { path: p } if *p == path),
        "{err:?}"
    );
    assert!(err.to_string().contains("not an efr database"), "{err}");
    assert!(std::fs::read(&path).unwrap() == garbage, "the file was not left alone");
}

#[tokio::test]
async fn a_missing_folder_is_an_open_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no/such/folder/efr.db");
    let err = Store::open(&path).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Open { path: p, .. } if *p == path),
        "{err:?}"
    );
}

#[tokio::test]
async fn stored_values_that_do_not_read_back_are_corrupt_not_panics() {
    let (_dir, store) = temp_store().await;
    let id = ConversationId::new();
    create(&store, id, 2).await;
    {
        // Damage two values behind the store's back (the schema cannot type-check a UUID or a JSON object).
        let conn = Connection::open(store.path()).unwrap();
        conn.execute("UPDATE conversations SET extra = '[1]' WHERE id = ?1", [id.to_string()])
            .unwrap();
        conn.execute(
            "UPDATE events SET turn_id = 'not-a-uuid' WHERE conversation_id = ?1 AND seq = 2",
            [id.to_string()],
        )
        .unwrap();
    }
    let err = store.conversation(id).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Corrupt { detail } if detail.contains("extra")),
        "{err:?}"
    );
    let err = store.events_after(id, 0, 10).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Corrupt { detail } if detail.contains("turn_id")),
        "{err:?}"
    );
    // What is not damaged still reads.
    assert_eq!(store.events_after(id, 0, 1).await.unwrap().len(), 1);
    assert_eq!(store.last_seq(id).await.unwrap(), 2);
}

#[tokio::test]
async fn a_damaged_page_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("efr.db");
    let id = ConversationId::new();
    {
        let store = Store::open(&path).await.unwrap();
        create(&store, id, 400).await;
        store.close().await.unwrap();
    }
    // Overwrite every page after the first with garbage: the schema still reads, the tables do not.
    let mut bytes = std::fs::read(&path).unwrap();
    let page = usize::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    assert!(bytes.len() > 3 * page, "the log spans several pages");
    for b in &mut bytes[2 * page..] {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let result = match Store::open(&path).await {
        Ok(store) => store.events_after(id, 0, 1000).await.map(drop),
        Err(e) => Err(e),
    };
    let err = result.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert_eq!(err.code(), efr_protocol::ErrorCode::Internal);
}

#[tokio::test]
async fn the_stores_own_connections_use_wal_and_full_sync() {
    let (dir, store) = temp_store().await;
    // synchronous = FULL (2): a commit that returned survives a power loss; in WAL mode NORMAL (1) could lose the
    // last commits. It is per connection, so it is read on the writer's own.
    assert_eq!(store.writer_pragma("synchronous").await.unwrap(), "2");
    assert_eq!(store.writer_pragma("journal_mode").await.unwrap(), "wal");
    assert_eq!(store.reader_pragma("journal_mode").await.unwrap(), "wal");
    assert_eq!(
        store.reader_pragma("query_only").await.unwrap(),
        "1",
        "readers never write"
    );
    store.close().await.unwrap();
    // A reopened store sets them again (they are not all kept in the file).
    let store = Store::open(dir.path().join("efr.db")).await.unwrap();
    assert_eq!(store.writer_pragma("synchronous").await.unwrap(), "2");
    assert_eq!(store.writer_pragma("journal_mode").await.unwrap(), "wal");
}

/// The WAL's size is given before the first commit, and commits write over it instead of growing it (`crate::wal`).
#[tokio::test]
async fn commits_write_over_the_wals_room_and_a_stop_leaves_none() {
    let (dir, store) = temp_store().await;
    let wal = dir.path().join("efr.db-wal");
    let id = ConversationId::new();
    create(&store, id, 1).await;
    let room = crate::wal::room(4096);
    assert_eq!(
        std::fs::metadata(&wal).unwrap().len(),
        room,
        "the room is made before the first commit"
    );
    for seq in 2..=200 {
        store.commit(Commit::events(events(id, seq, seq))).await.unwrap();
    }
    assert_eq!(
        std::fs::metadata(&wal).unwrap().len(),
        room,
        "200 commits wrote over it"
    );
    assert_contiguous(id, &all_events(&store, id).await);
    // A stopped store keeps no WAL: the file stands alone.
    store.close().await.unwrap();
    assert_eq!(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0), 0);
}

/// A crash leaves the commits in the WAL followed by its room's zeros: SQLite's recovery reads the frames up to the
/// zeros, so every acknowledged commit is there.
#[tokio::test]
async fn a_crash_with_the_wals_room_loses_no_commit() {
    let (dir, store) = temp_store().await;
    let id = ConversationId::new();
    create(&store, id, 1).await;
    for seq in 2..=50 {
        store.commit(Commit::events(events(id, seq, seq))).await.unwrap();
    }
    // The state a power cut leaves: the database file and its WAL as they are while the store runs (no checkpoint
    // since the commits, no shared-memory index).
    let crashed = tempfile::tempdir().unwrap();
    for name in ["efr.db", "efr.db-wal"] {
        std::fs::copy(dir.path().join(name), crashed.path().join(name)).unwrap();
    }
    let wal_len = std::fs::metadata(crashed.path().join("efr.db-wal")).unwrap().len();
    assert_eq!(
        wal_len,
        crate::wal::room(4096),
        "the copy has the room's zeros after the frames"
    );
    let conn = Connection::open(crashed.path().join("efr.db")).unwrap();
    let count: i64 = conn
        .query_row(
            "SELECT count(*) FROM events WHERE conversation_id = ?1",
            [id.to_string()],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(count, 50, "SQLite's recovery read every committed frame");
    drop(conn);
    let reopened = Store::open(crashed.path().join("efr.db")).await.unwrap();
    assert_contiguous(id, &all_events(&reopened, id).await);
    assert_eq!(all_events(&reopened, id).await.len(), 50);
    reopened.close().await.unwrap();
    store.close().await.unwrap();
}
