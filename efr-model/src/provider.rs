//! [`Provider`]: one configured provider (its kind, base URL, key and retries) and its one method that matters,
//! [`Provider::stream`].
//!
//! A call builds the provider's body once, then each attempt sends it over reqwest (rustls), checks the status, and
//! runs the provider's parser over the SSE body ([`super::parse::events`]); [`super::retry::with_retry`] wraps the
//! attempts. The key is read from the [`KeyStore`] at each attempt, so a new login applies to the next call; a 401
//! marks it refused and any other answer marks it checked.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use secrecy::SecretString;

use super::anthropic::{self, AnthropicOptions, MessagesParser};
use super::compat::{self, ChatParser};
use super::endpoint::{ProviderKind, auth_headers, endpoint};
use super::event::{ModelError, ModelEvent};
use super::http::error_answer;
use super::keys::KeyStore;
use super::list::{BackendModel, fetch_models};
use super::openai::{self, ResponsesParser};
use super::parse::{StreamParser, events};
use super::request::ModelRequest;
use super::retry::{RetryConfig, with_retry};

/// Where a provider's key comes from.
#[derive(Clone)]
pub enum Auth {
    /// The key store's key for the provider (logins and environment keys); `openai-api` and `anthropic-api`.
    Store(Arc<KeyStore>),
    /// A fixed key, such as an `openai-compat` server's key from the config.
    Key(SecretString),
    /// No key: an `openai-compat` server that wants none.
    None,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Store(_) => "Store",
            Self::Key(_) => "Key([redacted])",
            Self::None => "None",
        })
    }
}

/// A provider's settings.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The kind.
    pub kind: ProviderKind,
    /// The base URL: `https://api.openai.com`, `https://api.anthropic.com`, `http://127.0.0.1:11434`. A trailing
    /// `/v1` is dropped, since the paths hold it.
    pub base_url: String,
    /// Retries of a call that failed before any output.
    pub retry: RetryConfig,
    /// The longest wait for a TCP and TLS connection.
    pub connect_timeout: Duration,
    /// The longest wait for the answer's headers and then between two chunks of its body; a provider silent for
    /// longer is a transport error.
    pub idle_timeout: Duration,
    /// Anthropic's options.
    pub anthropic: AnthropicOptions,
}

impl ProviderConfig {
    /// The settings of `kind` at `base_url`, with default retries, a 10 s connect timeout and a 300 s idle timeout
    /// (a model may think for minutes before its first token).
    #[must_use]
    pub fn new(kind: ProviderKind, base_url: impl Into<String>) -> Self {
        Self {
            kind,
            base_url: base_url.into(),
            retry: RetryConfig::default(),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            anthropic: AnthropicOptions::default(),
        }
    }
}

#[derive(Debug)]
struct Shared {
    config: ProviderConfig,
    auth: Auth,
    http: reqwest::Client,
}

/// One configured provider. Cheap to clone; every clone shares the HTTP client (and its connection pool).
#[derive(Debug, Clone)]
pub struct Provider {
    shared: Arc<Shared>,
}

impl Provider {
    /// A provider with its own HTTP client.
    ///
    /// # Errors
    /// [`ModelError::Transport`] when the HTTP client cannot be built (no TLS roots).
    pub fn new(config: ProviderConfig, auth: Auth) -> Result<Self, ModelError> {
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()?;
        Ok(Self::with_client(config, auth, http))
    }

    /// A provider that uses `http`.
    #[must_use]
    pub fn with_client(config: ProviderConfig, auth: Auth, http: reqwest::Client) -> Self {
        Self {
            shared: Arc::new(Shared { config, auth, http }),
        }
    }

    /// The provider's kind.
    #[must_use]
    pub fn kind(&self) -> ProviderKind {
        self.shared.config.kind
    }

    /// The provider's base URL as configured.
    #[must_use]
    pub fn base_url(&self) -> &str {
        &self.shared.config.base_url
    }

    /// The HTTP client.
    #[must_use]
    pub fn http(&self) -> &reqwest::Client {
        &self.shared.http
    }

    /// Streams one model call: [`ModelEvent`]s ending with `Stop`, or an error (see [`super::event`]). Failures before
    /// the first event are retried as the config says. Dropping the stream cancels the call.
    pub fn stream(
        &self,
        request: &ModelRequest,
    ) -> impl Stream<Item = Result<ModelEvent, ModelError>> + Send + 'static {
        let kind = self.kind();
        let body = match kind {
            ProviderKind::OpenAiApi => openai::request_body(request),
            ProviderKind::AnthropicApi => anthropic::request_body(request, self.shared.config.anthropic),
            ProviderKind::OpenAiCompat => compat::request_body(request),
        };
        let body = Bytes::from(body.to_string());
        let freeform = request.freeform_names();
        let shared = Arc::clone(&self.shared);
        with_retry(self.shared.config.retry.clone(), move || {
            attempt(Arc::clone(&shared), body.clone(), Parser::new(kind, freeform.clone()))
        })
    }

    /// The provider's model list (`GET /v1/models`), marking the key checked or refused as a call does.
    ///
    /// # Errors
    /// As a call's HTTP errors; [`ModelError::BadResponse`] for a list that is not one.
    pub async fn models(&self) -> Result<Vec<BackendModel>, ModelError> {
        let shared = &self.shared;
        let key = shared.key()?;
        let result = fetch_models(&shared.http, shared.config.kind, &shared.config.base_url, key.as_ref()).await;
        shared.answered(&result);
        result
    }
}

impl Shared {
    fn key(&self) -> Result<Option<SecretString>, ModelError> {
        let kind = self.config.kind;
        match &self.auth {
            Auth::Store(store) => match store.key(kind) {
                Some(key) => Ok(Some(key)),
                None if kind.needs_key() => Err(ModelError::MissingKey {
                    provider: kind.name().to_owned(),
                }),
                None => Ok(None),
            },
            Auth::Key(key) => Ok(Some(key.clone())),
            Auth::None if kind.needs_key() => Err(ModelError::MissingKey {
                provider: kind.name().to_owned(),
            }),
            Auth::None => Ok(None),
        }
    }

    /// Notes an answer (or its absence) from the provider in the key store.
    fn answered<T>(&self, result: &Result<T, ModelError>) {
        let Auth::Store(store) = &self.auth else { return };
        match result {
            Err(ModelError::KeyRefused { .. }) => {
                store.mark_refused(self.config.kind, Utc::now());
                tracing::warn!(provider = self.config.kind.name(), "the provider refused the API key");
            }
            Err(ModelError::Transport { .. } | ModelError::MissingKey { .. }) => {}
            _ => store.mark_checked(self.config.kind, Utc::now()),
        }
    }

    async fn open(&self, body: Bytes) -> Result<reqwest::Response, ModelError> {
        let kind = self.config.kind;
        let key = self.key()?;
        let mut headers = auth_headers(kind, key.as_ref())?;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let url = endpoint(&self.config.base_url, kind.path());
        let send = self.http.post(url).headers(headers).body(body).send();
        let response = match tokio::time::timeout(self.config.idle_timeout, send).await {
            Ok(response) => response.map_err(ModelError::from),
            Err(_) => Err(ModelError::Transport {
                message: idle_message(self.config.idle_timeout),
            }),
        };
        let result = match response {
            Ok(response) if response.status().is_success() => Ok(response),
            Ok(response) => Err(error_answer(kind, response).await),
            Err(error) => Err(error),
        };
        self.answered(&result);
        result
    }
}

/// One attempt: the request, then the parsed body.
async fn attempt(
    shared: Arc<Shared>,
    body: Bytes,
    parser: Parser,
) -> impl Stream<Item = Result<ModelEvent, ModelError>> + Send + 'static {
    match shared.open(body).await {
        Ok(response) => {
            let idle = shared.config.idle_timeout;
            events(idle_limited(response.bytes_stream(), idle), parser).left_stream()
        }
        Err(error) => futures::stream::iter([Err(error)]).right_stream(),
    }
}

fn idle_message(idle: Duration) -> String {
    format!("no answer from the provider for {} s", idle.as_secs())
}

/// The body as a stream that fails when no chunk comes for `idle`.
fn idle_limited<S>(body: S, idle: Duration) -> impl Stream<Item = Result<Bytes, ModelError>> + Send + Unpin
where
    S: Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
{
    Box::pin(futures::stream::unfold(Box::pin(body), move |mut body| async move {
        match tokio::time::timeout(idle, body.next()).await {
            Ok(Some(chunk)) => Some((chunk.map_err(ModelError::from), body)),
            Ok(None) => None,
            Err(_) => Some((
                Err(ModelError::Transport {
                    message: idle_message(idle),
                }),
                body,
            )),
        }
    }))
}

/// The parser of each kind.
#[derive(Debug)]
enum Parser {
    Responses(ResponsesParser),
    Messages(MessagesParser),
    Chat(ChatParser),
}

impl Parser {
    fn new(kind: ProviderKind, freeform: Vec<String>) -> Self {
        match kind {
            ProviderKind::OpenAiApi => Self::Responses(ResponsesParser::new()),
            ProviderKind::AnthropicApi => Self::Messages(MessagesParser::new(freeform)),
            ProviderKind::OpenAiCompat => Self::Chat(ChatParser::new(freeform)),
        }
    }
}

impl StreamParser for Parser {
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<ModelEvent>) -> Result<bool, ModelError> {
        match self {
            Self::Responses(parser) => parser.event(name, data, out),
            Self::Messages(parser) => parser.event(name, data, out),
            Self::Chat(parser) => parser.event(name, data, out),
        }
    }
}
