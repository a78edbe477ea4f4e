//! The scripted model server: a real HTTP server on loopback that answers model calls from a [`Script`], in each
//! provider's wire format, and records every request.
//!
//! It serves `POST /v1/responses` (OpenAI Responses), `POST /v1/messages` (Anthropic Messages), `POST
//! /v1/chat/completions` (Chat Completions) and `GET /v1/models` (both list shapes; the Anthropic one when the request
//! has `anthropic-version`). Each model call takes the next [`Step`]; each model list request the next
//! [`ModelsStep`], then the script's `models`. Every request is recorded ([`RecordedRequest`]) with the key's value
//! masked to its hint, so a test can check what was sent without the key itself ever being stored.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use efr_test_support::scripted::{Reply, ReplyEvent, Script, ScriptedModel, Step};
//!
//! let reply = Reply { events: vec![ReplyEvent::Text("hello".into())], ..Reply::default() };
//! let server = ScriptedModel::start(Script { steps: vec![Step::Reply(reply)], ..Script::default() }).await?;
//! let base_url = server.base_url(); // http://127.0.0.1:PORT
//! # Ok(()) }
//! ```

mod chat;
pub mod encode;
mod messages;
mod responses;
pub mod script;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::{Value, json};

pub use encode::{Action, Format};
pub use script::{HttpError, ModelsStep, Raw, Reply, ReplyEvent, Script, ScriptToolCall, ScriptUsage, Step, When};

/// The largest request body the server reads: 64 MiB.
const REQUEST_LIMIT: usize = 64 << 20;

/// One request the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// `POST`, `GET`.
    pub method: String,
    /// The path, such as `/v1/messages`.
    pub path: String,
    /// The query, without `?`; `None` when there was none.
    pub query: Option<String>,
    /// The headers, names in lowercase, in the order received; `authorization`, `x-api-key` and `api-key` hold the
    /// key masked to its hint (`Bearer sk-proj-...a1b2`).
    pub headers: Vec<(String, String)>,
    /// The body as JSON; a JSON string of the text when it is not JSON; null when empty.
    pub body: Value,
}

impl RecordedRequest {
    /// The first header named `name` (lowercase).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, value)| value.as_str())
    }
}

/// The prefixes a masked key keeps (efr's key_hint rule): `sk-ant-`, `sk-proj-`, `sk-`.
const KEY_PREFIXES: &[&str] = &["sk-ant-", "sk-proj-", "sk-"];

/// A key masked to its hint: the known prefix, `...`, and the last four characters when at least eight follow the
/// prefix.
#[must_use]
pub fn mask_key(key: &str) -> String {
    let prefix = KEY_PREFIXES
        .iter()
        .copied()
        .find(|prefix| key.starts_with(prefix))
        .unwrap_or("");
    let rest: Vec<char> = key[prefix.len()..].chars().collect();
    if rest.len() < 8 {
        return format!("{prefix}...");
    }
    let last: String = rest[rest.len() - 4..].iter().collect();
    format!("{prefix}...{last}")
}

#[derive(Debug, Default)]
struct Inner {
    steps: VecDeque<Step>,
    when: Vec<When>,
    usage_from_body: bool,
    model_steps: VecDeque<ModelsStep>,
    models: Vec<String>,
    /// The requests received, their bodies as they came: parsed only when [`ScriptedModel::requests`] reads them, so
    /// that the server's own time per call does not grow with the conversation's history.
    requests: Vec<Received>,
}

/// One request as it came ([`RecordedRequest`] without its body parsed).
#[derive(Debug, Clone)]
struct Received {
    method: String,
    path: String,
    query: Option<String>,
    headers: Vec<(String, String)>,
    body: Bytes,
}

impl Received {
    fn recorded(&self) -> RecordedRequest {
        let body = if self.body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&self.body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&self.body).into_owned()))
        };
        RecordedRequest {
            method: self.method.clone(),
            path: self.path.clone(),
            query: self.query.clone(),
            headers: self.headers.clone(),
            body,
        }
    }
}

type Shared = Arc<Mutex<Inner>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Inner> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running scripted model server. It stops when dropped.
#[derive(Debug)]
pub struct ScriptedModel {
    addr: SocketAddr,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedModel {
    /// Starts a server on `127.0.0.1:0` (a free port) that plays `script`. Needs a tokio runtime.
    ///
    /// # Errors
    /// The bind's error.
    pub async fn start(script: Script) -> std::io::Result<Self> {
        let shared: Shared = Arc::new(Mutex::new(Inner {
            steps: script.steps.into(),
            when: script.when,
            usage_from_body: script.usage_from_body,
            model_steps: script.model_steps.into(),
            models: script.models,
            requests: Vec::new(),
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        // Providers take request bodies of tens of MiB (a long history); axum's default limit is 2 MiB.
        let app = Router::new()
            .fallback(handle)
            .layer(axum::extract::DefaultBodyLimit::max(REQUEST_LIMIT))
            .with_state(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(%error, "scripted model server stopped");
            }
        });
        Ok(Self { addr, shared, task })
    }

    /// `http://127.0.0.1:PORT`, the base URL to give a provider.
    #[must_use]
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The port.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request so far, in order.
    #[must_use]
    pub fn requests(&self) -> Vec<RecordedRequest> {
        let received = lock(&self.shared).requests.clone();
        received.iter().map(Received::recorded).collect()
    }

    /// Forgets the requests recorded so far (a long run that does not read them keeps its memory flat).
    pub fn clear_requests(&self) {
        lock(&self.shared).requests.clear();
    }

    /// Adds a step for a later model call.
    pub fn push(&self, step: Step) {
        lock(&self.shared).steps.push_back(step);
    }

    /// Adds a step for a later model list request.
    pub fn push_models(&self, step: ModelsStep) {
        lock(&self.shared).model_steps.push_back(step);
    }

    /// The model call steps not played yet.
    #[must_use]
    pub fn steps_left(&self) -> usize {
        lock(&self.shared).steps.len()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(State(shared): State<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let request = record(&method, &uri, &headers, &body);
    let raw = body;
    let anthropic_style = headers.contains_key("anthropic-version");
    let format = match (method.clone(), uri.path()) {
        (Method::POST, "/v1/responses") => Some(Format::Responses),
        (Method::POST, "/v1/messages") => Some(Format::Messages),
        (Method::POST, "/v1/chat/completions") => Some(Format::Chat),
        _ => None,
    };
    let models = method == Method::GET && uri.path() == "/v1/models";
    let head = if format.is_some() {
        encode::CallHead::of(&raw)
    } else {
        encode::CallHead::default()
    };
    let (step, model_step, listed) = {
        let mut inner = lock(&shared);
        inner.requests.push(request);
        let step = if format.is_some() {
            let text = if inner.when.is_empty() {
                std::borrow::Cow::Borrowed("")
            } else {
                String::from_utf8_lossy(&raw)
            };
            match inner.when.iter().find(|rule| text.contains(&rule.contains)) {
                Some(rule) => Some(rule.step.clone()),
                None => inner.steps.pop_front(),
            }
        } else {
            None
        };
        let step = match step {
            Some(Step::Reply(mut reply)) if inner.usage_from_body && reply.usage.is_none() => {
                let output: usize = reply
                    .events
                    .iter()
                    .map(|event| match event {
                        ReplyEvent::Text(text) => text.len(),
                        _ => 0,
                    })
                    .sum();
                reply.usage = Some(ScriptUsage {
                    input: (raw.len() as u64).div_ceil(4),
                    output: (output as u64).div_ceil(4),
                    ..ScriptUsage::default()
                });
                Some(Step::Reply(reply))
            }
            other => other,
        };
        let model_step = if models { inner.model_steps.pop_front() } else { None };
        (step, model_step, inner.models.clone())
    };
    if models {
        return match model_step {
            Some(ModelsStep::HttpError(error)) => error_response(&error, anthropic_style).await,
            Some(ModelsStep::Models(ids)) => model_list(&ids, anthropic_style),
            None => model_list(&listed, anthropic_style),
        };
    }
    let Some(format) = format else {
        let error = HttpError {
            status: 404,
            message: Some(format!("no route {method} {}", uri.path())),
            ..HttpError::default()
        };
        return error_response(&error, anthropic_style).await;
    };
    let anthropic_style = format == Format::Messages;
    match step {
        None => {
            let message = "scripted model: no step left for this request".to_owned();
            error_response(
                &HttpError {
                    status: 500,
                    message: Some(message),
                    ..HttpError::default()
                },
                anthropic_style,
            )
            .await
        }
        Some(Step::HttpError(error)) => error_response(&error, anthropic_style).await,
        Some(Step::Reply(reply)) => stream(
            StatusCode::OK,
            "text/event-stream; charset=utf-8",
            encode::encode_for(format, &reply, &head),
        ),
        Some(Step::Raw(raw)) => {
            let mut actions = encode::chunked(vec![Action::Data(raw.body.into_bytes())], raw.chunk_bytes, None);
            if raw.disconnect {
                actions.push(Action::Abort);
            }
            let status = StatusCode::from_u16(raw.status.unwrap_or(200)).unwrap_or(StatusCode::OK);
            let content_type = raw
                .content_type
                .unwrap_or_else(|| "text/event-stream; charset=utf-8".to_owned());
            stream(status, &content_type, actions)
        }
    }
}

fn record(method: &Method, uri: &Uri, headers: &HeaderMap, body: &Bytes) -> Received {
    let headers = headers
        .iter()
        .map(|(name, value)| {
            let name = name.as_str().to_owned();
            let text = String::from_utf8_lossy(value.as_bytes()).into_owned();
            let text = match name.as_str() {
                "authorization" => match text.strip_prefix("Bearer ") {
                    Some(key) => format!("Bearer {}", mask_key(key)),
                    None => mask_key(&text),
                },
                "x-api-key" | "api-key" => mask_key(&text),
                _ => text,
            };
            (name, text)
        })
        .collect();
    Received {
        method: method.as_str().to_owned(),
        path: uri.path().to_owned(),
        query: uri.query().map(str::to_owned),
        headers,
        body: body.clone(),
    }
}

/// A body written action by action: data, pauses, and a break that aborts the connection.
fn stream(status: StatusCode, content_type: &str, actions: Vec<Action>) -> Response {
    let body = futures::stream::unfold(actions.into_iter(), |mut actions| async move {
        loop {
            match actions.next()? {
                Action::Data(bytes) => return Some((Ok(Bytes::from(bytes)), actions)),
                Action::Sleep(pause) => tokio::time::sleep(pause).await,
                Action::Abort => {
                    let broken = std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "scripted disconnect");
                    return Some((Err(broken), actions));
                }
            }
        }
    });
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = status;
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// An error answer in the provider's shape (shared/provider-streams/README.md).
async fn error_response(error: &HttpError, anthropic_style: bool) -> Response {
    if let Some(ms) = error.delay_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = error
        .body
        .clone()
        .unwrap_or_else(|| error_body(error, anthropic_style).to_string());
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(value) = error
        .retry_after
        .as_deref()
        .and_then(|value| HeaderValue::from_str(value).ok())
    {
        headers.insert(header::RETRY_AFTER, value);
    }
    if let Some(ms) = error.retry_after_ms {
        headers.insert("retry-after-ms", HeaderValue::from(ms));
    }
    response
}

fn error_body(error: &HttpError, anthropic_style: bool) -> Value {
    let (anthropic_type, openai_type, openai_code, default_message) = match error.status {
        _ if error.context_overflow && anthropic_style => (
            "invalid_request_error",
            "",
            "",
            "prompt is too long: 212000 tokens > 200000 maximum",
        ),
        _ if error.context_overflow => (
            "",
            "invalid_request_error",
            "context_length_exceeded",
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
        ),
        400 => ("invalid_request_error", "invalid_request_error", "", "Invalid request."),
        401 => (
            "authentication_error",
            "invalid_request_error",
            "invalid_api_key",
            "Incorrect API key provided.",
        ),
        403 => ("permission_error", "invalid_request_error", "", "Permission denied."),
        404 => (
            "not_found_error",
            "invalid_request_error",
            "",
            "The requested resource could not be found.",
        ),
        413 => (
            "request_too_large",
            "invalid_request_error",
            "",
            "Request exceeds the maximum allowed size.",
        ),
        429 => (
            "rate_limit_error",
            "requests",
            "rate_limit_exceeded",
            "Rate limit reached.",
        ),
        529 => ("overloaded_error", "server_error", "", "Overloaded"),
        _ => (
            "api_error",
            "server_error",
            "",
            "The server had an error while processing your request.",
        ),
    };
    let message = error.message.as_deref().unwrap_or(default_message);
    if anthropic_style {
        json!({"type": "error", "error": {"type": anthropic_type, "message": message}, "request_id": "req_scripted"})
    } else {
        let code = if openai_code.is_empty() {
            Value::Null
        } else {
            json!(openai_code)
        };
        json!({"error": {"message": message, "type": openai_type, "param": null, "code": code}})
    }
}

fn model_list(ids: &[String], anthropic_style: bool) -> Response {
    let body = if anthropic_style {
        let data: Vec<Value> = ids
            .iter()
            .map(|id| json!({"type": "model", "id": id, "display_name": id, "created_at": "2025-09-29T00:00:00Z"}))
            .collect();
        json!({"data": data, "has_more": false, "first_id": ids.first(), "last_id": ids.last()})
    } else {
        let data: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "object": "model", "created": 1_754_425_777, "owned_by": "system"}))
            .collect();
        json!({"object": "list", "data": data})
    };
    let mut response = Response::new(Body::from(body.to_string()));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
