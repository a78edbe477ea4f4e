//! Port forwards of contained jobs end to end: a contained `python3 -m http.server` job answers curl on the host at
//! the same port; a second job on the same port gets `in_use` with the job that holds it; a stop ends the forward
//! (`stopped` before job_ended) and the port closes on the host. The proxy bridge's listener in the same sandbox is
//! never forwarded.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common;
use common::jobs::stop;
use common::tools::{prompt_to, shell_call_with, start, text};
use common::{command_id, events_through, model};

/// A background shell call `id` of `line`.
fn job_call(id: &str, line: &str) -> efr_test_support::scripted::Reply {
    common::jobs::job_call(id, line, &json!({}))
}

/// A port no one listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `curl` of `url` on the host: its status and output.
fn curl(url: &str) -> (bool, String) {
    let out = std::process::Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "5", url])
        .output()
        .expect("curl must be installed");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The next job_port_forwarded of `job` in the subscription.
async fn forwarded(
    client: &mut efr_test_support::client::Client,
    id: efr_protocol::frame::RequestId,
    job: &str,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < deadline, "no job_port_forwarded of {job}");
        let events = events_through(client, id, "job_port_forwarded").await;
        let last = events.last().unwrap().clone();
        if last["job_id"] == job {
            return last;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contained_dev_server_answers_on_the_host_and_a_second_on_its_port_is_in_use() {
    let port = free_port();
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("hello.txt"), "served from the sandbox\n").unwrap();
    // With a host allowed, the sandbox also has the proxy bridge's listener on its loopback: not a port to forward.
    let server_line = format!("echo \"proxy=$HTTPS_PROXY\"; exec python3 -m http.server {port} --bind 127.0.0.1");
    let server = model(vec![
        job_call("call_a", &server_line),
        text("it serves"),
        job_call("call_b", &server_line),
        text("a second one"),
    ])
    .await;
    let config = format!(
        "{}\n[network]\nallow = [\"**.efr-test.invalid\"]\n",
        efr_test_support::daemon::config_for(&server.base_url())
    );
    let efrd = efr_test_support::daemon::TestDaemon::start(
        common::efrd_binary(),
        home.path(),
        Some(&config),
        &[("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")],
    )
    .unwrap();
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "auto", "serve the project").await;
    let first = forwarded(&mut client, id, "j1").await;
    assert_eq!(first["outcome"], "forwarded", "{first}");
    assert_eq!(first["listen"], "127.0.0.1");
    assert_eq!(first["port"], port);
    assert!(
        first.get("turn_id").is_none(),
        "a forward belongs to the conversation: {first}"
    );
    let url = format!("http://127.0.0.1:{port}/hello.txt");
    let (ok, body) = curl(&url);
    assert!(
        ok && body == "served from the sandbox\n",
        "curl on the host: {body}\nefrd:\n{}",
        efrd.log()
    );

    let listed = client
        .ok("jobs.list", json!({"conversation_id": conversation}))
        .await
        .unwrap();
    let j1 = listed["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == "j1")
        .unwrap()
        .clone();
    assert_eq!(j1["forwards"], json!([{"listen": "127.0.0.1", "port": port}]), "{j1}");
    assert_eq!(j1["launch"]["kind"], "contained", "{j1}");
    let output = std::fs::read_to_string(j1["output"].as_str().unwrap()).unwrap();
    assert!(
        output.contains("proxy=http://127.0.0.1:"),
        "the job has the proxy bridge: {output}"
    );

    prompt_to(
        &mut client,
        Some(&conversation),
        project.path(),
        "auto",
        "serve it again",
    )
    .await;
    let second = forwarded(&mut client, id, "j2").await;
    assert_eq!(second["outcome"], "in_use", "{second}");
    assert_eq!(second["by_job"], "j1", "{second}");

    let stopped = stop(&mut client, &conversation, "j1").await;
    assert_eq!(stopped["job"]["state"], "stopped", "{stopped}");
    assert!(
        stopped["job"].get("forwards").is_none(),
        "no forward is left: {stopped}"
    );
    let mut kinds = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !kinds
        .iter()
        .any(|(k, j): &(String, String)| k == "job_ended" && j == "j1")
    {
        assert!(Instant::now() < deadline, "no job_ended of j1: {kinds:?}");
        let events = events_through(&mut client, id, "job_ended").await;
        kinds.extend(events.iter().map(|e| {
            let kind = match e["kind"].as_str().unwrap() {
                "job_port_forwarded" => format!("job_port_forwarded {}", e["outcome"].as_str().unwrap()),
                other => other.to_owned(),
            };
            (kind, e["job_id"].as_str().unwrap_or_default().to_owned())
        }));
    }
    let stop_at = kinds
        .iter()
        .position(|(k, j)| k == "job_port_forwarded stopped" && j == "j1");
    let end_at = kinds.iter().position(|(k, j)| k == "job_ended" && j == "j1");
    assert!(
        stop_at.is_some() && stop_at < end_at,
        "stopped comes before job_ended: {kinds:?}"
    );
    let (ok, body) = curl(&url);
    assert!(!ok, "the host port closed with the forward: {body}");
    let log = common::whole_log(&mut client, &conversation).await;
    let ports: Vec<&Value> = log
        .iter()
        .filter(|e| e["kind"] == "job_port_forwarded")
        .map(|e| &e["port"])
        .collect();
    assert!(
        ports.iter().all(|p| **p == port),
        "only the server's port is ever decided, never the proxy bridge's: {ports:?}"
    );
    // The test's efrd is killed, not stopped, when it ends: its jobs would outlive it.
    let stopped = stop(&mut client, &conversation, "j2").await;
    assert_eq!(stopped["job"]["state"], "stopped", "{stopped}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contained_server_moved_into_a_job_is_forwarded_too() {
    let port = free_port();
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("hello.txt"), "moved and served\n").unwrap();
    let line = format!("exec python3 -m http.server {port} --bind 127.0.0.1");
    let server = model(vec![
        shell_call_with("call_serve", &json!({"command": line, "timeout": 600})),
        text("it moved"),
    ])
    .await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "auto", "serve it").await;
    events_through(&mut client, id, "tool_call_started").await;
    // Asked again while the shell has not started the command yet.
    let deadline = Instant::now() + Duration::from_secs(10);
    let moved = loop {
        let params = json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_serve"});
        match client.call("call.background", params).await.unwrap() {
            Ok(result) => break result,
            Err(error) => {
                assert!(Instant::now() < deadline, "the call never ran: {error:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert_eq!(moved, json!({"kind": "moved", "job_id": "j1"}));
    let forwarded = forwarded(&mut client, id, "j1").await;
    assert_eq!(
        (&forwarded["outcome"], &forwarded["port"]),
        (&json!("forwarded"), &json!(port)),
        "{forwarded}"
    );
    let (ok, body) = curl(&format!("http://127.0.0.1:{port}/hello.txt"));
    assert!(ok && body == "moved and served\n", "curl on the host: {body}");
    let stopped = stop(&mut client, &conversation, "j1").await;
    assert_eq!(stopped["job"]["state"], "stopped", "{stopped}");
}
