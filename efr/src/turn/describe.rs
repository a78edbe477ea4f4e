//! The words for each part of a turn, shared by the plain transcript and the terminal view: a call's title, its
//! end, its output tail, its changes, the usage line, a mode fallback, and the program's prompt of an input wait.
//!
//! Each is made [`printable`] here: a command, a file name, an output line or a reason may hold terminal control
//! sequences (the model and the commands it runs choose them).

use std::borrow::Cow;

use efr_protocol::events::{CallStatus, ToolCallCompleted, ToolCallStarted};
use efr_protocol::wire::{
    CompactTrigger, Compaction, ContextFill, FileChange, FileChangeKind, FileChanges, Mode, TurnSettings, Usage,
};

use crate::clean::printable;

/// How many lines of a call's output a client shows.
pub const TAIL_LINES: usize = 10;

/// The title of a call: `$ <command>` for a shell call, `patch: <files>` for apply_patch, `<tool> <input>` else.
#[must_use]
pub fn call_title(call: &ToolCallStarted) -> String {
    let title = match call.tool.as_str() {
        "shell" => match call.input.get("command").and_then(|c| c.as_str()) {
            Some(command) => format!("$ {command}"),
            None => format!("$ {}", call.input),
        },
        "apply_patch" => {
            let text = match &call.input {
                serde_json::Value::String(text) => text.clone(),
                other => other
                    .get("input")
                    .and_then(|i| i.as_str())
                    .map_or_else(|| other.to_string(), str::to_owned),
            };
            format!("patch: {}", patch_summary(&text))
        }
        tool => format!("{tool} {}", call.input),
    };
    printable(&title).into_owned()
}

/// The files of an apply_patch text, such as `update src/lib.rs, add notes.md`.
#[must_use]
pub fn patch_summary(patch: &str) -> String {
    let files: Vec<String> = patch
        .lines()
        .filter_map(|line| {
            [
                ("*** Add File: ", "add"),
                ("*** Update File: ", "update"),
                ("*** Delete File: ", "delete"),
            ]
            .iter()
            .find_map(|(head, verb)| line.strip_prefix(head).map(|path| format!("{verb} {}", path.trim())))
        })
        .collect();
    if files.is_empty() {
        "(no files)".to_owned()
    } else {
        files.join(", ")
    }
}

/// The end of a call in a few words: `exit 0`, `exit 101`, `ok`, `denied`, `refused: <why>`, `failed`, or that it
/// still runs.
#[must_use]
pub fn call_end(call: &ToolCallCompleted) -> String {
    if let Some(error) = call.sandbox.as_ref().and_then(|s| s.setup_error.as_deref()) {
        return format!("sandbox setup failed: {}", printable(error));
    }
    if let Some(refusal) = &call.refusal {
        return format!("refused: {}", printable(refusal));
    }
    if call.left_running {
        return "still running (left in the hidden shell)".to_owned();
    }
    match (call.status, call.exit_code) {
        (CallStatus::Denied, _) => "denied".to_owned(),
        (_, Some(code)) => format!("exit {code}"),
        (CallStatus::Ok, None) => "ok".to_owned(),
        (CallStatus::Failed | CallStatus::Unknown, None) => "failed".to_owned(),
    }
}

/// Whether a call ended well (for the colour of its end).
#[must_use]
pub fn call_ok(call: &ToolCallCompleted) -> bool {
    call.status == CallStatus::Ok && call.exit_code.is_none_or(|code| code == 0)
}

/// The last [`TAIL_LINES`] lines of a call's output, without trailing blank lines, each [`printable`] (cleaned
/// line by line, so that a sequence left open early in the output cannot hide the tail).
#[must_use]
pub fn output_tail(output: &str) -> Vec<Cow<'_, str>> {
    let lines: Vec<&str> = output.trim_end().lines().collect();
    let from = lines.len().saturating_sub(TAIL_LINES);
    lines[from..].iter().map(|line| printable(line)).collect()
}

/// The line of one changed file, as it is (not cleaned for a terminal): `+12 -3 src/lib.rs`, with the kind for an
/// added, deleted or renamed file, and `maybe another turn's` for a change the turn cannot tell is its own.
#[must_use]
pub fn change_line(file: &FileChange) -> String {
    let counts = if file.binary {
        "binary".to_owned()
    } else {
        format!("+{} -{}", file.added, file.removed)
    };
    let kind = match (file.kind, &file.from) {
        (FileChangeKind::Added, _) => " (added)".to_owned(),
        (FileChangeKind::Deleted, _) => " (deleted)".to_owned(),
        (FileChangeKind::Renamed, Some(from)) => format!(" (from {})", from.display()),
        _ => String::new(),
    };
    let other = if file.maybe_other { ", maybe another turn's" } else { "" };
    format!("{counts} {}{kind}{other}", file.path.display())
}

/// One line per changed file ([`change_line`], cleaned for a terminal), with the kind for an added, deleted or renamed file, and
/// `maybe another turn's` for a change the turn cannot tell is its own; then `... N more files`.
#[must_use]
pub fn change_lines(changes: &FileChanges) -> Vec<String> {
    let mut lines: Vec<String> = changes
        .files
        .iter()
        .map(|file| printable(&change_line(file)).into_owned())
        .collect();
    if changes.more > 0 {
        lines.push(format!("... {} more files", changes.more));
    }
    lines
}

/// One line per host that the call's proxy refused: `blocked: github.com:443 denied ×3` (docs/network.md, "What a
/// user sees"), then `blocked: 4 more` for the refusals the summary leaves out; then one line per bus name, member
/// and path that the bus filter refused, `bus refused: org.freedesktop.secrets OpenSession /org/freedesktop/secrets
/// ×2` (docs/bus.md, "Reports"), and `bus refused: 3 more`. Empty when nothing was refused.
#[must_use]
pub fn blocked_lines(call: &ToolCallCompleted) -> Vec<String> {
    let Some(summary) = &call.sandbox else {
        return Vec::new();
    };
    let mut lines: Vec<String> = summary
        .blocked
        .iter()
        .map(|blocked| {
            let reason = serde_json::to_value(blocked.reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| "unknown".to_owned());
            let count = if blocked.count == 1 {
                String::new()
            } else {
                format!(" ×{}", blocked.count)
            };
            let line = format!("blocked: {}:{} {reason}{count}", blocked.host, blocked.port);
            printable(&line).into_owned()
        })
        .collect();
    if summary.blocked_more > 0 {
        lines.push(format!("blocked: {} more", summary.blocked_more));
    }
    for refused in &summary.bus_refused {
        let mut line = format!("bus refused: {}", refused.name);
        for part in [&refused.member, &refused.path].into_iter().flatten() {
            line.push(' ');
            line.push_str(part);
        }
        if refused.count != 1 {
            line.push_str(&format!(" ×{}", refused.count));
        }
        lines.push(printable(&line).into_owned());
    }
    if summary.bus_refused_more > 0 {
        lines.push(format!("bus refused: {} more", summary.bus_refused_more));
    }
    lines
}

/// `1234 in / 56 out` (and the cached part when there is one).
#[must_use]
pub fn usage_words(usage: &Usage) -> String {
    let mut words = format!("{} in / {} out", usage.input_tokens, usage.output_tokens);
    if usage.cached_input_tokens > 0 {
        words.push_str(&format!(" ({} cached)", usage.cached_input_tokens));
    }
    words
}

/// `context 61% of 200k`: how full the model's context window was at a turn's end.
#[must_use]
pub fn context_words(fill: &ContextFill) -> String {
    let share = fill.tokens.saturating_mul(100) / fill.window.max(1);
    format!("context {share}% of {}", tokens_short(fill.window))
}

/// A count of tokens as a person reads a window: `200k`, `1m`, `8192` below ten thousand.
#[must_use]
pub fn tokens_short(tokens: u64) -> String {
    match tokens {
        0..10_000 => tokens.to_string(),
        10_000..1_000_000 => format!("{}k", tokens / 1_000),
        _ => format!("{}m", tokens / 1_000_000),
    }
}

/// One line for a compaction: what started it, the count before and after, what it kept and shortened.
#[must_use]
pub fn compaction_line(compaction: &Compaction) -> String {
    let trigger = match compaction.trigger {
        CompactTrigger::Auto => "automatic",
        CompactTrigger::Manual => "by hand",
        CompactTrigger::Overflow => "after an overflow",
    };
    let mut line = format!(
        "context compacted ({trigger}): {} → {} tokens, {} turns kept whole",
        compaction.tokens_before, compaction.tokens_after, compaction.kept_turns
    );
    if compaction.pruned_outputs > 0 {
        line.push_str(&format!(", {} outputs shortened", compaction.pruned_outputs));
    }
    if compaction.omitted_turns > 0 {
        line.push_str(&format!(", {} turns left out of the summary", compaction.omitted_turns));
    }
    line
}

/// A line of a background job's event for the transcript (`job j1 started: npm run dev`), `None` for the events
/// of jobs that a transcript does not show.
#[must_use]
pub fn job_line(body: &efr_protocol::events::EventBody) -> Option<String> {
    use efr_protocol::events::EventBody;
    use efr_protocol::wire::JobState;
    let clean = |text: &str| crate::clean::printable(text).into_owned();
    match body {
        EventBody::JobStarted(started) => Some(format!(
            "job {} {}: {} (efr jobs logs {} -f)",
            started.job.id,
            if started.job.moved_from.is_some() {
                "moved from its call"
            } else {
                "started"
            },
            clean(&started.job.command),
            started.job.id
        )),
        EventBody::JobWatchMatched(matched) => {
            Some(format!("job {} printed: {}", matched.job_id, clean(&matched.line)))
        }
        EventBody::JobEnded(ended) => Some(match (ended.state, ended.exit_code, ended.stopped_by) {
            (JobState::Exited, Some(code), _) => format!("job {} ended, exit {code}", ended.job_id),
            (_, _, Some(by)) => format!("job {} stopped ({by})", ended.job_id),
            (state, _, _) if ended.launcher_lost => format!("job {} {state}: efrd lost it", ended.job_id),
            (state, _, _) => format!("job {} {state}", ended.job_id),
        }),
        EventBody::JobNotice(notice) if notice.woke => {
            Some(format!("job {} woke the model ({})", notice.job_id, notice.notice_kind))
        }
        EventBody::JobNotice(notice) => Some(format!(
            "job {}: the model hears of it ({})",
            notice.job_id, notice.notice_kind
        )),
        EventBody::JobPortForwarded(forward) => Some(format!(
            "job {}: port {}:{} {}",
            forward.job_id, forward.listen, forward.port, forward.outcome
        )),
        _ => None,
    }
}

/// The wire word of a mode (`auto`), `unknown` for a mode this build does not know.
#[must_use]
pub fn mode_word(mode: Mode) -> String {
    serde_json::to_value(mode)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// `manual · gpt-5 · high` for a turn's settings (the mode it runs with; see [`fallback_words`] for why it may
/// differ from the one asked for).
#[must_use]
pub fn settings_words(settings: &TurnSettings) -> String {
    let mut words = format!("{} · {}", mode_word(settings.mode), printable(&settings.model));
    if let Some(effort) = &settings.effort {
        words.push_str(&format!(" · {}", printable(effort)));
    }
    words
}

/// `auto is unavailable here, running as cautious: <reason>` when the turn runs with a lesser mode than it asked
/// for (turn_started `settings.fallback`, spec "mode_fallback"); `None` when it runs as asked.
#[must_use]
pub fn fallback_words(settings: &TurnSettings) -> Option<String> {
    settings.fallback.as_ref().map(|fallback| {
        format!(
            "{} is unavailable here, running as {}: {}",
            mode_word(fallback.asked),
            mode_word(settings.mode),
            printable(&fallback.reason)
        )
    })
}

/// `sandbox unavailable: <reason>` for a turn's `sandbox_unavailable` (no call_id: the probe found it at the
/// turn's start), such as a cautious turn's "…; cautious runs read-only commands uncontained, …"; `None` for a
/// call's own (its completion says why) and for the reason the turn's fallback already showed (`shown`).
#[must_use]
pub fn sandbox_notice(unavailable: &efr_protocol::events::SandboxUnavailable, shown: Option<&str>) -> Option<String> {
    (unavailable.call_id.is_none() && shown != Some(unavailable.reason.as_str()))
        .then(|| format!("sandbox unavailable: {}", printable(&unavailable.reason)))
}

/// The program's prompt from a pty row (shell.status `busy.prompt`): control sequences, control characters and
/// trailing blanks dropped; `None` when nothing is left (a blank row tells the user nothing).
#[must_use]
pub fn prompt_row(row: Option<&str>) -> Option<String> {
    // printable keeps tabs and newlines, which a row to show on one line does not take either.
    let row: String = printable(row?).chars().filter(|c| !c.is_control()).collect();
    let row = row.trim_end();
    (!row.trim_start().is_empty()).then(|| row.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn started(tool: &str, input: &serde_json::Value) -> ToolCallStarted {
        serde_json::from_value(json!({"call_id": "c1", "tool": tool, "input": input})).unwrap()
    }

    fn completed(members: &serde_json::Value) -> ToolCallCompleted {
        let mut base = json!({"call_id": "c1", "status": "ok", "output": ""});
        for (k, v) in members.as_object().unwrap() {
            base[k] = v.clone();
        }
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn titles_name_the_command_or_the_files() {
        assert_eq!(
            call_title(&started("shell", &json!({"command": "cargo test"}))),
            "$ cargo test"
        );
        let patch =
            "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n*** Add File: notes.md\n+x\n*** End Patch\n";
        assert_eq!(
            call_title(&started("apply_patch", &json!(patch))),
            "patch: update src/lib.rs, add notes.md"
        );
        assert_eq!(
            call_title(&started("apply_patch", &json!({"input": "junk"}))),
            "patch: (no files)"
        );
    }

    #[test]
    fn titles_tails_and_changes_hold_no_control_sequence() {
        let title = call_title(&started("shell", &json!({"command": "echo \u{1b}]2;PWNED\u{7}hi\r"})));
        assert_eq!(title, "$ echo ␛]2;PWNED␇hi␍");
        let patch = "*** Begin Patch\n*** Add File: a\u{1b}[41m.txt\n+x\n*** End Patch\n";
        assert_eq!(
            call_title(&started("apply_patch", &json!(patch))),
            "patch: add a␛[41m.txt"
        );
        assert_eq!(
            output_tail("ok\n\u{9b}31mred\u{1b}]52;c;eA==\u{1b}\\\n"),
            ["ok", "<U+009B>31mred␛]52;c;eA==␛\\"]
        );
        let end = completed(&json!({"status": "failed", "refusal": "no \u{1b}[2Jway"}));
        assert_eq!(call_end(&end), "refused: no ␛[2Jway");
        let changes: FileChanges = serde_json::from_value(json!({
            "files": [{"path": "x\u{1b}]0;t\u{7}.rs", "kind": "added", "added": 1, "removed": 0}],
            "more": 0, "added": 1, "removed": 0
        }))
        .unwrap();
        assert_eq!(change_lines(&changes), ["+1 -0 x␛]0;t␇.rs (added)"]);
    }

    #[test]
    fn ends_say_exit_denied_refused_or_setup_failure() {
        assert_eq!(call_end(&completed(&json!({"exit_code": 0}))), "exit 0");
        assert_eq!(
            call_end(&completed(&json!({"status": "failed", "exit_code": 101}))),
            "exit 101"
        );
        assert!(!call_ok(&completed(&json!({"status": "failed", "exit_code": 101}))));
        assert_eq!(call_end(&completed(&json!({"status": "denied"}))), "denied");
        assert_eq!(
            call_end(&completed(
                &json!({"status": "failed", "refusal": "efr's config (floor)"})
            )),
            "refused: efr's config (floor)"
        );
        assert_eq!(
            call_end(&completed(
                &json!({"status": "failed", "sandbox": {"setup_error": "bwrap: no"}})
            )),
            "sandbox setup failed: bwrap: no"
        );
    }

    #[test]
    fn refusals_read_host_port_reason_and_count() {
        let call = completed(&json!({"exit_code": 6, "status": "failed", "sandbox": {
            "proxied": true,
            "blocked": [
                {"host": "github.com", "port": 443, "reason": "denied", "count": 3},
                {"host": "x\u{1b}[2Jy", "port": 80, "reason": "not_tls"},
                {"host": "z", "port": 443, "reason": "quota"}
            ],
            "blocked_more": 4
        }}));
        assert_eq!(
            blocked_lines(&call),
            [
                "blocked: github.com:443 denied ×3",
                "blocked: x␛[2Jy:80 not_tls",
                "blocked: z:443 unknown",
                "blocked: 4 more"
            ]
        );
        assert!(blocked_lines(&completed(&json!({"exit_code": 0}))).is_empty());
    }

    #[test]
    fn bus_refusals_read_name_member_path_and_count() {
        let call = completed(&json!({"exit_code": 1, "status": "failed", "sandbox": {
            "bus_refused": [
                {"bus": "session", "name": "org.freedesktop.secrets", "member": "OpenSession",
                 "path": "/org/freedesktop/secrets", "count": 2},
                {"bus": "session", "name": "org.example.\u{1b}[2J"}
            ],
            "bus_refused_more": 3
        }}));
        assert_eq!(
            blocked_lines(&call),
            [
                "bus refused: org.freedesktop.secrets OpenSession /org/freedesktop/secrets ×2",
                "bus refused: org.example.␛[2J",
                "bus refused: 3 more"
            ]
        );
    }

    #[test]
    fn the_tail_keeps_the_last_ten_lines() {
        let output: String = (1..=15).map(|i| format!("line {i}\n")).collect::<String>() + "\n\n";
        let tail = output_tail(&output);
        assert_eq!(tail.len(), TAIL_LINES);
        assert_eq!((&*tail[0], &*tail[9]), ("line 6", "line 15"));
        assert!(output_tail("").is_empty());
    }

    #[test]
    fn changes_read_like_a_diffstat() {
        let changes: FileChanges = serde_json::from_value(json!({
            "files": [
                {"path": "src/lib.rs", "kind": "modified", "added": 12, "removed": 3},
                {"path": "new.txt", "kind": "added", "added": 1, "removed": 0},
                {"path": "b.rs", "kind": "renamed", "from": "a.rs", "added": 0, "removed": 0}
            ],
            "more": 2, "added": 13, "removed": 3
        }))
        .unwrap();
        assert_eq!(
            change_lines(&changes),
            [
                "+12 -3 src/lib.rs",
                "+1 -0 new.txt (added)",
                "+0 -0 b.rs (from a.rs)",
                "... 2 more files"
            ]
        );
    }

    #[test]
    fn a_fallback_says_which_mode_is_unavailable_and_why() {
        let settings: TurnSettings = serde_json::from_value(json!({
            "mode": "cautious", "model": "gpt-5", "effort": "medium",
            "fallback": {"asked": "auto", "reason": "bubblewrap is not installed at /nonexistent/bwrap"}
        }))
        .unwrap();
        assert_eq!(settings_words(&settings), "cautious · gpt-5 · medium");
        assert_eq!(
            fallback_words(&settings).unwrap(),
            "auto is unavailable here, running as cautious: bubblewrap is not installed at /nonexistent/bwrap"
        );
        let plain: TurnSettings = serde_json::from_value(json!({"mode": "full", "model": "gpt-5"})).unwrap();
        assert_eq!(fallback_words(&plain), None);
    }

    #[test]
    fn a_prompt_row_keeps_its_text_and_drops_blanks() {
        assert_eq!(prompt_row(Some("Continue? [y/N] ")).as_deref(), Some("Continue? [y/N]"));
        assert_eq!(prompt_row(Some("  > \u{1b}")).as_deref(), Some("  > ␛"));
        assert_eq!(
            prompt_row(Some("\u{1b}[1mName:\u{1b}[0m ")).as_deref(),
            Some("␛[1mName:␛[0m"),
            "sequences show as text: nothing of the row is hidden"
        );
        assert_eq!(prompt_row(Some("   ")), None);
        assert_eq!(prompt_row(None), None);
    }

    #[test]
    fn usage_reads_in_and_out() {
        let usage: Usage = serde_json::from_value(json!({"input_tokens": 1234, "output_tokens": 56})).unwrap();
        assert_eq!(usage_words(&usage), "1234 in / 56 out");
    }
}
