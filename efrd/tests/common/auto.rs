//! What the auto-mode and sandbox tests share: the launcher built next to efrd, folders outside `/tmp` (a contained
//! call has a private `/tmp`, so a home there would be hidden by it and prove nothing about the masks), efrd started
//! with it, and a bound on every wait.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use efr_test_support::binaries::sibling;
use efr_test_support::daemon::{TestDaemon, config_for};
use efr_test_support::scripted::ScriptedModel;
use serde_json::{Value, json};

/// The launcher next to efrd, where efrd looks for it; built when it is not there yet.
pub fn launcher() -> &'static Path {
    static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();
    LAUNCHER.get_or_init(|| sibling(super::efrd_binary(), "efr-launcher", "efr-launcher"))
}

/// `efr-proxy` next to efrd, where efrd looks for it; built when it is not there yet.
pub fn proxy() -> &'static Path {
    static PROXY: OnceLock<PathBuf> = OnceLock::new();
    PROXY.get_or_init(|| sibling(super::efrd_binary(), "efr-proxy", "efr-proxy"))
}

/// A temporary folder outside `/tmp` (see the module docs).
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// efrd in `home` with the launcher next to it and `envs` added.
pub fn daemon_with(home: &Path, server: &ScriptedModel, envs: &[(&str, &str)]) -> TestDaemon {
    launcher();
    let mut all = vec![("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")];
    all.extend_from_slice(envs);
    TestDaemon::start(super::efrd_binary(), home, Some(&config_for(&server.base_url())), &all).expect("efrd starts")
}

/// The shown paths of a completion's changes.
pub fn changed_paths(completed: &Value) -> Vec<String> {
    completed["changes"]["files"]
        .as_array()
        .map(|files| files.iter().map(|f| f["path"].as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

/// Runs `f` with a bound: a hung daemon fails the test instead of hanging it.
pub async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .unwrap_or_else(|_| panic!("{what} took over 60 s"))
}

/// Reads the subscription's events until the turn completes, answering every question deny.
pub async fn deny_every_question(
    client: &mut efr_test_support::client::Client,
    id: efr_protocol::frame::RequestId,
    conversation: &str,
) -> Vec<serde_json::Value> {
    let mut events = Vec::new();
    loop {
        let frame = client.next_of(id).await.expect("a frame of the subscription");
        let efr_test_support::client::StreamFrame::Item(item) = frame else {
            panic!("expected an event, got {frame:?}");
        };
        let event = item["event"].clone();
        events.push(event.clone());
        match event["kind"].as_str() {
            Some("turn_completed") => return events,
            Some("approval_requested") => {
                let answer = json!({"command_id": super::command_id(), "conversation_id": conversation,
                    "call_id": event["call_id"], "decision": "deny"});
                client.ok("approval.respond", answer).await.unwrap();
            }
            _ => {}
        }
    }
}
