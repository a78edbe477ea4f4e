//! Full mode's exits in the log (docs/adr/0029-full-mode.md): a direct call of full mode leaves the sandbox with no
//! review and no question, so each exit that auto would have judged is recorded as exit_requested and exit_judged
//! with the judge `full` (approve); a guarded delete's question that expired is exit_judged `full` deny. A floor
//! file's edit is not among them: it goes to the user alone, as in auto.
//!
//! Source: docs/protocol.md, "The contract": "full mode" ("The judge of exit_judged gains full: full mode let the
//! exit run with no review and no question, or a question of full mode expired").

use efr_protocol::events::{EventBody, ExitJudged};
use efr_protocol::ids::{CallId, TurnId};
use efr_protocol::wire::{ExitKind, ExitRecord, JudgeKind, Verdict};

use super::env::ToolEnv;
use super::sink::Sink;

/// exit_judged's reason when a guarded delete's question expired.
pub const EXPIRED: &str = "full mode's question expired: the delete did not run";

fn judged(call_id: &CallId, exit_kind: ExitKind, verdict: Verdict, reason: &str) -> EventBody {
    EventBody::ExitJudged(ExitJudged {
        call_id: call_id.clone(),
        exit_kind,
        judge: JudgeKind::Full,
        verdict,
        reason: reason.to_owned(),
        chain_step: None,
        skipped: Vec::new(),
        reasked: false,
    })
}

/// Records the exits that full mode lets run (`records`, not empty): their exit_requested, then an exit_judged
/// `full` approve each, in one commit. `None` when the sink is gone.
pub async fn let_run(
    env: &ToolEnv,
    sink: &Sink,
    (turn_id, call_id): (TurnId, &CallId),
    records: &[ExitRecord],
) -> Option<()> {
    let mut bodies = super::exits::requested(env, call_id, records);
    let approved: Vec<EventBody> = records
        .iter()
        .map(|record| judged(call_id, record.kind, Verdict::Approve, ""))
        .collect();
    env.exits.note_judged(&approved);
    bodies.extend(approved);
    sink.record(turn_id, bodies).await.ok()?;
    Some(())
}

/// Records that a guarded delete's question expired: exit_judged `full` deny of the `delete`. `None` when the sink
/// is gone.
pub async fn expired(env: &ToolEnv, sink: &Sink, (turn_id, call_id): (TurnId, &CallId)) -> Option<()> {
    let body = vec![judged(call_id, ExitKind::Delete, Verdict::Deny, EXPIRED)];
    env.exits.note_judged(&body);
    sink.record(turn_id, body).await.ok()?;
    Some(())
}
