//! Where a turn is shown: the terminal view, the plain transcript, or `--json` (each event's JSON, one a line).
//!
//! In the plain and JSON forms, questions and efr's notices go to stderr so that stdout stays the transcript. A
//! question's line waits there for its answer; a notice, or the end, first ends that line.

use std::io::Write;

use efr_protocol::events::Event;
use efr_protocol::ids::ConversationId;
use serde_json::Value;

use super::plain::{self, PlainView};
use super::term::TermView;
use crate::clean::{json_text, printable};

/// The view of a turn.
#[derive(Debug)]
pub struct View {
    form: Form,
    /// In the plain and JSON forms: a question's line on stderr waits for its answer (no newline yet).
    asking: bool,
}

/// Where and how a turn is shown.
#[derive(Debug)]
enum Form {
    /// stdout is a terminal: Markdown, colour, a spinner.
    Term(Box<TermView>),
    /// stdout is a pipe or a file: the plain transcript.
    Plain(PlainView),
    /// `--json`: each event as it came, one a line, with the control characters JSON leaves raw escaped
    /// ([`json_text`]).
    Json,
}

impl View {
    /// The terminal view (stdout is a terminal).
    #[must_use]
    pub fn term() -> Self {
        Self::of(Form::Term(Box::default()))
    }

    /// The plain transcript (stdout is a pipe or a file).
    #[must_use]
    pub fn plain() -> Self {
        Self::of(Form::Plain(PlainView::default()))
    }

    /// `--json`.
    #[must_use]
    pub fn json() -> Self {
        Self::of(Form::Json)
    }

    fn of(form: Form) -> Self {
        Self { form, asking: false }
    }

    /// `\n` when a question's line on stderr waits for its answer (which is then no longer awaited on that line).
    fn end_question_line(&mut self) -> &'static str {
        if std::mem::take(&mut self.asking) { "\n" } else { "" }
    }

    /// Shows one event (`raw` is its JSON as efrd sent it).
    pub fn event(&mut self, event: &Event, raw: &Value) {
        match &mut self.form {
            Form::Term(view) => view.event(event),
            Form::Plain(view) => view.event(event),
            Form::Json => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", json_text(&raw.to_string()));
                let _ = out.flush();
            }
        }
    }

    /// Takes a draft of the turn: the terminal view's live line shows it; the other forms show the committed
    /// events only.
    pub fn draft(&mut self, part: &efr_protocol::wire::DraftPart) {
        if let Form::Term(view) = &mut self.form {
            view.draft(part);
        }
    }

    /// Whether the view shows drafts (only a terminal does).
    #[must_use]
    pub fn wants_drafts(&self) -> bool {
        matches!(self.form, Form::Term(_))
    }

    /// Sets the program's prompt of `call_id`'s input wait, for the plain transcript's `input:` line (the terminal
    /// shows it in the question instead, and `--json` shows efrd's events as they are).
    pub fn prompt(&mut self, call_id: &str, prompt: Option<String>) {
        if let Form::Plain(view) = &mut self.form {
            view.prompt(call_id, prompt);
        }
    }

    /// Shows a question; the answer is typed on the same line. The text quotes the model (cleaned).
    pub fn ask(&mut self, text: &str) {
        if let Form::Term(view) = &mut self.form {
            view.ask(text);
            return;
        }
        let start = self.end_question_line();
        eprint!("{start}? {}", printable(text));
        self.asking = true;
    }

    /// Shows what the user typed.
    pub fn echo(&mut self, text: &str) {
        match &mut self.form {
            Form::Term(view) => view.echo(text),
            Form::Plain(_) | Form::Json => eprint!("{text}"),
        }
    }

    /// Ends a question's line with `answer`; when something else ended that line already, the answer gets a line
    /// of its own (none when it is empty).
    pub fn resume(&mut self, answer: &str) {
        if let Form::Term(view) = &mut self.form {
            view.resume(answer);
            return;
        }
        let answer = printable(answer);
        if std::mem::take(&mut self.asking) {
            eprintln!(" {answer}");
        } else if !answer.is_empty() {
            eprintln!("{answer}");
        }
    }

    /// A line of efr's own (it may quote a command or an error: cleaned), on a line of its own.
    pub fn notice(&mut self, text: &str) {
        if let Form::Term(view) = &mut self.form {
            view.notice(text);
            return;
        }
        let start = self.end_question_line();
        eprintln!("{start}efr: {}", printable(text));
    }

    /// Names the conversation at the end, for when stdin is not a terminal: a later `efr` cannot find it from the
    /// terminal then, and `--conversation`, `efr diff` and `efr shell` need its id. A transcript line in the plain
    /// form, a line of efr's own on a terminal; `--json` names it in every event.
    pub fn conversation(&mut self, id: ConversationId) {
        let line = plain::conversation_line(id);
        match &mut self.form {
            Form::Plain(_) => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            Form::Term(view) => view.notice(&line),
            Form::Json => {}
        }
    }

    /// Says that the prompt waits behind the conversation's running turn: a transcript line in the plain form, a
    /// notice on stderr otherwise (stdout stays the terminal's view, or JSON).
    pub fn queued(&mut self) {
        const QUEUED: &str = "queued behind the running turn";
        match self.form {
            Form::Plain(_) => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{QUEUED}");
                let _ = out.flush();
            }
            Form::Term(_) | Form::Json => eprintln!("efr: {QUEUED} (it starts when that turn ends)"),
        }
    }

    /// Advances the spinner.
    pub fn tick(&mut self) {
        if let Form::Term(view) = &mut self.form {
            view.tick();
        }
    }

    /// Cleans up before efr exits: the spinner erased, an open question's line ended.
    pub fn finish(&mut self) {
        match &mut self.form {
            Form::Term(view) => view.finish(),
            Form::Plain(_) | Form::Json => {
                if self.asking {
                    eprintln!();
                    self.asking = false;
                }
            }
        }
    }
}
