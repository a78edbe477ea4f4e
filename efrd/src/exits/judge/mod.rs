//! The judge chain of auto mode's exits (docs/adr/0016-exit-kinds.md, "Decision" 5): the classifier model
//! (`[auto] classifier_model`), then the turn's model when no classifier is available or the classifier abstains,
//! then the user. It fails closed: an error, a timeout or an unreadable answer never approves.
//!
//! [`review`] decides one call's exits (all of them together: the call runs only when every one is approved). It
//! returns the events the turn records (exit_review_started, exit_judged of a model's decision, classifier_paused)
//! and the [`ChainOutcome`]; asking the user and recording the user's exit_judged are the turn's.
//!
//! - [`prompt`]: what a model judge is sent (never a tool's output, a file's content or a secret);
//! - [`answer`]: its answer, read strictly (anything but the one JSON object asked for denies);
//! - [`chain`]: the order of the judges, the reask, the timeout, the pause after denials;
//! - [`model`]: a [`JudgeModel`] over a real provider, and [`Judges::for_turn`], the judges of a turn from
//!   `[auto]` and the catalog.

pub mod answer;
pub mod chain;
pub mod model;
pub mod prompt;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use efr_protocol::events::EventBody;
use efr_protocol::ids::CallId;
use efr_protocol::wire::{ChainStep, ExitRecord};

pub use model::ProviderJudge;

/// A future a [`JudgeModel`] returns.
pub type JudgeFuture<'a> = Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

/// What a model judge is sent: fixed instructions and the input (the records, the user's prompt, the recent calls).
/// It never holds a tool's output or a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgeRequest {
    /// The judge's instructions (the system prompt).
    pub instructions: String,
    /// What it judges.
    pub input: String,
}

/// A model that judges exits: the classifier or the turn's model.
pub trait JudgeModel: Send + Sync + fmt::Debug {
    /// The model's name for exit_judged's `skipped` and the log, such as `openai_api/gpt-5-mini`.
    fn name(&self) -> String;

    /// Sends `request` and yields the model's whole answer text.
    ///
    /// # Errors
    /// Why no answer came (the provider's error), for the log; the chain treats it as a deny.
    fn ask<'a>(&'a self, request: &'a JudgeRequest) -> JudgeFuture<'a>;
}

/// The judges of a turn. [`Judges::default`] has no model (every exit goes to the user), the default timeout and
/// pause limits of `[auto]`.
#[derive(Debug, Clone)]
pub struct Judges {
    /// The classifier model; `None` when none is available.
    pub classifier: Option<Arc<dyn JudgeModel>>,
    /// The turn's own model; `None` in a test that has none.
    pub turn_model: Option<Arc<dyn JudgeModel>>,
    /// The longest wait for one model's answer.
    pub timeout: Duration,
    /// Models the chain cannot ask (such as a classifier that is not in models.list), for `skipped`.
    pub unavailable: Vec<String>,
    /// Exits denied in a row that pause the model judges for the rest of the turn (`[auto]
    /// pause_after_denials_in_a_row`).
    pub pause_in_a_row: u64,
    /// Exits denied in the turn that pause them (`[auto] pause_after_denials_per_turn`).
    pub pause_per_turn: u64,
}

impl Default for Judges {
    fn default() -> Self {
        let auto = crate::config::AutoSection::default();
        Self {
            classifier: None,
            turn_model: None,
            timeout: Duration::from_secs(auto.judge_timeout_secs),
            unavailable: Vec::new(),
            pause_in_a_row: auto.pause_after_denials_in_a_row,
            pause_per_turn: auto.pause_after_denials_per_turn,
        }
    }
}

/// One call's exits and what a judge may see besides them.
#[derive(Debug, Clone, Copy)]
pub struct Review<'a> {
    /// The call.
    pub call_id: &'a CallId,
    /// Its exits, in the order of their exit_requested events.
    pub records: &'a [ExitRecord],
    /// The user's prompt of the turn.
    pub user_prompt: &'a str,
    /// The turn's recent calls (their lines or a patch's files, never their output), oldest first.
    pub recent_calls: &'a [String],
    /// The turn's exits judged before these, oldest first, each `[kind, verdict]` (exit_requested's
    /// `previous_exits_this_turn`).
    pub previous_exits: &'a [[String; 2]],
}

/// The turn's count of denials, which pauses the classifier (classifier_paused).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnDenials {
    /// Exits denied in a row.
    pub in_a_row: u64,
    /// Exits denied in this turn.
    pub this_turn: u64,
    /// The classifier is paused for the rest of the turn.
    pub paused: bool,
}

/// What the chain decided for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainOutcome {
    /// A model approved every exit: the call runs again with their needs.
    Approved,
    /// A model denied: the call does not run; `reason` is the one line the model is told.
    Denied {
        /// Why.
        reason: String,
    },
    /// The user decides: approval_requested with the exit member.
    AskUser {
        /// The step that passed it on; `None` when it came to the user at once (a kind only the user approves).
        passed_on_by: Option<ChainStep>,
        /// Why the user is asked: the last judge's reason, or why only the user may approve.
        reason: String,
    },
}

/// The chain's result for one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainResult {
    /// The events to record, in order: exit_review_started, then a model judge's exit_judged and
    /// classifier_paused.
    pub events: Vec<EventBody>,
    /// The decision.
    pub outcome: ChainOutcome,
    /// The models the chain skipped (not available, or paused): exit_judged's `skipped`, for the user's
    /// exit_judged when the outcome is [`ChainOutcome::AskUser`] (a model's exit_judged already holds it).
    pub skipped: Vec<String>,
}

/// Decides one call's exits: the chain of [`chain`] (see its docs for each rule).
pub async fn review(judges: &Judges, denials: &mut TurnDenials, review: Review<'_>) -> ChainResult {
    chain::review(judges, denials, review).await
}
