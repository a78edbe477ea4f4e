//! Full mode through the real efrd (docs/adr/0029-full-mode.md): each refusal in admin.status and at prompt.send, the
//! exits full mode lets run judged `full`, a guarded delete whose question expires, a loosening reload held while a
//! full turn runs, and the jobs of full mode stopped when a reload turns it off.
//!
//! efrd refuses full mode as root, and tests run as root: the refusal `root` is tested as root; every other test
//! here runs its efrd as `nobody` (`RunAs::User` in the test harness), its home and project chowned to it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::path::Path;
use std::time::Duration;

use efr_test_support::client::Client;
use efr_test_support::daemon::{NOBODY, RunAs, TestDaemon, config_for};
use efr_test_support::scripted::{Reply, ScriptedModel};
use serde_json::{Value, json};

use crate::common;
use common::auto::bounded;
use common::tools::{prompt_to, shell_call, shell_call_with, start, text};
use common::{command_id, events_through, events_until, model};

const KEY: (&str, &str) = ("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2");

/// efrd as `run_as` in `home` with `extra` appended to the test config (whose last table is `[permissions]`);
/// `project` is chowned with the home.
fn daemon_as(home: &Path, project: &Path, server: &ScriptedModel, extra: &str, run_as: RunAs) -> TestDaemon {
    start_as(home, project, &(config_for(&server.base_url()) + extra), run_as)
}

fn start_as(home: &Path, project: &Path, config: &str, run_as: RunAs) -> TestDaemon {
    TestDaemon::start_as(common::efrd_binary(), (home, Some(config)), &[KEY], run_as, &[project]).expect("efrd starts")
}

/// Writes the test config with `extra` appended as `config.toml` (for a reload).
fn rewrite(home: &Path, server: &ScriptedModel, extra: &str) {
    let path = home.join("config").join("config.toml");
    std::fs::write(path, config_for(&server.base_url()) + extra).unwrap();
}

/// The test config with full mode off: `allow_full` false.
fn full_off(server: &ScriptedModel) -> String {
    config_for(&server.base_url()).replace("allow_full = true", "allow_full = false")
}

async fn full_mode(client: &mut Client) -> Value {
    let status = client.ok("admin.status", json!({})).await.unwrap();
    status["full_mode"].clone()
}

/// prompt.send in full mode, which must fail: its error.
async fn refused_prompt(client: &mut Client, project: &Path) -> efr_protocol::ErrorBody {
    let params = json!({"command_id": command_id(), "text": "go", "context": {"cwd": project},
        "settings": {"mode": "full"}});
    client
        .call("prompt.send", params)
        .await
        .unwrap()
        .expect_err("full mode is refused")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_root_full_mode_is_refused_with_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (as CI runs it): it checks that a root efrd refuses full mode"
    );
    let (home, project) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let server = model(vec![]).await;
    // The harness allows full mode as root unless the config says otherwise: here it does, as a user's would.
    let config = config_for(&server.base_url()).replace("allow_full_as_root = true", "allow_full_as_root = false");
    let efrd = TestDaemon::start(common::efrd_binary(), home.path(), Some(&config), &[KEY]).expect("efrd starts");
    let mut client = efrd.client().await.unwrap();
    assert_eq!(
        full_mode(&mut client).await,
        json!({"allowed": true, "refused": "root"})
    );
    let error = refused_prompt(&mut client, project.path()).await;
    assert_eq!(error.code, efr_protocol::ErrorCode::Unavailable, "{error:?}");
    assert_eq!(error.data.as_ref().unwrap()["full_refusal"], "root", "{error:?}");
    assert!(error.message.contains("root"), "{error:?}");
    // Other modes still run.
    prompt_to(&mut client, None, project.path(), "cautious", "hello").await;
}

/// A refusal that the config or the disk makes, as `nobody`: admin.status names it, prompt.send fails with it.
async fn refused_by(extra: &str, prepare: impl FnOnce(&Path), refusal: &str) {
    let (home, project) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let server = model(vec![]).await;
    let efrd = daemon_as(home.path(), project.path(), &server, extra, NOBODY);
    let mut client = efrd.client().await.unwrap();
    // After hello: efrd has opened its stores.
    prepare(home.path());
    assert_eq!(
        full_mode(&mut client).await,
        json!({"allowed": true, "refused": refusal})
    );
    let error = refused_prompt(&mut client, project.path()).await;
    assert_eq!(error.code, efr_protocol::ErrorCode::Unavailable, "{error:?}");
    assert_eq!(error.data.as_ref().unwrap()["full_refusal"], refusal, "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_undo_off_full_mode_is_refused_with_undo_off() {
    refused_by("\n[undo]\nenabled = false\n", |_| {}, "undo_off").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_zsh_hidden_shell_full_mode_is_refused_with_no_zsh() {
    refused_by("\n[shell]\nprogram = \"zsh\"\n", |_| {}, "no_zsh").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_snapshot_store_it_cannot_write_full_mode_is_refused_with_snapshot_off() {
    use std::os::unix::fs::PermissionsExt;
    let stuck = |home: &Path| {
        let store = home.join("state").join("snapshots");
        assert!(store.is_dir(), "efrd made its snapshot store at {}", store.display());
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o500)).unwrap();
    };
    refused_by("", stuck, "snapshot_off").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_allow_full_false_full_mode_is_forbidden() {
    let (home, project) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let server = model(vec![]).await;
    let efrd = start_as(home.path(), project.path(), &full_off(&server), NOBODY);
    let mut client = efrd.client().await.unwrap();
    assert_eq!(full_mode(&mut client).await, json!({"allowed": false}));
    let error = refused_prompt(&mut client, project.path()).await;
    assert_eq!(error.code, efr_protocol::ErrorCode::Forbidden, "{error:?}");
    assert!(error.message.contains("allow_full"), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_outside_the_project_runs_as_the_user_and_is_judged_full() {
    // Outside `/tmp`: auto's sandbox has a private `/tmp` of its own, so a write there is no exit.
    let (home, project) = (common::auto::tempdir(), common::auto::tempdir());
    let outside = home.path().join("outside.txt");
    let line = format!("echo one > {}", outside.display());
    let server = model(vec![shell_call("call_out", &line), text("done")]).await;
    let efrd = daemon_as(home.path(), project.path(), &server, "", NOBODY);
    let mut client = efrd.client().await.unwrap();
    assert_eq!(full_mode(&mut client).await, json!({"allowed": true}));
    let (sent, conversation, id) = start(&mut client, project.path(), "full", "write it").await;
    assert_eq!(sent["settings"]["mode"], "full", "{sent}");
    let events = bounded("the turn", events_until(&mut client, id, "turn_completed")).await;
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "one\n");
    assert!(
        events.iter().all(|e| e["kind"] != "approval_requested"),
        "no question: {events:#?}"
    );
    let requested: Vec<&Value> = events.iter().filter(|e| e["kind"] == "exit_requested").collect();
    let judged: Vec<&Value> = events.iter().filter(|e| e["kind"] == "exit_judged").collect();
    assert!(!requested.is_empty(), "the exit is on the record: {events:#?}");
    assert_eq!(requested.len(), judged.len(), "{events:#?}");
    for judged in judged {
        assert_eq!(
            (&judged["judge"], &judged["verdict"]),
            (&json!("full"), &json!("approve")),
            "{judged}"
        );
        assert!(judged.get("chain_step").is_none(), "{judged}");
    }
    let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&outside).unwrap());
    assert_eq!(owner, 65534, "the call ran as efrd's user, with no sandbox");
    // turn.undo's list says the turn ran in full mode (and so auto too).
    let listed = client
        .ok(
            "turn.undo",
            json!({"command_id": command_id(), "conversation_id": conversation, "list": true}),
        )
        .await
        .unwrap();
    let turn = &listed["turns"][0];
    assert_eq!((&turn["full"], &turn["auto"]), (&json!(true), &json!(true)), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_delete_asks_and_when_its_question_expires_full_denies_it() {
    let (home, project) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let keep = home.path().join("keep");
    std::fs::create_dir_all(keep.join("inner")).unwrap();
    std::fs::write(keep.join("inner/file"), "mine").unwrap();
    let line = format!("rm -rf {}", keep.display());
    let server = model(vec![shell_call("call_rm", &line), text("it did not run")]).await;
    let extra = "question_limit_secs = 1\n";
    let efrd = daemon_as(home.path(), project.path(), &server, extra, NOBODY);
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "full", "clean up").await;
    let events = bounded("the turn", events_until(&mut client, id, "turn_completed")).await;
    let asked = events
        .iter()
        .find(|e| e["kind"] == "approval_requested")
        .expect("a question");
    assert_eq!(asked["expires_in_secs"], 1, "the config's limit: {asked}");
    assert!(
        asked["summary"].as_str().unwrap().contains("keep"),
        "the target is in the summary: {asked}"
    );
    let expired = events
        .iter()
        .position(|e| e["kind"] == "approval_expired")
        .expect("expired");
    let judged = events
        .iter()
        .position(|e| e["kind"] == "exit_judged")
        .expect("exit_judged");
    assert!(expired < judged, "{events:#?}");
    let judged = &events[judged];
    assert_eq!(
        (&judged["exit_kind"], &judged["judge"], &judged["verdict"]),
        (&json!("delete"), &json!("full"), &json!("deny")),
        "{judged}"
    );
    assert!(judged["reason"].as_str().unwrap().contains("expired"), "{judged}");
    let completed = events.iter().find(|e| e["kind"] == "tool_call_completed").unwrap();
    assert_eq!(completed["status"], "denied", "{completed}");
    assert_eq!(std::fs::read_to_string(keep.join("inner/file")).unwrap(), "mine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loosening_reload_while_a_full_turn_runs_is_held_then_applied_when_it_ends() {
    let (home, project) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let keep = home.path().join("keep");
    std::fs::create_dir_all(&keep).unwrap();
    let line = format!("rm -rf {}", keep.display());
    // The guarded delete's question keeps the full turn running while the config changes.
    let server = model(vec![shell_call("call_rm", &line), text("ok"), text("second")]).await;
    let efrd = daemon_as(home.path(), project.path(), &server, "", NOBODY);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "clean up").await;
    bounded("the question", events_until(&mut client, id, "approval_requested")).await;

    let looser = "default_mode = \"auto\"\n\n[network]\nallow = [\"example.com\"]\n";
    rewrite(home.path(), &server, looser);
    let reload = client.ok("admin.config_reload", json!({})).await.unwrap();
    assert_eq!(reload["applied"], false, "{reload}");
    let warnings = reload["warnings"].to_string();
    assert!(warnings.contains("held"), "{reload}");
    let status = client.ok("admin.status", json!({})).await.unwrap();
    assert_eq!(
        status["config"]["held"],
        json!({"loosens": ["network.allow", "permissions.default_mode"]}),
        "{status}"
    );

    client
        .ok(
            "approval.respond",
            json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_rm", "decision": "deny"}),
        )
        .await
        .unwrap();
    bounded("the turn", events_until(&mut client, id, "turn_completed")).await;
    // The turn's end applies the held change (the actor sees the end just after turn_completed is recorded): no
    // mode named now means the new default.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let status = client.ok("admin.status", json!({})).await.unwrap();
        if status["config"].get("held").is_none() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still held: {status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let params = json!({"command_id": command_id(), "text": "default", "conversation_id": conversation,
        "context": {"cwd": project.path()}});
    let sent = client.ok("prompt.send", params).await.unwrap();
    assert_eq!(sent["settings"]["mode"], "auto", "the held default applied: {sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tightening_reload_while_a_full_turn_runs_applies_at_once() {
    let (home, project) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let keep = home.path().join("keep");
    std::fs::create_dir_all(&keep).unwrap();
    let line = format!("rm -rf {}", keep.display());
    let server = model(vec![shell_call("call_rm", &line), text("ok")]).await;
    let efrd = daemon_as(home.path(), project.path(), &server, "", NOBODY);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "clean up").await;
    bounded("the question", events_until(&mut client, id, "approval_requested")).await;
    let tighter = "default_mode = \"manual\"\n";
    rewrite(home.path(), &server, tighter);
    let reload = client.ok("admin.config_reload", json!({})).await.unwrap();
    assert_eq!(reload["applied"], true, "{reload}");
    let status = client.ok("admin.status", json!({})).await.unwrap();
    assert!(status["config"].get("held").is_none(), "{status}");
    client
        .ok(
            "approval.respond",
            json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_rm", "decision": "deny"}),
        )
        .await
        .unwrap();
    bounded("the turn", events_until(&mut client, id, "turn_completed")).await;
}

fn job_call(id: &str, line: &str) -> Reply {
    shell_call_with(id, &json!({"command": line, "background": true}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_that_turns_full_mode_off_stops_its_jobs_with_full_off_and_starts_no_turn() {
    let (home, project) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let server = model(vec![job_call("call_job", "sleep 600"), text("it runs")]).await;
    let efrd = daemon_as(home.path(), project.path(), &server, "", NOBODY);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "start it").await;
    let events = bounded("the turn", events_until(&mut client, id, "turn_completed")).await;
    assert!(events.iter().any(|e| e["kind"] == "job_started"), "{events:#?}");
    let model_calls = |server: &ScriptedModel| server.requests().iter().filter(|r| r.method == "POST").count();
    let calls = model_calls(&server);

    std::fs::write(home.path().join("config").join("config.toml"), full_off(&server)).unwrap();
    let reload = client.ok("admin.config_reload", json!({})).await.unwrap();
    assert_eq!(reload["applied"], true, "{reload}");
    let ended = bounded("the job's end", events_through(&mut client, id, "job_ended")).await;
    let ended = ended.last().unwrap();
    assert_eq!(
        (&ended["state"], &ended["stopped_by"]),
        (&json!("stopped"), &json!("full_off")),
        "{ended}"
    );
    // Its notice waits for the next prompt: no turn starts of its own.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(model_calls(&server), calls, "no model call after the stop");
    let listed = client
        .ok("jobs.list", json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert_eq!(listed["jobs"][0]["state"], "stopped", "{listed}");
    let status = client.ok("admin.status", json!({})).await.unwrap();
    assert_eq!(status["full_mode"], json!({"allowed": false}), "{status}");
}
