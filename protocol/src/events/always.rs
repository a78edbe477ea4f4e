//! always_rule_saved: what became of the rule that an allow_always answer asked efrd to save.
//!
//! Source: docs/protocol.md, "The contract": "the bus filter and always-allow (phase E)" (turn_id, the envelope's,
//! `call_id`, `outcome`). It belongs to its turn.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::CallId;
use crate::wire::always::AlwaysOutcome;

/// always_rule_saved: the call whose question was answered allow_always, and whether its rule was saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AlwaysRuleSaved {
    /// The call whose question offered the rule.
    pub call_id: CallId,
    /// Saved (with the rule's index and words), or not saved (with the reason).
    pub outcome: AlwaysOutcome,
}
