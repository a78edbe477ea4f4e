//! Commands left running in the hidden shell (past their call's timeout): their end and input waits recorded, and a
//! later call refused as busy while shell.status and shell.interrupt still see and stop the command.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use serde_json::json;

use common::tools::{left_running_call, shell_call, start, text, tool_output};
use common::{command_id, daemon, events_until, model};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_outlives_its_timeout_is_left_running_and_its_end_is_recorded() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let long = left_running_call("call_long", "sleep 2; echo finally");
    let server = model(vec![long, text("waiting for it")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "full", "go").await;
    let events = common::events_through(&mut client, id, "shell_command_ended").await;
    let completed = events.iter().find(|e| e["kind"] == "tool_call_completed").unwrap();
    assert_eq!(completed["left_running"], true, "{completed}");
    let detached = events.iter().find(|e| e["kind"] == "shell_command_detached").unwrap();
    assert_eq!(detached["command"], "sleep 2; echo finally");
    assert!(
        detached.get("turn_id").is_none(),
        "a detached command belongs to the conversation"
    );
    let ended = events.last().unwrap();
    assert_eq!(ended["call_id"], "call_long");
    assert_eq!(ended["how"], "ended");
    assert_eq!(ended["exit_code"], 0);
    assert!(tool_output(&server, "call_long").contains("still runs"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_left_running_command_that_starts_waiting_for_input_records_the_change() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let line = "sleep 2; read -p 'more? ' answer; echo got $answer";
    let long = left_running_call("call_wait", line);
    let server = model(vec![long, text("it waits")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "go").await;
    let events = common::events_through(&mut client, id, "shell_command_input_changed").await;
    let detached = events.iter().find(|e| e["kind"] == "shell_command_detached").unwrap();
    assert_eq!(
        detached["input"], "none",
        "it did not wait yet when its call answered: {detached}"
    );
    let changed = events.last().unwrap();
    assert_eq!(changed["call_id"], "call_wait");
    assert_eq!(changed["input"], "visible", "{changed}");
    assert_eq!(changed["contained"], false);
    assert!(changed["prompt"].as_str().unwrap().contains("more?"), "{changed}");
    assert!(changed.get("turn_id").is_none(), "it belongs to the conversation");
    // Stopping it ends the wait with the command.
    client
        .ok(
            "shell.interrupt",
            json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_wait"}),
        )
        .await
        .unwrap();
    let rest = common::events_through(&mut client, id, "shell_command_ended").await;
    let ended = rest.last().unwrap();
    assert_eq!(ended["call_id"], "call_wait");
    assert_ne!(ended["how"], "ended", "{ended}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_refused_as_busy_leaves_the_command_left_running_visible_and_stoppable() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        left_running_call("call_long", "sleep 300"),
        text("left it"),
        shell_call("call_next", "echo blocked?"),
        text("refused"),
        text("noted"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "go").await;
    events_until(&mut client, id, "turn_completed").await;
    let params = json!({"command_id": command_id(), "conversation_id": conversation, "text": "more",
        "context": {"cwd": project.path()}, "settings": {"mode": "full"}});
    client.ok("prompt.send", params).await.unwrap();
    let events = events_until(&mut client, id, "turn_completed").await;
    let refused = events
        .iter()
        .find(|e| e["kind"] == "tool_call_completed" && e["call_id"] == "call_next")
        .unwrap();
    assert_eq!(refused["status"], "failed", "{refused}");
    assert!(
        refused["output"].as_str().unwrap().contains("busy with `sleep 300`"),
        "{refused}"
    );

    let status = client
        .ok("shell.status", json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert_eq!(status["busy"]["call_id"], "call_long", "{status}");
    let stop = json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_long"});
    client.ok("shell.interrupt", stop).await.unwrap();
    let events = common::events_through(&mut client, id, "shell_command_ended").await;
    let ended = events.last().unwrap();
    assert_eq!(
        (&ended["call_id"], &ended["how"]),
        (&json!("call_long"), &json!("stopped")),
        "{ended}"
    );

    // The next prompt tells the model, in its copy only, that the shell is free again.
    let params = json!({"command_id": command_id(), "conversation_id": conversation, "text": "and now",
        "context": {"cwd": project.path()}, "settings": {"mode": "full"}});
    client.ok("prompt.send", params).await.unwrap();
    events_until(&mut client, id, "turn_completed").await;
    let last = server.requests().last().unwrap().body.to_string();
    assert!(
        last.contains("the command `sleep 300` that was left running has ended: the user stopped it (SIGINT)"),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_link_swapped_by_a_contained_command_left_running_is_put_back_and_the_model_is_told() {
    use common::auto::{bounded, daemon_with, tempdir};
    let base = tempdir();
    let home = base.path().join("home");
    let project = base.path().join("project");
    for dir in [&home, &project] {
        std::fs::create_dir(dir).unwrap();
    }
    let init = std::process::Command::new("git")
        .args(["init", "-q", "--separate-git-dir", "../repo.git"])
        .current_dir(&project)
        .status()
        .unwrap();
    assert!(init.success());
    std::fs::remove_file(project.join(".git")).unwrap();
    std::os::unix::fs::symlink("../repo.git", project.join(".git")).unwrap();
    // The swap happens after the call answered the model: only shell_command_ended can say it was put back.
    let server = model(vec![
        left_running_call("call_swap", "sleep 2; mkdir evil && ln -sfn evil .git; echo swapped"),
        text("left it"),
        text("noted"),
    ])
    .await;
    let efrd = daemon_with(&home, &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, &project, "auto", "go").await;
    let events = bounded(
        "the end",
        common::events_through(&mut client, id, "shell_command_ended"),
    )
    .await;
    let ended = events.last().unwrap();
    assert_eq!(ended["call_id"], "call_swap", "{ended}");
    let notes = ended["notes"].as_array().unwrap_or_else(|| panic!("no notes: {ended}"));
    assert!(notes[0].as_str().unwrap().contains("efr put back the link"), "{ended}");
    assert_eq!(
        std::fs::read_link(project.join(".git")).unwrap(),
        std::path::Path::new("../repo.git")
    );
    // The next prompt tells the model.
    let params = json!({"command_id": command_id(), "conversation_id": conversation, "text": "and now",
        "context": {"cwd": project}, "settings": {"mode": "auto"}});
    client.ok("prompt.send", params).await.unwrap();
    bounded("the next turn", events_until(&mut client, id, "turn_completed")).await;
    let last = server.requests().last().unwrap().body.to_string();
    assert!(last.contains("efr put back the link"), "{last}");
}
