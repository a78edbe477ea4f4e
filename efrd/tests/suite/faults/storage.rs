//! The data root's faults: a full disk during a turn, a read-only database (also when a prompt starts its turn), and
//! a malformed event row.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::path::{Path, PathBuf};
use std::process::Command;

use efr_test_support::client::StreamFrame;
use serde_json::{Value, json};

use crate::common::auto::bounded;
use crate::common::tools::{prompt_to, start, text};
use crate::common::{daemon, events_through, events_until, model, seqs, subscribe, text_of, whole_log};
use efr_test_support::scripted::Reply;

/// A small ext4 file system in a file, loop-mounted at a folder; unmounted when dropped.
struct LoopFs {
    mount: PathBuf,
}

impl LoopFs {
    /// `mib` MiB, mounted at `mount` (created).
    fn new(image: &Path, mount: &Path, mib: u64) -> Self {
        let file = std::fs::File::create(image).unwrap();
        file.set_len(mib << 20).unwrap();
        // No blocks reserved for root: the tests run as root, and the disk must fill for efrd too.
        run("mkfs.ext4", &["-q", "-F", "-m", "0", image.to_str().unwrap()]);
        std::fs::create_dir_all(mount).unwrap();
        run(
            "mount",
            &["-o", "loop", image.to_str().unwrap(), mount.to_str().unwrap()],
        );
        Self {
            mount: mount.to_owned(),
        }
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
    }
}

/// Writes zeros to `path` until the file system has no room left.
fn fill_up(path: &Path) {
    use std::io::Write as _;
    let mut file = std::fs::File::create(path).unwrap();
    let block = vec![0_u8; 1 << 20];
    for _ in 0..1024 {
        if file.write_all(&block).and_then(|()| file.sync_all()).is_err() {
            return;
        }
    }
    panic!("the small file system did not fill");
}

fn run(program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} is needed for this test (util-linux, e2fsprogs): {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_disk_fills() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let disk = LoopFs::new(&home.path().join("data.img"), &home.path().join("data"), 96);
    let fill = disk.mount.join("fill");
    // An answer that streams for about 4 s; the disk fills after its first words. (The model cannot fill it: efr's
    // own files are a floor no call may write.) Its pieces are large: the commits first use up the room the WAL was
    // given before it was written (about 17 MiB, `efr-store/src/wal.rs`), which a full disk does not take away.
    let piece = "room ".repeat(64 * 1024 / 5);
    let slow = Reply::streamed((0..200).map(|i| format!("words that need {i} {piece}")), 20);
    let server = model(vec![slow, text("after")]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "talk").await;
    let mut seen = events_through(&mut client, id, "assistant_message_updated").await;
    fill_up(&fill);
    // The subscription ends with the store's words, after the events that were committed.
    let error = bounded("the turn on a full disk", async {
        loop {
            match client.next_of(id).await.unwrap() {
                StreamFrame::Item(item) => seen.push(item["event"].clone()),
                StreamFrame::Error(error) => break error,
                other => panic!("{other:?}"),
            }
        }
    })
    .await;
    assert_eq!(error.code, efr_protocol::ErrorCode::Unavailable, "{error:?}");
    assert!(
        error.message.contains("disk is full"),
        "the user is told the disk is full: {error:?}"
    );
    std::fs::remove_file(&fill).unwrap();
    // With room again, efrd serves; nothing it committed was lost.
    drop(client);
    let mut client = efrd.client().await.unwrap();
    let log = whole_log(&mut client, &conversation).await;
    assert_eq!(seqs(&log), (1..=log.len() as u64).collect::<Vec<_>>(), "no gap");
    for event in &seen {
        let seq = usize::try_from(event["seq"].as_u64().unwrap()).unwrap();
        assert_eq!(&log[seq - 1], event, "what a client saw is in the log");
    }
    let before = log.len() as u64;
    prompt_to(&mut client, Some(&conversation), project.path(), "full", "again").await;
    let (id, _) = subscribe(&mut client, &conversation, Some(before)).await;
    bounded("the turn after", events_through(&mut client, id, "turn_completed")).await;
    // The turn the full disk stopped is closed before the next one starts, in words, so the log ends every turn it
    // opened. (It may be closed before the log above was read, when the stopped turn's task ended after the disk had
    // room again, or after the next prompt was queued, when that task was still on its way out.)
    let events = whole_log(&mut client, &conversation).await;
    let position = |kind: &str| events.iter().rposition(|e| e["kind"] == kind);
    let (Some(failed), Some(started)) = (position("turn_failed"), position("turn_started")) else {
        panic!("no turn_failed or turn_started: {events:#?}");
    };
    assert!(failed < started, "{events:#?}");
    let closed = &events[failed];
    let turn = seen.iter().find(|e| e["kind"] == "turn_started").unwrap();
    assert_eq!(closed["turn_id"], turn["turn_id"], "{closed}");
    assert!(
        closed["error"]["message"].as_str().unwrap().contains("disk is full"),
        "{closed}"
    );
    assert_eq!(text_of(&events[started..]), "after");
    efrd.stop(std::time::Duration::from_secs(10)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_database() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    // ext4, for chattr: an immutable file refuses writes even to root and through descriptors already open.
    let disk = LoopFs::new(&home.path().join("data.img"), &home.path().join("data"), 24);
    // The refused prompt's turn is planned, and its model asked, while its start's commit is written; its request
    // may reach the model before it is cancelled, or not: the turn after gets "second" either way.
    let server = model(vec![text("first"), text("second"), text("second")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "one").await;
    let first = events_until(&mut client, id, "turn_completed").await;
    let files = ["efr.db", "efr.db-wal"].map(|name| disk.mount.join(name));
    for file in &files {
        run("chattr", &["+i", file.to_str().unwrap()]);
    }
    // A write is refused in words; nothing is half written.
    let sent = client
        .call(
            "prompt.send",
            json!({"command_id": crate::common::command_id(), "conversation_id": conversation, "text": "two",
                "context": {"cwd": project.path()}}),
        )
        .await
        .unwrap();
    let immutable_error = sent.unwrap_err();
    for file in &files {
        run("chattr", &["-i", file.to_str().unwrap()]);
    }
    eprintln!("a write to a read-only database: {immutable_error:?}");
    assert_eq!(
        immutable_error.code,
        efr_protocol::ErrorCode::Unavailable,
        "{immutable_error:?}"
    );
    assert!(
        immutable_error.message.contains("event store"),
        "the user is told: {immutable_error:?}"
    );
    // The subscriber hears of the store's failure, and of nothing of the refused prompt's turn before it.
    match bounded("the subscription's end", client.next_of(id)).await.unwrap() {
        StreamFrame::Error(error) => assert!(error.message.contains("event store"), "{error:?}"),
        other => panic!("the subscriber saw {other:?} of a turn that never started"),
    }
    // Reads go on, and with the file writable again so do writes: the conversation is as it was.
    let mut reader = efrd.client().await.unwrap();
    let log = whole_log(&mut reader, &conversation).await;
    assert_eq!(log, first, "the log is whole");
    prompt_to(&mut reader, Some(&conversation), project.path(), "full", "three").await;
    let (id, _) = subscribe(&mut reader, &conversation, Some(log.len() as u64)).await;
    let events = bounded("the turn after", events_through(&mut reader, id, "turn_completed")).await;
    assert_eq!(text_of(&events), "second");
    assert_eq!(seqs(&events)[0], log.len() as u64 + 1, "no gap");
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    // The refused prompt's turn left nothing, not even a turn_failed for a turn that never started.
    assert_eq!(
        kinds,
        [
            "prompt_queued",
            "turn_started",
            "assistant_message_updated",
            "assistant_message_completed",
            "turn_completed"
        ],
        "{events:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_event_row() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![text("first answer"), text("second answer"), text("after")]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "one").await;
    let first = events_until(&mut client, id, "turn_completed").await;
    prompt_to(&mut client, Some(&conversation), project.path(), "full", "two").await;
    let second = events_until(&mut client, id, "turn_completed").await;
    drop(client);
    efrd.stop(std::time::Duration::from_secs(10)).unwrap();
    // The first event of the second turn is broken on disk.
    let broken = second[0]["seq"].as_u64().unwrap();
    let db = rusqlite::Connection::open(home.path().join("data/efr.db")).unwrap();
    let changed = db
        .execute(
            "UPDATE events SET body = '{\"seq\": ' WHERE conversation_id = ?1 AND seq = ?2",
            rusqlite::params![conversation, broken],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(db);

    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let sub = client
        .send(
            "conversation.subscribe",
            json!({"conversation_id": conversation, "after_seq": 0}),
            true,
        )
        .await
        .unwrap();
    assert_eq!(client.next_of(sub).await.unwrap(), StreamFrame::Ack);
    let mut readable: Vec<Value> = Vec::new();
    let error = loop {
        match client.next_of(sub).await.unwrap() {
            StreamFrame::Item(item) => readable.push(item["event"].clone()),
            StreamFrame::Error(error) => break error,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(readable, first, "the conversation is readable up to the broken row");
    assert!(
        error.message.contains("corrupt"),
        "the broken row is reported as corrupt: {error:?}"
    );
    assert!(error.message.contains(&format!("{broken}")), "and named: {error:?}");
    // The daemon still serves: other conversations run.
    let other = tempfile::tempdir().unwrap();
    let (_, _, id) = start(&mut client, other.path(), "full", "elsewhere").await;
    let events = bounded("a turn elsewhere", events_through(&mut client, id, "turn_completed")).await;
    assert_eq!(text_of(&events), "after");
}
