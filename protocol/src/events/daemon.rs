//! Events that belong to no conversation: login_completed and logout_completed (see [`super::DaemonEvent`]).
//!
//! Source: docs/protocol.md, "The contract": "refused keys and logouts" (logout_completed "with the provider only";
//! "it belongs to no conversation, like login_completed"). The members of login_completed after `provider` are this
//! project's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::LoginKind;

/// login_completed: the user logged in to a provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LoginCompleted {
    /// The provider, such as `anthropic-api`.
    pub provider: String,
    /// How.
    pub login: LoginKind,
    /// The key's hint for an API key, such as `sk-ant-...a1b2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_hint: Option<String>,
}

/// logout_completed: a provider's login was removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LogoutCompleted {
    /// The provider.
    pub provider: String,
}
