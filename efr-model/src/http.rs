//! HTTP answers that are not a stream: a provider's error status and body mapped to a [`ModelError`], `Retry-After`,
//! and reqwest's errors.
//!
//! The error bodies follow shared/provider-streams/README.md: Anthropic `{"type":"error","error":{"type","message"}}`,
//! OpenAI `{"error":{"message","type","param","code"}}`; local servers also send `{"error":"text"}` (Ollama) and a
//! numeric `code` (llama.cpp). Unknown shapes fall back to the status alone.

use std::time::Duration;

use reqwest::header::HeaderMap;

use super::endpoint::ProviderKind;
use super::event::ModelError;

/// The most bytes of an error body that are read: enough for any provider's message, bounded against a bad server.
pub(crate) const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The longest provider message kept in an error (characters); the rest is cut.
const MESSAGE_LIMIT: usize = 600;

/// The parts of a provider's error body that decide the error's kind.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ErrorBody {
    /// `error.type` (`rate_limit_error`, `invalid_request_error`, ...).
    pub kind: Option<String>,
    /// `error.code` (`context_length_exceeded`, `invalid_api_key`, ...), as text.
    pub code: Option<String>,
    /// `error.message`, or the body's text when it has no known shape.
    pub message: String,
}

impl ErrorBody {
    /// Reads an error body of any known shape; never fails.
    #[must_use]
    pub fn parse(body: &str) -> Self {
        let text = |value: Option<&serde_json::Value>| -> Option<String> {
            match value? {
                serde_json::Value::String(text) => Some(text.clone()),
                serde_json::Value::Number(number) => Some(number.to_string()),
                _ => None,
            }
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
            return Self {
                message: cut(body.trim()),
                ..Self::default()
            };
        };
        match value.get("error") {
            Some(serde_json::Value::Object(error)) => Self {
                kind: text(error.get("type")),
                code: text(error.get("code")),
                message: cut(&text(error.get("message")).unwrap_or_default()),
            },
            Some(serde_json::Value::String(message)) => Self {
                message: cut(message),
                ..Self::default()
            },
            // A Responses `error` event carries its members at the top level.
            _ => Self {
                kind: text(value.get("type")).filter(|kind| kind != "error"),
                code: text(value.get("code")),
                message: cut(&text(value.get("message")).unwrap_or_default()),
            },
        }
    }

    /// Whether the body says that the request does not fit the context window. Providers say so in different ways:
    /// OpenAI `context_length_exceeded`, Anthropic `prompt is too long`, llama.cpp `exceed_context_size_error`, vLLM
    /// and others `maximum context length`.
    #[must_use]
    pub fn is_context_overflow(&self) -> bool {
        const CODES: &[&str] = &[
            "context_length_exceeded",
            "exceed_context_size_error",
            "context_window_exceeded",
        ];
        const PHRASES: &[&str] = &[
            "prompt is too long",
            "maximum context length",
            "context length exceeded",
            "exceeds the context window",
            "exceeds the available context size",
            "context window",
        ];
        let coded = [&self.code, &self.kind]
            .into_iter()
            .flatten()
            .any(|code| CODES.contains(&code.as_str()));
        let message = self.message.to_ascii_lowercase();
        coded || PHRASES.iter().any(|phrase| message.contains(phrase))
    }

    /// The error for this body when it came as an error *event* inside a stream (no HTTP status): mapped by its type
    /// or code.
    #[must_use]
    pub fn into_stream_error(self, provider: &str) -> ModelError {
        if self.is_context_overflow() {
            return ModelError::ContextOverflow { message: self.message };
        }
        let kind = self.kind.as_deref().or(self.code.as_deref()).unwrap_or_default();
        let message = if self.message.is_empty() {
            kind.to_owned()
        } else {
            self.message
        };
        match kind {
            "overloaded_error" | "overloaded" => ModelError::Overloaded {
                retry_after: None,
                message,
            },
            "rate_limit_error" | "rate_limit_exceeded" => ModelError::RateLimited {
                retry_after: None,
                message,
            },
            "authentication_error" | "invalid_api_key" => ModelError::KeyRefused {
                provider: provider.to_owned(),
                message: kind.to_owned(),
            },
            "invalid_request_error" | "invalid_prompt" | "permission_error" | "not_found_error" => {
                ModelError::Rejected { status: 400, message }
            }
            // api_error, server_error and codes that efr does not know: the provider failed.
            _ => ModelError::Server { status: None, message },
        }
    }
}

/// The error of an HTTP answer whose status is not a success. A 401 is always [`ModelError::KeyRefused`]; its message
/// is the provider's error code only, since OpenAI's 401 message quotes part of the key.
pub(crate) fn status_error(provider: &str, status: u16, headers: &HeaderMap, body: &str) -> ModelError {
    let body = ErrorBody::parse(body);
    let retry_after = retry_after(headers);
    let message = |body: ErrorBody| {
        if body.message.is_empty() {
            format!("HTTP {status}")
        } else {
            body.message
        }
    };
    match status {
        401 => ModelError::KeyRefused {
            provider: provider.to_owned(),
            message: body.code.or(body.kind).unwrap_or_else(|| "HTTP 401".to_owned()),
        },
        // A quota that ran out will not come back with a retry.
        429 if body.code.as_deref() == Some("insufficient_quota") => ModelError::Rejected {
            status,
            message: message(body),
        },
        429 => ModelError::RateLimited {
            retry_after,
            message: message(body),
        },
        529 => ModelError::Overloaded {
            retry_after,
            message: message(body),
        },
        _ if body.is_context_overflow() => ModelError::ContextOverflow { message: message(body) },
        500..=599 => ModelError::Server {
            status: Some(status),
            message: message(body),
        },
        _ => ModelError::Rejected {
            status,
            message: message(body),
        },
    }
}

/// The wait an answer asks for: `retry-after-ms` (OpenAI, milliseconds), else `retry-after` in seconds or as an
/// HTTP date (RFC 9110 §10.2.3). `None` when absent or unreadable, or when the date is past.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::trim);
    if let Some(millis) = header("retry-after-ms").and_then(|value| value.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(millis / 1000.0).ok();
    }
    let value = header("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    (date.with_timezone(&chrono::Utc) - chrono::Utc::now()).to_std().ok()
}

impl From<reqwest::Error> for ModelError {
    fn from(error: reqwest::Error) -> Self {
        // reqwest's own text is terse ("error decoding response body"); its sources say what happened.
        let mut message = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        Self::Transport { message }
    }
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MESSAGE_LIMIT) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;

/// The error of an answer whose status is not a success, from its headers and (bounded) body.
pub(crate) async fn error_answer(kind: ProviderKind, mut response: reqwest::Response) -> ModelError {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let mut body = Vec::new();
    while body.len() < ERROR_BODY_LIMIT {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(ERROR_BODY_LIMIT);
    status_error(kind.name(), status, &headers, &String::from_utf8_lossy(&body))
}
