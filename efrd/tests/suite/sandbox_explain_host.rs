//! sandbox.explain_host through the real socket of a real efrd: the config's `[network]` lists, a real `.netrc` and
//! git config in the daemon's home, and a config reload that changes the answer (docs/protocol.md, "The sandbox
//! check and explain"; docs/network.md, "Which rule decides a host").

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use efr_protocol::ErrorCode;
use efr_test_support::client::Client;
use efr_test_support::daemon::TestDaemon;
use serde_json::{Value, json};

const NETWORK: &str = "[network]\nallow = [\"**.github.com\", \"api.example.com\", \"*.corp.example\", \
                       \"registry.example.com:8443\"]\ndeny = [\"gist.github.com\"]\n";

async fn explain(client: &mut Client, params: Value) -> Value {
    client.ok("sandbox.explain_host", params).await.unwrap()
}

/// `(verdict, rule, source, credential_file)` of an answer, `null` where absent.
fn decided(answer: &Value) -> (Value, Value, Value, Value) {
    let member = |name: &str| answer.get(name).cloned().unwrap_or(Value::Null);
    (
        member("verdict"),
        member("rule"),
        member("source"),
        member("credential_file"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_host_is_decided_by_its_rule_and_a_reload_changes_the_answer() {
    let home = tempfile::tempdir().unwrap();
    let netrc = home.path().join(".netrc");
    std::fs::write(
        &netrc,
        "machine github.com login ada password NETRC-SECRET-PW\nmachine api.example.com login ada password X\n",
    )
    .unwrap();
    // A `credential.<url>` section of git's real config.
    std::fs::write(
        home.path().join(".gitconfig"),
        "[credential \"https://build.corp.example\"]\n\tusername = ada\n",
    )
    .unwrap();
    let efrd = TestDaemon::start(common::efrd_binary(), home.path(), Some(NETWORK), &[]).expect("efrd starts");
    let mut client = efrd.client().await.unwrap();
    let netrc_path = json!(netrc.display().to_string());

    // Allowed by a wildcard entry; the host comes back in normal form and the port defaults to 443.
    let answer = explain(&mut client, json!({"host": "API.GitHub.com."})).await;
    assert_eq!(
        decided(&answer),
        (
            json!("allowed"),
            json!("**.github.com"),
            json!("config_allow"),
            Value::Null
        ),
        "{answer:#}"
    );
    assert_eq!(
        (&answer["host"], &answer["port"]),
        (&json!("api.github.com"), &json!(443))
    );
    assert_eq!(answer["reason"], "allowed by \"**.github.com\"");

    // Denied by the config's deny list, though `**.github.com` allows it: deny wins.
    let answer = explain(&mut client, json!({"host": "gist.github.com"})).await;
    assert_eq!(
        decided(&answer),
        (
            json!("denied"),
            json!("gist.github.com"),
            json!("config_deny"),
            Value::Null
        ),
        "{answer:#}"
    );

    // A credential host that only a wildcard allows stays denied, and the answer names the file, never its secret.
    let answer = explain(&mut client, json!({"host": "github.com", "port": 443})).await;
    assert_eq!(
        decided(&answer),
        (
            json!("denied"),
            json!("github.com"),
            json!("credentials"),
            netrc_path.clone()
        ),
        "{answer:#}"
    );
    assert!(!answer.to_string().contains("NETRC-SECRET-PW"), "{answer}");
    // One that an allow entry names exactly is allowed, and the answer says which file it overrides.
    let answer = explain(&mut client, json!({"host": "api.example.com"})).await;
    assert_eq!(
        decided(&answer),
        (
            json!("allowed"),
            json!("api.example.com"),
            json!("config_allow"),
            netrc_path.clone()
        ),
        "{answer:#}"
    );
    // git's credential config counts too.
    let answer = explain(&mut client, json!({"host": "build.corp.example"})).await;
    assert_eq!(
        decided(&answer),
        (
            json!("denied"),
            json!("build.corp.example"),
            json!("credentials"),
            json!("git credential helper")
        ),
        "{answer:#}"
    );

    // Not on any list; and the port is part of every entry.
    let answer = explain(&mut client, json!({"host": "example.org"})).await;
    assert_eq!(
        decided(&answer),
        (json!("not_allowed"), Value::Null, json!("none"), Value::Null),
        "{answer:#}"
    );
    assert_eq!(answer["reason"], "not allowed: no allow entry names it");
    let answer = explain(&mut client, json!({"host": "registry.example.com", "port": 8443})).await;
    assert_eq!(answer["verdict"], "allowed", "{answer:#}");
    assert_eq!(answer["rule"], "registry.example.com:8443");
    let answer = explain(&mut client, json!({"host": "registry.example.com"})).await;
    assert_eq!(answer["verdict"], "not_allowed", "{answer:#}");

    // Addresses in any form, and a name with no normal form, are refused before the lists.
    for address in ["127.1", "0x7f000001", "[::1]", "[::ffff:169.254.169.254]", "1.1.1.1"] {
        let answer = explain(&mut client, json!({"host": address})).await;
        assert_eq!(
            decided(&answer),
            (json!("ip_literal"), Value::Null, json!("none"), Value::Null),
            "{address}: {answer:#}"
        );
    }
    let answer = explain(&mut client, json!({"host": "exa mple.com"})).await;
    assert_eq!(
        decided(&answer),
        (json!("bad_request"), Value::Null, json!("none"), Value::Null),
        "{answer:#}"
    );
    assert_eq!(answer["host"], "exa mple.com");

    // Params that do not parse are `invalid`.
    for params in [
        json!({}),
        json!({"host": "github.com", "port": 0}),
        json!({"host": "a", "port": 70000}),
    ] {
        let error = client
            .call("sandbox.explain_host", params.clone())
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::Invalid, "{params}: {error:?}");
    }

    // A reload changes the next answer: deny everything, and name github.com exactly.
    std::fs::write(
        home.path().join("config/config.toml"),
        "[network]\nallow = [\"github.com\", \"example.org\"]\ndeny = [\"*\"]\n",
    )
    .unwrap();
    let reload = client.ok("admin.config_reload", json!(null)).await.unwrap();
    assert_eq!(reload["applied"], true, "{reload}");
    let answer = explain(&mut client, json!({"host": "example.org"})).await;
    assert_eq!(
        decided(&answer),
        (json!("denied"), json!("*"), json!("config_deny"), Value::Null),
        "{answer:#}"
    );
    std::fs::write(
        home.path().join("config/config.toml"),
        "[network]\nallow = [\"github.com\", \"example.org\"]\n",
    )
    .unwrap();
    let reload = client.ok("admin.config_reload", json!(null)).await.unwrap();
    assert_eq!(reload["applied"], true, "{reload}");
    let answer = explain(&mut client, json!({"host": "example.org"})).await;
    assert_eq!(answer["verdict"], "allowed", "{answer:#}");
    let answer = explain(&mut client, json!({"host": "github.com"})).await;
    assert_eq!(
        decided(&answer),
        (json!("allowed"), json!("github.com"), json!("config_allow"), netrc_path),
        "{answer:#}"
    );
    let answer = explain(&mut client, json!({"host": "api.github.com"})).await;
    assert_eq!(answer["verdict"], "not_allowed", "{answer:#}");
}
