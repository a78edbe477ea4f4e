//! models.list and the model catalog.
//!
//! Source: docs/protocol.md, "The contract": "new method models.list", "the context window and its compaction", "the
//! model catalog comes from the provider's backend" and "the catalog of each provider".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::Timestamp;
use crate::macros::{is_false, wire_enum};

/// models.list params (scope read): none, so `{}` or absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelsListParams {}

wire_enum! {
    /// Where a model of models.list comes from.
    pub enum ModelSource {
        /// The provider's catalog.
        Builtin = "builtin",
        /// The user's config.toml.
        Config = "config",
    }
}

/// One model a turn may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelInfo {
    /// The model id that prompt.send `settings.model` names.
    pub id: String,
    /// The reasoning efforts it takes (plain strings such as `low`, `high`); empty when it takes none.
    pub efforts: Vec<String>,
    /// The effort a turn uses when the prompt names none; absent when the model has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_effort: Option<String>,
    /// The model a turn uses when the prompt names none (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub default: bool,
    /// Where it comes from.
    pub source: ModelSource,
    /// The context window efrd uses, in tokens; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The largest window that `[openai]` models can set, in tokens; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context_window: Option<u64>,
    /// The provider prefers its WebSocket transport for this model (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub prefer_websockets: bool,
}

wire_enum! {
    /// Where the model list came from.
    pub enum CatalogOrigin {
        /// A fetch from the provider's backend.
        Backend = "backend",
        /// The cache on disk of an earlier fetch.
        Cache = "cache",
        /// The list built into efr.
        Builtin = "builtin",
        /// No list yet: no fetch worked, no cache is on disk, and efr has none built in (anthropic-api).
        Missing = "missing",
    }
}

/// The model catalog of a provider (models.list and admin.status `catalog`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Catalog {
    /// The provider whose catalog it is, such as `openai-api`; absent from an earlier daemon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Where the list came from.
    pub origin: CatalogOrigin,
    /// When it was fetched, absent when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetched_at: Option<Timestamp>,
}

/// models.list result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelsListResult {
    /// The models.
    pub models: Vec<ModelInfo>,
    /// Where the list came from; absent from an earlier daemon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<Catalog>,
}
