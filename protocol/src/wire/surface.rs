//! Surface changes of contained calls: `surface_change`, `reported_file` and sandbox.surface_respond.
//!
//! A contained call may write a file that code outside the sandbox later runs from, as the user and unsandboxed: an
//! executable in a folder of the user's PATH inside the project, a `.envrc`, a git hook, a Makefile or justfile that a
//! git hook runs, `.vscode/tasks.json`, a `.pre-commit-config.yaml`. The sandbox let it (the project is writable);
//! efrd reports it (sandbox_surface_changed) and asks the user whether to keep each change that can run code
//! (surface_question_requested, answered by sandbox.surface_respond). Source: docs/protocol.md, "The contract": "the
//! wire types of the auto sandbox (phase 1)" (the types surface_change, reported_file and question_id, the method
//! sandbox.surface_respond); the members are this project's choice where the spec does not spell them out, and
//! `docs/auto.md`, "Surface changes", says what efrd does with them.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{CallId, CommandId, ConversationId, QuestionId};
use crate::macros::{is_false, wire_enum};
use crate::wire::FileChangeKind;

wire_enum! {
    /// What kind of surface a changed file is: what outside the sandbox would run it.
    pub enum SurfaceKind {
        /// A file in a folder of the user's PATH that lies inside the project (such as `./bin`): a command of that
        /// name in the user's shell runs it.
        PathExecutable = "path_executable",
        /// A file in `node_modules/.bin`: npm, npx and package scripts run it.
        PackageBin = "package_bin",
        /// A `.envrc`: direnv runs it when the user's shell enters the folder.
        Envrc = "envrc",
        /// A git hook: a file in `.git/hooks` or in the folder of `core.hooksPath`; git runs it.
        GitHook = "git_hook",
        /// A `Makefile` or `justfile` whose targets a git hook of the project runs (make or just named in a hook).
        TaskFile = "task_file",
        /// `.vscode/tasks.json`: the editor runs its tasks (some when the folder opens).
        EditorTasks = "editor_tasks",
        /// `.pre-commit-config.yaml`: pre-commit runs the hooks it names at each commit.
        PreCommitConfig = "pre_commit_config",
    }
    unknown
}

/// One changed file that code outside the sandbox may run from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SurfaceChange {
    /// The path, relative to the turn's project root (as a file_change's `path`).
    pub path: PathBuf,
    /// What kind of surface it is.
    pub surface: SurfaceKind,
    /// How the file changed (added, modified, deleted, renamed).
    pub change: FileChangeKind,
    /// The file can run code outside the sandbox as it is now (an executable hook or PATH entry, an `.envrc`, a
    /// task file, ...); false for a deleted file and for an entry that is not executable. efrd asks the user about
    /// each change that can (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub runs_code: bool,
}

wire_enum! {
    /// What became of a surface change by the end of its turn.
    pub enum SurfaceOutcome {
        /// It stays: the user kept it, or it cannot run code and needed no answer.
        Kept = "kept",
        /// The user did not keep it: the new file or the new content went to efr's trash, the old content came back.
        Removed = "removed",
        /// Its question waits for an answer; until then the change is held (an executable's executable bits are
        /// removed).
        Pending = "pending",
        /// efrd could not do what the answer asked: put back the old content (it was not kept), or give a kept
        /// executable its bits back (its content changed after the question); the change is still held.
        Failed = "failed",
    }
    unknown
}

/// One file of turn_surface_report: a surface change of the turn and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReportedFile {
    /// The call that made the change.
    pub call_id: CallId,
    /// The change.
    pub change: SurfaceChange,
    /// The question about it; absent when none was asked (`runs_code` false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question_id: Option<QuestionId>,
    /// What became of it.
    pub outcome: SurfaceOutcome,
}

/// sandbox.surface_respond params (scope approve, unary, a write).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxSurfaceRespondParams {
    /// The write's id.
    pub command_id: CommandId,
    /// The conversation.
    pub conversation_id: ConversationId,
    /// The question (`s1`, `s2`, ... of surface_question_requested).
    pub question_id: QuestionId,
    /// true: the change stays as the call left it (an executable gets its executable bits back); false: efrd puts
    /// back what was there before the call (a new file goes to efr's trash).
    pub keep: bool,
}

/// sandbox.surface_respond result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxSurfaceRespondResult {
    /// The seq of the surface_question_answered event.
    pub seq: u64,
    /// What became of the change.
    pub outcome: SurfaceOutcome,
}
