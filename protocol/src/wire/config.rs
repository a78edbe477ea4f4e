//! admin.config_reload and the config error it reports (also in admin.status `config.reload_error`).
//!
//! Source: docs/protocol.md, "The contract": "new method admin.config_reload" and "the result of admin.config_reload
//! gains warnings".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// admin.config_reload params (scope admin): none, so `{}` or absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminConfigReloadParams {}

/// Why config.toml could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigError {
    /// One sentence for a person.
    pub message: String,
    /// The line of the fault, from 1; absent when the fault has no place in the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The column of the fault, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// The dotted key at fault, such as `model.effort`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// admin.config_reload result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminConfigReloadResult {
    /// The new config is in force.
    pub applied: bool,
    /// Why it is not; absent when it applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ConfigError>,
    /// Dotted keys that changed but take effect only after a restart; absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restart_needed: Vec<String>,
    /// What the reload changed that the user should know, one sentence each; absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}
