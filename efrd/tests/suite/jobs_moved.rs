//! Moving a running shell call into a background job (call.background): a contained call at once, a call outside
//! the sandbox through its preview's token, a command left running in the hidden shell; the refusals (a call that
//! does not run, a token used or expired); and the held reasons of job notices (`[jobs] wakes`, the wake limit, a
//! woken turn's job).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::{Duration, Instant};

use efr_protocol::ErrorCode;
use efr_test_support::daemon::{TestDaemon, config_for};
use efr_test_support::scripted::ScriptedModel;
use serde_json::{Value, json};

use crate::common;
use common::jobs::{background, background_when_running, stop, wait_count, wait_output};
use common::tools::{left_running_call, shell_call_with, start, text};
use common::{events_through, events_until, model, whole_log};

/// efrd with `extra` appended to the test config.
fn daemon_with_config(home: &std::path::Path, server: &ScriptedModel, extra: &str) -> TestDaemon {
    let config = format!("{}\n{extra}\n", config_for(&server.base_url()));
    TestDaemon::start(
        common::efrd_binary(),
        home,
        Some(&config),
        &[("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")],
    )
    .expect("efrd starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_contained_call_moves_into_a_job_at_once() {
    let marker = 700_000 + std::process::id() % 40_000;
    let line = format!("echo before; sleep 0.5; echo after-the-move; sleep {marker}");
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        shell_call_with("call_run", &json!({"command": line, "timeout": 600})),
        text("it moved"),
        shell_call_with("call_next", &json!({"command": "echo free"})),
        text("the shell is free"),
    ])
    .await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "auto", "run it").await;
    events_through(&mut client, id, "tool_call_started").await;
    let moved = background_when_running(&mut client, &conversation, "call_run").await;
    assert_eq!(moved, json!({"kind": "moved", "job_id": "j1"}));
    let events = events_until(&mut client, id, "turn_completed").await;
    let completed = events
        .iter()
        .find(|e| e["kind"] == "tool_call_completed")
        .expect("the call answered the model");
    assert_eq!(completed["left_running"], true, "{completed}");
    let told = common::tools::tool_output(&server, "call_run");
    assert!(told.contains("moved this command to a background job"), "{told}");

    let log = whole_log(&mut client, &conversation).await;
    let started = log.iter().find(|e| e["kind"] == "job_started").expect("job_started");
    let job = &started["job"];
    assert_eq!(job["launch"]["kind"], "contained", "{started}");
    assert_eq!(
        (&job["moved_from"]["call_id"], &job["moved_from"]["launcher"]),
        (&json!("call_run"), &json!(true)),
        "{started}"
    );
    let ended = log
        .iter()
        .find(|e| e["kind"] == "shell_command_ended")
        .expect("the shell's part ended");
    assert_eq!(ended["how"], "moved", "{ended}");
    assert_eq!(
        wait_count(&format!("sleep {marker}"), 1).len(),
        1,
        "the command runs on"
    );
    let output = wait_output(job["output"].as_str().unwrap(), "after-the-move");
    assert!(output.contains("after-the-move"), "the job's file: {output:?}");

    // The conversation's next call runs at once in a new shell.
    let listed = client
        .ok("jobs.list", json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert_eq!(listed["jobs"][0]["state"], "running", "{listed}");
    let status = client
        .ok("shell.status", json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert!(status.get("busy").is_none(), "{status}");
    common::tools::prompt_to(&mut client, Some(&conversation), project.path(), "auto", "next").await;
    let next = events_until(&mut client, id, "turn_completed").await;
    let free = next
        .iter()
        .find(|e| e["kind"] == "tool_call_completed" && e["call_id"] == "call_next")
        .expect("the next call");
    assert_eq!(free["status"], "ok", "{free}");

    let stopped = stop(&mut client, &conversation, "j1").await;
    assert_eq!(stopped["job"]["state"], "stopped", "{stopped}");
    let left = wait_count(&format!("sleep {marker}"), 0);
    assert!(left.is_empty(), "the moved command outlived jobs.stop: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_outside_the_sandbox_moves_only_with_its_previews_token() {
    let marker = 740_000 + std::process::id() % 40_000;
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        shell_call_with(
            "call_run",
            &json!({"command": format!("sleep {marker}"), "timeout": 600}),
        ),
        text("it moved"),
    ])
    .await;
    let efrd = daemon_with_config(home.path(), &server, "[jobs]\npreview_secs = 1");
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "run it").await;
    events_through(&mut client, id, "tool_call_started").await;

    // Bad input: a call that does not run.
    let error = background(&mut client, &conversation, "call_nope", None)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid, "{error:?}");
    assert!(error.message.contains("runs no command"), "{error:?}");

    // Without the token, a preview: nothing moves.
    let preview = background_when_running(&mut client, &conversation, "call_run").await;
    assert_eq!(preview["kind"], "preview", "{preview}");
    assert_eq!(preview["command"], format!("sleep {marker}"));
    assert_eq!(preview["max_minutes"], 60);
    let listed = client.ok("jobs.list", json!({})).await.unwrap();
    assert!(listed.get("jobs").is_none(), "{listed}");

    // A token past `[jobs] preview_secs` is refused.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let expired = background(&mut client, &conversation, "call_run", preview["token"].as_str())
        .await
        .unwrap_err();
    assert_eq!(expired.code, ErrorCode::Invalid, "{expired:?}");
    assert!(expired.message.contains("expired"), "{expired:?}");

    // A fresh preview's token moves it; the same token again is refused.
    let preview = background(&mut client, &conversation, "call_run", None).await.unwrap();
    let token = preview["token"].as_str().unwrap().to_owned();
    let moved = background(&mut client, &conversation, "call_run", Some(&token))
        .await
        .unwrap();
    assert_eq!(moved, json!({"kind": "moved", "job_id": "j1"}));
    let reused = background(&mut client, &conversation, "call_run", Some(&token))
        .await
        .unwrap_err();
    assert_eq!(reused.code, ErrorCode::Invalid, "{reused:?}");
    events_until(&mut client, id, "turn_completed").await;

    let log = whole_log(&mut client, &conversation).await;
    let started = log.iter().find(|e| e["kind"] == "job_started").expect("job_started");
    assert_eq!(started["job"]["launch"]["kind"], "direct", "{started}");
    assert!(started["job"]["moved_from"].get("launcher").is_none(), "{started}");
    let stopped = stop(&mut client, &conversation, "j1").await;
    assert_eq!(stopped["job"]["stopped_by"], "user", "{stopped}");
    let left = wait_count(&format!("sleep {marker}"), 0);
    assert!(left.is_empty(), "the moved command outlived jobs.stop: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_left_running_moves_and_its_end_tells_the_model() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        left_running_call("call_run", "sleep 2; echo done-in-the-job"),
        text("it still runs"),
        text("the job ended"),
    ])
    .await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "run it").await;
    events_through(&mut client, id, "shell_command_detached").await;
    let preview = background(&mut client, &conversation, "call_run", None).await.unwrap();
    let moved = background(&mut client, &conversation, "call_run", preview["token"].as_str())
        .await
        .unwrap();
    assert_eq!(moved["kind"], "moved", "{moved}");
    let ended = events_through(&mut client, id, "shell_command_ended").await;
    assert_eq!(ended.last().unwrap()["how"], "moved");
    // The job's own end wakes the model.
    let events = events_through(&mut client, id, "job_ended").await;
    let job_ended = events.last().unwrap();
    assert_eq!(
        (&job_ended["state"], &job_ended["exit_code"]),
        (&json!("exited"), &json!(0)),
        "{job_ended}"
    );
    assert!(
        job_ended["tail"].as_str().unwrap().contains("done-in-the-job"),
        "{job_ended}"
    );
    let woken = events_until(&mut client, id, "turn_completed").await;
    let notice = woken.iter().find(|e| e["kind"] == "job_notice").expect("job_notice");
    assert_eq!(notice["woke"], true, "{notice}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_command_that_waits_for_input_shows_waits_input() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        left_running_call("call_read", "read -r answer; echo got $answer"),
        text("it waits"),
    ])
    .await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "ask me").await;
    events_through(&mut client, id, "shell_command_detached").await;
    let preview = background(&mut client, &conversation, "call_read", None).await.unwrap();
    background(&mut client, &conversation, "call_read", preview["token"].as_str())
        .await
        .unwrap();
    let start_wait = Instant::now();
    let job = loop {
        let list = client
            .ok("jobs.list", json!({"conversation_id": conversation}))
            .await
            .unwrap();
        let job = list["jobs"][0].clone();
        if job["waits_input"] == true || start_wait.elapsed() > Duration::from_secs(5) {
            break job;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(job["waits_input"], true, "{job}");
    let stopped = stop(&mut client, &conversation, "j1").await;
    assert!(stopped["job"].get("waits_input").is_none(), "{stopped}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_job_of_a_killed_efrd_is_killed_with_its_session_after_the_restart() {
    let marker = 780_000 + std::process::id() % 40_000;
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    // The command ignores SIGHUP, so the end of the pty alone would not end it.
    let line = format!("sh -c \"trap '' HUP; exec sleep {marker}\"");
    let server = model(vec![
        shell_call_with("call_run", &json!({"command": line, "timeout": 600})),
        text("it moved"),
    ])
    .await;
    let mut efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "run it").await;
    events_through(&mut client, id, "tool_call_started").await;
    let preview = background_when_running(&mut client, &conversation, "call_run").await;
    background(&mut client, &conversation, "call_run", preview["token"].as_str())
        .await
        .unwrap();
    events_until(&mut client, id, "turn_completed").await;
    assert_eq!(wait_count(&format!("sleep {marker}"), 1).len(), 1);
    drop(client);
    efrd.kill().unwrap();
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let (id, _) = common::subscribe(&mut client, &conversation, Some(0)).await;
    let log = events_through(&mut client, id, "job_notice_held").await;
    let ended = log.iter().find(|e| e["kind"] == "job_ended").expect("job_ended");
    assert_eq!(ended["launcher_lost"], true, "{ended}");
    let left = wait_count(&format!("sleep {marker}"), 0);
    assert!(left.is_empty(), "the moved command outlived its efrd: {left:?}");
}

/// A job that prints `ready` twice, then sleeps `rest` seconds and ends, with a watch on it (one wake).
fn ready_job(id: &str, rest: u32) -> efr_test_support::scripted::Reply {
    shell_call_with(
        id,
        &json!({"command": format!("echo ready; sleep 0.3; echo ready; sleep {rest}"), "background": true,
            "watch": "ready", "max_wakes": 1}),
    )
}

/// The reasons of the job_notice_held events of `log`.
fn held(log: &[Value]) -> Vec<String> {
    log.iter()
        .filter(|e| e["kind"] == "job_notice_held")
        .map(|e| e["reason"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_wakes_off_every_notice_is_held_as_wakes_off() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![ready_job("call_job", 0), text("started")]).await;
    let efrd = daemon_with_config(home.path(), &server, "[jobs]\nwakes = false");
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "watch it").await;
    events_through(&mut client, id, "job_ended").await;
    events_through(&mut client, id, "job_notice_held").await;
    let log = whole_log(&mut client, &conversation).await;
    assert_eq!(
        held(&log),
        ["wakes_off", "wakes_off", "wakes_off"],
        "the two matches and the end"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let log = whole_log(&mut client, &conversation).await;
    let turns = log.iter().filter(|e| e["kind"] == "turn_started").count();
    assert_eq!(turns, 1, "no notice woke a turn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_wakes_a_notice_is_held_and_a_woken_turns_job_wakes_none() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        // Its end comes after the test: only its matches count.
        ready_job("call_job", 60),
        text("started"),
        // The turn that the first match wakes starts a job of its own.
        ready_job("call_woken_job", 0),
        text("woken, and started another"),
    ])
    .await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "watch it").await;
    events_until(&mut client, id, "turn_completed").await;
    events_until(&mut client, id, "turn_completed").await;
    // Both jobs end; wait for the woken turn's job's end and its held notice.
    let start_wait = Instant::now();
    let log = loop {
        let log = whole_log(&mut client, &conversation).await;
        let ends = log.iter().filter(|e| e["kind"] == "job_ended").count();
        let reasons = held(&log);
        if (ends == 1 && reasons.iter().filter(|r| *r == "wake_turn_job").count() >= 3)
            || start_wait.elapsed() > Duration::from_secs(10)
        {
            break log;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let of = |job: &str| -> Vec<String> {
        let seqs: Vec<u64> = log
            .iter()
            .filter(|e| e["job_id"] == job && matches!(e["kind"].as_str(), Some("job_watch_matched" | "job_ended")))
            .map(|e| e["seq"].as_u64().unwrap())
            .collect();
        log.iter()
            .filter(|e| e["kind"] == "job_notice_held" && seqs.contains(&e["source_seq"].as_u64().unwrap()))
            .map(|e| e["reason"].as_str().unwrap().to_owned())
            .collect()
    };
    // j1: its first match woke the model; its second is past max_wakes 1.
    assert!(of("j1").contains(&"wake_limit".to_owned()), "{:?}", held(&log));
    // j2, started by the woken turn: none of its notices wakes a turn.
    assert_eq!(
        of("j2"),
        ["wake_turn_job", "wake_turn_job", "wake_turn_job"],
        "{:?}",
        held(&log)
    );
    stop(&mut client, &conversation, "j1").await;
}
