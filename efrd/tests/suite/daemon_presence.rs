//! Presence through the daemon (docs/auto.md, "Presence"): presence.set of an unknown conversation is not_found,
//! present → away → present each record presence_changed once (a prompt sets present with source `input`), an away
//! user's question expires with `away` after `[permissions] away_question_secs`, a user who is present again
//! before then keeps it waiting, a question left unanswered means away (`unanswered_away_secs`, counted again from
//! the user's last input), and a restart keeps the presence the log says.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use efr_protocol::ErrorCode;
use efr_test_support::client::Client;
use efr_test_support::daemon::{TestDaemon, config_for};
use serde_json::{Value, json};

use common::auto::bounded;
use common::tools::{event_of, prompt_to, shell_call, start, text};
use common::{command_id, daemon, events_through, events_until, model};

/// efrd with `[permissions] away_question_secs = 1`.
fn daemon_away_after_a_second(
    home: &std::path::Path,
    server: &efr_test_support::scripted::ScriptedModel,
) -> TestDaemon {
    daemon_with_permissions(home, server, "away_question_secs = 1\n")
}

/// efrd with `permissions` (lines of its `[permissions]` table) added to the test config.
fn daemon_with_permissions(
    home: &std::path::Path,
    server: &efr_test_support::scripted::ScriptedModel,
    permissions: &str,
) -> TestDaemon {
    let config = config_for(&server.base_url()) + permissions;
    TestDaemon::start(
        common::efrd_binary(),
        home,
        Some(&config),
        &[("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")],
    )
    .expect("efrd starts")
}

async fn set(client: &mut Client, conversation: Option<&str>, presence: &str) -> Value {
    let mut params = json!({"command_id": command_id(), "presence": presence});
    if let Some(id) = conversation {
        params["conversation_id"] = json!(id);
    }
    client.ok("presence.set", params).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presence_set_of_an_unknown_conversation_is_not_found_and_unknown_presence_is_invalid() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let unknown = "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11";
    let params = json!({"command_id": command_id(), "conversation_id": unknown, "presence": "away"});
    let error = client.call("presence.set", params).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::NotFound);
    assert!(error.message.contains(unknown), "{}", error.message);
    let params = json!({"command_id": command_id(), "presence": "asleep"});
    let error = client.call("presence.set", params).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    // No conversation had input: nothing changes.
    assert_eq!(set(&mut client, None, "away").await, json!({"presence": "away"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn present_away_present_each_record_one_presence_changed() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![text("one"), text("two")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "manual", "hello").await;
    events_until(&mut client, id, "turn_completed").await;

    let away = set(&mut client, Some(&conversation), "away").await;
    assert_eq!(away["changed"], json!([conversation]), "{away}");
    let changed = events_through(&mut client, id, "presence_changed").await.pop().unwrap();
    assert_eq!(changed["presence"], "away");
    assert_eq!(changed["source"], "user");
    assert!(changed.get("turn_id").is_none(), "{changed}");
    assert_eq!(away["seq"], changed["seq"]);
    // Away again changes nothing, and records nothing.
    assert_eq!(
        set(&mut client, Some(&conversation), "away").await,
        json!({"presence": "away"})
    );
    // The same command id again returns the first result.
    let params = json!({"command_id": command_id(), "presence": "present"});
    let present = client.ok("presence.set", params.clone()).await.unwrap();
    assert_eq!(present["changed"], json!([conversation]), "{present}");
    assert_eq!(client.ok("presence.set", params).await.unwrap(), present);
    let changed = events_through(&mut client, id, "presence_changed").await.pop().unwrap();
    assert_eq!(changed["presence"], "present");
    assert_eq!(changed["seq"], present["seq"]);

    // A prompt is the user's input: present again, with source input.
    set(&mut client, None, "away").await;
    prompt_to(&mut client, Some(&conversation), project.path(), "manual", "again").await;
    let events = events_until(&mut client, id, "turn_completed").await;
    let changes: Vec<(&Value, &Value)> = events
        .iter()
        .filter(|e| e["kind"] == "presence_changed")
        .map(|e| (&e["presence"], &e["source"]))
        .collect();
    assert_eq!(
        changes,
        [(&json!("away"), &json!("user")), (&json!("present"), &json!("input"))],
        "{events:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_away_users_question_expires_with_away() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![shell_call("call_rm", "rm -rf build"), text("done")]).await;
    let efrd = daemon_away_after_a_second(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "manual", "clean").await;
    events_until(&mut client, id, "approval_requested").await;
    let started = std::time::Instant::now();
    set(&mut client, Some(&conversation), "away").await;
    let events = bounded("the away expiry", events_until(&mut client, id, "turn_completed")).await;
    let expired = event_of(&events, "approval_expired", "call_rm");
    assert_eq!(expired["away"], true, "{expired}");
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    assert_eq!(event_of(&events, "tool_call_completed", "call_rm")["status"], "denied");
    // An answer after the expiry is too late.
    let late =
        json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_rm", "decision": "allow"});
    let error = client.call("approval.respond", late).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Conflict);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_left_unanswered_means_away_with_source_timeout_then_it_expires() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![shell_call("call_rm", "rm -rf build"), text("done")]).await;
    let efrd = daemon_with_permissions(
        home.path(),
        &server,
        "away_question_secs = 1\nunanswered_away_secs = 1\n",
    );
    let mut client = efrd.client().await.unwrap();
    let started = std::time::Instant::now();
    let (_, _, id) = start(&mut client, project.path(), "manual", "clean").await;
    let events = bounded("the timeout's away", events_until(&mut client, id, "turn_completed")).await;
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    let at = |kind: &str| {
        kinds
            .iter()
            .position(|k| *k == kind)
            .unwrap_or_else(|| panic!("no {kind}: {kinds:?}"))
    };
    assert!(at("approval_requested") < at("presence_changed"), "{kinds:?}");
    assert!(at("presence_changed") < at("approval_expired"), "{kinds:?}");
    let changed = events.iter().find(|e| e["kind"] == "presence_changed").unwrap();
    assert_eq!(
        (&changed["presence"], &changed["source"]),
        (&json!("away"), &json!("timeout"))
    );
    assert_eq!(event_of(&events, "approval_expired", "call_rm")["away"], true);
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(2),
        "a second unanswered, then a second away"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_still_open_after_an_input_waits_again_from_it_then_means_away() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        shell_call("call_rm", "rm -rf build"),
        text("done"),
        text("the queued one"),
    ])
    .await;
    let efrd = daemon_with_permissions(
        home.path(),
        &server,
        "away_question_secs = 1\nunanswered_away_secs = 2\n",
    );
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "manual", "clean").await;
    events_until(&mut client, id, "approval_requested").await;
    // Halfway through the question's wait the user gives input (a prompt, queued behind the turn): the user was here
    // then, so the wait starts again from it, and runs out still.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let input = std::time::Instant::now();
    prompt_to(&mut client, Some(&conversation), project.path(), "manual", "then this").await;
    let events = bounded("the timeout's away", events_until(&mut client, id, "presence_changed")).await;
    let changed = events.last().unwrap();
    assert_eq!(
        (&changed["presence"], &changed["source"]),
        (&json!("away"), &json!("timeout")),
        "{changed}"
    );
    assert!(
        input.elapsed() >= std::time::Duration::from_secs(2),
        "the wait counts from the input, not from the question"
    );
    let events = bounded("the away expiry", events_until(&mut client, id, "approval_expired")).await;
    assert_eq!(events.last().unwrap()["away"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_present_again_keeps_the_question_waiting() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![shell_call("call_echo", "echo answered"), text("done")]).await;
    let efrd = daemon_away_after_a_second(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "manual", "say it").await;
    events_until(&mut client, id, "approval_requested").await;
    set(&mut client, Some(&conversation), "away").await;
    set(&mut client, Some(&conversation), "present").await;
    // Longer than away_question_secs: a present user's question has no limit.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let allow = json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_echo", "decision": "allow"});
    client.ok("approval.respond", allow).await.unwrap();
    let events = events_until(&mut client, id, "turn_completed").await;
    assert!(events.iter().all(|e| e["kind"] != "approval_expired"), "{events:#?}");
    assert_eq!(event_of(&events, "approval_resolved", "call_echo")["decision"], "allow");
    assert_eq!(event_of(&events, "tool_call_completed", "call_echo")["status"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_the_presence_of_the_log() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![text("one")]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "manual", "hello").await;
    events_until(&mut client, id, "turn_completed").await;
    set(&mut client, Some(&conversation), "away").await;
    drop(client);
    efrd.stop(std::time::Duration::from_secs(10)).unwrap();
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    // Still away: away again changes nothing; present does.
    assert_eq!(
        set(&mut client, Some(&conversation), "away").await,
        json!({"presence": "away"})
    );
    let present = set(&mut client, Some(&conversation), "present").await;
    assert_eq!(present["changed"], json!([conversation]), "{present}");
    // No conversation had input since this efrd started.
    assert_eq!(set(&mut client, None, "away").await, json!({"presence": "away"}));
}
