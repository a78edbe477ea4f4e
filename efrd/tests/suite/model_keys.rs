//! The key store: the key_hint rule, login (stored 0600 in a 0700 folder, checked with a real request to the scripted
//! server), refused and failed checks that store nothing, invalid keys, logout, environment keys, damaged files, and
//! that no log line and no Debug print ever holds a key.

// Test helpers outside #[test] functions may panic too (team rule: tests may unwrap).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use efr_model::{
    Auth, EnvKeys, KeyCheck, KeyError, KeySource, KeyStore, ModelError, ModelRequest, Provider, ProviderConfig,
    ProviderKind, RetryConfig, key_hint,
};
use efr_test_support::scripted::{HttpError, ModelsStep, Reply, Script, ScriptedModel, Step};
use futures::StreamExt;
use secrecy::SecretString;

const KEY: &str = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-a1b2";
const OTHER_KEY: &str = "sk-proj-Qq1Ww2Ee3Rr4Tt5Yy6Uu7Ii8Oo9Pp0-z9y8";

fn check(server: &ScriptedModel) -> KeyCheck {
    KeyCheck {
        http: reqwest::Client::new(),
        base_url: server.base_url(),
    }
}

fn key_file(state: &std::path::Path, provider: &str) -> std::path::PathBuf {
    state.join("keys").join(format!("{provider}.json"))
}

#[test]
fn key_hint_keeps_the_known_prefix_and_the_last_four() {
    assert_eq!(key_hint("sk-ant-api03-abcdefghijklmnop-a1b2"), "sk-ant-...a1b2");
    assert_eq!(key_hint("sk-proj-abcdefghijklmnopqrstuvwxyz-wxyz"), "sk-proj-...wxyz");
    assert_eq!(key_hint("sk-abcdefghijklmnop1234"), "sk-...1234");
    // No known prefix: the last four only.
    assert_eq!(key_hint("gsk_abcdefghijklmnop9876"), "...9876");
    // Too short to show four characters of it.
    assert_eq!(key_hint("sk-ant-abc1234"), "sk-ant-...");
    assert_eq!(key_hint("short"), "...");
    // Characters, not bytes.
    assert_eq!(key_hint("sk-ééééééééé€€€€"), "sk-...€€€€");
}

#[tokio::test]
async fn login_checks_the_key_and_stores_it_0600() {
    let server = ScriptedModel::start(Script {
        models: vec!["claude-sonnet-4-5".into()],
        ..Script::default()
    })
    .await
    .expect("server");
    let state = tempfile::tempdir().expect("tempdir");
    let store = KeyStore::open(state.path(), EnvKeys::default());
    // A pasted key often ends with a newline.
    let login = store
        .login(
            ProviderKind::AnthropicApi,
            SecretString::from(format!("{KEY}\n")),
            Some(&check(&server)),
        )
        .await
        .expect("login");
    assert_eq!(login.key_hint, "sk-ant-...a1b2");
    assert!(login.checked);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(requests[0].header("x-api-key"), Some("sk-ant-...a1b2"));
    assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));

    let file = key_file(state.path(), "anthropic-api");
    assert_eq!(
        std::fs::metadata(&file).expect("file").permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(state.path().join("keys"))
            .expect("dir")
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    assert!(std::fs::read_to_string(&file).expect("read").contains(KEY));
    // No temporary file is left beside it.
    assert_eq!(std::fs::read_dir(state.path().join("keys")).expect("dir").count(), 1);

    let status = store.status(ProviderKind::AnthropicApi);
    assert_eq!(status.source, Some(KeySource::Stored));
    assert_eq!(status.key_hint.as_deref(), Some("sk-ant-...a1b2"));
    assert!(status.checked_at.is_some());
    assert_eq!(status.refused_at, None);

    // A new store reads it back.
    let again = KeyStore::open(state.path(), EnvKeys::default());
    assert_eq!(
        again.status(ProviderKind::AnthropicApi).key_hint.as_deref(),
        Some("sk-ant-...a1b2")
    );
    assert!(again.key(ProviderKind::AnthropicApi).is_some());
}

#[tokio::test]
async fn login_without_check_sends_nothing() {
    let server = ScriptedModel::start(Script::default()).await.expect("server");
    let state = tempfile::tempdir().expect("tempdir");
    let store = KeyStore::open(state.path(), EnvKeys::default());
    let login = store
        .login(ProviderKind::OpenAiApi, SecretString::from(OTHER_KEY), None)
        .await
        .expect("login");
    assert!(!login.checked);
    assert_eq!(login.key_hint, "sk-proj-...z9y8");
    assert!(server.requests().is_empty());
    assert_eq!(store.status(ProviderKind::OpenAiApi).checked_at, None);
}

#[tokio::test]
async fn a_refused_or_failed_check_stores_nothing_and_keeps_the_old_key() {
    let server = ScriptedModel::start(Script {
        model_steps: vec![
            ModelsStep::HttpError(HttpError {
                status: 401,
                ..HttpError::default()
            }),
            ModelsStep::HttpError(HttpError {
                status: 500,
                ..HttpError::default()
            }),
        ],
        ..Script::default()
    })
    .await
    .expect("server");
    let state = tempfile::tempdir().expect("tempdir");
    let store = KeyStore::open(state.path(), EnvKeys::default());
    store
        .login(ProviderKind::OpenAiApi, SecretString::from(OTHER_KEY), None)
        .await
        .expect("first login");
    let file = key_file(state.path(), "openai-api");
    let before = std::fs::read(&file).expect("file");

    let refused = store
        .login(
            ProviderKind::OpenAiApi,
            SecretString::from("sk-proj-refusedrefusedrefused-0000"),
            Some(&check(&server)),
        )
        .await;
    assert!(
        matches!(&refused, Err(KeyError::Refused { provider: ProviderKind::OpenAiApi, message }) if message == "invalid_api_key"),
        "{refused:?}"
    );
    let failed = store
        .login(
            ProviderKind::OpenAiApi,
            SecretString::from("sk-proj-failedfailedfailed-1111"),
            Some(&check(&server)),
        )
        .await;
    assert!(
        matches!(
            &failed,
            Err(KeyError::Check(ModelError::Server { status: Some(500), .. }))
        ),
        "{failed:?}"
    );

    assert_eq!(std::fs::read(&file).expect("file"), before);
    assert_eq!(
        store.status(ProviderKind::OpenAiApi).key_hint.as_deref(),
        Some("sk-proj-...z9y8")
    );
    // The old key was not refused: only the new one was.
    assert_eq!(store.status(ProviderKind::OpenAiApi).refused_at, None);

    // No server at all.
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let gone = KeyCheck {
        http: reqwest::Client::new(),
        base_url: "http://127.0.0.1:9".into(),
    };
    let unreachable = store
        .login(ProviderKind::OpenAiApi, SecretString::from(KEY), Some(&gone))
        .await;
    assert!(
        matches!(unreachable, Err(KeyError::Check(ModelError::Transport { .. }))),
        "{unreachable:?}"
    );
    assert_eq!(std::fs::read(&file).expect("file"), before);
}

#[tokio::test]
async fn invalid_keys_and_providers_are_refused() {
    let state = tempfile::tempdir().expect("tempdir");
    let store = KeyStore::open(state.path(), EnvKeys::default());
    for bad in ["", "   \n", "sk-ab cd-efgh", "sk-\u{e9}t\u{e9}-key", "sk-\u{7}bell"] {
        let result = store
            .login(ProviderKind::AnthropicApi, SecretString::from(bad), None)
            .await;
        assert!(matches!(result, Err(KeyError::Invalid(_))), "{bad:?}: {result:?}");
    }
    let compat = store
        .login(ProviderKind::OpenAiCompat, SecretString::from(KEY), None)
        .await;
    assert!(matches!(compat, Err(KeyError::Unsupported(ProviderKind::OpenAiCompat))));
    assert!(matches!(
        store.logout(ProviderKind::OpenAiCompat),
        Err(KeyError::Unsupported(_))
    ));
    assert!(!state.path().join("keys").exists(), "nothing was written");
}

#[tokio::test]
async fn logout_removes_the_stored_key_and_environment_keys_count_as_a_login() {
    let state = tempfile::tempdir().expect("tempdir");
    let env_key = "sk-ant-api03-fromtheenvironment-e5f6";
    let store = KeyStore::open(state.path(), EnvKeys::new(None, Some(env_key.into())));
    assert!(
        !store.logout(ProviderKind::AnthropicApi).expect("logout"),
        "nothing stored"
    );

    let status = store.status(ProviderKind::AnthropicApi);
    assert_eq!(status.source, Some(KeySource::Environment));
    assert_eq!(status.key_hint.as_deref(), Some("sk-ant-...e5f6"));
    assert_eq!(store.status(ProviderKind::OpenAiApi).source, None);

    store
        .login(ProviderKind::AnthropicApi, SecretString::from(KEY), None)
        .await
        .expect("login");
    // A stored key wins over the environment's.
    assert_eq!(
        store.status(ProviderKind::AnthropicApi).key_hint.as_deref(),
        Some("sk-ant-...a1b2")
    );
    store.mark_refused(ProviderKind::AnthropicApi, chrono::Utc::now());

    assert!(store.logout(ProviderKind::AnthropicApi).expect("logout"));
    assert!(!key_file(state.path(), "anthropic-api").exists());
    let status = store.status(ProviderKind::AnthropicApi);
    assert_eq!(status.source, Some(KeySource::Environment));
    assert_eq!(status.refused_at, None);
    assert!(!store.logout(ProviderKind::AnthropicApi).expect("logout"));
}

#[tokio::test]
async fn a_damaged_key_file_is_skipped_and_a_login_replaces_it() {
    let state = tempfile::tempdir().expect("tempdir");
    let dir = state.path().join("keys");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("openai-api.json"), "{\"provider\": \"openai-api\", \"ke").expect("write");
    let store = KeyStore::open(state.path(), EnvKeys::default());
    assert_eq!(store.status(ProviderKind::OpenAiApi).source, None);
    assert!(dir.join("openai-api.json").exists(), "a damaged file is never removed");
    store
        .login(ProviderKind::OpenAiApi, SecretString::from(OTHER_KEY), None)
        .await
        .expect("login");
    let again = KeyStore::open(state.path(), EnvKeys::default());
    assert_eq!(
        again.status(ProviderKind::OpenAiApi).key_hint.as_deref(),
        Some("sk-proj-...z9y8")
    );
}

/// A writer that keeps every log line in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn no_log_line_and_no_debug_print_holds_a_key() {
    // Alone in its process: the subscriber is this thread's default, and a callsite that another test's thread
    // registered first keeps the interest it got then, so its line would not reach the capture.
    common::alone(module_path!(), "no_log_line_and_no_debug_print_holds_a_key", || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(no_key_in_logs_or_debug_prints());
    });
}

async fn no_key_in_logs_or_debug_prints() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let server = ScriptedModel::start(Script {
        steps: vec![
            Step::HttpError(HttpError {
                status: 401,
                ..HttpError::default()
            }),
            Step::HttpError(HttpError {
                status: 500,
                ..HttpError::default()
            }),
            Reply::text("hi").into(),
        ],
        models: vec!["gpt-5".into()],
        ..Script::default()
    })
    .await
    .expect("server");
    let state = tempfile::tempdir().expect("tempdir");
    let env_key = "sk-proj-environmentkeyenvironmentkey-7777";
    let store = Arc::new(KeyStore::open(state.path(), EnvKeys::new(Some(env_key.into()), None)));
    let login = store
        .login(
            ProviderKind::OpenAiApi,
            SecretString::from(OTHER_KEY),
            Some(&check(&server)),
        )
        .await
        .expect("login");

    let mut config = ProviderConfig::new(ProviderKind::OpenAiApi, server.base_url());
    config.retry = RetryConfig {
        base_delay: Duration::from_millis(1),
        ..RetryConfig::default()
    };
    let provider = Provider::new(config, Auth::Store(Arc::clone(&store))).expect("provider");
    let request = ModelRequest::new("gpt-5");
    // A 401 (refused), then a 500 retried into a reply.
    let refused: Vec<_> = provider.stream(&request).collect().await;
    assert!(matches!(&refused[..], [Err(ModelError::KeyRefused { .. })]));
    let answered: Vec<_> = provider.stream(&request).collect().await;
    assert!(answered.last().is_some_and(Result::is_ok), "{answered:?}");
    let fixed = Provider::new(
        ProviderConfig::new(ProviderKind::OpenAiCompat, server.base_url()),
        Auth::Key(SecretString::from(KEY)),
    )
    .expect("provider");
    assert!(store.logout(ProviderKind::OpenAiApi).expect("logout"));

    let debug = format!(
        "{store:?} {login:?} {:?} {:?} {provider:?} {fixed:?} {:?}",
        store.status(ProviderKind::OpenAiApi),
        store.key(ProviderKind::OpenAiApi),
        Auth::Key(SecretString::from(KEY)),
    );
    drop(_guard);
    let logs = String::from_utf8(captured.0.lock().expect("lock").clone()).expect("utf-8");
    assert!(logs.contains("API key stored"), "the capture works: {logs}");
    assert!(logs.contains("refused the API key"), "{logs}");
    assert!(logs.contains("retrying"), "{logs}");
    for key in [KEY, OTHER_KEY, env_key] {
        // Any long piece of a key would do harm; the hint's last four alone is allowed.
        let body = &key[8..key.len() - 4];
        assert!(!logs.contains(body), "a key reached the log: {logs}");
        assert!(!debug.contains(body), "a key reached a Debug print: {debug}");
    }
    // The server recorded the key masked, never whole.
    let recorded = format!("{:?}", server.requests());
    assert!(!recorded.contains(&OTHER_KEY[8..]), "{recorded}");
}

#[test]
fn a_key_file_readable_by_others_is_still_read() {
    let state = tempfile::tempdir().expect("tempdir");
    let dir = state.path().join("keys");
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("anthropic-api.json");
    std::fs::write(
        &file,
        format!("{{\"provider\":\"anthropic-api\",\"key\":\"{KEY}\",\"stored_at\":\"2025-01-01T00:00:00Z\"}}"),
    )
    .expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let store = KeyStore::open(state.path(), EnvKeys::default());
    assert_eq!(
        store.status(ProviderKind::AnthropicApi).key_hint.as_deref(),
        Some("sk-ant-...a1b2")
    );
}
