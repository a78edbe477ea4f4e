//! What a restart of efrd keeps of a conversation with tool calls: the model's history (calls and their outputs), the
//! diff of a turn that a crash cut off, and the end of a command the stopped efrd left running.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use efr_protocol::ErrorCode;
use serde_json::{Value, json};

use common::tools::{left_running_call, patch_call, shell_call, start, text};
use common::{command_id, daemon, events_until, model, subscribe};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_cut_off_by_a_crash_still_has_its_diff_after_the_restart() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "one\n").unwrap();
    let server = model(vec![
        patch_call(
            "call_patch",
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\n",
        ),
        shell_call("call_sleep", "sleep 60"),
    ])
    .await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (sent, _, id) = start(&mut client, project.path(), "full", "change it").await;
    let events = common::events_through(&mut client, id, "tool_call_started").await;
    assert_eq!(events.last().unwrap()["call_id"], "call_patch");
    let events = common::events_through(&mut client, id, "tool_call_started").await;
    assert_eq!(events.last().unwrap()["call_id"], "call_sleep");
    // The turn has not ended: its changes are not known yet.
    let error = client
        .call("conversation.diff", json!({"turn_id": sent["turn_id"]}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::NotFound, "{error:?}");
    assert!(error.message.contains("has not ended"), "{error:?}");
    drop(client);

    efrd.kill().unwrap();
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let diff = client
        .ok("conversation.diff", json!({"turn_id": sent["turn_id"]}))
        .await
        .unwrap();
    assert_eq!(diff["changes"]["files"][0]["path"], "a.txt", "{diff}");
    assert!(diff["diff"].as_str().unwrap().contains("-one\n+two"), "{diff}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_the_model_still_gets_the_earlier_tool_calls_and_their_outputs() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        shell_call("call_echo", "echo from-before-the-restart"),
        text("it printed"),
        text("still here"),
    ])
    .await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "print it").await;
    let first = events_until(&mut client, id, "turn_completed").await;
    let last_seq = first.last().unwrap()["seq"].as_u64().unwrap();
    drop(client);

    efrd.stop(std::time::Duration::from_secs(10)).unwrap();
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let params = json!({"command_id": command_id(), "conversation_id": conversation, "text": "and now?",
        "context": {"cwd": project.path()}, "settings": {"mode": "full"}});
    client.ok("prompt.send", params).await.unwrap();
    let (id, _) = subscribe(&mut client, &conversation, Some(last_seq)).await;
    events_until(&mut client, id, "turn_completed").await;

    // The request after the restart holds the call, its output, and the turns around them, in order.
    let requests = server.requests();
    let last: Value = requests.last().unwrap().body.clone();
    let items = last["input"].as_array().unwrap();
    let call = items
        .iter()
        .position(|i| i["type"] == "function_call" && i["call_id"] == "call_echo");
    let output = items
        .iter()
        .position(|i| i["type"] == "function_call_output" && i["call_id"] == "call_echo");
    let (call, output) = (call.expect("the call"), output.expect("its output"));
    assert!(call < output, "{last}");
    assert_eq!(items[call]["name"], "shell");
    assert!(
        items[call]["arguments"]
            .as_str()
            .unwrap()
            .contains("from-before-the-restart")
    );
    assert!(
        items[output]["output"]
            .as_str()
            .unwrap()
            .contains("from-before-the-restart"),
        "{}",
        items[output]
    );
    assert!(last.to_string().contains("it printed") && last.to_string().contains("and now?"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_left_running_when_efrd_stops_is_recorded_as_closed_after_the_restart() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let long = left_running_call("call_long", "sleep 300");
    let server = model(vec![long, text("left it running"), text("heard")]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "go").await;
    common::events_through(&mut client, id, "shell_command_detached").await;
    events_until(&mut client, id, "turn_completed").await;
    drop(client);

    let shells = home.path().join("run/shells");
    assert_eq!(std::fs::read_dir(&shells).unwrap().count(), 1, "the shell's own folder");
    efrd.kill().unwrap();
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    // The killed efrd's shell folder is gone (the new efrd has started no shell yet).
    assert_eq!(std::fs::read_dir(&shells).unwrap().count(), 0);
    let events = common::events_through(&mut client, id, "shell_command_ended").await;
    let ended = events.last().unwrap();
    assert_eq!(
        (&ended["call_id"], &ended["how"]),
        (&json!("call_long"), &json!("closed")),
        "{ended}"
    );
    assert!(ended.get("turn_id").is_none(), "{ended}");
    let status = client
        .ok("shell.status", json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert!(status.get("busy").is_none(), "{status}");

    // Recorded once: after one more restart the log still ends with that end.
    drop(client);
    efrd.stop(std::time::Duration::from_secs(10)).unwrap();
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let (_, snapshot) = subscribe(&mut client, &conversation, None).await;
    assert_eq!(snapshot.unwrap()["seq"], ended["seq"]);

    // The model hears of it with its next prompt.
    let params = json!({"command_id": command_id(), "conversation_id": conversation, "text": "still there?",
        "context": {"cwd": project.path()}, "settings": {"mode": "full"}});
    client.ok("prompt.send", params).await.unwrap();
    let (id, _) = subscribe(&mut client, &conversation, ended["seq"].as_u64()).await;
    events_until(&mut client, id, "turn_completed").await;
    let last = server.requests().last().unwrap().body.to_string();
    assert!(
        last.contains("the command `sleep 300` that was left running has ended: the hidden shell was closed"),
        "{last}"
    );
}
