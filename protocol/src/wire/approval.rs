//! approval.respond: the user's answer to an approval_requested question.
//!
//! Source: docs/protocol.md, "The contract": "the bus filter and always-allow (phase E)" (allow_always) and the phone
//! limits of "Remote devices" (a phone may not answer a local_only question, nor answer allow_always).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{CallId, CommandId, ConversationId};
use crate::macros::wire_enum;

wire_enum! {
    /// The answer to an approval question.
    pub enum ApprovalDecision {
        /// Run the call.
        Allow = "allow",
        /// Do not run it.
        Deny = "deny",
        /// Run it and save the rule the question offered (only when its exit has `always`).
        AllowAlways = "allow_always",
    }
    unknown
}

/// approval.respond params (scope approve, a write).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalRespondParams {
    /// The write's id.
    pub command_id: CommandId,
    /// The conversation.
    pub conversation_id: ConversationId,
    /// The call the question is about.
    pub call_id: CallId,
    /// The answer. `unknown` is refused with `invalid`; a turn that cannot read an answer denies the call.
    pub decision: ApprovalDecision,
}

/// approval.respond result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalRespondResult {
    /// The seq of the approval_resolved event.
    pub seq: u64,
}
