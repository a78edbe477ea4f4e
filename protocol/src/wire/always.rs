//! Always rules: what became of the rule an allow_always answer asked efrd to save.
//!
//! Source: docs/protocol.md, "The contract": "the bus filter and always-allow (phase E)": always_rule_saved's
//! `outcome` is an object tagged by `kind`, `saved` (`index`, `rule`) or `not_saved` (`reason`: changed, read_only,
//! load_check, io, reload_timeout); a reader takes a kind or a reason that it does not know as unknown. The meaning of
//! `index` (the rule's place among the file's `[[auto.always]]` tables, from 0) is this project's choice
//! (docs/adr/0026-always-rules.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::macros::wire_enum;

wire_enum! {
    /// Why efrd did not save an always rule (frozen in `not_saved_reasons.json`).
    pub enum NotSavedReason {
        /// `config.toml` changed between efrd's read and its write: efrd did not overwrite the user's edit.
        Changed = "changed",
        /// `config.toml` (or the file a link of it names, or its folder) cannot be written.
        ReadOnly = "read_only",
        /// The file with the rule would not load (the file holds an error, or the rule would break it).
        LoadCheck = "load_check",
        /// Another input or output error.
        Io = "io",
        /// The rule was written, but the reload that applies it did not finish in time.
        ReloadTimeout = "reload_timeout",
    }
    unknown
}

/// always_rule_saved's `outcome`, tagged by `kind` (frozen in `always_saved.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AlwaysOutcome {
    /// The rule is in `config.toml` and in effect.
    Saved {
        /// The rule's place among the `[[auto.always]]` tables of the file, from 0.
        index: u32,
        /// The rule in words, as the question's exit `always` said it.
        rule: String,
    },
    /// The rule was not saved; the call ran once.
    NotSaved {
        /// Why.
        reason: NotSavedReason,
    },
    /// A kind that this reader does not know. Never sent.
    #[serde(other)]
    Unknown,
}
