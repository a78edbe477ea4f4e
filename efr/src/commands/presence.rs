//! `efr presence away|present [--conversation ID] [--json]`: presence.set (docs/auto.md, "Presence").
//!
//! ```text
//! away: 2 conversations changed
//! ```
//!
//! Without `--conversation` it reaches each conversation that had a prompt since efrd started. While away, an
//! approval question expires after efrd's `[permissions] away_question_secs` (approval_expired with `away`).

use std::process::ExitCode;

use efr_protocol::ids::{CommandId, ConversationId};
use efr_protocol::wire::{Presence, PresenceSetParams, PresenceSetResult};

use super::{read, run_unary};
use crate::cli::{PresenceArg, PresenceArgs};
use crate::report;

/// Runs `efr presence`.
pub async fn run(args: &PresenceArgs) -> ExitCode {
    let Ok(conversation_id) = args
        .conversation
        .as_deref()
        .map(str::parse::<ConversationId>)
        .transpose()
    else {
        report::error("--conversation: not a conversation id (a UUID, from `efr status` or a turn's last line)");
        return ExitCode::from(report::FAILED);
    };
    let params = PresenceSetParams {
        command_id: CommandId::new(),
        conversation_id,
        presence: match args.presence {
            PresenceArg::Away => Presence::Away,
            PresenceArg::Present => Presence::Present,
        },
    };
    let Ok(params) = serde_json::to_value(&params) else {
        report::error("cannot encode the params of presence.set");
        return ExitCode::from(report::FAILED);
    };
    run_unary("presence.set", params, args.json, None, |value| {
        let result: PresenceSetResult = read("presence.set", value)?;
        crate::out::println(&render(&result));
        Ok(())
    })
    .await
}

/// The readable line: the presence and how many conversations changed.
#[must_use]
pub fn render(result: &PresenceSetResult) -> String {
    let presence = result.presence.as_str();
    match result.changed.len() {
        0 => format!("{presence}: no conversation changed"),
        1 => format!("{presence}: conversation {} changed", result.changed[0]),
        n => format!("{presence}: {n} conversations changed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_what_changed() {
        let id: ConversationId = "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11".parse().unwrap();
        let none = PresenceSetResult {
            presence: Presence::Away,
            changed: Vec::new(),
            seq: None,
        };
        assert_eq!(render(&none), "away: no conversation changed");
        let one = PresenceSetResult {
            presence: Presence::Present,
            changed: vec![id],
            seq: Some(9),
        };
        assert_eq!(
            render(&one),
            "present: conversation 6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11 changed"
        );
        let two = PresenceSetResult {
            changed: vec![id, id],
            ..one
        };
        assert_eq!(render(&two), "present: 2 conversations changed");
    }
}
