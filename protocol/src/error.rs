//! The error model of the protocol: a closed set of codes, a message, and optional machine-readable data.
//!
//! Every request ends with exactly one terminal frame; when it fails, that frame is `{"id": N, "error": ErrorBody}`.
//! The set of codes is closed for writers (efrd never invents a code) and open for readers: a code that a reader
//! does not know reads as [`ErrorCode::Unknown`], so a newer daemon never breaks an older client.
//!
//! `data` carries the details that the spec names, for example `{setting, value, choices}` for a prompt setting that
//! is not in the catalog, `{"busy": "turn"}`, `{"overflow": true}` for a subscriber that fell behind, or
//! `{"re_pair": true, "device_id": ...}` on the tailnet listener.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The code of a failed request (snake_case on the wire).
///
/// Source: docs/protocol.md, "Errors". A code that a reader does not know reads as `Unknown`; efrd never sends
/// `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The hello's protocol version is not the daemon's; nothing else runs on that connection.
    ProtocolMismatch,
    /// The peer has not proven who it is (tailnet before device.prove, a wrong pairing token).
    Unauthorized,
    /// The peer is known but may not do this (a missing scope, a phone limit).
    Forbidden,
    /// The request is malformed: an unknown method, bad params, a setting that is not in the catalog.
    Invalid,
    /// The thing named does not exist (a conversation, a turn, a call that already completed).
    NotFound,
    /// The request conflicts with the current state (a second answer to a question, a late steer).
    Conflict,
    /// The daemon cannot do it now; `data` says why (`{"busy": "turn"}`, `{"overflow": true}`).
    Busy,
    /// A frame or a value is over its limit.
    TooLarge,
    /// The request was cancelled by the client or by the daemon's shutdown.
    Cancelled,
    /// A part that the request needs is not available (no provider key, the sandbox cannot run).
    Unavailable,
    /// A bug or an unexpected failure inside the daemon.
    Internal,
    /// A code that this reader does not know. Never sent.
    #[serde(other)]
    Unknown,
}

impl ErrorCode {
    /// The snake_case wire name of the code.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ProtocolMismatch => "protocol_mismatch",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::Invalid => "invalid",
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::Busy => "busy",
            Self::TooLarge => "too_large",
            Self::Cancelled => "cancelled",
            Self::Unavailable => "unavailable",
            Self::Internal => "internal",
            Self::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The body of an error frame: `{"code", "message", "data"?}`.
///
/// `message` is one human-readable sentence for a person (never a key or a token). `data` is absent unless the spec
/// names machine-readable details for the case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ErrorBody {
    /// What kind of failure this is.
    pub code: ErrorCode,
    /// A sentence for a person.
    pub message: String,
    /// Machine-readable details, absent when the spec names none for the case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl ErrorBody {
    /// An error with a code and a message and no data.
    #[must_use]
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error with `data` set.
    #[must_use]
    pub fn with_data(mut self, data: serde_json::Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `invalid` with a message, the most common refusal of bad params.
    #[must_use]
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Invalid, message)
    }

    /// `internal`, for a failure inside the daemon. The message must not leak secrets.
    #[must_use]
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
}

/// The messages of efrd's errors that a login fixes (no API key, a refused key). efrd builds them here and efr
/// recognises them here ([`login::asks_to_log_in`]), so what efr looks for cannot drift from what efrd says.
pub mod login {
    /// The words that every such message holds, and that efr looks for to show how to log in.
    pub const LOG_IN: &str = "log in";

    /// No key is stored or set for `provider` (such as `openai-api`).
    #[must_use]
    pub fn no_api_key(provider: &str) -> String {
        format!("no API key for {provider}: {LOG_IN} with `efr login --api-key --provider {provider}`")
    }

    /// `provider` refused the key (an HTTP 401) and said `message`, which never holds the key.
    #[must_use]
    pub fn key_refused(provider: &str, message: &str) -> String {
        format!("{provider} refused the API key ({message}): {LOG_IN} again with `efr login --api-key`")
    }

    /// Whether an error message of efrd asks the user to log in.
    #[must_use]
    pub fn asks_to_log_in(message: &str) -> bool {
        message.contains(LOG_IN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_code_reads_as_unknown() {
        let body: ErrorBody = serde_json::from_str(r#"{"code":"rate_exceeded","message":"m"}"#).unwrap();
        assert_eq!(body.code, ErrorCode::Unknown);
    }

    #[test]
    fn codes_round_trip_with_their_wire_names() {
        for code in [
            ErrorCode::ProtocolMismatch,
            ErrorCode::Unauthorized,
            ErrorCode::Forbidden,
            ErrorCode::Invalid,
            ErrorCode::NotFound,
            ErrorCode::Conflict,
            ErrorCode::Busy,
            ErrorCode::TooLarge,
            ErrorCode::Cancelled,
            ErrorCode::Unavailable,
            ErrorCode::Internal,
        ] {
            let wire = serde_json::to_string(&code).unwrap();
            assert_eq!(wire, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ErrorCode>(&wire).unwrap(), code);
        }
    }

    #[test]
    fn data_is_absent_when_not_set() {
        let wire = serde_json::to_string(&ErrorBody::invalid("bad")).unwrap();
        assert_eq!(wire, r#"{"code":"invalid","message":"bad"}"#);
    }
}
