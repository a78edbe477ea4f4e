//! The terminal view of a turn: Markdown per finished block, tool calls with a live spinner and their elapsed time,
//! output tails, changes, and the usage line, in colour.
//!
//! The spinner is the last line of the screen, redrawn in place (`\r`, erase line) every tick; any other output
//! first erases it and then draws it again below. While a question is open the spinner rests, so that the answer's
//! line is never overwritten; and whatever else comes while the question's line waits for its answer (a notice,
//! an event, the end) first ends that line, so it never runs on behind the question.
//!
//! Text that the model, a command or efrd chose is made [`printable`] before efr styles it (here, or in
//! [`super::describe`]); efr's own colours are added after.

use std::collections::HashMap;
use std::io::{Stdout, Write};
use std::time::Instant;

use efr_protocol::events::{Event, EventBody};
use efr_protocol::wire::{ApprovalDecision, InputWait, Verdict};
use termimad::MadSkin;

use super::describe::{
    blocked_lines, call_end, call_ok, call_title, change_lines, fallback_words, output_tail, sandbox_notice,
    settings_words, usage_words,
};
use super::exits::{ExitTally, judged_line, requested_line};
use super::live::LiveLine;
use super::markdown::{self, Blocks};
use crate::clean::printable;

const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";
const ERASE: &str = "\r\x1b[2K";
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The running call's spinner line.
#[derive(Debug)]
struct Spinner {
    /// The call, so that its approval restarts the clock.
    call_id: String,
    /// The call's title.
    title: String,
    /// When the call started running: its tool_call_started, or the allow of its question (the time a question
    /// waits is not the call's).
    since: Instant,
}

/// The terminal view, writing to `W` (stdout; a buffer in tests).
#[derive(Debug)]
pub struct TermView<W: Write = Stdout> {
    out: W,
    skin: MadSkin,
    blocks: HashMap<u32, Blocks>,
    patches: HashMap<String, bool>,
    spinner: Option<Spinner>,
    frame: usize,
    drawn: bool,
    paused: bool,
    /// A question's line waits for its answer (no newline yet).
    asking: bool,
    /// The reason of the turn's mode fallback, once shown (its `sandbox_unavailable` says the same).
    fallback: Option<String>,
    /// What the turn's exit judges let through, summed at its end.
    exits: ExitTally,
    /// The drafts' live line, drawn where the spinner goes while no call runs ([`super::live`]).
    live: LiveLine,
}

impl Default for TermView {
    fn default() -> Self {
        Self::new()
    }
}

fn width() -> usize {
    let (cols, _) = termimad::terminal_size();
    usize::from(cols.max(20))
}

impl TermView {
    /// A view on stdout with termimad's default skin.
    #[must_use]
    pub fn new() -> Self {
        Self::with_out(std::io::stdout())
    }
}

impl<W: Write> TermView<W> {
    /// A view that writes to `out`.
    pub fn with_out(out: W) -> Self {
        Self {
            out,
            skin: MadSkin::default(),
            blocks: HashMap::new(),
            patches: HashMap::new(),
            spinner: None,
            frame: 0,
            drawn: false,
            paused: false,
            asking: false,
            fallback: None,
            exits: ExitTally::default(),
            live: LiveLine::default(),
        }
    }

    fn erase_spinner(&mut self) {
        if self.drawn {
            let _ = write!(self.out, "{ERASE}");
            self.drawn = false;
        }
    }

    /// Ends an open question's line, so that what comes next starts on a line of its own.
    fn end_question_line(&mut self) {
        if std::mem::take(&mut self.asking) {
            let _ = self.out.write_all(b"\n");
        }
    }

    fn draw_spinner(&mut self) {
        if !self.paused
            && self.spinner.is_none()
            && let Some(line) = self.live.line(width(), DIM, RESET)
        {
            let _ = write!(self.out, "{ERASE}{line}");
            self.drawn = true;
        }
        if !self.paused
            && let Some(Spinner { title, since, .. }) = &self.spinner
        {
            let secs = since.elapsed().as_secs_f32();
            let frame = FRAMES[self.frame % FRAMES.len()];
            // Keep the line shorter than the terminal, so it never wraps (a wrapped line cannot be erased in place).
            let room = width().saturating_sub(12);
            let title: String = title.chars().take(room).collect();
            let _ = write!(self.out, "{ERASE}{CYAN}{frame}{RESET} {DIM}{title} · {secs:.1}s{RESET}");
            self.drawn = true;
        }
        let _ = self.out.flush();
    }

    /// Writes `text` (whole lines) above the spinner, on a line of its own.
    fn print(&mut self, text: &str) {
        self.erase_spinner();
        self.end_question_line();
        let _ = self.out.write_all(text.as_bytes());
        if !text.ends_with('\n') {
            let _ = self.out.write_all(b"\n");
        }
        self.draw_spinner();
    }

    /// Renders the model's Markdown, cleaned first: termimad's styles are efr's, the text's own sequences are not.
    fn markdown(&mut self, text: &str) {
        let rendered = markdown::render(&self.skin, &printable(text), width());
        self.print(&rendered);
    }

    fn flush_text(&mut self) {
        let mut indexes: Vec<u32> = self.blocks.keys().copied().collect();
        indexes.sort_unstable();
        for index in indexes {
            if let Some(rest) = self.blocks.get_mut(&index).and_then(Blocks::finish) {
                self.markdown(&rest);
            }
        }
        self.blocks.clear();
    }

    /// Renders one event.
    pub fn event(&mut self, event: &Event) {
        match &event.body {
            EventBody::TurnStarted(started) => {
                if let Some(settings) = &started.settings {
                    self.print(&format!("{DIM}{}{RESET}", settings_words(settings)));
                    self.fallback = settings.fallback.as_ref().map(|f| f.reason.clone());
                    if let Some(fallback) = fallback_words(settings) {
                        self.print(&format!("{YELLOW}{fallback}{RESET}"));
                    }
                }
            }
            EventBody::SandboxUnavailable(unavailable) => {
                if let Some(notice) = sandbox_notice(unavailable, self.fallback.as_deref()) {
                    self.print(&format!("{YELLOW}{notice}{RESET}"));
                }
            }
            EventBody::AssistantMessageUpdated(update) => {
                let finished = self.blocks.entry(update.index).or_default().push(&update.delta);
                if let Some(text) = finished {
                    self.markdown(&text);
                }
            }
            EventBody::AssistantMessageCompleted(done) => {
                self.live.end_message();
                self.erase_spinner();
                if let Some(rest) = self.blocks.remove(&done.index).as_mut().and_then(Blocks::finish) {
                    self.markdown(&rest);
                }
            }
            EventBody::ToolCallStarted(call) => {
                self.live.end_message();
                self.erase_spinner();
                self.flush_text();
                self.patches.insert(call.call_id.0.clone(), call.tool == "apply_patch");
                let title = call_title(call);
                self.print(&format!("{BOLD}{title}{RESET}"));
                self.spinner = Some(Spinner {
                    call_id: call.call_id.0.clone(),
                    title,
                    since: Instant::now(),
                });
            }
            EventBody::ToolCallCompleted(done) => {
                let elapsed = self.spinner.take().map(|spinner| spinner.since.elapsed().as_secs_f32());
                let patch = self.patches.get(done.call_id.as_str()).copied().unwrap_or(false);
                let mut text = String::new();
                if !(patch && call_ok(done)) {
                    for line in output_tail(&done.output) {
                        text.push_str(&format!("{DIM}  │ {line}{RESET}\n"));
                    }
                }
                let colour = if call_ok(done) { GREEN } else { RED };
                let took = elapsed.map(|s| format!(" {DIM}({s:.1}s){RESET}")).unwrap_or_default();
                text.push_str(&format!("{colour}{}{RESET}{took}\n", call_end(done)));
                for line in blocked_lines(done) {
                    text.push_str(&format!("  {RED}{line}{RESET}\n"));
                }
                if let Some(changes) = &done.changes {
                    for line in change_lines(changes) {
                        text.push_str(&format!("  {YELLOW}{line}{RESET}\n"));
                    }
                }
                self.print(&text);
            }
            EventBody::ApprovalResolved(answer) => {
                self.restart_clock(answer.call_id.as_str(), answer.decision);
                let word = match answer.decision {
                    ApprovalDecision::Allow => "allowed",
                    ApprovalDecision::AllowAlways => "allowed always",
                    ApprovalDecision::Deny => "denied",
                    ApprovalDecision::Unknown => "answered",
                };
                self.print(&format!("{DIM}→ {word}{RESET}"));
            }
            EventBody::ApprovalExpired(_) => self.print(&format!("{DIM}→ the question expired{RESET}")),
            EventBody::SandboxSurfaceChanged(changed) => {
                for line in super::surface::changed_lines(changed) {
                    self.print(&format!("  {YELLOW}{line}{RESET}"));
                }
            }
            EventBody::TurnSurfaceReport(report) => {
                for line in super::surface::report_lines(report) {
                    self.print(&format!("{YELLOW}{line}{RESET}"));
                }
            }
            EventBody::ExitRequested(requested) => self.print(&format!("{DIM}{}{RESET}", requested_line(requested))),
            EventBody::ExitJudged(judged) => {
                self.exits.add(judged);
                let colour = if judged.verdict == Verdict::Deny { RED } else { DIM };
                self.print(&format!("{colour}{}{RESET}", judged_line(judged)));
            }
            EventBody::AlwaysRuleSaved(saved) => {
                self.print(&format!("{DIM}{}{RESET}", super::exits::rule_line(saved)));
            }
            EventBody::ToolCallInputChanged(wait) if wait.input == InputWait::None => {}
            EventBody::TurnInterruptRequested(_) => self.print(&format!("{DIM}interrupting…{RESET}")),
            EventBody::TurnCompleted(done) => {
                self.flush_text();
                self.exit_summary();
                let mut usage = done.usage.as_ref().map(usage_words).unwrap_or_default();
                if let Some(context) = &done.context {
                    usage.push_str(&format!(" · {}", super::describe::context_words(context)));
                }
                self.print(&format!("{DIM}✓ done · {usage}{RESET}"));
            }
            EventBody::TurnFailed(failed) => {
                self.flush_text();
                self.spinner = None;
                self.exit_summary();
                let message = printable(&failed.error.message);
                self.print(&format!("{RED}✗ the turn failed: {message}{RESET}"));
            }
            EventBody::TurnInterrupted(_) => {
                self.flush_text();
                self.spinner = None;
                self.exit_summary();
                self.print(&format!("{YELLOW}■ interrupted{RESET}"));
            }
            EventBody::TurnCancelled(cancelled) => {
                self.print(&format!("{YELLOW}■ not run: {}{RESET}", printable(&cancelled.reason)));
            }
            EventBody::ConversationCompacted(compaction) => {
                self.print(&format!("{DIM}{}{RESET}", super::describe::compaction_line(compaction)));
            }
            body @ (EventBody::JobStarted(_)
            | EventBody::JobWatchMatched(_)
            | EventBody::JobEnded(_)
            | EventBody::JobNotice(_)
            | EventBody::JobPortForwarded(_)) => {
                if let Some(line) = super::describe::job_line(body) {
                    self.print(&format!("{DIM}{line}{RESET}"));
                }
            }
            EventBody::ShellCommandDetached(detached) => {
                self.print(&format!(
                    "{DIM}$ {} still runs in the background{RESET}",
                    printable(&detached.command)
                ));
            }
            _ => {}
        }
    }

    /// Prints what the turn's exit judges let through, when they judged any.
    fn exit_summary(&mut self) {
        if let Some(summary) = self.exits.take_summary() {
            self.print(&format!("{DIM}{summary}{RESET}"));
        }
    }

    /// Restarts the spinner's clock when `call_id`'s question was answered allow: the call runs from now.
    fn restart_clock(&mut self, call_id: &str, decision: ApprovalDecision) {
        let allowed = matches!(decision, ApprovalDecision::Allow | ApprovalDecision::AllowAlways);
        if let Some(spinner) = &mut self.spinner
            && allowed
            && spinner.call_id == call_id
        {
            spinner.since = Instant::now();
        }
    }

    /// Takes a draft of the turn: the live line shows it ([`super::live`]).
    pub fn draft(&mut self, part: &efr_protocol::wire::DraftPart) {
        if self.live.take(part) {
            self.erase_spinner();
            self.draw_spinner();
        }
    }

    /// Shows a question (no newline: the answer goes on the same line); the spinner rests until [`Self::resume`].
    pub fn ask(&mut self, text: &str) {
        self.flush_text();
        self.erase_spinner();
        self.end_question_line();
        self.paused = true;
        let _ = write!(self.out, "{YELLOW}?{RESET} {}", printable(text));
        self.asking = true;
        let _ = self.out.flush();
    }

    /// Writes what the user typed (a visible answer, or a backspace's erase).
    pub fn echo(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }

    /// Ends the question's line with `answer` and lets the spinner run again. When something else ended that line
    /// already, the answer gets a line of its own (none when it is empty).
    pub fn resume(&mut self, answer: &str) {
        self.paused = false;
        let answer = printable(answer);
        if std::mem::take(&mut self.asking) {
            self.print(&format!(" {DIM}{answer}{RESET}"));
        } else if !answer.is_empty() {
            self.print(&format!("{DIM}{answer}{RESET}"));
        }
    }

    /// A line of efr's own, such as a notice about Ctrl+C (it may quote a command or an error: cleaned).
    pub fn notice(&mut self, text: &str) {
        self.print(&format!("{DIM}{}{RESET}", printable(text)));
    }

    /// Advances the spinner.
    pub fn tick(&mut self) {
        if self.spinner.is_some() && !self.paused {
            self.frame = self.frame.wrapping_add(1);
            self.draw_spinner();
        }
    }

    /// Erases the spinner and ends an open question's line before efr exits.
    pub fn finish(&mut self) {
        self.flush_text();
        self.erase_spinner();
        self.spinner = None; // a line after the end (the conversation's id) must not draw it again
        self.end_question_line();
        let _ = self.out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn running(call_id: &str, since: Instant) -> TermView {
        let mut view = TermView::new();
        view.spinner = Some(Spinner {
            call_id: call_id.to_owned(),
            title: "$ ls".to_owned(),
            since,
        });
        view
    }

    /// What a view wrote, without efr's styles (so that the lines read plainly).
    fn written(view: &TermView<Vec<u8>>) -> String {
        let text = String::from_utf8_lossy(&view.out).into_owned();
        [BOLD, DIM, RED, GREEN, YELLOW, CYAN, RESET]
            .iter()
            .fold(text, |text, style| text.replace(style, ""))
    }

    #[test]
    fn a_notice_or_the_end_while_a_question_waits_starts_on_a_line_of_its_own() {
        let mut view = TermView::with_out(Vec::new());
        view.ask("allow rm -rf build?  [y]es / [n]o ");
        view.notice("the conversation's stream ended before the turn did");
        view.finish();
        assert_eq!(
            written(&view),
            "? allow rm -rf build?  [y]es / [n]o \nthe conversation's stream ended before the turn did\n"
        );

        let mut view = TermView::with_out(Vec::new());
        view.ask("allow ls?  [y]es / [n]o ");
        view.finish();
        view.finish();
        assert_eq!(
            written(&view),
            "? allow ls?  [y]es / [n]o \n",
            "the end closes the line once"
        );

        let mut view = TermView::with_out(Vec::new());
        view.ask("allow ls?  [y]es / [n]o ");
        view.resume("yes");
        view.notice("later");
        view.ask("allow rm?  [y]es / [n]o ");
        view.notice("gone");
        view.resume("(answered elsewhere, or no longer asked)");
        view.resume("");
        assert_eq!(
            written(&view),
            "? allow ls?  [y]es / [n]o  yes\nlater\n? allow rm?  [y]es / [n]o \ngone\n\
             (answered elsewhere, or no longer asked)\n"
        );
    }

    #[test]
    fn the_models_text_and_questions_lose_their_sequences_but_keep_efrs_styles() {
        let mut view = TermView::with_out(Vec::new());
        view.skin = MadSkin::no_style(); // termimad's styles are escapes too: only the text's are counted here
        view.markdown("Hi \u{1b}]2;PWNED\u{7}\u{1b}[41mthere");
        view.ask("allow \u{1b}]52;c;eA==\u{1b}\\x?  [y]es / [n]o ");
        let raw = String::from_utf8_lossy(&view.out).into_owned();
        assert!(raw.contains(YELLOW), "efr's own style stays: {raw:?}");
        let text = written(&view);
        assert!(!text.contains(['\u{1b}', '\u{7}']), "{text:?}");
        assert!(
            text.contains("Hi ␛]2;PWNED␇␛[41mthere") && text.contains("? allow ␛]52;c;eA==␛\\x?"),
            "{text:?}"
        );
    }

    #[test]
    fn an_allowed_call_is_timed_from_its_answer_not_from_its_question() {
        let asked = Instant::now().checked_sub(Duration::from_secs(3)).unwrap();
        let mut view = running("c1", asked);
        view.restart_clock("c2", ApprovalDecision::Allow);
        assert_eq!(view.spinner.as_ref().unwrap().since, asked, "another call's answer");
        view.restart_clock("c1", ApprovalDecision::Deny);
        assert_eq!(
            view.spinner.as_ref().unwrap().since,
            asked,
            "a denied call does not run"
        );
        view.restart_clock("c1", ApprovalDecision::Allow);
        assert!(view.spinner.as_ref().unwrap().since.elapsed() < Duration::from_secs(1));
        let mut view = running("c1", asked);
        view.restart_clock("c1", ApprovalDecision::AllowAlways);
        assert!(view.spinner.as_ref().unwrap().since.elapsed() < Duration::from_secs(1));
    }
}
