//! admin.status, admin.config_reload, admin.login_api_key, admin.logout and models.list through the real socket.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use efr_protocol::ErrorCode;
use efr_test_support::daemon::{TestDaemon, config_for};
use efr_test_support::scripted::{HttpError, ModelsStep};
use serde_json::json;

use common::{efrd_binary, model};

const KEY: &str = "sk-ant-api03-secretsecretsecretsecret-a1b2";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reports_roots_config_providers_and_catalog() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let status = client.ok("admin.status", json!(null)).await.unwrap();
    assert_eq!(status["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(status["roots"]["data"]["path"], json!(home.path().join("data")));
    assert_eq!(status["roots"]["runtime"]["source"], "efr_home");
    assert_eq!(status["config"]["path"], json!(home.path().join("config/config.toml")));
    assert_eq!(status["config"]["exists"], true);
    let providers: Vec<&str> = status["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["provider"].as_str().unwrap())
        .collect();
    assert_eq!(providers, ["openai-api", "anthropic-api", "openai-compat"]);
    let openai = &status["providers"][0];
    assert_eq!(openai["active"], true);
    assert_eq!(openai["login"], "api_key", "an environment key counts as a login");
    assert_eq!(openai["key_hint"], "sk-proj-...a1b2");
    assert_eq!(status["catalog"]["provider"], "openai-api");

    // The list is fetched in the background after efrd is ready: wait for it (bounded), then check it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let models = loop {
        let models = client.ok("models.list", json!({})).await.unwrap();
        if models["catalog"]["origin"] == "backend" || std::time::Instant::now() > deadline {
            break models;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let ids: Vec<&str> = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"gpt-5"), "{models}");
    assert_eq!(
        models["catalog"]["origin"], "backend",
        "the list came from the provider: {models}"
    );
    assert!(models["catalog"]["fetched_at"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_config_reload_keeps_the_previous_config_and_says_where() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let server = model(vec![]).await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let path = home.path().join("config/config.toml");
    let good = std::fs::read_to_string(&path).unwrap();

    // The harness's config ends with its `[permissions]` table (full mode allowed), so keys of it are appended.
    std::fs::write(&path, format!("{good}default_mode = \"yolo\"\n")).unwrap();
    let reload = client.ok("admin.config_reload", json!(null)).await.unwrap();
    assert_eq!(reload["applied"], false);
    let error = &reload["error"];
    assert_eq!(error["key"], "permissions.default_mode", "{reload}");
    assert!(error["line"].as_u64().unwrap() > 1);
    assert!(error["column"].is_u64());
    let status = client.ok("admin.status", json!(null)).await.unwrap();
    assert_eq!(status["config"]["reload_error"], *error);
    // The previous config is still in force: prompts run with its default mode.
    let sent = common::prompt(&mut client, project.path(), None, "x").await;
    assert_eq!(sent["settings"]["mode"], "cautious");

    std::fs::write(
        &path,
        format!("{good}default_mode = \"manual\"\n[daemon]\nsubscriber_queue = 64\n"),
    )
    .unwrap();
    let reload = client.ok("admin.config_reload", json!(null)).await.unwrap();
    assert_eq!(reload["applied"], true, "{reload}");
    assert!(reload.get("error").is_none());
    assert_eq!(reload["restart_needed"], json!(["daemon.subscriber_queue"]));
    let status = client.ok("admin.status", json!(null)).await.unwrap();
    assert!(status["config"].get("reload_error").is_none());
    let sent = common::prompt(&mut client, project.path(), None, "y").await;
    assert_eq!(sent["settings"]["mode"], "manual");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efrd_refuses_to_start_on_a_broken_config_and_says_where() {
    let home = tempfile::tempdir().unwrap();
    let error = TestDaemon::start(efrd_binary(), home.path(), Some("[model\nprovider = 1\n"), &[]).unwrap_err();
    let text = format!("{error:#}");
    assert!(text.contains("exit status: 4"), "{text}");
    assert!(text.contains("line 1"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_checks_and_stores_the_key_0600_and_never_logs_it() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    // No environment key here: the login is the only key.
    let efrd = TestDaemon::start(efrd_binary(), home.path(), Some(&config_for(&server.base_url())), &[]).unwrap();
    let mut client = efrd.client().await.unwrap();

    // The provider refuses the first check: nothing is stored.
    server.push_models(ModelsStep::HttpError(HttpError {
        status: 401,
        ..HttpError::default()
    }));
    let error = client
        .call("admin.login_api_key", json!({"provider": "anthropic-api", "key": KEY}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Unauthorized);
    let status = client.ok("admin.status", json!(null)).await.unwrap();
    assert!(status["providers"][1].get("key_hint").is_none(), "{status}");

    let login = client
        .ok("admin.login_api_key", json!({"provider": "anthropic-api", "key": KEY}))
        .await
        .unwrap();
    assert_eq!(
        login,
        json!({"provider": "anthropic-api", "key_hint": "sk-ant-...a1b2", "checked": true, "active": false})
    );
    let check = server
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.path == "/v1/models")
        .unwrap();
    assert_eq!(
        check.header("x-api-key"),
        Some("sk-ant-...a1b2"),
        "the check used the key (masked by the server)"
    );

    let files: Vec<_> = walk(home.path())
        .into_iter()
        .filter(|p| std::fs::read(p).is_ok_and(|bytes| bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes())))
        .collect();
    assert_eq!(files.len(), 1, "the key is in exactly one file: {files:?}");
    let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", files[0].display());
    assert!(files[0].starts_with(home.path().join("state")));
    assert!(!efrd.log().contains("secretsecret"), "the key reached the log");

    let status = client.ok("admin.status", json!(null)).await.unwrap();
    let anthropic = &status["providers"][1];
    assert_eq!(anthropic["key_hint"], "sk-ant-...a1b2");
    assert!(anthropic["key_checked_at"].is_string());

    let out = client
        .ok("admin.logout", json!({"provider": "anthropic-api"}))
        .await
        .unwrap();
    assert_eq!(out["logged_out"], true);
    assert!(!files[0].exists());
    let out = client
        .ok("admin.logout", json!({"provider": "anthropic-api"}))
        .await
        .unwrap();
    assert_eq!(out["logged_out"], false, "nothing was stored the second time");
    assert!(efrd.log().contains("login_completed") && efrd.log().contains("logout_completed"));

    let error = client
        .call("admin.logout", json!({"provider": "openai-compat"}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.is_file() {
            out.push(path);
        }
    }
    out
}
