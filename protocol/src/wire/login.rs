//! admin.login_api_key and admin.logout.
//!
//! Source: docs/protocol.md, "The contract": "logins with an API key" and "refused keys and logouts". The key is a
//! [`SecretText`]: it travels as a plain string and never shows in `Debug` output.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::macros::{is_false, is_true, yes};
use crate::secret::SecretText;

/// admin.login_api_key params (scope admin, no command id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminLoginApiKeyParams {
    /// `openai-api` or `anthropic-api`; another provider is `invalid`.
    pub provider: String,
    /// The API key. The daemon never logs it.
    pub key: SecretText,
    /// Check the key with one request to the provider first (true when absent).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub check: bool,
}

/// admin.login_api_key result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminLoginApiKeyResult {
    /// The provider.
    pub provider: String,
    /// The key's known prefix and last four characters, such as `sk-ant-...a1b2`.
    pub key_hint: String,
    /// The provider accepted the key; false when the check was skipped.
    pub checked: bool,
    /// The provider is the one of new conversations.
    pub active: bool,
}

/// admin.logout params (scope admin, no command id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminLogoutParams {
    /// The provider, such as `openai-api`.
    pub provider: String,
}

/// admin.logout result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminLogoutResult {
    /// The provider.
    pub provider: String,
    /// A stored key was removed; false when nothing was stored.
    pub logged_out: bool,
    /// The provider is the one of new conversations, whose turns fail until a new login (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub active: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_is_true_when_absent_and_the_key_never_prints() {
        let params: AdminLoginApiKeyParams =
            serde_json::from_str(r#"{"provider":"openai-api","key":"sk-proj-secret-9f3c"}"#).unwrap();
        assert!(params.check);
        assert!(!format!("{params:?}").contains("secret"));
        assert_eq!(
            serde_json::to_string(&params).unwrap(),
            r#"{"provider":"openai-api","key":"sk-proj-secret-9f3c"}"#
        );
        let params: AdminLoginApiKeyParams =
            serde_json::from_str(r#"{"provider":"openai-api","key":"k","check":false}"#).unwrap();
        assert!(!params.check);
        assert!(serde_json::from_str::<AdminLoginApiKeyParams>(r#"{"provider":"openai-api"}"#).is_err());
    }
}
