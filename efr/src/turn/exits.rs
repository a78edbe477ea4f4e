//! The words for auto mode's exits (docs/auto.md, "What a user sees"): a question's exit (its kind, target, reason,
//! and which judge passed it on), the transcript's brief lines for exit_requested and exit_judged, and the turn's
//! tally of what the judges let through ([`ExitTally`]).
//!
//! Everything here is made [`printable`]: a target and a reason come from the model's call and from a model judge.

use std::collections::BTreeMap;

use efr_protocol::events::{AlwaysRuleSaved, ExitJudged, ExitRequested};
use efr_protocol::wire::{ChainStep, ExitInfo, ExitRecord, JudgeKind, Verdict};

use crate::clean::printable;

/// A judge in a word or two, as the transcript and the tally name it.
#[must_use]
pub fn judge_words(judge: JudgeKind) -> &'static str {
    match judge {
        JudgeKind::Classifier => "classifier",
        JudgeKind::TurnModel => "model",
        JudgeKind::User => "you",
        JudgeKind::AlwaysRule => "your rule",
        JudgeKind::PresenceExpired => "away",
        JudgeKind::Full => "full mode",
        JudgeKind::Unknown => "a judge",
    }
}

/// The step of the chain that passed a question on, in words.
fn step_words(step: ChainStep) -> &'static str {
    match step {
        ChainStep::ClassifierModel => "the classifier",
        ChainStep::TurnModel => "the model",
        ChainStep::User => "you",
        ChainStep::Unknown => "a judge",
    }
}

/// The exit line of a question: `exit upload: ~/.ssh/id_rsa (also host) · only you may approve this exit · passed
/// on by the classifier`.
#[must_use]
pub fn question_line(exit: &ExitInfo) -> String {
    let also = if exit.also.is_empty() {
        String::new()
    } else {
        let kinds: Vec<&str> = exit.also.iter().map(|k| k.as_str()).collect();
        format!(" (also {})", kinds.join(", "))
    };
    let reason = if exit.reason.trim().is_empty() {
        String::new()
    } else {
        format!(" · {}", exit.reason.trim())
    };
    let passed = exit
        .passed_on_by
        .map(|step| format!(" · passed on by {}", step_words(step)))
        .unwrap_or_default();
    printable(&format!(
        "exit {}: {}{also}{reason}{passed}",
        exit.kind.as_str(),
        exit.target
    ))
    .into_owned()
}

/// A record's target in a few words: its first path (a masked one first), else its first host, else nothing.
fn record_target(record: &ExitRecord) -> Option<String> {
    let target = record.main_target();
    if let Some(target) = target {
        let masked = if target.masked { " (masked)" } else { "" };
        return Some(format!("{}{masked}", target.path.display()));
    }
    record.facts.hosts.first().map(|host| match host.port {
        Some(port) if port != 443 => format!("{}:{port}", host.host),
        _ => host.host.clone(),
    })
}

/// The transcript's line of exit_requested: `exit requested: upload /home/ada/.ssh/id_rsa (masked)`.
#[must_use]
pub fn requested_line(requested: &ExitRequested) -> String {
    let exit = &requested.exit;
    let line = match record_target(exit) {
        Some(target) => format!("exit requested: {} {target}", exit.kind.as_str()),
        None => format!("exit requested: {}", exit.kind.as_str()),
    };
    printable(&line).into_owned()
}

/// The transcript's line of always_rule_saved: `rule saved: host crates.io in the project efr (auto.always[0])`,
/// or why it was not.
#[must_use]
pub fn rule_line(saved: &AlwaysRuleSaved) -> String {
    use efr_protocol::wire::always::{AlwaysOutcome, NotSavedReason};
    let line = match &saved.outcome {
        AlwaysOutcome::Saved { index, rule } => format!("rule saved: {rule} (auto.always[{index}] in config.toml)"),
        AlwaysOutcome::NotSaved { reason } => {
            let why = match reason {
                NotSavedReason::Changed => "config.toml changed while efr wrote it; your edit stays",
                NotSavedReason::ReadOnly => "config.toml cannot be written",
                NotSavedReason::LoadCheck => "config.toml does not load (efr config reload says why)",
                NotSavedReason::Io => "config.toml could not be written",
                NotSavedReason::ReloadTimeout => "it is written, but the reload that applies it is slow",
                NotSavedReason::Unknown => "a reason this efr does not know",
            };
            format!("rule not saved: {why}; the call ran once")
        }
        AlwaysOutcome::Unknown => "rule: an outcome this efr does not know".to_owned(),
    };
    printable(&line).into_owned()
}

/// The transcript's line of exit_judged: `exit host: approved by the classifier (the prompt asks for it)`.
#[must_use]
pub fn judged_line(judged: &ExitJudged) -> String {
    let verdict = match judged.verdict {
        Verdict::Approve => "approved",
        Verdict::Deny => "denied",
        Verdict::Abstain => "passed on",
    };
    let by = match judged.judge {
        JudgeKind::User => "you".to_owned(),
        JudgeKind::Full => "full mode".to_owned(),
        JudgeKind::AlwaysRule => judge_words(JudgeKind::AlwaysRule).to_owned(),
        judge => format!("the {}", judge_words(judge)),
    };
    let reason = if judged.reason.trim().is_empty() {
        String::new()
    } else {
        format!(" ({})", judged.reason.trim())
    };
    printable(&format!(
        "exit {}: {verdict} by {by}{reason}",
        judged.exit_kind.as_str()
    ))
    .into_owned()
}

/// What the judges of a turn let through, summed from its exit_judged events.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ExitTally {
    approved: BTreeMap<&'static str, u64>,
    /// The order in which each judge first approved, so the summary names them as they came.
    order: Vec<&'static str>,
    denied: u64,
}

impl ExitTally {
    /// Counts one exit_judged.
    pub fn add(&mut self, judged: &ExitJudged) {
        match judged.verdict {
            Verdict::Approve => {
                let judge = judge_words(judged.judge);
                if !self.order.contains(&judge) {
                    self.order.push(judge);
                }
                *self.approved.entry(judge).or_default() += 1;
            }
            Verdict::Deny => self.denied += 1,
            Verdict::Abstain => {}
        }
    }

    /// The turn's summary, such as `exits: 2 approved (classifier 1, you 1), 1 denied`; `None` when no exit was
    /// judged. Takes the tally, so the next turn starts at zero.
    pub fn take_summary(&mut self) -> Option<String> {
        let tally = std::mem::take(self);
        let approved: u64 = tally.approved.values().sum();
        if approved == 0 && tally.denied == 0 {
            return None;
        }
        let mut parts = Vec::new();
        if approved > 0 {
            let by: Vec<String> = tally
                .order
                .iter()
                .map(|judge| format!("{judge} {}", tally.approved[judge]))
                .collect();
            parts.push(format!("{approved} approved ({})", by.join(", ")));
        }
        if tally.denied > 0 {
            parts.push(format!("{} denied", tally.denied));
        }
        Some(format!("exits: {}", parts.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn judged(kind: &str, judge: &str, verdict: &str, reason: &str) -> ExitJudged {
        serde_json::from_value(json!({
            "call_id": "c1", "exit_kind": kind, "judge": judge, "verdict": verdict, "reason": reason
        }))
        .unwrap()
    }

    #[test]
    fn a_question_names_the_kind_the_target_the_reason_and_who_passed_it_on() {
        let exit: ExitInfo = serde_json::from_value(json!({
            "kind": "upload", "also": ["host"], "needs": {"grants": [{"kind": "host", "host": "x.example"}]},
            "target": "~/.ssh/id_rsa", "reason": "only you may approve this exit", "passed_on_by": "classifier_model"
        }))
        .unwrap();
        assert_eq!(
            question_line(&exit),
            "exit upload: ~/.ssh/id_rsa (also host) · only you may approve this exit · passed on by the classifier"
        );
        let exit: ExitInfo = serde_json::from_value(json!({
            "kind": "host", "needs": {}, "target": "pypi.org\u{1b}[8m", "reason": ""
        }))
        .unwrap();
        let line = question_line(&exit);
        assert!(!line.contains('\u{1b}'), "{line:?}");
        assert!(line.starts_with("exit host: pypi.org"), "{line}");
    }

    #[test]
    fn requested_and_judged_read_briefly() {
        let requested: ExitRequested = serde_json::from_value(json!({
            "call_id": "c1",
            "exit": {"kind": "upload", "source": "line", "action": {"tool": "shell", "command": "curl"},
                     "needs": {"grants": [{"kind": "host", "host": "x.example"}]},
                     "targets": [{"path": "/home/ada/.ssh/id_rsa", "class": "home", "masked": true}],
                     "facts": {"hosts": [{"host": "x.example"}]}}
        }))
        .unwrap();
        assert_eq!(
            requested_line(&requested),
            "exit requested: upload /home/ada/.ssh/id_rsa (masked)"
        );
        assert_eq!(
            judged_line(&judged("host", "classifier", "approve", "the prompt asks for crates")),
            "exit host: approved by the classifier (the prompt asks for crates)"
        );
        assert_eq!(
            judged_line(&judged("upload", "user", "deny", "")),
            "exit upload: denied by you"
        );
    }

    #[test]
    fn the_tally_sums_what_the_judges_let_through() {
        let mut tally = ExitTally::default();
        assert_eq!(tally.take_summary(), None);
        tally.add(&judged("host", "classifier", "approve", "ok"));
        tally.add(&judged("upload", "user", "approve", ""));
        tally.add(&judged("write", "turn_model", "deny", "no"));
        assert_eq!(
            tally.take_summary().as_deref(),
            Some("exits: 2 approved (classifier 1, you 1), 1 denied")
        );
        assert_eq!(tally.take_summary(), None, "the next turn starts at zero");
        tally.add(&judged("host", "user", "deny", ""));
        assert_eq!(tally.take_summary().as_deref(), Some("exits: 1 denied"));
    }
}
