//! Background jobs end to end: a shell call with `background` starts a job in a cgroup of its own; jobs.stop, an
//! interrupt of its turn and efrd's stop end every process of it (checked with `pgrep` over the whole machine); a
//! watch wakes the model; the bad inputs of jobs.stop.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common;
use common::tools::{shell_call_with, start, text};
use common::{command_id, daemon, events_through, events_until, model};

/// The processes on the whole machine whose command line is `marker`.
fn pgrep(marker: &str) -> Vec<String> {
    let out = std::process::Command::new("pgrep")
        .args(["-f", "-a", "-x", marker])
        .output()
        .expect("pgrep (procps) must be installed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains("pgrep"))
        .map(str::to_owned)
        .collect()
}

/// Waits until `pgrep(marker)` finds `count` processes, at most 5 s.
fn wait_count(marker: &str, count: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let found = pgrep(marker);
        if found.len() == count || start.elapsed() > Duration::from_secs(5) {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A job line that forks a disowned daemon and a new session, then waits: three `sleep`s with a marker of their own.
fn forking_line(marker: u32) -> String {
    format!("sleep {marker} & disown; setsid sleep {marker} & sleep {marker}")
}

fn job_call(id: &str, line: &str, extra: &Value) -> efr_test_support::scripted::Reply {
    let mut input = json!({"command": line, "background": true});
    input
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    shell_call_with(id, &input)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_stop_ends_every_process_of_a_job_that_forks_daemons() {
    let marker = 900_000 + std::process::id() % 50_000;
    let line = forking_line(marker);
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![job_call("call_job", &line, &json!({})), text("it runs")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "start it").await;
    let events = events_until(&mut client, id, "turn_completed").await;
    let started = events.iter().find(|e| e["kind"] == "job_started").expect("job_started");
    assert_eq!(started["job"]["id"], "j1", "{started}");
    assert_eq!(started["job"]["state"], "running");
    assert!(started["launcher_pid"].as_u64().unwrap() > 0);
    let completed = events.iter().find(|e| e["kind"] == "tool_call_completed").unwrap();
    assert_eq!(completed["status"], "ok", "{completed}");
    assert!(
        completed["output"].as_str().unwrap().contains("background job j1"),
        "{completed}"
    );
    assert_eq!(
        wait_count(&format!("sleep {marker}"), 3).len(),
        3,
        "the job's three sleeps run"
    );

    let list = client
        .ok("jobs.list", json!({"conversation_id": conversation}))
        .await
        .unwrap();
    let job = &list["jobs"][0];
    assert_eq!((&job["id"], &job["state"]), (&json!("j1"), &json!("running")), "{list}");
    assert!(job.get("cgroup").is_some(), "{job}");

    let stopped = client
        .ok(
            "jobs.stop",
            json!({"command_id": command_id(), "conversation_id": conversation, "job_id": "j1"}),
        )
        .await
        .unwrap();
    assert_eq!(stopped["job"]["state"], "stopped", "{stopped}");
    assert_eq!(stopped["job"]["stopped_by"], "user");
    let left = pgrep(&format!("sleep {marker}"));
    let cgroup_off = stopped["job"]["cgroup"].get("off").is_some();
    if cgroup_off {
        // Without a cgroup, a stop ends the process group: the new session's sleep is out of its reach.
        panic!("this machine gave the job no cgroup: {}", stopped["job"]["cgroup"]);
    }
    assert!(left.is_empty(), "processes outlived jobs.stop: {left:?}");
    let ended = events_through(&mut client, id, "job_ended").await;
    let ended = ended.last().unwrap();
    assert_eq!(
        (&ended["job_id"], &ended["state"]),
        (&json!("j1"), &json!("stopped")),
        "{ended}"
    );
    assert!(ended.get("turn_id").is_none(), "job_ended belongs to no turn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_ends_with_efrd_and_leaves_no_process() {
    let marker = 950_000 + std::process::id() % 40_000;
    let line = forking_line(marker);
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![job_call("call_job", &line, &json!({})), text("it runs")]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "start it").await;
    events_until(&mut client, id, "turn_completed").await;
    assert_eq!(wait_count(&format!("sleep {marker}"), 3).len(), 3);
    drop(client);
    efrd.stop(Duration::from_secs(10)).unwrap();
    let left = pgrep(&format!("sleep {marker}"));
    assert!(left.is_empty(), "processes outlived efrd: {left:?}");
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let log = common::whole_log(&mut client, &conversation).await;
    let ended = log
        .iter()
        .find(|e| e["kind"] == "job_ended")
        .expect("job_ended in the log");
    assert_eq!(ended["stopped_by"], "daemon_stop", "{ended}");
    let held = log
        .iter()
        .find(|e| e["kind"] == "job_notice_held")
        .expect("job_notice_held");
    assert_eq!(held["reason"], "daemon_restart", "{held}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_wakes_the_model_with_a_notice() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let line = "sleep 0.3; echo 'server ready on 8000'; sleep 600";
    let server = model(vec![
        job_call("call_job", line, &json!({"watch": "ready", "max_wakes": 1})),
        text("started"),
        text("the server is ready"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "serve").await;
    events_until(&mut client, id, "turn_completed").await;
    let woken = events_until(&mut client, id, "turn_completed").await;
    let matched = woken
        .iter()
        .find(|e| e["kind"] == "job_watch_matched")
        .expect("job_watch_matched");
    assert_eq!(matched["line"], "server ready on 8000", "{matched}");
    assert_eq!(matched["wakes_left"], 0);
    let notice = woken.iter().find(|e| e["kind"] == "job_notice").expect("job_notice");
    assert_eq!(
        (&notice["woke"], &notice["notice_kind"]),
        (&json!(true), &json!("watch")),
        "{notice}"
    );
    assert_eq!(notice["not_user_input"], true);
    assert_eq!(notice["source_seq"], matched["seq"]);
    let started = woken.iter().find(|e| e["kind"] == "turn_started").unwrap();
    assert_eq!(
        started["settings"]["mode"], "auto",
        "a woken turn runs with at most auto: {started}"
    );
    let last = server.requests().last().unwrap().body.to_string();
    assert!(
        last.contains("job_notices") && last.contains("server ready on 8000"),
        "{last}"
    );
    client
        .ok(
            "jobs.stop",
            json!({"command_id": command_id(), "conversation_id": conversation, "job_id": "j1"}),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_stop_refuses_an_unknown_job_and_an_id_that_is_not_a_job_id() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let unknown = client
        .call("jobs.stop", json!({"command_id": command_id(), "job_id": "j7"}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(unknown.code, efr_protocol::ErrorCode::NotFound, "{unknown:?}");
    for bad in ["x1", "j0", "7"] {
        let invalid = client
            .call("jobs.stop", json!({"command_id": command_id(), "job_id": bad}))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(invalid.code, efr_protocol::ErrorCode::Invalid, "{bad}: {invalid:?}");
    }
    let list = client.ok("jobs.list", json!({})).await.unwrap();
    assert!(list.get("jobs").is_none(), "{list}");
}
