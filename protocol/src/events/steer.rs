//! The events of steering: turn_steered, steering_delivered, steering_withdrawn and prompt_withdrawn.
//!
//! Source: docs/protocol.md, "The contract": "steer, queue and withdraw from the input row of a turn". The members of
//! turn_steered are this project's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::CommandId;
use crate::wire::Origin;

/// turn_steered: a message for the running turn, which its next model call reads (then steering_delivered).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnSteered {
    /// The message.
    pub text: String,
    /// The turn.steer that sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_id: Option<CommandId>,
    /// Who sent it.
    pub origin: Origin,
}

/// steering_delivered: a model call read these steers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SteeringDelivered {
    /// The seqs of the turn_steered events it read, in order.
    pub steers: Vec<u64>,
}

/// steering_withdrawn: steers taken back that no model call read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SteeringWithdrawn {
    /// The seqs of their turn_steered events.
    pub steers: Vec<u64>,
    /// Who took them back.
    pub origin: Origin,
}

/// prompt_withdrawn: a queued prompt was taken back; the last event of a turn that never started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptWithdrawn {
    /// Who took it back.
    pub origin: Origin,
}
