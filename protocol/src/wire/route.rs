//! Routing by scope: which conversation a terminal's prompt goes to.
//!
//! Source: docs/protocol.md, "The contract": "routing by scope". A terminal has one conversation slot per scope key:
//! the project of the prompt's working directory, or outside every project.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{ConversationId, Timestamp};

/// The scope key of a prompt (`route_scope`), tagged by `kind`.
///
/// A kind that a reader does not know, with or without a value, reads as `unknown`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RouteScope {
    /// Inside a registered project.
    Project {
        /// The project's id (see projects.list).
        value: String,
    },
    /// Outside every project.
    Outside,
    /// A kind that this reader does not know. Never sent.
    #[serde(other)]
    Unknown,
}

/// Why a terminal's prompt started a new conversation (the `reason` of a `new` switch), tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SwitchReason {
    /// The prompt's scope differs from the conversation's.
    Scope,
    /// The terminal's conversation was idle too long.
    Idle {
        /// How many hours it was idle.
        hours: u64,
    },
    /// Another terminal took the conversation.
    Moved {
        /// That terminal.
        tty: String,
        /// The conversation's title, absent when it has none yet.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
}

/// How the prompt's conversation differs from the terminal's previous one (`switch`), tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RouteSwitch {
    /// Back to the terminal's earlier conversation of this scope.
    Back {
        /// Its title, absent when it has none yet.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// When it last changed.
        updated_at: Timestamp,
    },
    /// Picked up a conversation of this scope that no terminal held.
    PickedUp {
        /// Its title, absent when it has none yet.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// When it last changed.
        updated_at: Timestamp,
    },
    /// A new conversation.
    New {
        /// The conversation the terminal held before.
        from: ConversationId,
        /// Why it did not continue there.
        reason: SwitchReason,
    },
}

/// How a conversation became the conversation of a terminal's slot (terminal_attached `how`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttachHow {
    /// A prompt of the terminal picked up a conversation of its scope key that no open terminal held.
    PickedUp,
    /// conversation.resume made it the terminal's.
    Resumed,
    /// A value that this reader does not know. Never sent.
    #[serde(other)]
    Unknown,
}

impl AttachHow {
    /// Every value a writer sends, in the order of the spec.
    pub const ALL: &'static [Self] = &[Self::PickedUp, Self::Resumed];
}

/// Where a terminal's prompt went (prompt.send `route`): absent for a prompt with no terminal or with a
/// conversation id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptRoute {
    /// The prompt's scope key.
    pub scope: RouteScope,
    /// The project's name, absent outside projects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The project's root, or the prompt's working directory outside projects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// The change of conversation; absent when it did not change, at a terminal's first prompt and at `,new`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<RouteSwitch>,
    /// A git repository that is not a project (absent for now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_scope_kinds_read_as_unknown_with_or_without_value() {
        for wire in [r#"{"kind":"team","value":"x"}"#, r#"{"kind":"team"}"#] {
            assert_eq!(serde_json::from_str::<RouteScope>(wire).unwrap(), RouteScope::Unknown);
        }
        assert!(serde_json::from_str::<RouteScope>(r#"{"kind":"project"}"#).is_err());
    }

    #[test]
    fn unknown_attach_hows_read_as_unknown() {
        assert_eq!(
            serde_json::from_str::<AttachHow>(r#""stolen""#).unwrap(),
            AttachHow::Unknown
        );
        assert_eq!(serde_json::to_string(&AttachHow::PickedUp).unwrap(), r#""picked_up""#);
    }
}
