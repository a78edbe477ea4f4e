//! admin.sandbox_check, the sandbox in admin.status and sandbox.explain through the real socket of a real efrd, with
//! the real `efr-launcher` and bubblewrap (docs/protocol.md, "The sandbox check and explain";
//! with bubblewrap missing, the check says why).
//!
//! Not here: a phone calling admin.sandbox_check. The harness has no tailnet listener yet; the method table lines
//! that keep a remote peer away (scope admin, local only) are asserted in `server::methods::sandbox`'s unit tests.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use efr_protocol::ErrorCode;
use efr_test_support::client::Client;
use efr_test_support::daemon::{TestDaemon, config_for};
use serde_json::{Value, json};

use common::auto::{launcher, proxy};
use common::{efrd_binary, model, text_reply};

/// efrd in `home` with the real launcher, the given config (no model config) and extra variables.
fn daemon_with(home: &Path, config: Option<&str>, envs: &[(&str, &str)]) -> TestDaemon {
    let launcher = launcher().to_str().unwrap();
    let mut all = vec![("EFR_LAUNCHER", launcher)];
    all.extend_from_slice(envs);
    TestDaemon::start(efrd_binary(), home, config, &all).expect("efrd starts")
}

/// efrd in `home` with the real launcher and the given extra variables; no config file.
fn daemon(home: &Path, envs: &[(&str, &str)]) -> TestDaemon {
    daemon_with(home, None, envs)
}

/// admin.status until its `sandbox` is there (a probe runs in the background after the first call).
async fn status_with_sandbox(client: &mut Client) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let status = client.ok("admin.status", json!(null)).await.unwrap();
        if status.get("sandbox").is_some() {
            return status;
        }
        assert!(
            status.get("sandbox_paths").is_none(),
            "sandbox_paths without sandbox: {status:#}"
        );
        assert!(Instant::now() < deadline, "admin.status never reported the sandbox");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|item| item.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_check_passes_here_with_every_probe_and_admin_status_shows_it() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let server = model(vec![text_reply("done", 8, 0)]).await;
    let efrd = TestDaemon::start(
        efrd_binary(),
        home.path(),
        Some(&config_for(&server.base_url())),
        &[
            ("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2"),
            ("EFR_LAUNCHER", launcher().to_str().unwrap()),
            ("EFR_PROXY", proxy().to_str().unwrap()),
        ],
    )
    .expect("efrd starts");
    let mut client = efrd.client().await.unwrap();
    // A conversation whose project shows among the writable roots.
    let sent = common::prompt(&mut client, project.path(), None, "hello").await;
    assert!(sent["conversation_id"].is_string(), "{sent:#}");

    let check = client.ok("admin.sandbox_check", json!({})).await.unwrap();
    let sandbox = &check["sandbox"];
    assert_eq!(sandbox["available"], true, "{check:#}");
    assert!(sandbox.get("reason").is_none(), "{check:#}");
    let abi = sandbox["landlock_abi"].as_u64().unwrap();
    assert!((1..=6).contains(&abi), "{check:#}");
    assert_eq!(sandbox["netview"], true, "{check:#}");

    let probes = check["probes"].as_array().unwrap();
    let names: Vec<&str> = probes.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "bwrap",
            "launcher",
            "user_namespaces",
            "contained_run",
            "landlock",
            "landlock_scope",
            "seccomp",
            "net_view",
            "proxy"
        ]
    );
    assert_eq!(sandbox["proxy"], true, "{check:#}");
    for probe in probes {
        assert_eq!(probe["passed"], true, "{probe:#}");
        assert!(probe.get("reason").is_none(), "{probe:#}");
    }
    let version = check["bwrap_version"].as_str().unwrap();
    assert!(version.starts_with(|c: char| c.is_ascii_digit()), "{version}");
    let bwrap = check["sandbox_paths"]["bwrap"].as_str().unwrap();
    assert!(bwrap.ends_with("/bwrap"), "{bwrap}");
    assert_eq!(probes[0]["detail"], format!("{version} at {bwrap}"));
    assert_eq!(probes[1]["detail"], launcher().to_str().unwrap());
    assert_eq!(probes[4]["detail"], format!("ABI {abi}"));

    let paths = &check["sandbox_paths"];
    assert_eq!(paths["launcher"], json!(launcher()));
    assert_eq!(paths["proxy"], json!(proxy()));
    assert_eq!(paths["scratch"], json!(home.path().join("state/scratch")));
    let masks = strings(&paths["masks"]);
    for masked in [
        home.path().join(".ssh"),
        home.path().join("state"),
        home.path().join("config"),
    ] {
        assert!(
            masks.contains(&masked.display().to_string()),
            "{masked:?} not in {masks:?}"
        );
    }
    // common::project has no git root above it: the folder itself is the project.
    assert_eq!(strings(&paths["writable"]), [project.path().display().to_string()]);

    // admin.status reports the cached check, without probing again.
    let status = client.ok("admin.status", json!(null)).await.unwrap();
    assert_eq!(status["sandbox"], check["sandbox"]);
    assert_eq!(status["sandbox_paths"], check["sandbox_paths"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_bubblewrap_missing_the_check_says_why_and_admin_status_shows_it() {
    let home = tempfile::tempdir().unwrap();
    let efrd = daemon(home.path(), &[("EFR_BWRAP", "/nonexistent/bwrap")]);
    let mut client = efrd.client().await.unwrap();

    // Nothing probed yet: admin.status starts a probe in the background and reports it once it ended.
    let status = status_with_sandbox(&mut client).await;
    assert_eq!(status["sandbox"]["available"], false, "{status:#}");
    assert_eq!(
        status["sandbox"]["reason"],
        "bubblewrap is not installed at /nonexistent/bwrap"
    );
    assert!(status["sandbox_paths"].get("bwrap").is_none(), "{status:#}");

    let check = client.ok("admin.sandbox_check", json!(null)).await.unwrap();
    assert_eq!(check["sandbox"]["available"], false);
    let reason = check["sandbox"]["reason"].as_str().unwrap();
    assert!(reason.contains("bubblewrap"), "{reason}");
    assert!(check.get("bwrap_version").is_none(), "{check:#}");
    let probes = check["probes"].as_array().unwrap();
    assert_eq!(probes[0]["name"], "bwrap");
    assert_eq!(probes[0]["passed"], false);
    assert_eq!(probes[0]["reason"], reason);
    // The facts that do not need bubblewrap are still checked.
    assert_eq!(
        (&probes[1]["name"], &probes[1]["passed"]),
        (&json!("launcher"), &json!(true))
    );
    // Landlock and seccomp ran all the same, alone: cautious's reads run contained that way.
    for probe in &probes[3..] {
        if probe["name"] == "landlock" || probe["name"] == "seccomp" {
            assert_eq!(probe["passed"], true, "{probe:#}");
            assert!(
                probe["detail"].as_str().unwrap().contains("Landlock and seccomp alone"),
                "{probe:#}"
            );
            continue;
        }
        assert_eq!(probe["passed"], false, "{probe:#}");
        assert_eq!(probe["reason"], format!("not checked: {reason}"));
    }
    assert_eq!(probes.len(), 9);
    let status = client.ok("admin.status", json!({})).await.unwrap();
    assert_eq!(status["sandbox"], check["sandbox"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_says_what_a_contained_call_sees_and_why() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let project = work.path().join("app");
    let cwd = project.join("src/bin");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir(project.join(".git")).unwrap();
    // The config masks one folder inside the project.
    let config = format!("[sandbox]\nextra_masks = [{:?}]\n", project.join("secrets"));
    let efrd = daemon_with(home.path(), Some(&config), &[]);
    let mut client = efrd.client().await.unwrap();

    let explain = async |client: &mut Client, path: &str, cwd: Option<&Path>| {
        let mut params = json!({"path": path});
        if let Some(cwd) = cwd {
            params["cwd"] = json!(cwd);
        }
        client.ok("sandbox.explain", params).await.unwrap()
    };

    // A project file, relative to a cwd below the git root: the project root decides.
    let answer = explain(&mut client, "../main.rs", Some(&cwd)).await;
    assert_eq!(answer["path"], json!(project.join("src/main.rs")));
    assert_eq!(answer["view"], "writable");
    assert_eq!(answer["rule_path"], json!(project));
    assert_eq!(answer["rule"], "a project root of the call is writable");

    let ssh_key = home.path().join(".ssh/id_rsa");
    let answer = explain(&mut client, ssh_key.to_str().unwrap(), Some(&cwd)).await;
    assert_eq!(answer["view"], "masked");
    assert_eq!(answer["rule_path"], json!(home.path().join(".ssh")));
    assert_eq!(answer["rule"], "masked: a credential store of the default list");

    let answer = explain(&mut client, "/etc/passwd", None).await;
    assert_eq!(
        (&answer["view"], &answer["rule_path"], &answer["rule"]),
        (&json!("read_only"), &json!("/"), &json!("/ is read-only"))
    );

    // The sandbox's /tmp is its own: the host's /tmp/x is not seen there.
    let answer = explain(&mut client, "/tmp/x", Some(&cwd)).await;
    assert_eq!(
        (&answer["view"], &answer["rule_path"], &answer["rule"]),
        (
            &json!("hidden"),
            &json!("/tmp"),
            &json!("the sandbox has a private /tmp")
        )
    );

    // A mask of the config inside the project: the deeper rule decides.
    let answer = explain(&mut client, "../../secrets/token", Some(&cwd)).await;
    assert_eq!(
        (&answer["view"], &answer["rule_path"], &answer["rule"]),
        (
            &json!("masked"),
            &json!(project.join("secrets")),
            &json!("masked by the config")
        )
    );
    // The check lists it after the default masks.
    let check = client.ok("admin.sandbox_check", json!({})).await.unwrap();
    let masks = strings(&check["sandbox_paths"]["masks"]);
    assert_eq!(masks.last(), Some(&project.join("secrets").display().to_string()));
    assert_eq!(masks.first(), Some(&home.path().join(".ssh").display().to_string()));

    // efr's own state is masked, and $SCRATCH inside it is writable (the deeper rule decides).
    let keys = home.path().join("state/keys.json");
    let answer = explain(&mut client, keys.to_str().unwrap(), None).await;
    assert_eq!(answer["view"], "masked");
    assert_eq!(answer["rule"], "masked: efr's own state and keys");
    let scratch = home.path().join("state/scratch/0190/out.txt");
    let answer = explain(&mut client, scratch.to_str().unwrap(), None).await;
    assert_eq!(answer["view"], "writable");
    assert_eq!(answer["rule"], "$SCRATCH is writable");

    // Without a cwd there is no project: the same file is not writable. Below /tmp (where tempdir usually puts
    // it) the private /tmp hides it; elsewhere it is read-only.
    let answer = explain(&mut client, project.join("src/main.rs").to_str().unwrap(), None).await;
    let expected = if project.starts_with("/tmp") {
        "hidden"
    } else {
        "read_only"
    };
    assert_eq!(answer["view"], expected, "{answer:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_params_are_invalid_with_a_clear_message() {
    let home = tempfile::tempdir().unwrap();
    let efrd = daemon(home.path(), &[]);
    let mut client = efrd.client().await.unwrap();

    let error = client
        .call("sandbox.explain", json!({"path": "src/main.rs"}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    assert!(
        error.message.contains("\"src/main.rs\" is relative") && error.message.contains("cwd"),
        "{}",
        error.message
    );

    let error = client
        .call("sandbox.explain", json!({"path": "main.rs", "cwd": "src"}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    assert!(
        error.message.contains("`cwd`: src is not an absolute path"),
        "{}",
        error.message
    );

    let error = client
        .call("sandbox.explain", json!({"cwd": "/tmp"}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    assert!(error.message.contains("path"), "{}", error.message);

    // A NUL byte cannot be in a plan's project root.
    let error = client
        .call("sandbox.explain", json!({"path": "/etc/passwd", "cwd": "/srv/a\u{0}b"}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    assert!(error.message.contains("NUL"), "{}", error.message);

    let error = client
        .call("admin.sandbox_check", json!({"deep": true}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    assert!(error.message.contains("`deep`"), "{}", error.message);

    // The daemon still answers after each refusal.
    let answer = client.ok("sandbox.explain", json!({"path": "/etc"})).await.unwrap();
    assert_eq!(answer["view"], "read_only");
}
