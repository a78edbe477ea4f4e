//! admin.backup through the real socket: a copy made while a turn streams opens with SQLite, holds every event
//! committed before the request and has mode 0600; bad destinations get a clear error and leave nothing behind.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use efr_protocol::ErrorCode;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Value, json};

use common::{daemon, events_until, model, prompt, subscribe, text_reply};
use efr_test_support::scripted::Reply;
use efr_test_support::subscription::read_until;

/// A reply that streams for about three seconds, in many small pieces.
fn slow_reply() -> Reply {
    Reply::streamed(
        (0..80).map(|i| format!("piece {i} streamed while the copy is made ")),
        40,
    )
}

/// `(conversation_id, seq, body)` of every event in the database at `path`, in order.
fn rows(path: &Path) -> Vec<(String, u64, String)> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut statement = conn
        .prepare("SELECT conversation_id, seq, body FROM events ORDER BY conversation_id, seq")
        .unwrap();
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

async fn refused(client: &mut efr_test_support::client::Client, path: Value) -> efr_protocol::ErrorBody {
    client
        .call("admin.backup", json!({"path": path}))
        .await
        .unwrap()
        .unwrap_err()
}

fn entries(folder: &Path) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(folder).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_while_a_turn_streams_holds_every_committed_event_and_is_private() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    // About three seconds of streaming: the backup lands in the middle of the turn.
    let server = model(vec![slow_reply()]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt(&mut client, project.path(), None, "stream for a while").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();

    // A subscriber sees an event only after its commit: the last seq it saw before the backup was asked for is
    // committed, so the copy must hold it.
    let mut watcher = efrd.client().await.unwrap();
    let (id, _) = subscribe(&mut watcher, &conversation, Some(0)).await;
    let mut updates = 0;
    let fifth_update = |event: &Value| {
        updates += usize::from(event["kind"] == "assistant_message_updated");
        updates == 5
    };
    let seen = read_until(&mut watcher, id, "the fifth delta", true, fifth_update)
        .await
        .unwrap();
    assert!(
        !seen.iter().any(|e| e["kind"] == "turn_completed"),
        "the turn still streams"
    );
    let committed = seen.last().unwrap()["seq"].as_u64().unwrap();

    let folder = home.path().join("backups");
    std::fs::create_dir(&folder).unwrap();
    let dest = folder.join("efr-copy.db");
    let backup = client.ok("admin.backup", json!({"path": dest})).await.unwrap();
    assert_eq!(backup["path"], json!(dest));

    let mode = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the copy is private");
    assert_eq!(backup["bytes"], std::fs::metadata(&dest).unwrap().len());
    assert_eq!(
        entries(&folder),
        vec![dest.clone()],
        "no side file is left next to the copy"
    );

    let copy = rows(&dest);
    assert_eq!(backup["events"], copy.len(), "the result counts the copy's events");
    let in_copy: Vec<u64> = copy.iter().filter(|r| r.0 == conversation).map(|r| r.1).collect();
    assert!(
        in_copy.len() as u64 >= committed,
        "the copy holds seq 1..={committed} seen before the backup, it has {in_copy:?}"
    );
    assert_eq!(in_copy, (1..=in_copy.len() as u64).collect::<Vec<_>>(), "no gap");

    // The turn went on and ends normally; the copy is a prefix of the live log, event for event.
    events_until(&mut watcher, id, "turn_completed").await;
    let live = rows(&home.path().join("data/efr.db"));
    assert!(live.len() > copy.len(), "the turn committed more after the copy");
    for row in &copy {
        assert!(
            live.contains(row),
            "the copy's event {}#{} is in the live log as copied",
            row.0,
            row.1
        );
    }
    assert!(
        !copy.iter().any(|r| r.2.contains("\"turn_completed\"")),
        "the copy was made mid-turn"
    );
}

/// Makes `folder` read-only for this process: a read-only bind mount when root (root writes through modes),
/// else mode 0555. Undone on drop.
struct ReadOnly {
    folder: PathBuf,
    mounted: bool,
}

impl ReadOnly {
    fn new(folder: &Path) -> Self {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            let run = |args: &[&str]| {
                let status = Command::new("mount").args(args).arg(folder).arg(folder).status();
                assert!(
                    status.is_ok_and(|s| s.success()),
                    "a read-only folder as root needs `mount` (util-linux) and CAP_SYS_ADMIN"
                );
            };
            run(&["--bind"]);
            let guard = Self {
                folder: folder.to_owned(),
                mounted: true,
            };
            run(&["-o", "remount,bind,ro"]);
            guard
        } else {
            std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o555)).unwrap();
            Self {
                folder: folder.to_owned(),
                mounted: false,
            }
        }
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(&self.folder).status();
        } else {
            let _ = std::fs::set_permissions(&self.folder, std::fs::Permissions::from_mode(0o755));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_destinations_get_a_clear_error_and_lose_nothing() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let server = model(vec![text_reply("one answer", 64, 0)]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt(&mut client, project.path(), None, "something to keep").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = common::subscribe(&mut client, &conversation, Some(0)).await;
    common::events_until(&mut client, id, "turn_completed").await;
    let mut client = efrd.client().await.unwrap();
    let db = home.path().join("data/efr.db");
    let before = rows(&db);

    let folder = home.path().join("backups");
    std::fs::create_dir(&folder).unwrap();
    let existing = folder.join("taken.db");
    std::fs::write(&existing, "keep me").unwrap();
    let read_only = home.path().join("read-only");
    std::fs::create_dir(&read_only).unwrap();

    let relative = refused(&mut client, json!("backups/efr.db")).await;
    assert_eq!(relative.code, ErrorCode::Invalid, "{relative:?}");
    assert!(relative.message.contains("not absolute"), "{}", relative.message);

    let exists = refused(&mut client, json!(existing)).await;
    assert_eq!(exists.code, ErrorCode::Conflict, "{exists:?}");
    assert!(exists.message.contains("already exists"), "{}", exists.message);
    assert_eq!(
        std::fs::read_to_string(&existing).unwrap(),
        "keep me",
        "never overwritten"
    );

    let missing = refused(&mut client, json!(home.path().join("nowhere/efr.db"))).await;
    assert_eq!(missing.code, ErrorCode::NotFound, "{missing:?}");
    assert!(missing.message.contains("does not exist"), "{}", missing.message);
    assert!(!home.path().join("nowhere").exists());

    {
        let _guard = ReadOnly::new(&read_only);
        let denied = refused(&mut client, json!(read_only.join("efr.db"))).await;
        assert_eq!(denied.code, ErrorCode::Invalid, "{denied:?}");
        assert!(denied.message.contains("cannot create"), "{}", denied.message);
    }
    assert!(
        entries(&read_only).is_empty(),
        "nothing was left in the read-only folder"
    );

    let bad = client.call("admin.backup", json!({})).await.unwrap().unwrap_err();
    assert_eq!(bad.code, ErrorCode::Invalid, "{bad:?}");

    assert_eq!(entries(&folder), vec![existing.clone()], "no partial copy is left");
    assert_eq!(rows(&db), before, "the log is as it was");
    let good = folder.join("good.db");
    let backup = client.ok("admin.backup", json!({"path": good})).await.unwrap();
    assert_eq!(
        backup["events"],
        before.len(),
        "efrd still backs up, and the copy holds the whole log"
    );
    assert_eq!(rows(&good), before);
}
