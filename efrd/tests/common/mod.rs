//! Shared setup of efrd's integration tests: a scripted model server and a real efrd in a temporary home.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.
#![allow(dead_code)]

use std::path::Path;

pub mod auto;
pub mod jobs;
pub mod tools;

use efr_protocol::frame::RequestId;
use efr_test_support::client::{Client, StreamFrame};
use efr_test_support::daemon::{TestDaemon, config_for};
use efr_test_support::scripted::{Reply, Script, ScriptedModel};
use efr_test_support::subscription;
use serde_json::{Value, json};

/// The efrd binary cargo built for these tests.
pub fn efrd_binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_efrd"))
}

/// A model server that answers each call with the given replies, in order.
pub async fn model(replies: Vec<Reply>) -> ScriptedModel {
    ScriptedModel::start(Script::replies(replies))
        .await
        .expect("scripted model server")
}

/// A reply with `text` streamed in chunks of `chunk` bytes (boundaries may split characters), `delay_ms` apart, with
/// usage 120 in / 30 out.
pub fn text_reply(text: &str, chunk: usize, delay_ms: u64) -> Reply {
    Reply::text(text).with_usage(120, 30).with_chunks(chunk, delay_ms)
}

/// efrd in `home`, logged in to openai-api through the environment, pointed at `model`.
pub fn daemon(home: &Path, model: &ScriptedModel) -> TestDaemon {
    TestDaemon::start(
        efrd_binary(),
        home,
        Some(&config_for(&model.base_url())),
        &[("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")],
    )
    .expect("efrd starts")
}

/// Set in the environment of a process that runs one test alone (see [`alone`]): the test's name.
const ALONE: &str = "EFR_TEST_ALONE";

/// Runs the test `name` (as `module_path!()` and the function's name give it) in a process of its own: this test
/// binary again, with only that test selected. For the few tests that need the process to themselves, which one
/// binary for every test no longer gives them (a measure of the process's memory, a thread-default tracing
/// subscriber that other tests' callsites would race with). `body` runs in that process; here, the test waits for
/// it and fails with its output when it fails.
pub fn alone(module: &str, function: &str, body: impl FnOnce()) {
    // `module_path!()` starts with the crate (`all::suite::...`); the harness names tests without it.
    let name = format!(
        "{}::{function}",
        module.split_once("::").map_or(module, |(_, path)| path)
    );
    if std::env::var(ALONE).is_ok_and(|alone| alone == name) {
        body();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(ALONE, &name)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    eprint!("{stderr}");
    assert!(
        out.status.success(),
        "{name} failed in its own process:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("1 passed"),
        "{name} did not run in its own process:\n{stdout}"
    );
}

/// A tokio runtime like `#[tokio::test(flavor = "multi_thread", worker_threads = 2)]` makes.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A new command id.
pub fn command_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A small project folder of the test's own, removed when dropped: a turn snapshots its working directory at its
/// start and end, so [`prompt`]'s turns run in a folder with nothing else in it and no git root above it; one per
/// test, so that tests running side by side never see each other's files.
pub fn project() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("efr-tests-project").tempdir().unwrap()
}

/// Sends a prompt from `project` (see [`project`]) and returns its result: to `conversation`, or, when it is
/// `None`, to a new conversation (`new`, as `,new` asks: the terminal's prompt is not routed to an earlier one).
pub async fn prompt(client: &mut Client, project: &Path, conversation: Option<&str>, text: &str) -> Value {
    let mut params =
        json!({"command_id": command_id(), "text": text, "context": {"cwd": project, "tty": "/dev/pts/9"}});
    match conversation {
        Some(id) => params["conversation_id"] = json!(id),
        None => params["new"] = json!(true),
    }
    client.ok("prompt.send", params).await.expect("prompt.send")
}

/// Subscribes with ack and returns the request id after the ack (and the snapshot, when `after_seq` is absent).
pub async fn subscribe(client: &mut Client, conversation: &str, after_seq: Option<u64>) -> (RequestId, Option<Value>) {
    subscription::subscribe(client, conversation, after_seq)
        .await
        .unwrap_or_else(|error| panic!("{error:#}"))
}

/// Reads events of subscription `id` until one of kind `until` (included); fails when a turn ends before.
pub async fn events_until(client: &mut Client, id: RequestId, until: &str) -> Vec<Value> {
    subscription::events_until(client, id, until)
        .await
        .unwrap_or_else(|error| panic!("{error:#}"))
}

/// Reads events of subscription `id` until one of kind `until` (included), through the ends of turns.
pub async fn events_through(client: &mut Client, id: RequestId, until: &str) -> Vec<Value> {
    subscription::events_through(client, id, until)
        .await
        .unwrap_or_else(|error| panic!("{error:#}"))
}

/// The assistant's text of a list of events, rebuilt from assistant_message_updated by offset.
pub fn text_of(events: &[Value]) -> String {
    let mut text = String::new();
    for event in events.iter().filter(|e| e["kind"] == "assistant_message_updated") {
        assert_eq!(
            event["offset"].as_u64().unwrap(),
            text.len() as u64,
            "offsets are contiguous bytes"
        );
        text.push_str(event["delta"].as_str().unwrap());
    }
    text
}

/// The seqs of a list of events.
pub fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().map(|e| e["seq"].as_u64().unwrap()).collect()
}

/// Reads the whole log of a conversation through a fresh subscription.
pub async fn whole_log(client: &mut Client, conversation: &str) -> Vec<Value> {
    let list = client.ok("conversations.list", json!({"limit": 200})).await.unwrap();
    let last = list["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["conversation_id"] == conversation)
        .map(|row| row["last_seq"].as_u64().unwrap())
        .expect("the conversation is listed");
    let id = client
        .send(
            "conversation.subscribe",
            json!({"conversation_id": conversation, "after_seq": 0}),
            true,
        )
        .await
        .unwrap();
    assert_eq!(client.next_of(id).await.unwrap(), StreamFrame::Ack);
    let mut events = Vec::new();
    while (events.len() as u64) < last {
        match client.next_of(id).await.unwrap() {
            StreamFrame::Item(item) => events.push(item["event"].clone()),
            other => panic!("{other:?}"),
        }
    }
    client.cancel(id).await.unwrap();
    events
}

/// Runs git in `dir` with a fixed identity and no system or user config; its standard output. Fails the test when
/// git fails.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.autocrlf=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git (install the Debian package git)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
