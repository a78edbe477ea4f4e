//! The network of auto's contained calls through the real efrd, `efr-launcher` (its bridge), bubblewrap and
//! `efr-proxy` (docs/network.md): host grants from `[network] allow`, refusals counted in the call's summary and
//! told to the model, credential hosts denied, the proxy's self-test, a killed proxy (the call that used it fails,
//! the next gets a restarted one, admin.status shows it), and a missing proxy (no network, and the status says
//! why). These tests need no internet: every host is refused, or answered by the proxy before it resolves.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::path::Path;
use std::time::Duration;

use efr_test_support::daemon::{TestDaemon, config_for};
use efr_test_support::scripted::ScriptedModel;
use serde_json::json;

use common::auto::{bounded, launcher, proxy, tempdir};
use common::tools::{event_of, shell_call, start, text, tool_output};
use common::{events_until, model};

/// The `[network]` of these tests: every host under `efr-test.invalid` allowed, one of them denied.
const NETWORK: &str = "\n[network]\nallow = [\"**.efr-test.invalid\"]\ndeny = [\"denied.efr-test.invalid\"]\n";

/// efrd in `home` with the launcher, the `[network]` above and `envs`.
fn daemon(home: &Path, server: &ScriptedModel, envs: &[(&str, &str)]) -> TestDaemon {
    launcher();
    let config = format!("{}{NETWORK}", config_for(&server.base_url()));
    let mut all = vec![("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")];
    all.extend_from_slice(envs);
    TestDaemon::start(common::efrd_binary(), home, Some(&config), &all).expect("efrd starts")
}

/// A CONNECT through the call's proxy variables for `host`, whatever its answer.
fn connect(host: &str) -> String {
    format!("curl -sS --max-time 10 -o /dev/null https://{host}/ 2>&1 | head -c 300; echo")
}

/// Waits (bounded) until `path` exists.
async fn wait_for(path: &Path) {
    for _ in 0..600 {
        if path.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} never appeared", path.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_calls_go_through_the_proxy_and_a_killed_proxy_fails_its_call_and_restarts() {
    proxy();
    let home = tempdir();
    let project = tempdir();
    // A credential for a host that `allow`'s wildcard covers: it stays denied.
    std::fs::write(
        home.path().join(".netrc"),
        "machine creds.efr-test.invalid login ada password NETRC-SECRET-PW\n",
    )
    .unwrap();
    let refused = [
        connect("denied.efr-test.invalid"),
        connect("creds.efr-test.invalid"),
        // In a variable: the line's parser does not see the host, so the call asks for no exit and the proxy
        // refuses it (a refusal of a call that went well is no exit either).
        format!("h=elsewhere.example; {}", connect("$h")),
        connect("denied.efr-test.invalid"),
        "echo proxy=${HTTPS_PROXY:+set}".to_owned(),
    ]
    .join("; ");
    let server = model(vec![
        shell_call("call_net", &refused),
        shell_call("call_hold", "touch \"$SCRATCH/holding\"; sleep 8; echo held"),
        shell_call("call_after", &connect("denied.efr-test.invalid")),
        text("done"),
    ])
    .await;
    let efrd = daemon(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();

    // The probe's self-test passes with the real proxy.
    let check = client.ok("admin.sandbox_check", json!(null)).await.unwrap();
    let step = check["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "proxy")
        .cloned();
    assert_eq!(
        step.as_ref().map(|s| s["passed"].clone()),
        Some(json!(true)),
        "{check:#}"
    );
    assert_eq!(check["sandbox"]["proxy"], true, "{check:#}");
    assert_eq!(
        check["sandbox_paths"]["proxy"].as_str(),
        Some(proxy().to_str().unwrap()),
        "{check:#}"
    );

    let (_, conversation, id) = start(&mut client, project.path(), "auto", "use the network").await;
    // Kill the proxy while call_hold runs (its plan is open by then: the marker comes from the command itself).
    let holding = home.path().join("state/scratch").join(&conversation).join("holding");
    let mut admin = efrd.client().await.unwrap();
    let killer = tokio::spawn(async move {
        wait_for(&holding).await;
        let status = admin.ok("admin.status", json!(null)).await.unwrap();
        assert_eq!(status["proxy"]["state"], "running", "{status:#}");
        let pid = i32::try_from(status["proxy"]["pid"].as_u64().unwrap()).unwrap();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL).unwrap();
        (admin, pid)
    });
    let events = bounded("the auto turn", events_until(&mut client, id, "turn_completed")).await;
    let (mut admin, killed) = bounded("the kill", killer).await.unwrap();

    // The call's host grants are the allow list; its refusals are counted and told to the model.
    let started = event_of(&events, "tool_call_started", "call_net");
    assert_eq!(
        started["launch"],
        json!({"kind": "contained", "grants": [{"kind": "host", "host": "**.efr-test.invalid"}]}),
        "{started}"
    );
    let done = event_of(&events, "tool_call_completed", "call_net");
    assert_eq!(done["sandbox"]["proxied"], true, "{done}");
    let blocked = done["sandbox"]["blocked"].as_array().unwrap();
    let find = |host: &str| blocked.iter().find(|b| b["host"] == host).cloned();
    assert_eq!(
        find("denied.efr-test.invalid"),
        Some(json!({"host": "denied.efr-test.invalid", "port": 443, "reason": "denied", "count": 2})),
        "{done}"
    );
    assert_eq!(find("creds.efr-test.invalid").unwrap()["reason"], "denied", "{done}");
    assert_eq!(find("elsewhere.example").unwrap()["reason"], "not_allowed", "{done}");
    assert!(done["output"].as_str().unwrap().contains("proxy=set"), "{done}");
    let seen = tool_output(&server, "call_net");
    assert!(
        seen.contains("[network: refused denied.efr-test.invalid:443 denied ×2"),
        "{seen}"
    );

    // The call whose proxy died fails and says why; the next call gets a restarted proxy.
    let done = event_of(&events, "tool_call_completed", "call_hold");
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(done["sandbox"]["proxied"], true, "{done}");
    let seen = tool_output(&server, "call_hold");
    assert!(seen.contains("efr-proxy stopped while this call ran"), "{seen}");
    let done = event_of(&events, "tool_call_completed", "call_after");
    assert_eq!(done["status"], "ok", "{done}");
    assert_eq!(done["sandbox"]["blocked"][0]["reason"], "denied", "{done}");
    assert!(!tool_output(&server, "call_after").contains("efr-proxy stopped"));

    let status = admin.ok("admin.status", json!(null)).await.unwrap();
    let proxy = &status["proxy"];
    assert_eq!(proxy["state"], "running", "{status:#}");
    assert_ne!(
        proxy["pid"].as_u64(),
        Some(u64::try_from(killed).unwrap()),
        "{status:#}"
    );
    assert!(proxy["restarts"].as_u64().unwrap() >= 1, "{status:#}");
    let last = proxy["last_error"].as_str().unwrap();
    assert!(
        last.contains(&format!("pid {killed}")) && last.contains("SIGKILL"),
        "{last}"
    );
    assert!(
        !efrd.log().contains("NETRC-SECRET-PW"),
        "a credential reached efrd's log"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_proxy_program_auto_calls_have_no_network_and_the_status_says_why() {
    let home = tempdir();
    let project = tempdir();
    let server = model(vec![
        shell_call("call_net", "echo proxy=${HTTPS_PROXY:-none}"),
        text("done"),
    ])
    .await;
    let efrd = daemon(home.path(), &server, &[("EFR_PROXY", "/nonexistent/efr-proxy")]);
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "auto", "use the network").await;
    let events = bounded("the auto turn", events_until(&mut client, id, "turn_completed")).await;

    let started = event_of(&events, "tool_call_started", "call_net");
    assert_eq!(
        started["launch"],
        json!({"kind": "contained"}),
        "no host grant: {started}"
    );
    let done = event_of(&events, "tool_call_completed", "call_net");
    assert_eq!(done["status"], "ok", "{done}");
    assert!(done["sandbox"].get("proxied").is_none(), "{done}");
    assert!(done["output"].as_str().unwrap().contains("proxy=none"), "{done}");

    let status = client.ok("admin.status", json!(null)).await.unwrap();
    assert_eq!(status["proxy"]["state"], "not_installed", "{status:#}");
    assert!(
        status["proxy"]["last_error"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/efr-proxy"),
        "{status:#}"
    );
    let check = client.ok("admin.sandbox_check", json!(null)).await.unwrap();
    assert_eq!(check["sandbox"]["available"], true, "{check:#}");
    assert!(check["sandbox"].get("proxy").is_none(), "{check:#}");
    assert!(check["sandbox_paths"].get("proxy").is_none(), "{check:#}");
    let step = check["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "proxy")
        .cloned()
        .unwrap();
    assert_eq!(step["passed"], false, "{step}");
    assert_eq!(
        step["reason"], "efr-proxy is not installed at /nonexistent/efr-proxy",
        "{step}"
    );
}
