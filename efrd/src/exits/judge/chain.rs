//! The order of the judges and the rules of each step (docs/adr/0016-exit-kinds.md, "Decision" 5; docs/auto.md,
//! "The judges").
//!
//! 1. exit_review_started (the kinds). A record that only the user may approve ([`approvers`]) sends the call to the
//!    user at once: no model is asked.
//! 2. While the model judges are paused (too many denials in this turn), the call goes to the user. The turn's model
//!    is the one asking for the exits, so it does not judge alone past a paused classifier.
//! 3. The classifier ([`Judges::classifier`]); when there is none, or it abstains, the turn's model. A model's approve
//!    or deny ends the chain with one exit_judged per record; a deny counts in [`TurnDenials`] and may record
//!    classifier_paused.
//! 4. The user, when every model abstained or none is available.
//!
//! Each model step fails closed: an error, a timeout ([`Judges::timeout`], per question) or an unreadable answer
//! ([`answer::Answer::Unreadable`]) is a deny whose reason says so. A reason that says nothing is asked for once more
//! (`reasked`); a second one that says nothing is a deny.

use std::sync::Arc;
use std::time::Duration;

use efr_protocol::events::{ClassifierPaused, EventBody, ExitJudged, ExitReviewStarted, PauseReason};
use efr_protocol::wire::{ChainStep, ExitKind, JudgeKind, Verdict};

use super::answer::{self, Answer};
use super::prompt;
use super::{ChainOutcome, ChainResult, JudgeModel, Judges, Review, TurnDenials};
use crate::exits::approvers::{Approvers, approvers};

impl TurnDenials {
    /// Notes an approve: the run of denials in a row ends.
    pub fn approved(&mut self) {
        self.in_a_row = 0;
    }

    /// Notes `exits` denied exits; returns classifier_paused when this reaches a limit of `judges` for the first time
    /// in the turn (in a row first, then per turn).
    pub fn denied(&mut self, exits: u64, judges: &Judges) -> Option<ClassifierPaused> {
        self.in_a_row += exits;
        self.this_turn += exits;
        if self.paused {
            return None;
        }
        let reached = if self.in_a_row >= judges.pause_in_a_row {
            (PauseReason::InARow, self.in_a_row)
        } else if self.this_turn >= judges.pause_per_turn {
            (PauseReason::PerTurn, self.this_turn)
        } else {
            return None;
        };
        self.paused = true;
        Some(ClassifierPaused {
            reason: reached.0,
            denials: reached.1,
        })
    }
}

/// What one model step decided.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decision {
    verdict: Verdict,
    reason: String,
    reasked: bool,
}

/// The chain on one call's exits.
pub(super) async fn review(judges: &Judges, denials: &mut TurnDenials, review: Review<'_>) -> ChainResult {
    let mut events = vec![EventBody::ExitReviewStarted(ExitReviewStarted {
        call_id: review.call_id.clone(),
        kinds: review.records.iter().map(|r| r.kind).collect(),
    })];
    let mut skipped = judges.unavailable.clone();
    if let Some(record) = review.records.iter().find(|r| approvers(r) == Approvers::UserAlone) {
        return ask_user(events, None, user_alone_reason(record.kind), skipped);
    }
    if review.records.is_empty() {
        // Nothing to judge is not an approval: the user sees the call.
        return ask_user(events, None, "efr found no exit to judge".to_owned(), skipped);
    }
    let models = [
        (ChainStep::ClassifierModel, JudgeKind::Classifier, &judges.classifier),
        (ChainStep::TurnModel, JudgeKind::TurnModel, &judges.turn_model),
    ];
    if denials.paused {
        skipped.extend(
            models
                .iter()
                .filter_map(|(_, _, model)| model.as_ref().map(|m| m.name())),
        );
        let reason = format!(
            "the model judges are paused after {} denied exits in this turn",
            denials.this_turn
        );
        return ask_user(events, None, reason, skipped);
    }
    let mut passed_on = None;
    for (step, judge, model) in models {
        let Some(model) = model else { continue };
        // The turn's model judges only when there is no classifier or the classifier abstained.
        if step == ChainStep::TurnModel && judges.classifier.is_some() && passed_on.is_none() {
            break;
        }
        let decision = decide(model, judge, judges.timeout, &review).await;
        if decision.verdict == Verdict::Abstain {
            passed_on = Some((step, decision.reason));
            continue;
        }
        let outcome = settle(judges, denials, &review, (step, judge), decision, &skipped, &mut events);
        return ChainResult {
            events,
            outcome,
            skipped,
        };
    }
    let (passed_on_by, reason) = match passed_on {
        Some((step, reason)) => (Some(step), reason),
        None => (None, "no model judge is available".to_owned()),
    };
    ask_user(events, passed_on_by, reason, skipped)
}

/// A model's approve or deny: one exit_judged per record, the count of denials (and classifier_paused when it
/// reaches a limit), and the outcome.
fn settle(
    judges: &Judges,
    denials: &mut TurnDenials,
    review: &Review<'_>,
    (step, judge): (ChainStep, JudgeKind),
    decision: Decision,
    skipped: &[String],
    events: &mut Vec<EventBody>,
) -> ChainOutcome {
    for record in review.records {
        events.push(EventBody::ExitJudged(ExitJudged {
            call_id: review.call_id.clone(),
            exit_kind: record.kind,
            judge,
            verdict: decision.verdict,
            reason: decision.reason.clone(),
            chain_step: Some(step),
            skipped: skipped.to_vec(),
            reasked: decision.reasked,
        }));
    }
    if decision.verdict == Verdict::Approve {
        denials.approved();
        return ChainOutcome::Approved;
    }
    let exits = u64::try_from(review.records.len()).unwrap_or(u64::MAX);
    if let Some(paused) = denials.denied(exits, judges) {
        events.push(EventBody::ClassifierPaused(paused));
    }
    ChainOutcome::Denied {
        reason: decision.reason,
    }
}

fn ask_user(
    events: Vec<EventBody>,
    passed_on_by: Option<ChainStep>,
    reason: String,
    skipped: Vec<String>,
) -> ChainResult {
    ChainResult {
        events,
        outcome: ChainOutcome::AskUser { passed_on_by, reason },
        skipped,
    }
}

/// Why only the user may approve a record of `kind`.
fn user_alone_reason(kind: ExitKind) -> String {
    format!("only you may approve this {} exit", kind.as_str())
}

/// One model step: the question, once more when its reason says nothing, and every failure a deny.
async fn decide(model: &Arc<dyn JudgeModel>, judge: JudgeKind, timeout: Duration, review: &Review<'_>) -> Decision {
    let who = match judge {
        JudgeKind::Classifier => "the classifier",
        _ => "the turn's model",
    };
    let deny = |reason: String, reasked: bool| Decision {
        verdict: Verdict::Deny,
        reason,
        reasked,
    };
    let mut reasked = false;
    loop {
        let request = prompt::request(review, reasked);
        let text = match tokio::time::timeout(timeout, model.ask(&request)).await {
            Ok(Ok(text)) => text,
            Ok(Err(error)) => {
                tracing::warn!(judge = %model.name(), %error, "an exit's judge failed; denied");
                return deny(format!("{who} could not judge the exit ({error}); denied"), reasked);
            }
            Err(_) => {
                tracing::warn!(judge = %model.name(), "an exit's judge did not answer in time; denied");
                return deny(
                    format!("{who} did not answer within {}; denied", seconds(timeout)),
                    reasked,
                );
            }
        };
        match answer::parse(&text) {
            Answer::Verdict { verdict, reason } => {
                return Decision {
                    verdict,
                    reason,
                    reasked,
                };
            }
            Answer::Unreadable { why } => {
                tracing::warn!(judge = %model.name(), %why, "an exit's judge answered unreadably; denied");
                return deny(format!("{who}'s answer could not be read ({why}); denied"), reasked);
            }
            Answer::NoReason { .. } if reasked => {
                return deny(format!("{who} gave no real reason, twice; denied"), true);
            }
            Answer::NoReason { .. } => reasked = true,
        }
    }
}

/// A timeout in words: `20 s`, `0.25 s`.
fn seconds(timeout: Duration) -> String {
    let secs = timeout.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0} s")
    } else {
        format!("{secs} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_pause_once_in_a_row_first_and_an_approve_resets_the_row() {
        let judges = Judges {
            pause_in_a_row: 3,
            pause_per_turn: 5,
            ..Judges::default()
        };
        let mut denials = TurnDenials::default();
        assert_eq!(denials.denied(2, &judges), None);
        denials.approved();
        assert_eq!(denials.in_a_row, 0);
        assert_eq!(denials.this_turn, 2);
        assert_eq!(denials.denied(1, &judges), None);
        assert_eq!(
            denials.denied(1, &judges),
            None,
            "in a row: 2, this turn: 4, below both limits"
        );
        assert_eq!(
            denials.denied(1, &judges),
            Some(ClassifierPaused {
                reason: PauseReason::InARow,
                denials: 3
            })
        );
        assert!(denials.paused);
        assert_eq!(denials.denied(5, &judges), None, "classifier_paused is recorded once");

        let mut denials = TurnDenials::default();
        assert_eq!(denials.denied(2, &judges), None);
        denials.approved();
        assert_eq!(denials.denied(2, &judges), None);
        denials.approved();
        assert_eq!(
            denials.denied(1, &judges),
            Some(ClassifierPaused {
                reason: PauseReason::PerTurn,
                denials: 5
            })
        );
    }

    #[test]
    fn timeouts_in_words() {
        assert_eq!(seconds(Duration::from_secs(20)), "20 s");
        assert_eq!(seconds(Duration::from_millis(250)), "0.25 s");
    }
}
