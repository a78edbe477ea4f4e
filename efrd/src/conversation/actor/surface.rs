//! The actor's surface questions (`docs/auto.md`, "Surface changes"): a call's surface changes and questions
//! recorded and kept ([`crate::turn::surface::Book`]), sandbox.surface_respond, and a turn's turn_surface_report.

// A part of the actor: its imports and private types.
use super::*;

use efr_protocol::events::{
    SandboxSurfaceChanged, SurfaceQuestionAnswered, SurfaceQuestionRequested, TurnSurfaceReport,
};
use efr_protocol::ids::QuestionId;
use efr_protocol::wire::{SandboxSurfaceRespondParams, SandboxSurfaceRespondResult, SurfaceChange, SurfaceOutcome};

use crate::turn::sink::Held;
use crate::turn::surface::NotAnswerable;

impl Actor {
    /// Records sandbox_surface_changed and one surface_question_requested per held change, in one commit, and keeps
    /// the questions; returns their ids.
    pub(super) async fn surface_changed(
        &mut self,
        turn_id: TurnId,
        call_id: CallId,
        changes: Vec<SurfaceChange>,
        held: Vec<Held>,
    ) -> Result<Vec<QuestionId>, ErrorBody> {
        let ids = self.surface.next_ids(held.len());
        let mut bodies = vec![(
            Some(turn_id),
            EventBody::SandboxSurfaceChanged(SandboxSurfaceChanged {
                call_id: call_id.clone(),
                changes: changes.clone(),
            }),
        )];
        for (id, held) in ids.iter().zip(&held) {
            bodies.push((
                Some(turn_id),
                EventBody::SurfaceQuestionRequested(SurfaceQuestionRequested {
                    question_id: id.clone(),
                    call_id: call_id.clone(),
                    change: held.change.clone(),
                    held: held.held(),
                    cannot_remove: held.cannot_remove(),
                }),
            ));
        }
        self.commit(bodies, None).await.map_err(ErrorBody::from)?;
        self.surface
            .asked(turn_id, &call_id, changes, ids.iter().cloned().zip(held).collect());
        Ok(ids)
    }

    /// turn_surface_report of a turn that ends, when it made a surface change.
    pub(super) async fn surface_report(&mut self, turn_id: TurnId) -> Result<(), ErrorBody> {
        let Some(files) = self.surface.report(turn_id) else {
            return Ok(());
        };
        let body = EventBody::TurnSurfaceReport(TurnSurfaceReport { files });
        self.commit(vec![(Some(turn_id), body)], None)
            .await
            .map(drop)
            .map_err(ErrorBody::from)
    }

    /// sandbox.surface_respond: the first answer wins; the same command id again returns the same result. The file
    /// work (the bits back, or the change to the trash and the old content back) is done before the answer is
    /// recorded; the trash keeps what it moved, so nothing is lost when the record fails.
    pub(super) async fn surface_respond(
        &mut self,
        params: SandboxSurfaceRespondParams,
        origin: Origin,
    ) -> Result<SandboxSurfaceRespondResult, ErrorBody> {
        if let Some(stored) = self.stored_outcome(params.command_id).await? {
            return Ok(stored);
        }
        let id = params.question_id.clone();
        let held = match self.surface.waiting(&id) {
            Ok(held) => held.clone(),
            Err(NotAnswerable::Unknown) => {
                return Err(ErrorBody::new(
                    ErrorCode::NotFound,
                    format!("no surface question {id} was asked"),
                ));
            }
            Err(NotAnswerable::Answered) => {
                return Err(ErrorBody::new(
                    ErrorCode::Conflict,
                    format!("surface question {id} was already answered"),
                ));
            }
            Err(NotAnswerable::Orphaned) => {
                return Err(ErrorBody::new(
                    ErrorCode::Unavailable,
                    format!(
                        "surface question {id} was asked before efrd restarted, so its hold is not known any more: \
                         the change stays as efrd left it (an executable not executable); see to it by hand"
                    ),
                ));
            }
        };
        let trash_dir = self.deps.snapshots.trash_dir();
        let folder = format!("surface-{}-{id}", self.id);
        let keep = params.keep;
        let done = tokio::task::spawn_blocking(move || {
            if keep {
                crate::turn::surface::keep(&held)
            } else {
                crate::turn::surface::remove(&held, &trash_dir, &folder)
            }
        })
        .await
        .unwrap_or_else(|e| Err(format!("the file work did not finish: {e}")));
        let (outcome, error) = match (done, keep) {
            (Ok(()), true) => (SurfaceOutcome::Kept, None),
            (Ok(()), false) => (SurfaceOutcome::Removed, None),
            (Err(error), _) => (SurfaceOutcome::Failed, Some(error)),
        };
        // The file work is done: whatever the record does, the question is not asked again.
        self.surface.answered(&id, outcome);
        let result = SandboxSurfaceRespondResult {
            seq: self.last_seq + 1,
            outcome,
        };
        let command = self.command_record(params.command_id, "sandbox.surface_respond", &result)?;
        let body = EventBody::SurfaceQuestionAnswered(SurfaceQuestionAnswered {
            question_id: id,
            keep,
            outcome,
            origin,
            error,
        });
        match self.commit(vec![(None, body)], Some(command)).await {
            Ok(_) => Ok(result),
            Err(CommitRefused::Duplicate(record)) => decode_outcome(&record),
            Err(CommitRefused::Failed(error)) => Err(error),
        }
    }
}
