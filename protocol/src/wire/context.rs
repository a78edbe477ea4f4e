//! conversation.context (scope read, no command id): what fills the model's context of a conversation.
//!
//! Source: docs/protocol.md, "The contract": "new method conversation.context". The spec names the members of the
//! result (the model and its limits window, window_known, trigger, hard_cap and auto; the last real count; the
//! estimate of the next request and its parts, one per kind of `context_part_kind`; the largest items; the
//! compactions; the cache use of the conversation's model calls) without their exact form; the form is this
//! project's, documented in docs/protocol.md ("What fills the context") and docs/context.md ("Where to see it").
//!
//! The result holds only sizes, counts and labels, never the text of a message.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::subscribe::CompactTrigger;
use crate::ids::{ConversationId, Timestamp, TurnId};
use crate::macros::{is_zero, wire_enum};

/// conversation.context params (scope read, no command id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationContextParams {
    /// The conversation.
    pub conversation_id: ConversationId,
    /// A model id of models.list whose limits to measure against; absent: the default model. A model that
    /// models.list does not have is `invalid` with data `{setting, value, choices}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// conversation.context result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationContextResult {
    /// The model and its limits.
    pub model: ContextModel,
    /// The last real count: the provider's count of the context after the newest turn that has one since the
    /// newest compaction; absent when no turn has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<ContextCounted>,
    /// The estimate of the next request (without the text of its prompt): the sum of `parts`.
    pub estimate: ContextSize,
    /// The parts of the next request, one per kind of [`ContextPartKind`] that this daemon knows, in the order of the
    /// request.
    pub parts: Vec<ContextPart>,
    /// The largest items of the history, largest first, at most 5; absent when the history is empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub largest: Vec<ContextItem>,
    /// The conversation's compactions, oldest first; absent when it has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compactions: Vec<ContextCompaction>,
    /// The cache use of the conversation's model calls.
    pub cache: ContextCache,
}

/// The model a conversation.context measures against, and its limits in tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextModel {
    /// The model id.
    pub id: String,
    /// The context window in tokens: the catalog's, or an assumed window when the catalog does not know it.
    pub window: u64,
    /// The catalog knows `window`; false when it is assumed.
    pub window_known: bool,
    /// The count at which an automatic compaction starts: the point a client shows as 100% (the `limit` of
    /// `context`).
    pub trigger: u64,
    /// The most a request may hold: past it the provider refuses the request.
    pub hard_cap: u64,
    /// Whether efrd compacts automatically at `trigger`.
    pub auto: bool,
}

/// A real count of the context, as the provider counted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextCounted {
    /// The turn whose last model call was counted.
    pub turn_id: TurnId,
    /// When that turn ended.
    pub at: Timestamp,
    /// The last model call's input plus its output, in tokens.
    pub tokens: u64,
}

/// A size: bytes and the estimated tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextSize {
    /// Bytes of UTF-8 as efrd sends them.
    pub bytes: u64,
    /// Estimated tokens (not the provider's count).
    pub tokens: u64,
}

wire_enum! {
    /// A kind of part of a request, in the order of the request.
    pub enum ContextPartKind {
        /// The tools (their names, descriptions and parameters).
        Tools = "tools",
        /// The base instructions.
        Instructions = "instructions",
        /// The mode section of the instructions.
        Mode = "mode",
        /// The project instructions (AGENTS.md and its fallbacks).
        ProjectInstructions = "project_instructions",
        /// The summary of a compaction.
        Summary = "summary",
        /// The user messages of the history, with each turn's environment block and notes.
        UserMessages = "user_messages",
        /// The model's answers in the history.
        AssistantMessages = "assistant_messages",
        /// The model's reasoning that the history carries.
        Reasoning = "reasoning",
        /// The tool calls of the history (their inputs).
        ToolCalls = "tool_calls",
        /// The outputs of the tool calls.
        ToolOutputs = "tool_outputs",
        /// The environment block of the next turn.
        Environment = "environment",
        /// The notes of the next turn (a changed mode, changed instruction files).
        Notes = "notes",
    }
    unknown
}

/// One part of the next request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextPart {
    /// Which part.
    pub kind: ContextPartKind,
    /// Bytes of UTF-8.
    pub bytes: u64,
    /// Estimated tokens.
    pub tokens: u64,
    /// How many items of the history it holds (0 when absent; for the history's kinds only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub items: u64,
    /// The instruction files found, most general first (for `project_instructions` only; absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<InstructionFile>,
}

wire_enum! {
    /// Where an instruction file sits.
    pub enum InstructionScope {
        /// The user's own file in efr's config root, for every project.
        Global = "global",
        /// A folder from the project root down to the working directory.
        Project = "project",
    }
    unknown
}

wire_enum! {
    /// What became of an instruction file that exists.
    pub enum InstructionFileState {
        /// Read whole.
        Read = "read",
        /// Read up to the size bound (`[instructions] max_bytes`), then cut.
        Cut = "cut",
        /// In a folder that efr's sandbox masks: not read.
        Masked = "masked",
        /// A link that leads outside the project: not read.
        LinkOutside = "link_outside",
        /// The files before it used up the size bound: not read.
        OverBudget = "over_budget",
        /// It could not be read (not UTF-8, not a regular file, an I/O error): `reason` says why.
        Unreadable = "unreadable",
    }
    unknown
}

/// One instruction file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InstructionFile {
    /// Its path as found (a link's own path).
    pub path: PathBuf,
    /// Global or the project's.
    pub scope: InstructionScope,
    /// Read, cut, or why not.
    pub state: InstructionFileState,
    /// The bytes of it that the instructions carry (0 when absent: not read).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes: u64,
    /// Its size in bytes; absent when unknown (a masked file, a refused link, an unreadable file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Why it could not be read (`unreadable` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One item of the history, by size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextItem {
    /// The part that holds it.
    pub kind: ContextPartKind,
    /// What it is, never its text: the tool's name for a tool call or output, else the kind in words.
    pub label: String,
    /// Bytes of UTF-8.
    pub bytes: u64,
    /// Estimated tokens.
    pub tokens: u64,
}

/// One compaction of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextCompaction {
    /// The seq of its event.
    pub seq: u64,
    /// When it ended.
    pub at: Timestamp,
    /// What started it.
    pub trigger: CompactTrigger,
    /// The count before it, in tokens.
    pub tokens_before: u64,
    /// The count after it, in tokens.
    pub tokens_after: u64,
}

/// The cache use of a conversation's model calls: sums of the `usage` of its turns. The cache counts are parts of
/// `input_tokens`; each count is 0 when absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextCache {
    /// The turns whose usage is counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub turns: u64,
    /// Input tokens.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub input_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Input tokens the provider wrote to its prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_part_kind_reads_as_unknown() {
        let kind: ContextPartKind = serde_json::from_str("\"memory\"").unwrap();
        assert_eq!(kind, ContextPartKind::Unknown);
        let part: ContextPart = serde_json::from_str(r#"{"kind":"memory","bytes":8,"tokens":2}"#).unwrap();
        assert_eq!(part.kind, ContextPartKind::Unknown);
        assert!(part.files.is_empty() && part.items == 0);
    }

    #[test]
    fn the_model_is_optional_and_the_conversation_is_not() {
        let params: ConversationContextParams =
            serde_json::from_str(r#"{"conversation_id":"6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11"}"#).unwrap();
        assert_eq!(params.model, None);
        assert_eq!(
            serde_json::to_string(&params).unwrap(),
            r#"{"conversation_id":"6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11"}"#
        );
        assert!(serde_json::from_str::<ConversationContextParams>(r#"{"model":"gpt-5"}"#).is_err());
    }

    #[test]
    fn an_empty_cache_is_an_empty_object() {
        assert_eq!(serde_json::to_string(&ContextCache::default()).unwrap(), "{}");
        assert_eq!(
            serde_json::from_str::<ContextCache>("{}").unwrap(),
            ContextCache::default()
        );
    }
}
