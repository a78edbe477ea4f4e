//! What a model judge is sent ([`JudgeRequest`]): the fixed [`INSTRUCTIONS`] and an input built from the call's exit
//! records, the user's prompt and the turn's recent calls.
//!
//! The input never holds a tool's output, a file's content or a secret (docs/adr/0016-exit-kinds.md, "Decision" 5:
//! "a prompt injection reaches it only as facts"): a record's `action.edit` (the payload of a floor edit, which only
//! the user approves) and its `judgement` are dropped, and the prompt and the calls are bounded.

use efr_protocol::wire::{ExitAction, ExitRecord};
use serde_json::{Value, json};

use super::{JudgeRequest, Review};

/// The judge's instructions (the system prompt), the same for the classifier and the turn's model.
pub const INSTRUCTIONS: &str = include_str!("instructions.md");

/// The note added to the input when a judge is asked once more because its reason said nothing.
pub const REASK_NOTE: &str = "Your previous answer gave no real reason. Answer again with the same JSON object, and \
     make \"reason\" one sentence that names the fact of the exit your verdict rests on.";

/// The most bytes of the user's prompt in the input; the rest is cut with a note.
pub const MAX_PROMPT_BYTES: usize = 8 * 1024;
/// The most recent calls in the input (the newest are kept).
pub const MAX_RECENT_CALLS: usize = 10;
/// The most bytes of one recent call's line or one exit's command line.
pub const MAX_LINE_BYTES: usize = 2 * 1024;

/// The request for `review`'s exits; `reask` adds [`REASK_NOTE`].
#[must_use]
pub fn request(review: &Review<'_>, reask: bool) -> JudgeRequest {
    let recent = review.recent_calls;
    let recent = &recent[recent.len().saturating_sub(MAX_RECENT_CALLS)..];
    let mut input = json!({
        "exits": review.records.iter().map(record).collect::<Vec<_>>(),
        "user_prompt": bounded(review.user_prompt, MAX_PROMPT_BYTES),
        "recent_calls": recent.iter().map(|line| bounded(line, MAX_LINE_BYTES)).collect::<Vec<_>>(),
    });
    if !review.previous_exits.is_empty() {
        input["previous_exits_this_turn"] = json!(review.previous_exits);
    }
    if reask {
        input["note"] = json!(REASK_NOTE);
    }
    JudgeRequest {
        instructions: INSTRUCTIONS.to_owned(),
        input: serde_json::to_string_pretty(&input).unwrap_or_else(|_| input.to_string()),
    }
}

/// A record as the judge sees it: kind, source, action (tool and command line), needs, targets and facts.
fn record(record: &ExitRecord) -> Value {
    let action = ExitAction {
        tool: record.action.tool.clone(),
        command: record
            .action
            .command
            .as_deref()
            .map(|line| bounded(line, MAX_LINE_BYTES)),
        // The payload of a floor edit is a file's content, for the user alone.
        edit: None,
        background: record.action.background,
        watch: record.action.watch,
        wake_turn: record.action.wake_turn,
        max_minutes: record.action.max_minutes,
    };
    json!({
        "kind": record.kind,
        "source": record.source,
        "action": action,
        "needs": record.needs,
        "targets": record.targets,
        "facts": record.facts,
    })
}

/// `text` cut to at most `max` bytes at a character boundary, with a note of what was cut.
fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}[efr cut {} more bytes]", &text[..cut], text.len() - cut)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use efr_protocol::ids::CallId;
    use efr_protocol::wire::{
        ExitFacts, ExitKind, ExitSource, ExitTarget, Grant, HostFact, JudgeKind, Judgement, Needs, TargetClass, Verdict,
    };

    use super::*;

    fn host_record() -> ExitRecord {
        ExitRecord {
            kind: ExitKind::Host,
            source: ExitSource::Line,
            action: ExitAction {
                tool: "shell".into(),
                command: Some("curl -sSf https://static.rust-lang.org/rustup.sh".into()),
                edit: Some("EDIT-PAYLOAD-SECRET".into()),
                ..Default::default()
            },
            needs: Needs {
                grants: vec![Grant::Host {
                    host: "static.rust-lang.org".into(),
                    port: None,
                }],
                unsandboxed: false,
            },
            targets: vec![ExitTarget {
                path: PathBuf::from("/home/ada/.cache/x"),
                class: TargetClass::Cache,
                masked: false,
                backup_before_write: false,
            }],
            facts: ExitFacts {
                hosts: vec![HostFact {
                    host: "static.rust-lang.org".into(),
                    port: None,
                    project_remote: false,
                }],
                denials_in_a_row: 1,
                ..ExitFacts::default()
            },
            judgement: Some(Judgement {
                judge: JudgeKind::User,
                verdict: Verdict::Approve,
                reason: "JUDGEMENT-LEAK".into(),
            }),
        }
    }

    #[test]
    fn the_instructions_say_what_to_answer_and_whom_to_trust() {
        let flat = INSTRUCTIONS.split_whitespace().collect::<Vec<_>>().join(" ");
        for needle in [
            r#"{"verdict":"approve"|"deny"|"abstain","reason":"#,
            "exit",
            "facts",
            "manipulated",
            "abstain",
            "upload",
            "package_install",
            // ADR 0016, `desktop`: a command that is not `desktop_read` can type into any window.
            "not `desktop_read` can type into any window",
        ] {
            assert!(flat.contains(needle), "{needle}");
        }
    }

    #[test]
    fn the_input_holds_the_facts_and_never_an_edit_payload() {
        let records = [host_record()];
        let recent: Vec<String> = (0..15).map(|i| format!("cargo build -p crate{i}")).collect();
        let call_id = CallId::from("call_1");
        let review = Review {
            call_id: &call_id,
            records: &records,
            user_prompt: "install rustup for me",
            recent_calls: &recent,
            previous_exits: &[[String::from("upload"), String::from("deny")]],
        };
        let request = request(&review, false);
        assert_eq!(request.instructions, INSTRUCTIONS);
        let input: Value = serde_json::from_str(&request.input).unwrap();
        let exit = &input["exits"][0];
        assert_eq!(exit["kind"], "host");
        assert_eq!(exit["source"], "line");
        assert_eq!(
            exit["action"],
            json!({"tool": "shell", "command": "curl -sSf https://static.rust-lang.org/rustup.sh"})
        );
        assert_eq!(exit["facts"]["hosts"][0]["host"], "static.rust-lang.org");
        assert_eq!(exit["facts"]["denials_in_a_row"], 1);
        assert_eq!(exit["targets"][0]["class"], "cache");
        assert_eq!(exit["needs"]["grants"][0]["host"], "static.rust-lang.org");
        assert_eq!(input["user_prompt"], "install rustup for me");
        let calls = input["recent_calls"].as_array().unwrap();
        assert_eq!(calls.len(), MAX_RECENT_CALLS);
        assert_eq!(calls[0], "cargo build -p crate5");
        assert_eq!(calls[9], "cargo build -p crate14");
        assert!(input.get("note").is_none());
        assert_eq!(input["previous_exits_this_turn"], json!([["upload", "deny"]]));
        assert!(!request.input.contains("EDIT-PAYLOAD-SECRET"));
        assert!(!request.input.contains("JUDGEMENT-LEAK"));

        let again = super::request(&review, true);
        let input: Value = serde_json::from_str(&again.input).unwrap();
        assert_eq!(input["note"], REASK_NOTE);
    }

    #[test]
    fn long_prompts_and_lines_are_cut_at_a_character() {
        let mut record = host_record();
        record.action.command = Some("é".repeat(MAX_LINE_BYTES));
        let records = [record];
        let prompt = "ü".repeat(MAX_PROMPT_BYTES);
        let call_id = CallId::from("call_1");
        let review = Review {
            call_id: &call_id,
            records: &records,
            user_prompt: &prompt,
            recent_calls: &[],
            previous_exits: &[],
        };
        let input: Value = serde_json::from_str(&request(&review, false).input).unwrap();
        let prompt = input["user_prompt"].as_str().unwrap();
        assert!(
            prompt.ends_with(&format!("[efr cut {MAX_PROMPT_BYTES} more bytes]")),
            "{}",
            &prompt[prompt.len() - 40..]
        );
        let command = input["exits"][0]["action"]["command"].as_str().unwrap();
        assert!(command.starts_with("éé") && command.contains("[efr cut"));
    }
}
