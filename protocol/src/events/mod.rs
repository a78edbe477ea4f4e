//! Events: the durable, numbered log of a conversation, and the daemon's own events.
//!
//! # The envelope
//!
//! Each event of a conversation's log is one JSON object `{"seq", "at", "conversation_id", "turn_id"?, "kind",
//! ...members}` ([`Event`]): `seq` numbers the conversation's events from 1 with no gap, `at` is the commit time,
//! `turn_id` is present for an event that belongs to a turn, and `kind` with the members is the [`EventBody`]. An
//! event is broadcast only after it is committed (docs/architecture.md, "The event log").
//!
//! # Kinds a reader does not know
//!
//! A newer daemon adds kinds. A reader takes a kind that it does not know as [`EventBody::Unknown`], which keeps the
//! kind's name and its members as they came, so nothing is silently dropped and a log can be written back unchanged.
//! A known kind whose members do not parse is an error, never `Unknown`.
//!
//! # Events that belong to no conversation
//!
//! login_completed and logout_completed belong to no conversation (spec: "it belongs to no conversation, like
//! login_completed"). Rather than make `conversation_id` optional on every event, they are a separate type,
//! [`DaemonEvent`] `{"seq", "at", "kind", ...members}`, numbered in the daemon's own log. A conversation's log never
//! holds one, so `Event::conversation_id` is always there.

mod always;
mod approval;
mod conversation;
mod daemon;
mod delete;
mod exits;
mod home;
mod jobs;
mod message;
mod presence;
mod sandbox;
mod shell;
mod steer;
mod surface;
mod tool;
mod turn;
mod undo;

use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::ids::{CallId, ConversationId, Timestamp, TurnId};

pub use always::AlwaysRuleSaved;
pub use approval::{ApprovalExpired, ApprovalRequested, ApprovalResolved};
pub use conversation::{ConversationCreated, PromptQueued, TerminalAttached};
pub use daemon::{LoginCompleted, LogoutCompleted};
pub use delete::ConversationDeleted;
pub use exits::{
    ClassifierPaused, ExitJudged, ExitRequested, ExitReviewStarted, MAX_PREVIOUS_EXITS, PauseReason, previous_exit,
};
pub use home::{CacheDeleteApplied, HomeFileChanged};
pub use jobs::{JobEnded, JobNotice, JobNoticeHeld, JobPortForwarded, JobStarted, JobWatchMatched};
pub use message::{AssistantMessageCompleted, AssistantMessageUpdated};
pub use presence::PresenceChanged;
pub use sandbox::SandboxUnavailable;
pub use shell::{ShellCommandDetached, ShellCommandEnded, ShellCommandInputChanged};
pub use steer::{PromptWithdrawn, SteeringDelivered, SteeringWithdrawn, TurnSteered};
pub use surface::{SandboxSurfaceChanged, SurfaceQuestionAnswered, SurfaceQuestionRequested, TurnSurfaceReport};
pub use tool::{CallStatus, ToolCallCompleted, ToolCallInputChanged, ToolCallStarted};
pub use turn::{TurnCancelled, TurnCompleted, TurnFailed, TurnInterruptRequested, TurnInterrupted, TurnStarted};
pub use undo::{SnapshotPhase, SnapshotTaken, UndoApplied};

/// One event of a conversation's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// The event's number in its conversation, from 1, with no gap.
    pub seq: u64,
    /// When it was committed.
    pub at: Timestamp,
    /// The conversation.
    pub conversation_id: ConversationId,
    /// The turn it belongs to; absent for an event of the conversation, not of a turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// `kind` and the members.
    #[serde(flatten)]
    pub body: EventBody,
}

/// One event of the daemon's own log: an event that belongs to no conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DaemonEvent {
    /// The event's number in the daemon's log, from 1.
    pub seq: u64,
    /// When it was committed.
    pub at: Timestamp,
    /// `kind` and the members.
    #[serde(flatten)]
    pub body: DaemonEventBody,
}

/// An event of a kind that this reader does not know: its kind and its members, kept as they came.
///
/// On output it is written back as it came: `kind`, then the members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UnknownEvent {
    /// The kind's name.
    pub kind: String,
    /// Every other member of the body (the envelope's members are not here).
    #[serde(flatten)]
    pub members: Map<String, Value>,
}

/// Defines an event body enum: tagged by `kind`, with a `KINDS` list and an `Unknown` variant for the rest.
///
/// The invocation names the schema with `#[schemars(rename = "...")]` (the derive would call it `Self`). The derive
/// runs with `remote = "Self"` so that the derived code becomes the inherent `serialize`/`deserialize`
/// that the hand-written trait impls below call for the known kinds.
macro_rules! event_body {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident($ty:ty) = $kind:literal, )+
        }
    ) => {
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(remote = "Self", tag = "kind")]
        $(#[$meta])*
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $kind)] $variant($ty), )+
            /// A kind that this reader does not know, kept as it came. Not part of the schema.
            #[serde(skip)]
            Unknown(UnknownEvent),
        }

        impl $name {
            /// The kinds that this reader knows, in the order of the spec.
            pub const KINDS: &'static [&'static str] = &[$($kind),+];

            /// The event's kind, such as `turn_started` (the name it came with for `Unknown`).
            #[must_use]
            pub fn kind(&self) -> &str {
                match self {
                    $( Self::$variant(_) => $kind, )+
                    Self::Unknown(unknown) => &unknown.kind,
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    Self::Unknown(unknown) => unknown.serialize(serializer),
                    known => $name::serialize(known, serializer),
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let mut members = Map::<String, Value>::deserialize(deserializer)?;
                let kind = match members.get("kind") {
                    Some(Value::String(kind)) => kind.clone(),
                    Some(_) => return Err(D::Error::custom("`kind` must be a string")),
                    None => return Err(D::Error::missing_field("kind")),
                };
                if Self::KINDS.contains(&kind.as_str()) {
                    $name::deserialize(Value::Object(members))
                        .map_err(|error| D::Error::custom(format_args!("event `{kind}`: {error}")))
                } else {
                    members.remove("kind");
                    Ok(Self::Unknown(UnknownEvent { kind, members }))
                }
            }
        }
    };
}

event_body! {
    /// The kind and members of a conversation's event, tagged by `kind`.
    #[schemars(rename = "EventBody")]
    pub enum EventBody {
        /// The conversation was created (its first event).
        ConversationCreated(ConversationCreated) = "conversation_created",
        /// A prompt waits for its turn.
        PromptQueued(PromptQueued) = "prompt_queued",
        /// A queued prompt was taken back before its turn started (the turn's last event).
        PromptWithdrawn(PromptWithdrawn) = "prompt_withdrawn",
        /// A turn started.
        TurnStarted(TurnStarted) = "turn_started",
        /// A prompt was recorded as not run (such as one that waited when the daemon restarted).
        TurnCancelled(TurnCancelled) = "turn_cancelled",
        /// An interrupt of the turn was asked for.
        TurnInterruptRequested(TurnInterruptRequested) = "turn_interrupt_requested",
        /// A message for the running turn, which its next model call reads.
        TurnSteered(TurnSteered) = "turn_steered",
        /// A model call read these steers.
        SteeringDelivered(SteeringDelivered) = "steering_delivered",
        /// Steers that no model call read were taken back.
        SteeringWithdrawn(SteeringWithdrawn) = "steering_withdrawn",
        /// The turn stopped on an interrupt.
        TurnInterrupted(TurnInterrupted) = "turn_interrupted",
        /// The turn ended with an answer.
        TurnCompleted(TurnCompleted) = "turn_completed",
        /// The turn ended with an error.
        TurnFailed(TurnFailed) = "turn_failed",
        /// Text was added to an assistant message.
        AssistantMessageUpdated(AssistantMessageUpdated) = "assistant_message_updated",
        /// An assistant message is whole.
        AssistantMessageCompleted(AssistantMessageCompleted) = "assistant_message_completed",
        /// The model called a tool.
        ToolCallStarted(ToolCallStarted) = "tool_call_started",
        /// A call's command began or stopped waiting for input.
        ToolCallInputChanged(ToolCallInputChanged) = "tool_call_input_changed",
        /// A call answered the model.
        ToolCallCompleted(ToolCallCompleted) = "tool_call_completed",
        /// A call waits for the user's approval.
        ApprovalRequested(ApprovalRequested) = "approval_requested",
        /// The approval question was answered.
        ApprovalResolved(ApprovalResolved) = "approval_resolved",
        /// The approval question expired.
        ApprovalExpired(ApprovalExpired) = "approval_expired",
        /// A shell call's command still runs after its call answered.
        ShellCommandDetached(ShellCommandDetached) = "shell_command_detached",
        /// That command began or stopped waiting for input.
        ShellCommandInputChanged(ShellCommandInputChanged) = "shell_command_input_changed",
        /// That command ended.
        ShellCommandEnded(ShellCommandEnded) = "shell_command_ended",
        /// A call asks for an exit from the sandbox.
        ExitRequested(ExitRequested) = "exit_requested",
        /// The judge chain starts on a call's exits.
        ExitReviewStarted(ExitReviewStarted) = "exit_review_started",
        /// The chain decided an exit.
        ExitJudged(ExitJudged) = "exit_judged",
        /// The classifier was paused after too many denials.
        ClassifierPaused(ClassifierPaused) = "classifier_paused",
        /// A call changed a file of the home outside the writable roots.
        HomeFileChanged(HomeFileChanged) = "home_file_changed",
        /// A contained call deleted files in a real cache, without a question.
        CacheDeleteApplied(CacheDeleteApplied) = "cache_delete_applied",
        /// What became of the rule that an allow_always answer asked efrd to save.
        AlwaysRuleSaved(AlwaysRuleSaved) = "always_rule_saved",
        /// The user became present or away (it belongs to no turn).
        PresenceChanged(PresenceChanged) = "presence_changed",
        /// The sandbox cannot run, so contained calls cannot either.
        SandboxUnavailable(SandboxUnavailable) = "sandbox_unavailable",
        /// A contained call changed files that code outside the sandbox may run from.
        SandboxSurfaceChanged(SandboxSurfaceChanged) = "sandbox_surface_changed",
        /// efrd asks the user whether to keep a surface change that can run code.
        SurfaceQuestionRequested(SurfaceQuestionRequested) = "surface_question_requested",
        /// The user answered a surface question (it belongs to no turn).
        SurfaceQuestionAnswered(SurfaceQuestionAnswered) = "surface_question_answered",
        /// The surface changes of a turn and what became of each, at its end.
        TurnSurfaceReport(TurnSurfaceReport) = "turn_surface_report",
        /// A turn took a snapshot of a root it could write.
        SnapshotTaken(SnapshotTaken) = "snapshot_taken",
        /// An undo or redo of a turn wrote files (it belongs to no turn).
        UndoApplied(UndoApplied) = "undo_applied",
        /// The model's copy of the conversation was compacted: a summary replaces its older turns (the log keeps
        /// every event).
        ConversationCompacted(crate::wire::Compaction) = "conversation_compacted",
        /// A shell call started a background job (it belongs to the call's turn).
        JobStarted(JobStarted) = "job_started",
        /// A line of a job's output matched its watch (it belongs to no turn).
        JobWatchMatched(JobWatchMatched) = "job_watch_matched",
        /// A job ended (it belongs to no turn).
        JobEnded(JobEnded) = "job_ended",
        /// What the model hears of a job (it belongs to the turn it goes to).
        JobNotice(JobNotice) = "job_notice",
        /// A job's notice did not wake a turn (it belongs to no turn).
        JobNoticeHeld(JobNoticeHeld) = "job_notice_held",
        /// What efr did with a port a contained job listens on (it belongs to no turn).
        JobPortForwarded(JobPortForwarded) = "job_port_forwarded",
        /// The conversation was deleted: its last event, and the only one its log keeps.
        ConversationDeleted(ConversationDeleted) = "conversation_deleted",
        /// The conversation became the conversation of a terminal's slot (it belongs to no turn).
        TerminalAttached(TerminalAttached) = "terminal_attached",
    }
}

event_body! {
    /// The kind and members of a daemon event (one that belongs to no conversation), tagged by `kind`.
    #[schemars(rename = "DaemonEventBody")]
    pub enum DaemonEventBody {
        /// A provider login completed.
        LoginCompleted(LoginCompleted) = "login_completed",
        /// A provider's login was removed.
        LogoutCompleted(LogoutCompleted) = "logout_completed",
    }
}

impl EventBody {
    /// The tool call the event is about, for the kinds that have one.
    #[must_use]
    pub fn call_id(&self) -> Option<&CallId> {
        match self {
            Self::ToolCallStarted(e) => Some(&e.call_id),
            Self::ToolCallInputChanged(e) => Some(&e.call_id),
            Self::ToolCallCompleted(e) => Some(&e.call_id),
            Self::ApprovalRequested(e) => Some(&e.call_id),
            Self::ApprovalResolved(e) => Some(&e.call_id),
            Self::ApprovalExpired(e) => Some(&e.call_id),
            Self::ShellCommandDetached(e) => Some(&e.call_id),
            Self::ShellCommandInputChanged(e) => Some(&e.call_id),
            Self::ShellCommandEnded(e) => Some(&e.call_id),
            Self::ExitRequested(e) => Some(&e.call_id),
            Self::ExitReviewStarted(e) => Some(&e.call_id),
            Self::ExitJudged(e) => Some(&e.call_id),
            Self::SandboxSurfaceChanged(e) => Some(&e.call_id),
            Self::HomeFileChanged(e) => Some(&e.call_id),
            Self::CacheDeleteApplied(e) => Some(&e.call_id),
            Self::AlwaysRuleSaved(e) => Some(&e.call_id),
            Self::SurfaceQuestionRequested(e) => Some(&e.call_id),
            Self::JobStarted(e) => Some(&e.call_id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
