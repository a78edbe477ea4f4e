//! The plain transcript: one line per event, no ANSI, no spinner. efr writes it when stdout is not a terminal, and
//! `cargo xtask demo` prints it as what a user sees.
//!
//! The format (one event may give several lines; lines of output and of a long message are indented):
//!
//! ```text
//! queued behind the running turn           before all else, when another turn of the conversation runs
//! turn started · manual · gpt-5            turn_started, with the mode, the model and the effort; then, when
//! auto is unavailable here, running as ...  the turn runs with a lesser mode than asked for, which and why
//! assistant: The test fails because ...    assistant_message_completed: the whole message; its further lines
//!   indented by two spaces                 are indented by two spaces
//! $ cargo test                             tool_call_started of a shell call
//! patch: update src/lib.rs                 tool_call_started of apply_patch (the files of the patch)
//! input: waiting for input: Continue? [y/N] tool_call_input_changed, with the program's prompt when shell.status
//!                                          gives it (hidden: "waiting for hidden input"; none: "no longer
//!                                          waiting")
//!     test result: ok. 3 passed            tool_call_completed: the last 10 lines of the output, indented by 4
//! exit 0                                   then the end: exit N, ok, failed, denied, refused: ..., still running
//! changes: +1 -1 src/lib.rs                then one line per changed file
//! approval: rm -rf build (manual asks ...) approval_requested: the summary and, in brackets, the reason
//! answer: allow                            approval_resolved: allow, deny or allow_always
//! exit requested: upload /h/.ssh/id_rsa    exit_requested (auto): the kind and the target, `(masked)` for a path
//!   (masked)                               the sandbox hides
//! exit upload: denied by you               exit_judged: the verdict, the judge, and its reason in brackets
//! rule saved: host x in the project p     always_rule_saved: the rule and its place, or why it was not saved
//!   (auto.always[0] in config.toml)
//! exits: 2 approved (classifier 1, you 1)  at the turn's end, before its end line: what the exit judges let
//!                                          through and how many exits they denied
//! approval expired                         approval_expired
//! interrupt requested                      turn_interrupt_requested
//! turn completed · 1234 in / 56 out        turn_completed with the usage and, when efrd sent it, how full the
//!   · context 61% of 200k                  model's context window was at the end
//! context compacted (automatic): 219340    conversation_compacted: what started it, the count before and after,
//!   → 14208 tokens, 2 turns kept whole     the turns kept whole, the outputs shortened
//! turn failed: <message>                   turn_failed (then the usage, when there is one)
//! turn interrupted                         turn_interrupted
//! turn cancelled: <reason>                 turn_cancelled
//! background: $ sleep 60 still runs        shell_command_detached; "background: ended, exit 0" for the end
//! conversation <id> (go on with: efr --conversation <id> ...)
//!                                          last, when stdin is not a terminal: each such prompt starts a new
//!                                          conversation, which only its id finds again (`efr --conversation`,
//!                                          `efr diff`, `efr shell`)
//! ```
//!
//! Questions and efr's own notices go to stderr, so stdout holds only the transcript. What the model, a command or
//! efrd chose (message text, commands, file names, output, reasons, errors) is made [`printable`] first: a pipe
//! often ends on a terminal after all (`efr ... | less -R`, `tee`).

use std::collections::BTreeMap;
use std::io::Write;

use efr_protocol::events::{Event, EventBody};
use efr_protocol::ids::ConversationId;
use efr_protocol::wire::{ApprovalDecision, InputWait};

use super::describe::{
    blocked_lines, call_end, call_title, change_lines, compaction_line, context_words, fallback_words, output_tail,
    sandbox_notice, settings_words, usage_words,
};
use super::exits::{ExitTally, judged_line, requested_line};
use crate::clean::printable;

/// Writes the plain transcript to stdout.
#[derive(Debug, Default)]
pub struct PlainView {
    /// Text of messages not completed yet, by index: printed at the turn's end when no completion came.
    partial: BTreeMap<u32, String>,
    /// The calls seen, by id: whether each is an apply_patch (its output is not shown when it went well).
    patches: BTreeMap<String, bool>,
    /// The program's prompt of each call's input wait, by call id (set by [`Self::prompt`] before the event).
    prompts: BTreeMap<String, String>,
    /// The reason of the turn's mode fallback, once shown (its `sandbox_unavailable` says the same).
    fallback: Option<String>,
    /// What the turn's exit judges let through, summed at its end.
    exits: ExitTally,
}

/// The lines of `text` after a first-line prefix, further lines indented by two spaces (blank lines stay empty);
/// the model's text is made [`printable`] first.
fn message_lines(prefix: &str, text: &str) -> Vec<String> {
    printable(text)
        .trim_end()
        .lines()
        .enumerate()
        .map(|(i, line)| match (i, line.is_empty()) {
            (0, _) => format!("{prefix}{line}"),
            (_, true) => String::new(),
            (_, false) => format!("  {line}"),
        })
        .collect()
}

/// The transcript's last line when stdin is not a terminal (see the module doc): the id, and how to go on.
#[must_use]
pub fn conversation_line(id: ConversationId) -> String {
    format!("conversation {id} (go on with: efr --conversation {id} ...)")
}

/// The wire word of a decision.
fn decision_word(decision: ApprovalDecision) -> &'static str {
    match decision {
        ApprovalDecision::Allow => "allow",
        ApprovalDecision::Deny => "deny",
        ApprovalDecision::AllowAlways => "allow_always",
        ApprovalDecision::Unknown => "unknown",
    }
}

impl PlainView {
    /// Sets the program's prompt (the pty row with the cursor) of `call_id`'s input wait, shown on its `input:` line.
    pub fn prompt(&mut self, call_id: &str, prompt: Option<String>) {
        match prompt {
            Some(prompt) => self.prompts.insert(call_id.to_owned(), prompt),
            None => self.prompts.remove(call_id),
        };
    }

    /// The transcript lines of one event.
    pub fn lines(&mut self, event: &Event) -> Vec<String> {
        match &event.body {
            EventBody::TurnStarted(started) => match &started.settings {
                Some(settings) => {
                    self.fallback = settings.fallback.as_ref().map(|f| f.reason.clone());
                    std::iter::once(format!("turn started · {}", settings_words(settings)))
                        .chain(fallback_words(settings))
                        .collect()
                }
                None => vec!["turn started".to_owned()],
            },
            EventBody::SandboxUnavailable(unavailable) => sandbox_notice(unavailable, self.fallback.as_deref())
                .into_iter()
                .collect(),
            EventBody::AssistantMessageUpdated(update) => {
                self.partial.entry(update.index).or_default().push_str(&update.delta);
                Vec::new()
            }
            EventBody::AssistantMessageCompleted(done) => {
                self.partial.remove(&done.index);
                message_lines("assistant: ", &done.text)
            }
            EventBody::ToolCallStarted(call) => {
                self.patches.insert(call.call_id.0.clone(), call.tool == "apply_patch");
                vec![call_title(call)]
            }
            EventBody::ToolCallInputChanged(wait) => {
                let what = match wait.input {
                    InputWait::Hidden => "input: waiting for hidden input",
                    InputWait::Visible if wait.looks_secret => "input: waiting for input that looks secret",
                    InputWait::Visible => "input: waiting for input",
                    InputWait::None => return vec!["input: no longer waiting".to_owned()],
                };
                vec![match self.prompts.get(wait.call_id.as_str()) {
                    Some(prompt) => format!("{what}: {prompt}"),
                    None => what.to_owned(),
                }]
            }
            EventBody::ToolCallCompleted(done) => {
                let patch = self.patches.get(done.call_id.as_str()).copied().unwrap_or(false);
                let mut lines = Vec::new();
                if !(patch && super::describe::call_ok(done)) {
                    lines.extend(output_tail(&done.output).iter().map(|l| format!("    {l}")));
                }
                lines.push(call_end(done));
                lines.extend(blocked_lines(done));
                if let Some(changes) = &done.changes {
                    lines.extend(change_lines(changes).into_iter().map(|l| format!("changes: {l}")));
                }
                lines
            }
            EventBody::ApprovalRequested(question) => {
                let reason = question.reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default();
                vec![printable(&format!("approval: {}{reason}", question.summary)).into_owned()]
            }
            EventBody::ApprovalResolved(answer) => vec![format!("answer: {}", decision_word(answer.decision))],
            EventBody::SandboxSurfaceChanged(changed) => super::surface::changed_lines(changed),
            EventBody::SurfaceQuestionRequested(question) => {
                vec![format!("question: {}", super::surface::question_text(question, false))]
            }
            EventBody::TurnSurfaceReport(report) => super::surface::report_lines(report),
            EventBody::ExitRequested(requested) => vec![requested_line(requested)],
            EventBody::ExitJudged(judged) => {
                self.exits.add(judged);
                vec![judged_line(judged)]
            }
            EventBody::AlwaysRuleSaved(saved) => vec![super::exits::rule_line(saved)],
            EventBody::ApprovalExpired(_) => vec!["approval expired".to_owned()],
            EventBody::TurnInterruptRequested(_) => vec!["interrupt requested".to_owned()],
            EventBody::TurnCompleted(done) => {
                let mut lines = self.flush();
                lines.extend(self.exits.take_summary());
                let mut line = match &done.usage {
                    Some(usage) => format!("turn completed · {}", usage_words(usage)),
                    None => "turn completed".to_owned(),
                };
                if let Some(context) = &done.context {
                    line.push_str(&format!(" · {}", context_words(context)));
                }
                lines.push(line);
                lines
            }
            EventBody::TurnFailed(failed) => {
                let mut lines = self.flush();
                lines.extend(self.exits.take_summary());
                lines.push(format!("turn failed: {}", printable(&failed.error.message)));
                if let Some(usage) = &failed.usage {
                    lines.push(format!("usage: {}", usage_words(usage)));
                }
                lines
            }
            EventBody::TurnInterrupted(_) => {
                let mut lines = self.flush();
                lines.extend(self.exits.take_summary());
                lines.push("turn interrupted".to_owned());
                lines
            }
            EventBody::TurnCancelled(cancelled) => vec![format!("turn cancelled: {}", printable(&cancelled.reason))],
            EventBody::ConversationCompacted(compaction) => vec![compaction_line(compaction)],
            body @ (EventBody::JobStarted(_)
            | EventBody::JobWatchMatched(_)
            | EventBody::JobEnded(_)
            | EventBody::JobNotice(_)
            | EventBody::JobPortForwarded(_)) => super::describe::job_line(body).into_iter().collect(),
            EventBody::ShellCommandDetached(detached) => {
                vec![format!("background: $ {} still runs", printable(&detached.command))]
            }
            EventBody::ShellCommandEnded(ended) => vec![match (ended.how, ended.exit_code) {
                (efr_protocol::wire::How::Moved, _) => "background: moved to a job".to_owned(),
                (_, Some(code)) => format!("background: ended, exit {code}"),
                (_, None) => "background: ended".to_owned(),
            }],
            _ => Vec::new(),
        }
    }

    /// The text of messages that never completed (a turn that failed or was interrupted mid-answer).
    fn flush(&mut self) -> Vec<String> {
        std::mem::take(&mut self.partial)
            .values()
            .filter(|text| !text.trim().is_empty())
            .flat_map(|text| message_lines("assistant: ", text))
            .collect()
    }

    /// Writes the lines of one event to stdout.
    pub fn event(&mut self, event: &Event) {
        let mut out = std::io::stdout().lock();
        for line in self.lines(event) {
            let _ = writeln!(out, "{line}");
        }
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn event(body: &Value) -> Event {
        let mut envelope = json!({
            "seq": 1, "at": "2026-11-30T12:00:00.000Z",
            "conversation_id": "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11",
            "turn_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7"
        });
        for (k, v) in body.as_object().unwrap() {
            envelope[k] = v.clone();
        }
        serde_json::from_value(envelope).unwrap()
    }

    fn transcript(bodies: &[Value]) -> Vec<String> {
        let mut view = PlainView::default();
        bodies.iter().flat_map(|b| view.lines(&event(b))).collect()
    }

    #[test]
    fn a_turn_with_a_shell_call_reads_line_by_line() {
        let lines = transcript(&[
            json!({"kind": "turn_started", "settings": {"mode": "manual", "model": "gpt-5"}}),
            json!({"kind": "assistant_message_updated", "index": 0, "offset": 0, "delta": "Let me"}),
            json!({"kind": "assistant_message_completed", "index": 0, "text": "Let me run\nthe tests."}),
            json!({"kind": "tool_call_started", "call_id": "c1", "tool": "shell", "input": {"command": "cargo test"}}),
            json!({"kind": "approval_requested", "call_id": "c1", "summary": "cargo test", "reason": "manual asks"}),
            json!({"kind": "approval_resolved", "call_id": "c1", "decision": "allow"}),
            json!({"kind": "tool_call_input_changed", "call_id": "c1", "input": "hidden"}),
            json!({"kind": "tool_call_completed", "call_id": "c1", "status": "ok", "output": "ok\n", "exit_code": 0,
                   "changes": {"files": [{"path": "src/lib.rs", "kind": "modified", "added": 1, "removed": 1}],
                               "more": 0, "added": 1, "removed": 1}}),
            json!({"kind": "turn_completed", "usage": {"input_tokens": 1234, "output_tokens": 56}}),
        ]);
        assert_eq!(
            lines,
            [
                "turn started · manual · gpt-5",
                "assistant: Let me run",
                "  the tests.",
                "$ cargo test",
                "approval: cargo test (manual asks)",
                "answer: allow",
                "input: waiting for hidden input",
                "    ok",
                "exit 0",
                "changes: +1 -1 src/lib.rs",
                "turn completed · 1234 in / 56 out",
            ]
        );
    }

    #[test]
    fn exits_read_briefly_and_the_turns_end_sums_what_the_judges_let_through() {
        let record = json!({"kind": "host", "source": "line", "action": {"tool": "shell", "command": "pip install x"},
            "needs": {"grants": [{"kind": "host", "host": "pypi.org"}]}, "facts": {"hosts": [{"host": "pypi.org"}]}});
        let lines = transcript(&[
            json!({"kind": "tool_call_started", "call_id": "c1", "tool": "shell", "input": {"command": "pip install x"},
                   "launch": {"kind": "contained", "grants": [{"kind": "host", "host": "pypi.org"}]}}),
            json!({"kind": "exit_requested", "call_id": "c1", "exit": record}),
            json!({"kind": "exit_judged", "call_id": "c1", "exit_kind": "host", "judge": "classifier",
                   "verdict": "approve", "reason": "the prompt asks to install x", "chain_step": "classifier_model"}),
            json!({"kind": "exit_requested", "call_id": "c2", "exit": record}),
            json!({"kind": "exit_judged", "call_id": "c2", "exit_kind": "host", "judge": "user",
                   "verdict": "approve", "reason": "", "chain_step": "user"}),
            json!({"kind": "exit_judged", "call_id": "c3", "exit_kind": "upload", "judge": "user",
                   "verdict": "deny", "reason": "", "chain_step": "user"}),
            json!({"kind": "turn_completed"}),
        ]);
        assert_eq!(
            lines,
            [
                "$ pip install x",
                "exit requested: host pypi.org",
                "exit host: approved by the classifier (the prompt asks to install x)",
                "exit requested: host pypi.org",
                "exit host: approved by you",
                "exit upload: denied by you",
                "exits: 2 approved (classifier 1, you 1), 1 denied",
                "turn completed",
            ]
        );
    }

    #[test]
    fn a_saved_rule_and_a_rule_not_saved_read_in_one_line() {
        let lines = transcript(&[
            json!({"kind": "exit_judged", "call_id": "c1", "exit_kind": "host", "judge": "user",
                   "verdict": "approve", "reason": "", "chain_step": "user"}),
            json!({"kind": "always_rule_saved", "call_id": "c1",
                   "outcome": {"kind": "saved", "index": 0, "rule": "host pypi.org in the project app"}}),
            json!({"kind": "always_rule_saved", "call_id": "c2",
                   "outcome": {"kind": "not_saved", "reason": "changed"}}),
            json!({"kind": "exit_judged", "call_id": "c3", "exit_kind": "host", "judge": "always_rule",
                   "verdict": "approve", "reason": "auto.always[0]: host pypi.org in the project app"}),
        ]);
        assert_eq!(
            lines,
            [
                "exit host: approved by you",
                "rule saved: host pypi.org in the project app (auto.always[0] in config.toml)",
                "rule not saved: config.toml changed while efr wrote it; your edit stays; the call ran once",
                "exit host: approved by your rule (auto.always[0]: host pypi.org in the project app)",
            ]
        );
    }

    #[test]
    fn an_input_wait_shows_the_programs_prompt_and_a_fallback_says_why() {
        let mut view = PlainView::default();
        let started = event(
            &json!({"kind": "turn_started", "settings": {"mode": "cautious", "model": "gpt-5",
            "fallback": {"asked": "auto", "reason": "bubblewrap is not installed"}}}),
        );
        assert_eq!(
            view.lines(&started),
            [
                "turn started · cautious · gpt-5",
                "auto is unavailable here, running as cautious: bubblewrap is not installed"
            ]
        );
        // The fallback's sandbox_unavailable says the same: not shown twice.
        let same = event(&json!({"kind": "sandbox_unavailable", "reason": "bubblewrap is not installed"}));
        assert!(view.lines(&same).is_empty());
        view.prompt("c1", Some("Continue? [y/N]".to_owned()));
        let wait = event(&json!({"kind": "tool_call_input_changed", "call_id": "c1", "input": "visible"}));
        assert_eq!(view.lines(&wait), ["input: waiting for input: Continue? [y/N]"]);
        view.prompt("c1", None);
        assert_eq!(view.lines(&wait), ["input: waiting for input"]);
    }

    #[test]
    fn a_cautious_turn_without_a_sandbox_says_its_reads_run_uncontained() {
        let lines = transcript(&[
            json!({"kind": "turn_started", "settings": {"mode": "cautious", "model": "gpt-5"}}),
            json!({"kind": "sandbox_unavailable", "reason": "bubblewrap is not installed; cautious runs read-only \
                commands uncontained, as you, and asks before reading a credential store"}),
            json!({"kind": "sandbox_unavailable", "call_id": "c1", "reason": "a call's own"}),
        ]);
        assert_eq!(
            lines,
            [
                "turn started · cautious · gpt-5",
                "sandbox unavailable: bubblewrap is not installed; cautious runs read-only commands uncontained, as \
                 you, and asks before reading a credential store"
            ]
        );
    }

    #[test]
    fn a_failed_turn_shows_its_partial_text_and_the_error() {
        let lines = transcript(&[
            json!({"kind": "assistant_message_updated", "index": 0, "offset": 0, "delta": "Half an"}),
            json!({"kind": "turn_failed", "error": {"code": "unavailable", "message": "the provider broke off"}}),
        ]);
        assert_eq!(lines, ["assistant: Half an", "turn failed: the provider broke off"]);
    }

    #[test]
    fn what_the_model_and_commands_chose_is_printed_without_control_sequences() {
        let lines = transcript(&[
            json!({"kind": "assistant_message_completed", "index": 0,
                   "text": "Hi\u{1b}]2;PWNED\u{7} \u{1b}[41mred\u{1b}[0m\r\nnext\u{9b}2J"}),
            json!({"kind": "tool_call_started", "call_id": "c1", "tool": "shell",
                   "input": {"command": "printf '\u{1b}]52;c;eA==\u{1b}\\'"}}),
            json!({"kind": "approval_requested", "call_id": "c1", "summary": "printf \u{1b}[8mx",
                   "reason": "it\u{7} asks"}),
            json!({"kind": "tool_call_completed", "call_id": "c1", "status": "ok", "output": "\u{1b}[1mbold\n",
                   "exit_code": 0}),
            json!({"kind": "shell_command_detached", "call_id": "c1", "command": "sleep\u{1b}c 9",
                   "since": "2026-11-30T12:00:00.000Z", "contained": false, "input": "none"}),
            json!({"kind": "assistant_message_updated", "index": 1, "offset": 0, "delta": "half\u{1b}]0;t\u{7}"}),
            json!({"kind": "turn_failed", "error": {"code": "unavailable", "message": "broke\u{1b}[2K off"}}),
        ]);
        assert_eq!(
            lines,
            [
                "assistant: Hi␛]2;PWNED␇ ␛[41mred␛[0m",
                "  next<U+009B>2J",
                "$ printf '␛]52;c;eA==␛\\'",
                "approval: printf ␛[8mx (it␇ asks)",
                "    ␛[1mbold",
                "exit 0",
                "background: $ sleep␛c 9 still runs",
                "assistant: half␛]0;t␇",
                "turn failed: broke␛[2K off",
            ]
        );
    }

    #[test]
    fn the_conversation_line_says_how_to_go_on() {
        let id: ConversationId = "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11".parse().unwrap();
        assert_eq!(
            conversation_line(id),
            "conversation 6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11 (go on with: efr --conversation \
             6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11 ...)"
        );
    }

    #[test]
    fn a_patch_that_applied_shows_its_files_not_its_output() {
        let lines = transcript(&[
            json!({"kind": "tool_call_started", "call_id": "p", "tool": "apply_patch", "freeform": true,
                   "input": "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"}),
            json!({"kind": "tool_call_completed", "call_id": "p", "status": "ok", "output": "Done!",
                   "changes": {"files": [{"path": "a.txt", "kind": "added", "added": 1, "removed": 0}],
                               "more": 0, "added": 1, "removed": 0}}),
        ]);
        assert_eq!(lines, ["patch: add a.txt", "ok", "changes: +1 -0 a.txt (added)"]);
    }
}
