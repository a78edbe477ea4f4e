//! call.background: a running shell call moved into a background job (docs/jobs.md, "Moving a running call").
//!
//! A contained call moves at once. A call outside the sandbox does not: the first ask answers a preview with a
//! one-time token, and only a second ask with that token (within `[jobs] preview_secs`, for the same call) moves
//! it. The actor checks the call and the token, and hands the command's shell over; the job's start is recorded
//! outside the actor (it records through the actor's mailbox), then [`Actor::end_background`] stores the outcome
//! under the command id.

use std::sync::Arc;
use std::time::{Duration, Instant};

use efr_protocol::ErrorBody;
use efr_protocol::ids::{CallId, CommandId, Timestamp};
use efr_protocol::wire::{CallBackgroundParams, CallBackgroundResult, JobMovedFrom, Launch};
use tokio::sync::mpsc;

use super::{Actor, CommitRefused};
use crate::conversation::Command;
use crate::jobs::{JobHead, JobSink, Jobs, MovedCommand, MovedSpec};
use crate::tools::spec::DEFAULT_MAX_MINUTES;

/// A preview's token that may still be confirmed.
#[derive(Debug)]
pub(super) struct Preview {
    call_id: CallId,
    expires: Instant,
}

/// How a call.background begins.
#[derive(Debug)]
pub enum BackgroundBegin {
    /// The answer: a preview, or the stored outcome of a repeated command id.
    Done(CallBackgroundResult),
    /// Start this job, then end the command with its outcome.
    Move(Box<MoveJob>),
    /// The call is open but its command is not in the hidden shell yet (the shell starts, the line is being
    /// typed): ask again shortly. The token, if any, stays good.
    NotYet,
}

/// A command handed over from the hidden shell, to become a job.
pub struct MoveJob {
    spec: MovedSpec,
    command: MovedCommand,
    jobs: Arc<Jobs>,
    sink: Arc<dyn JobSink>,
}

impl std::fmt::Debug for MoveJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MoveJob")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl MoveJob {
    /// Records the job's start and follows it.
    ///
    /// # Errors
    /// `invalid` when the job could not start (its shell was closed, the conversation runs too many jobs).
    pub async fn run(self) -> Result<CallBackgroundResult, ErrorBody> {
        let info = self
            .jobs
            .adopt(self.spec, self.command, self.sink)
            .await
            .map_err(|e| ErrorBody::invalid(e.to_string()))?;
        Ok(CallBackgroundResult::Moved { job_id: info.id })
    }
}

fn refused(why: impl Into<String>) -> ErrorBody {
    ErrorBody::invalid(why.into())
}

impl Actor {
    /// call.background begins: the stored outcome of a repeated command id, a preview for a call outside the
    /// sandbox, or the command handed over.
    ///
    /// # Errors
    /// `invalid` with a short reason: the call runs no command, the token is not one this efrd gave for the call
    /// (or it was used), it expired, the conversation runs too many jobs.
    pub(super) async fn begin_background(
        &mut self,
        params: CallBackgroundParams,
        me: &mpsc::WeakSender<Command>,
    ) -> Result<BackgroundBegin, ErrorBody> {
        if let Some(stored) = self.stored_outcome(params.command_id).await? {
            return Ok(BackgroundBegin::Done(stored));
        }
        let call_id = params.call_id;
        let Some(movable) = self.open_calls.movable(&call_id) else {
            return Err(refused(format!("call {call_id} runs no command now")));
        };
        let contained = matches!(movable.launch, Launch::Contained { .. });
        let mut confirmed = None;
        if !contained {
            let now = Instant::now();
            self.previews.retain(|_, p| p.expires > now);
            match params.confirm {
                None => {
                    let token = format!("{:032x}", rand::random::<u128>());
                    let lifetime = Duration::from_secs(self.deps.config().jobs.preview_secs);
                    let result = CallBackgroundResult::Preview {
                        token: token.clone(),
                        command: movable.command,
                        max_minutes: DEFAULT_MAX_MINUTES,
                        exits: Vec::new(),
                    };
                    self.previews.insert(
                        token,
                        Preview {
                            call_id,
                            expires: now + lifetime,
                        },
                    );
                    self.store_background(params.command_id, &result).await?;
                    return Ok(BackgroundBegin::Done(result));
                }
                Some(token) => match self.previews.get(&token) {
                    Some(preview) if preview.call_id == call_id => confirmed = Some(token),
                    // A token of another call stays good for its own call.
                    Some(_) => return Err(refused("the token is the preview of another call")),
                    None => {
                        return Err(refused(
                            "the token is not valid: it expired, was used already, or was never given; ask again",
                        ));
                    }
                },
            }
        }
        self.deps.jobs.room(self.id).map_err(|e| refused(e.to_string()))?;
        let mut slot = self.shell.lock().await;
        let Some(shell) = slot.current().cloned() else {
            return Ok(BackgroundBegin::NotYet);
        };
        let Ok(released) = shell.release().await else {
            return Ok(BackgroundBegin::NotYet);
        };
        if let Some(token) = confirmed {
            // Used once.
            self.previews.remove(&token);
        }
        // The conversation's next call starts a new shell in this one's folder; this one is the job's now.
        slot.hand_over(shell.pid(), released.cwd.clone());
        drop(slot);
        let sink = me
            .upgrade()
            .map(|tx| {
                Arc::new(crate::conversation::Recorder {
                    tx,
                    drafts: Arc::clone(&self.drafts),
                    // A job takes no steers; were it asked, the actor answers.
                    steering: Arc::new(std::sync::atomic::AtomicBool::new(true)),
                    start: crate::conversation::recorder::StartGate::open(),
                }) as Arc<dyn JobSink>
            })
            .ok_or_else(|| ErrorBody::new(efr_protocol::ErrorCode::Unavailable, "the conversation stopped"))?;
        let after_secs = u64::try_from((Timestamp::now().0 - movable.since.0).num_seconds()).unwrap_or(0);
        let spec = MovedSpec {
            head: JobHead {
                conversation_id: self.id,
                turn_id: movable.turn_id,
                call_id: call_id.clone(),
                command: movable.command,
                launch: movable.launch,
                max_minutes: DEFAULT_MAX_MINUTES,
                forwards_through: contained.then(|| self.deps.sandbox.options().launcher.clone()),
            },
            moved_from: JobMovedFrom {
                call_id,
                turn_id: movable.turn_id,
                after_secs,
                exits: Vec::new(),
                launcher: contained,
            },
        };
        Ok(BackgroundBegin::Move(Box::new(MoveJob {
            spec,
            command: MovedCommand { shell, released },
            jobs: Arc::clone(&self.deps.jobs),
            sink,
        })))
    }

    /// call.background ends: a move's outcome stored under its command id.
    ///
    /// # Errors
    /// The move's own error; `unavailable` when the store fails.
    pub(super) async fn end_background(
        &mut self,
        command_id: CommandId,
        outcome: Result<CallBackgroundResult, ErrorBody>,
    ) -> Result<CallBackgroundResult, ErrorBody> {
        let result = outcome?;
        self.store_background(command_id, &result).await?;
        Ok(result)
    }

    async fn store_background(
        &mut self,
        command_id: CommandId,
        result: &CallBackgroundResult,
    ) -> Result<(), ErrorBody> {
        let command = self.command_record(command_id, "call.background", result)?;
        match self.commit(Vec::new(), Some(command)).await {
            Ok(_) | Err(CommitRefused::Duplicate(_)) => Ok(()),
            Err(CommitRefused::Failed(error)) => Err(error),
        }
    }
}
