//! Secret text on the wire: API keys and pairing tokens.
//!
//! The wire carries them as plain strings (the daemon must read them), but they must never reach a log or a terminal
//! by accident (team rule; spec: "a plain string that the daemon never logs"). [`SecretText`] serializes as the
//! string itself and prints as `[redacted]` with `{:?}`; it has no `Display`, so `format!("{}")` does not compile.
//! Reading the text is explicit: [`SecretText::expose`].

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A secret (an API key, a pairing token, a typed password): a plain string on the wire that efr never logs or
/// prints. In Rust, `Debug` shows `[redacted]`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct SecretText(String);

impl SecretText {
    /// Wraps a secret.
    #[must_use]
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The secret itself. Call it only where the secret is used (a request header, a hash), never to print it.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is the empty string (an empty key is refused with `invalid`).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for SecretText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_secret_but_the_wire_does() {
        let secret = SecretText::new("sk-ant-secret-a1b2");
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert_eq!(serde_json::to_string(&secret).unwrap(), "\"sk-ant-secret-a1b2\"");
        let back: SecretText = serde_json::from_str("\"sk-ant-secret-a1b2\"").unwrap();
        assert_eq!(back.expose(), "sk-ant-secret-a1b2");
        assert!(!back.is_empty());
        assert!(serde_json::from_str::<SecretText>("42").is_err());
    }
}
