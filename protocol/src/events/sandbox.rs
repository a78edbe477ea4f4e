//! sandbox_unavailable: the sandbox cannot run, so a contained call cannot either.
//!
//! Source: docs/protocol.md, "The contract": "the wire types of the auto sandbox (phase 1)", which names the kind; its
//! members are this project's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::CallId;

/// sandbox_unavailable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxUnavailable {
    /// Why, one sentence for a person (such as "bubblewrap is not installed").
    pub reason: String,
    /// The call that needed the sandbox, absent when the daemon found out on its own (a probe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<CallId>,
}
