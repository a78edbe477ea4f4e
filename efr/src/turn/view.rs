//! Where a turn is shown: the terminal view, the plain transcript, or `--json` (each event's JSON, one a line).
//!
//! In the plain and JSON forms, questions and efr's notices go to stderr so that stdout stays the transcript.

use std::io::Write;

use efr_protocol::events::Event;
use serde_json::Value;

use super::plain::PlainView;
use super::term::TermView;

/// The view of a turn.
#[derive(Debug)]
pub enum View {
    /// stdout is a terminal: Markdown, colour, a spinner.
    Term(Box<TermView>),
    /// stdout is a pipe or a file: the plain transcript.
    Plain(PlainView),
    /// `--json`: each event as it came, one a line.
    Json,
}

impl View {
    /// Shows one event (`raw` is its JSON as efrd sent it).
    pub fn event(&mut self, event: &Event, raw: &Value) {
        match self {
            Self::Term(view) => view.event(event),
            Self::Plain(view) => view.event(event),
            Self::Json => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{raw}");
                let _ = out.flush();
            }
        }
    }

    /// Sets the program's prompt of `call_id`'s input wait, for the plain transcript's `input:` line (the terminal
    /// shows it in the question instead, and `--json` shows efrd's events as they are).
    pub fn prompt(&mut self, call_id: &str, prompt: Option<String>) {
        if let Self::Plain(view) = self {
            view.prompt(call_id, prompt);
        }
    }

    /// Shows a question; the answer is typed on the same line.
    pub fn ask(&mut self, text: &str) {
        match self {
            Self::Term(view) => view.ask(text),
            Self::Plain(_) | Self::Json => {
                eprint!("? {text}");
            }
        }
    }

    /// Shows what the user typed.
    pub fn echo(&mut self, text: &str) {
        match self {
            Self::Term(view) => view.echo(text),
            Self::Plain(_) | Self::Json => eprint!("{text}"),
        }
    }

    /// Ends a question's line.
    pub fn resume(&mut self, answer: &str) {
        match self {
            Self::Term(view) => view.resume(answer),
            Self::Plain(_) | Self::Json => eprintln!(" {answer}"),
        }
    }

    /// A line of efr's own.
    pub fn notice(&mut self, text: &str) {
        match self {
            Self::Term(view) => view.notice(text),
            Self::Plain(_) | Self::Json => eprintln!("efr: {text}"),
        }
    }

    /// Says that the prompt waits behind the conversation's running turn: a transcript line in the plain form, a
    /// notice on stderr otherwise (stdout stays the terminal's view, or JSON).
    pub fn queued(&mut self) {
        const QUEUED: &str = "queued behind the running turn";
        match self {
            Self::Plain(_) => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{QUEUED}");
                let _ = out.flush();
            }
            Self::Term(_) | Self::Json => eprintln!("efr: {QUEUED} (it starts when that turn ends)"),
        }
    }

    /// Advances the spinner.
    pub fn tick(&mut self) {
        if let Self::Term(view) = self {
            view.tick();
        }
    }

    /// Cleans up before efr exits.
    pub fn finish(&mut self) {
        if let Self::Term(view) = self {
            view.finish();
        }
    }
}
