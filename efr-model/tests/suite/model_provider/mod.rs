//! Providers end to end: real HTTP over loopback against the scripted model server, in each wire format — requests
//! as sent, events as parsed, retries (429 with Retry-After, 500, 529, a broken connection), a 401 that is not
//! retried and marks the key refused, context overflow, and streams cut after output.

// Test helpers outside #[test] functions may panic too (team rule: tests may unwrap).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use efr_model::{
    Auth, EnvKeys, HistoryItem, KeyStore, ModelError, ModelEvent, ModelRequest, Provider, ProviderConfig, ProviderKind,
    ReasoningCarry, RetryConfig, StopReason, Tool, Usage,
};
use efr_test_support::scripted::{
    HttpError, Reply, ReplyEvent, Script, ScriptToolCall, ScriptUsage, ScriptedModel, Step,
};
use futures::StreamExt;
use serde_json::json;

const OPENAI_KEY: &str = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789a1b2";
const ANTHROPIC_KEY: &str = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789c3d4";

fn fast_retry(max_attempts: u32) -> RetryConfig {
    RetryConfig {
        max_attempts,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        max_retry_after: Duration::from_secs(5),
    }
}

struct Fixture {
    server: ScriptedModel,
    keys: Arc<KeyStore>,
    _state: tempfile::TempDir,
}

async fn fixture(steps: Vec<Step>) -> Fixture {
    let server = ScriptedModel::start(Script {
        steps,
        ..Script::default()
    })
    .await
    .expect("server");
    let state = tempfile::tempdir().expect("tempdir");
    let env = EnvKeys::new(Some(OPENAI_KEY.into()), Some(ANTHROPIC_KEY.into()));
    let keys = Arc::new(KeyStore::open(state.path(), env));
    Fixture {
        server,
        keys,
        _state: state,
    }
}

impl Fixture {
    fn provider(&self, kind: ProviderKind, retry: RetryConfig) -> Provider {
        let mut config = ProviderConfig::new(kind, self.server.base_url());
        config.retry = retry;
        config.idle_timeout = Duration::from_secs(10);
        let auth = if kind == ProviderKind::OpenAiCompat {
            Auth::None
        } else {
            Auth::Store(Arc::clone(&self.keys))
        };
        Provider::new(config, auth).expect("provider")
    }
}

async fn collect(provider: &Provider, request: &ModelRequest) -> Vec<Result<ModelEvent, ModelError>> {
    provider.stream(request).collect().await
}

fn request() -> ModelRequest {
    let mut request = ModelRequest::new("model-x");
    request.instructions = "Be brief.".into();
    request.history.push(HistoryItem::UserText { text: "Hi".into() });
    request
}

fn reply(events: Vec<ReplyEvent>) -> Step {
    Reply::of(events).into()
}

fn text(events: &[Result<ModelEvent, ModelError>]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Ok(ModelEvent::TextDelta { delta, .. }) => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

fn error(status: u16) -> Step {
    Step::HttpError(HttpError {
        status,
        ..HttpError::default()
    })
}

const KINDS: [ProviderKind; 3] = [
    ProviderKind::OpenAiApi,
    ProviderKind::AnthropicApi,
    ProviderKind::OpenAiCompat,
];

mod failures;
mod history;
mod streams;
