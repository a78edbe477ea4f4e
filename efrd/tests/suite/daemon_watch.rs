//! conversations.recent and conversations.watch through the real socket of a real efrd: the snapshot, `changed`
//! rows after a prompt, login_completed and logout_completed as `daemon_event` items (never the key), bad params,
//! and a watcher that does not read ending with overflow.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::path::Path;

use efr_protocol::ErrorCode;
use efr_protocol::frame::RequestId;
use efr_test_support::client::{Client, StreamFrame};
use serde_json::{Value, json};

use common::{command_id, daemon, model, text_reply};

const KEY: &str = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-a1b2";

/// Opens a watch with ack and returns its id and the snapshot's rows.
async fn watch(client: &mut Client, params: Value) -> (RequestId, Vec<Value>) {
    let id = client.send("conversations.watch", params, true).await.unwrap();
    assert_eq!(
        client.next_of(id).await.unwrap(),
        StreamFrame::Ack,
        "the ack comes first"
    );
    match client.next_of(id).await.unwrap() {
        StreamFrame::Item(item) => {
            assert_eq!(item["kind"], "snapshot", "the first item is the snapshot: {item}");
            (id, item["conversations"].as_array().unwrap().clone())
        }
        other => panic!("expected the snapshot, got {other:?}"),
    }
}

/// The next item of watch `id`.
async fn next_item(client: &mut Client, id: RequestId) -> Value {
    match client.next_of(id).await.unwrap() {
        StreamFrame::Item(item) => item,
        other => panic!("expected an item, got {other:?}"),
    }
}

/// Sends a prompt from `tty` in `cwd` to a new conversation (or `conversation`) and returns its result.
async fn prompt_in(client: &mut Client, conversation: Option<&str>, cwd: &Path, tty: &str, text: &str) -> Value {
    let mut params = json!({"command_id": command_id(), "text": text, "context": {"cwd": cwd, "tty": tty}});
    match conversation {
        Some(id) => params["conversation_id"] = json!(id),
        None => params["new"] = json!(true),
    }
    client.ok("prompt.send", params).await.unwrap()
}

/// The processes that stand for terminals' shells, ended when dropped.
struct Shells(Vec<std::process::Child>);

impl Drop for Shells {
    fn drop(&mut self) {
        for shell in &mut self.0 {
            let _ = shell.kill();
            let _ = shell.wait();
        }
    }
}

/// The path of a pseudo-terminal this test holds open (`/dev/pts/N`), with its two ends.
fn open_terminal() -> (String, nix::pty::OpenptyResult) {
    use std::os::fd::AsRawFd as _;
    let pty = nix::pty::openpty(None, None).unwrap();
    let path = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).unwrap();
    (path.to_str().unwrap().to_owned(), pty)
}

/// Reads `changed` items of `conversation` until its row is idle with `turns` turns; returns every row it read.
async fn rows_until_idle(client: &mut Client, id: RequestId, conversation: &str, turns: u64) -> Vec<Value> {
    let mut rows = Vec::new();
    loop {
        let item = next_item(client, id).await;
        assert_eq!(item["kind"], "changed", "{item}");
        let row = item["conversation"].clone();
        assert_eq!(row["summary"]["conversation_id"], conversation, "{row}");
        rows.push(row.clone());
        if row["summary"]["status"] == "idle" && row["turns"] == turns {
            return rows;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_announces_the_watch() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = Client::connect_raw(&efrd.socket()).await.unwrap();
    let hello = client
        .ok(
            "hello",
            json!({"protocol": efr_protocol::PROTOCOL_VERSION, "client": {"name": "efr-tests", "version": "0"}}),
        )
        .await
        .unwrap();
    assert_eq!(hello["capabilities"]["conversations_watch"], true, "{hello}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_gets_the_snapshot_then_the_changed_rows_of_a_prompt() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        text_reply("first", 8, 0),
        text_reply("second", 8, 0),
        text_reply("third", 8, 0),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut writer = efrd.client().await.unwrap();

    // A conversation from before the watch is in its snapshot.
    let mut early = efrd.client().await.unwrap();
    let (wid, rows) = watch(&mut early, json!({})).await;
    assert!(rows.is_empty(), "a new efrd has no conversation: {rows:?}");
    let before = prompt_in(&mut writer, None, project.path(), "/dev/pts/41", "Fix the build").await;
    let before_id = before["conversation_id"].as_str().unwrap().to_owned();
    rows_until_idle(&mut early, wid, &before_id, 1).await;

    let mut watcher = efrd.client().await.unwrap();
    let (id, rows) = watch(&mut watcher, json!({"limit": 5})).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(row["summary"]["conversation_id"], before_id.as_str());
    assert_eq!(row["summary"]["title"], "Fix the build");
    assert_eq!(row["summary"]["status"], "idle");
    assert_eq!(row["turns"], 1);
    assert_eq!(
        row["open_in"], "/dev/pts/41",
        "no tty asks, so its terminal is another one"
    );
    assert!(row.get("here").is_none(), "a watch has no pwd: {row}");

    // A prompt in a new conversation: the new row, already running with one turn (a prompt that starts at once
    // records its turn's start in its own commit), then idle.
    let result = prompt_in(&mut writer, None, project.path(), "/dev/pts/42", "Write the docs").await;
    let conversation = result["conversation_id"].as_str().unwrap().to_owned();
    let changed = rows_until_idle(&mut watcher, id, &conversation, 1).await;
    let states: Vec<(String, u64)> = changed
        .iter()
        .map(|r| {
            (
                r["summary"]["status"].as_str().unwrap().to_owned(),
                r["turns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [("running".to_owned(), 1), ("idle".to_owned(), 1)],
        "only commits that change a watched fact send a row"
    );
    assert!(changed.iter().all(|r| r["summary"]["title"] == "Write the docs"));
    assert!(
        changed
            .iter()
            .all(|r| r["summary"]["cwd"] == project.path().to_str().unwrap())
    );

    // A second prompt in the first conversation: running with two turns, then idle; its text events send nothing.
    prompt_in(
        &mut writer,
        Some(&before_id),
        project.path(),
        "/dev/pts/41",
        "And the tests",
    )
    .await;
    let changed = rows_until_idle(&mut watcher, id, &before_id, 2).await;
    assert_eq!(changed.len(), 2, "{changed:?}");
    assert_eq!(changed[0]["summary"]["status"], "running");

    // The watch ends with `end` on cancel.
    watcher.cancel(id).await.unwrap();
    assert_eq!(watcher.next_of(id).await.unwrap(), StreamFrame::End);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logins_and_logouts_reach_the_watch_as_daemon_events_without_the_key() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let efrd = daemon(home.path(), &server);
    let mut admin = efrd.client().await.unwrap();
    let mut watcher = efrd.client().await.unwrap();
    let (id, _) = watch(&mut watcher, json!({})).await;

    let login = admin
        .ok(
            "admin.login_api_key",
            json!({"provider": "anthropic-api", "key": KEY, "check": false}),
        )
        .await
        .unwrap();
    assert_eq!(login["checked"], false);
    let item = next_item(&mut watcher, id).await;
    let text = serde_json::to_string(&item).unwrap();
    assert!(
        !text.contains(KEY) && !text.contains("Zx9Yw8"),
        "the key reached a frame: {text}"
    );
    assert_eq!(item["kind"], "daemon_event", "{item}");
    let event = &item["event"];
    assert_eq!(event["kind"], "login_completed");
    assert_eq!(event["provider"], "anthropic-api");
    assert_eq!(event["login"], "api_key");
    assert_eq!(event["key_hint"], "sk-ant-...a1b2");
    assert_eq!(event["seq"], 1);
    assert!(event["at"].is_string());

    admin
        .ok("admin.logout", json!({"provider": "anthropic-api"}))
        .await
        .unwrap();
    let item = next_item(&mut watcher, id).await;
    assert_eq!(item["kind"], "daemon_event");
    assert_eq!(
        item["event"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["seq", "at", "kind", "provider"],
        "logout_completed has the provider only: {item}"
    );
    assert_eq!(item["event"]["kind"], "logout_completed");
    assert_eq!(item["event"]["seq"], 2);

    // A logout with nothing stored records nothing: the next item is the next login's.
    admin
        .ok("admin.logout", json!({"provider": "anthropic-api"}))
        .await
        .unwrap();
    admin
        .ok(
            "admin.login_api_key",
            json!({"provider": "anthropic-api", "key": KEY, "check": false}),
        )
        .await
        .unwrap();
    let item = next_item(&mut watcher, id).await;
    assert_eq!(item["event"]["kind"], "login_completed");
    assert_eq!(item["event"]["seq"], 3);
    assert!(!efrd.log().contains(KEY), "the key reached the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_params_are_invalid_and_name_the_member() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    for params in [
        json!({"limit": 0}),
        json!({"limit": 51}),
        json!({"limit": "ten"}),
        json!({"limit": -1}),
    ] {
        let id = client.send("conversations.watch", params.clone(), true).await.unwrap();
        match client.next_of(id).await.unwrap() {
            StreamFrame::Error(error) => {
                assert_eq!(error.code, ErrorCode::Invalid, "{params}: {error:?}");
                assert!(error.message.contains("limit"), "{}", error.message);
            }
            other => panic!("{params}: expected an error before any ack, got {other:?}"),
        }
        let error = client
            .call("conversations.recent", params.clone())
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::Invalid, "{params}");
        assert!(error.message.contains("limit"), "{}", error.message);
    }
    let error = client
        .call("conversations.recent", json!({"pwd": "relative/dir"}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    assert!(error.message.contains("pwd"), "{}", error.message);
    // The connection is still good.
    let (_, rows) = watch(&mut client, json!({"limit": 50})).await;
    assert!(rows.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recent_puts_the_conversations_of_the_pwd_first_and_names_the_current_one() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let project = work.path().join("efr");
    let other = work.path().join("other");
    std::fs::create_dir_all(project.join("protocol")).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let server = model(vec![
        text_reply("a", 8, 0),
        text_reply("b", 8, 0),
        text_reply("c", 8, 0),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let mut watcher = efrd.client().await.unwrap();
    let (wid, _) = watch(&mut watcher, json!({})).await;
    // The project is registered, so its folders share a scope key and `other` is outside.
    client
        .ok("admin.project_add", json!({"path": project, "name": "efr"}))
        .await
        .unwrap();
    // Three open terminals (real ptys, each with a process for its shell): `open_in` names only a terminal that is
    // open. A closed one is told by its shell's end too: in a parallel suite its pts number may go to another
    // test's terminal at once.
    let terminals: Vec<(String, nix::pty::OpenptyResult)> = (0..3).map(|_| open_terminal()).collect();
    let mut shells = Shells(
        (0..3)
            .map(|_| {
                std::process::Command::new("sleep")
                    .arg("600")
                    .spawn()
                    .expect("sleep runs")
            })
            .collect(),
    );

    let mut ids = Vec::new();
    for (cwd, (tty, _), shell, text) in [
        (&project, &terminals[0], &shells.0[0], "in the project"),
        (&other, &terminals[1], &shells.0[1], "elsewhere"),
        (&project, &terminals[2], &shells.0[2], "project again"),
    ] {
        let params = json!({
            "command_id": command_id(),
            "text": text,
            "new": true,
            "context": {"cwd": cwd, "tty": tty, "shell_context": {"shell": "bash", "pid": shell.id()}},
        });
        let result = client.ok("prompt.send", params).await.unwrap();
        let id = result["conversation_id"].as_str().unwrap().to_owned();
        // Wait for its turn to end, so the order of updated_at is the order of the prompts.
        rows_until_idle(&mut watcher, wid, &id, 1).await;
        ids.push(id);
    }

    let result = client
        .ok(
            "conversations.recent",
            json!({"tty": terminals[2].0, "pwd": project.join("protocol")}),
        )
        .await
        .unwrap();
    let order: Vec<&str> = result["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["summary"]["conversation_id"].as_str().unwrap())
        .collect();
    assert_eq!(order, [ids[2].as_str(), ids[0].as_str(), ids[1].as_str()], "{result}");
    let rows = result["conversations"].as_array().unwrap();
    assert_eq!(rows[0]["here"], true);
    assert_eq!(rows[1]["here"], true);
    assert!(rows[2].get("here").is_none(), "false is absent: {}", rows[2]);
    assert!(
        rows[0].get("open_in").is_none(),
        "the asking terminal is not another one"
    );
    assert_eq!(rows[1]["open_in"], terminals[0].0.as_str());
    assert_eq!(rows[0]["turns"], 1);
    assert_eq!(result["current"], ids[2].as_str());
    assert_eq!(result["scope"], json!({"kind": "project", "value": "efr"}));
    assert_eq!(rows[0]["route"], json!({"kind": "project", "value": "efr"}));
    assert_eq!(rows[0]["project"], "efr");
    assert_eq!(rows[2]["route"], json!({"kind": "outside"}));
    assert!(rows[2].get("project").is_none(), "{}", rows[2]);
    // A terminal that closed holds nothing.
    drop(terminals.into_iter().next());
    let _ = shells.0[0].kill();
    let _ = shells.0[0].wait();
    let result = client
        .ok("conversations.recent", json!({"pwd": project}))
        .await
        .unwrap();
    let first = result["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["summary"]["conversation_id"] == ids[0].as_str())
        .unwrap()
        .clone();
    assert!(first.get("open_in").is_none(), "{first}");

    // Without params: newest first, no current; limit cuts.
    let result = client.ok("conversations.recent", json!({"limit": 2})).await.unwrap();
    let order: Vec<&str> = result["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["summary"]["conversation_id"].as_str().unwrap())
        .collect();
    assert_eq!(order, [ids[2].as_str(), ids[1].as_str()]);
    assert!(result.get("current").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_does_not_read_ends_with_overflow() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let efrd = daemon(home.path(), &server);
    let mut admin = efrd.client().await.unwrap();
    let mut lazy = efrd.client().await.unwrap();
    let (id, _) = watch(&mut lazy, json!({})).await;
    // Each login is a daemon event. The lazy watcher reads nothing, so its socket, its connection's queue (256
    // frames) and then its receiver (64 daemon events) fill up.
    const LOGINS: u64 = 1500;
    for _ in 0..LOGINS {
        admin
            .ok(
                "admin.login_api_key",
                json!({"provider": "anthropic-api", "key": KEY, "check": false}),
            )
            .await
            .unwrap();
    }
    // Now it reads: the items that were queued for it, in order and with no gap, then the overflow error.
    let mut seqs = Vec::new();
    let error = loop {
        match lazy.next_of(id).await.unwrap() {
            StreamFrame::Item(item) => seqs.push(item["event"]["seq"].as_u64().unwrap()),
            StreamFrame::Error(error) => break error,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(error.code, ErrorCode::Busy);
    assert_eq!(error.data, Some(json!({"overflow": true})));
    assert!(!seqs.is_empty() && (seqs.len() as u64) < LOGINS, "{} items", seqs.len());
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "what came has no gap"
    );
    // Watching again works and gets a snapshot.
    let (again, _) = watch(&mut lazy, json!({})).await;
    admin
        .ok("admin.logout", json!({"provider": "anthropic-api"}))
        .await
        .unwrap();
    let item = next_item(&mut lazy, again).await;
    assert_eq!(item["event"]["kind"], "logout_completed");
}
