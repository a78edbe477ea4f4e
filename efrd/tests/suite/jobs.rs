//! Background jobs end to end: a shell call with `background` starts a job in a cgroup of its own; jobs.stop, an
//! interrupt of its turn and efrd's stop end every process of it (checked with `pgrep` over the whole machine); a
//! watch wakes the model; the bad inputs of jobs.stop.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common;
use common::jobs::{job_call, pgrep, stop, wait_count};
use common::tools::{shell_call_with, start, text};
use common::{command_id, daemon, events_through, events_until, model};

/// A job line that forks a disowned daemon and a new session, then waits: three `sleep`s with a marker of their own.
fn forking_line(marker: u32) -> String {
    format!("sleep {marker} & disown; setsid sleep {marker} & sleep {marker}")
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

    let stopped = stop(&mut client, &conversation, "j1").await;
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
    assert_eq!(
        started["settings"]["fallback"],
        json!({"asked": "full", "reason": "a turn that a job notice starts runs with at most auto"}),
        "{started}"
    );
    let last = server.requests().last().unwrap().body.to_string();
    assert!(
        last.contains("job_notices") && last.contains("server ready on 8000"),
        "{last}"
    );
    stop(&mut client, &conversation, "j1").await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_of_a_killed_efrd_is_killed_and_reported_lost_after_the_restart() {
    let marker = 850_000 + std::process::id() % 40_000;
    let line = forking_line(marker);
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        job_call("call_job", &line, &json!({})),
        text("it runs"),
        job_call("call_two", "sleep 0.1", &json!({})),
        text("and another"),
    ])
    .await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "start it").await;
    events_until(&mut client, id, "turn_completed").await;
    assert_eq!(wait_count(&format!("sleep {marker}"), 3).len(), 3);
    drop(client);
    efrd.kill().unwrap();
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    // Loading the conversation (its subscription) finds the job without an end.
    let (id, _) = common::subscribe(&mut client, &conversation, Some(0)).await;
    let log = events_through(&mut client, id, "job_notice_held").await;
    client.cancel(id).await.unwrap();
    let ended = log
        .iter()
        .find(|e| e["kind"] == "job_ended")
        .expect("job_ended after the restart");
    assert_eq!(
        (&ended["launcher_lost"], &ended["state"]),
        (&json!(true), &json!("failed")),
        "{ended}"
    );
    let left = wait_count(&format!("sleep {marker}"), 0);
    assert!(
        left.is_empty(),
        "processes of the lost job outlived the restart: {left:?}"
    );
    // The next prompt carries the notice, and the next job goes on from j2.
    let params = json!({"command_id": command_id(), "conversation_id": conversation, "text": "again",
        "context": {"cwd": project.path()}, "settings": {"mode": "full"}});
    client.ok("prompt.send", params).await.unwrap();
    let (id, _) = common::subscribe(
        &mut client,
        &conversation,
        Some(log.last().unwrap()["seq"].as_u64().unwrap()),
    )
    .await;
    let events = events_until(&mut client, id, "turn_completed").await;
    let notice = events
        .iter()
        .find(|e| e["kind"] == "job_notice")
        .expect("job_notice at the next prompt");
    assert_eq!(
        (&notice["job_id"], &notice["woke"]),
        (&json!("j1"), &json!(false)),
        "{notice}"
    );
    let started = events
        .iter()
        .find(|e| e["kind"] == "job_started")
        .expect("the second job");
    assert_eq!(started["job"]["id"], "j2", "{started}");
}

/// The resident memory of the processes of a cgroup folder, in bytes.
fn rss_of(dir: &std::path::Path) -> u64 {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .filter_map(|status| {
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .sum::<u64>()
        * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_systemd_user_manager_a_job_is_a_transient_scope() {
    efr_test_support::systemd::require_root().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let manager = efr_test_support::systemd::UserManager::start(&dir.path().join("manager")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    // 64 MiB touched, so the job's memory is well above a shell's.
    let line = "python3 -c 'import time; b = bytearray(64 << 20); time.sleep(600)'";
    let server = model(vec![job_call("call_job", line, &json!({})), text("it runs")]).await;
    let runtime_dir = manager.runtime_dir();
    let efrd = efr_test_support::daemon::TestDaemon::start(
        common::efrd_binary(),
        home.path(),
        Some(&efr_test_support::daemon::config_for(&server.base_url())),
        &[
            ("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2"),
            ("XDG_RUNTIME_DIR", runtime_dir.to_str().unwrap()),
        ],
    )
    .unwrap();
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "start it").await;
    events_until(&mut client, id, "turn_completed").await;
    let units = manager
        .systemctl_ok(&["list-units", "--type=scope", "--all", "--no-legend", "--plain"])
        .unwrap();
    let unit = format!("efr-job-{}-j1.scope", &conversation[..8]);
    assert!(
        units.contains(&unit),
        "{unit} is not among the manager's scopes:\n{units}\nefrd:\n{}",
        efrd.log()
    );
    let cgroup = manager
        .systemctl_ok(&["show", "-p", "ControlGroup", "--value", &unit])
        .unwrap();
    let cgroup = cgroup.trim().trim_start_matches('/').to_owned();
    let dir = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd"]
        .iter()
        .map(|base| std::path::Path::new(base).join(&cgroup))
        .find(|d| d.join("cgroup.procs").is_file())
        .expect("the scope's cgroup folder");
    // Wait until the job has touched its memory.
    let start_wait = Instant::now();
    let job = loop {
        let list = client
            .ok("jobs.list", json!({"conversation_id": conversation}))
            .await
            .unwrap();
        let job = list["jobs"][0].clone();
        if job["cgroup"]["memory_bytes"].as_u64().unwrap_or(0) > 60 << 20
            || start_wait.elapsed() > Duration::from_secs(10)
        {
            break job;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(job["cgroup"].get("off").is_none(), "{job}");
    let reported = job["cgroup"]["memory_bytes"].as_u64().unwrap() as f64;
    let current = std::fs::read_to_string(dir.join("memory.current"))
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or_else(|| rss_of(&dir)) as f64;
    assert!(
        (reported - current).abs() <= current * 0.10,
        "memory_bytes {reported} against the cgroup's {current}"
    );
    let stopped = stop(&mut client, &conversation, "j1").await;
    assert_eq!(stopped["job"]["state"], "stopped", "{stopped}");
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    assert!(procs.trim().is_empty(), "processes left in the scope: {procs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contained_job_runs_in_the_sandbox_and_its_turns_interrupt_ends_it() {
    let marker = 800_000 + std::process::id() % 40_000;
    let line = forking_line(marker);
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        job_call("call_job", &format!("touch inside.txt; {line}"), &json!({})),
        shell_call_with("call_wait", &json!({"command": "sleep 30", "timeout": 60})),
        text("not reached"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "auto", "start it").await;
    let events = events_through(&mut client, id, "job_started").await;
    let started = events.last().unwrap();
    assert_eq!(started["job"]["launch"]["kind"], "contained", "{started}");
    assert_eq!(
        wait_count(&format!("sleep {marker}"), 3).len(),
        3,
        "the job's sleeps run"
    );
    assert!(
        project.path().join("inside.txt").exists(),
        "the job wrote in the project"
    );
    // The turn goes on to its next call; an interrupt of the turn ends the job it started.
    events_through(&mut client, id, "tool_call_started").await;
    client
        .ok(
            "turn.interrupt",
            json!({"command_id": command_id(), "conversation_id": conversation}),
        )
        .await
        .unwrap();
    let ended = events_through(&mut client, id, "job_ended").await;
    let ended = ended.last().unwrap();
    assert_eq!(
        (&ended["state"], &ended["stopped_by"]),
        (&json!("stopped"), &json!("user")),
        "{ended}"
    );
    let left = wait_count(&format!("sleep {marker}"), 0);
    assert!(left.is_empty(), "processes outlived the interrupt: {left:?}");
}
