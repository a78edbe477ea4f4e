//! conversation.subscribe: its params and its items (snapshot, event, draft).
//!
//! Source: docs/protocol.md, "Events" (snapshot, then every event after it, live and in order) and docs/protocol.md,
//! "The contract": "drafts", "answers to a running command", "the context window and its compaction" and "streams for
//! the phone" (the snapshot's `live`). Offsets count bytes of UTF-8 (docs/protocol.md, "Ids, times and text offsets").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{ContextFill, TurnSettings};
use super::conversation::ConversationSummary;
use crate::ids::{ConversationId, Timestamp, TurnId};
use crate::macros::{is_false, wire_enum};

/// conversation.subscribe params (scope read, a stream).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationSubscribeParams {
    /// The conversation.
    pub conversation_id: ConversationId,
    /// Resume after this seq: no snapshot, then every event with a greater seq. Absent: a snapshot first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<u64>,
    /// Also send drafts (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub drafts: bool,
    /// This subscriber answers a running command's waits for input (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub answers_input: bool,
}

/// The conversation's state when the subscription started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Snapshot {
    /// The conversation's row.
    pub summary: ConversationSummary,
    /// The seq of the last event the snapshot reflects; the stream goes on after it.
    pub seq: u64,
    /// The turn that runs, absent when none does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<RunningTurn>,
    /// What the running turn's current model call has produced so far; absent when no model call runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<SnapshotLive>,
}

/// The turn that runs at the snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunningTurn {
    /// The turn.
    pub turn_id: TurnId,
    /// When it started.
    pub started_at: Timestamp,
    /// The settings it runs with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<TurnSettings>,
}

/// The text and reasoning of the running turn's current message, not yet in the log (snapshot `live`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SnapshotLive {
    /// The turn.
    pub turn_id: TurnId,
    /// The last event the turn recorded before this state.
    pub after_seq: u64,
    /// The message's index (the turn's assistant messages that have text, from 0).
    pub index: u32,
    /// The message's text so far.
    pub text: String,
    /// `text`'s length in bytes of UTF-8.
    pub text_bytes: u64,
    /// The turn's reasoning so far, absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The reasoning's title, absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_title: Option<String>,
}

/// A draft item: never stored, no seq of its own; a slow subscriber gets drafts merged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Draft {
    /// The running turn.
    pub turn_id: TurnId,
    /// The last event the turn recorded before the draft.
    pub after_seq: u64,
    /// What the draft holds.
    pub draft: DraftPart,
}

wire_enum! {
    /// What started a compaction.
    pub enum CompactTrigger {
        /// The context reached its limit.
        Auto = "auto",
        /// conversation.compact.
        Manual = "manual",
        /// The provider refused a request as too long.
        Overflow = "overflow",
    }
}

/// The part of a draft, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DraftPart {
    /// Text of an assistant message, as in assistant_message_updated.
    Text {
        /// The message's index.
        index: u32,
        /// Where `delta` starts in the message, in bytes of UTF-8.
        offset: u64,
        /// The text added.
        delta: String,
    },
    /// Reasoning of the turn.
    Reasoning {
        /// Where `delta` starts in the turn's reasoning, in bytes of UTF-8.
        offset: u64,
        /// The reasoning added.
        delta: String,
        /// The reasoning's title, absent when none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// The input of a tool call that the model is still writing.
    ToolInput {
        /// The position of the call in the model's answer, from 0.
        call: u32,
        /// The tool.
        tool: String,
        /// Bytes of input so far (of the text, for a freeform tool).
        bytes: u64,
    },
    /// How full the context is, before and after each model call.
    Context(ContextFill),
    /// A compaction runs.
    Compacting {
        /// What started it.
        trigger: CompactTrigger,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscribe_flags_are_false_when_absent() {
        let params: ConversationSubscribeParams =
            serde_json::from_str(r#"{"conversation_id":"6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11"}"#).unwrap();
        assert!(!params.drafts && !params.answers_input && params.after_seq.is_none());
        assert_eq!(
            serde_json::to_string(&params).unwrap(),
            r#"{"conversation_id":"6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11"}"#
        );
    }

    #[test]
    fn a_draft_part_of_an_unknown_shape_is_an_error() {
        assert!(serde_json::from_str::<DraftPart>(r#"{"kind":"text","index":0,"delta":"x"}"#).is_err());
    }
}
