//! The always rules in the turn (docs/auto.md, "Always rules"): a call whose exits the user's rules cover runs with
//! no judge and no question (`exit_judged` with the judge `always_rule`); a question that a rule may cover offers
//! it (the exit's `always`); an allow_always answer saves it into `config.toml` and records `always_rule_saved`.
//! The rules themselves are [`crate::exits::always`]'s; the write is [`crate::config::ConfigState::save_always`]'s.

use efr_protocol::events::{AlwaysRuleSaved, EventBody, ExitJudged, ExitReviewStarted};
use efr_protocol::ids::{CallId, TurnId};
use efr_protocol::wire::{ExitRecord, JudgeKind, Verdict};

use super::env::ToolEnv;
use super::sink::Sink;
use crate::config::AlwaysRule;
use crate::config::state::SAVE_RELOAD_WITHIN;
use crate::exits::always::{RuleFloors, covering, offer};

/// The floors that disable a rule in `env`'s turn.
#[must_use]
pub fn floors(env: &ToolEnv) -> RuleFloors {
    RuleFloors {
        home: env.home.clone(),
        efr_dirs: env.efr_dirs.clone(),
    }
}

/// When the config's rules cover every record: records `exit_review_started` and one `exit_judged` per record (judge
/// `always_rule`, the rule in the reason) and returns `Some(true)` (the caller, which holds the turn's denials, notes
/// the approve). `Some(false)`: no rule covers them. `None`: the
/// sink is gone.
pub async fn approve_by_rule(
    env: &ToolEnv,
    sink: &Sink,
    (turn_id, call_id): (TurnId, &CallId),
    records: &[ExitRecord],
) -> Option<bool> {
    let Some(config) = &env.exits.config else {
        return Some(false);
    };
    let current = config.current();
    let rules = &current.auto.always;
    let Some(used) = covering(
        rules,
        records,
        env.roots.first().map(std::path::PathBuf::as_path),
        &floors(env),
    ) else {
        return Some(false);
    };
    let mut events = vec![EventBody::ExitReviewStarted(ExitReviewStarted {
        call_id: call_id.clone(),
        kinds: records.iter().map(|r| r.kind).collect(),
    })];
    for (record, index) in records.iter().zip(used) {
        let rule = &rules[index];
        let words = if rule.rule.is_empty() {
            crate::exits::always::words(rule, env.home.as_deref())
        } else {
            rule.rule.clone()
        };
        events.push(EventBody::ExitJudged(ExitJudged {
            call_id: call_id.clone(),
            exit_kind: record.kind,
            judge: JudgeKind::AlwaysRule,
            verdict: Verdict::Approve,
            reason: format!("auto.always[{index}]: {words}"),
            chain_step: None,
            skipped: Vec::new(),
            reasked: false,
        }));
    }
    env.exits.note_judged(&events);
    sink.record(turn_id, events).await.ok()?;
    Some(true)
}

/// The rule a question about `records` offers, when the turn can save one.
#[must_use]
pub fn offered(env: &ToolEnv, records: &[ExitRecord]) -> Option<AlwaysRule> {
    env.exits.config.as_ref()?;
    offer(
        records,
        env.roots.first().map(std::path::PathBuf::as_path),
        &floors(env),
    )
}

/// Saves `rule` (the user answered allow_always) and records `always_rule_saved`. `None` when the sink is gone.
pub async fn save(env: &ToolEnv, sink: &Sink, (turn_id, call_id): (TurnId, &CallId), rule: AlwaysRule) -> Option<()> {
    let config = env.exits.config.as_ref()?;
    let outcome = config.save_always(rule, SAVE_RELOAD_WITHIN).await;
    sink.record(
        turn_id,
        vec![EventBody::AlwaysRuleSaved(AlwaysRuleSaved {
            call_id: call_id.clone(),
            outcome,
        })],
    )
    .await
    .ok()
    .map(|_| ())
}
