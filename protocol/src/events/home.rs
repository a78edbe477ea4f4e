//! Files outside the sandbox's writable roots that a call changed: home_file_changed and cache_delete_applied.
//!
//! Source: docs/protocol.md, "The contract": "phase A" (home_file_changed: `turn_id`, the envelope's, `call_id`,
//! `path`, `floor`, optional `covered` and `backup`; cache_delete_applied: `turn_id`, `call_id`, `paths`,
//! `freed_bytes`), "labels of exits and changed files" (home_file_changed's optional `real`). Both belong to their
//! turn.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::CallId;
use crate::macros::is_false;

/// home_file_changed: a call changed a file of the home outside the writable roots (an approved exit's target).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HomeFileChanged {
    /// The call.
    pub call_id: CallId,
    /// The file, absolute, as the call named it.
    pub path: PathBuf,
    /// The file is a floor file: it changes what runs later outside the sandbox (a shell's startup file,
    /// `~/.gitconfig`, `~/.ssh/config`, a user unit).
    pub floor: bool,
    /// The turn's undo restores it (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub covered: bool,
    /// efr's copy of the file as it was before the write, absent when it did not exist before (undo then removes
    /// it) or no copy was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<PathBuf>,
    /// The real file, when `path` reaches it through a link (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real: Option<PathBuf>,
}

/// cache_delete_applied: a contained call deleted files in a real cache (they come back by themselves), applied
/// without a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CacheDeleteApplied {
    /// The call.
    pub call_id: CallId,
    /// The deleted paths, absolute.
    pub paths: Vec<PathBuf>,
    /// The bytes the deletes freed.
    pub freed_bytes: u64,
}
