//! The questions a turn asks the user: approvals (`approval_requested`), input waits (`tool_call_input_changed`) and
//! surface questions (`surface_question_requested`), one at a time, first come first asked.
//!
//! A question goes away when it is answered here, when its answer arrives from elsewhere (`approval_resolved` or
//! `surface_question_answered` from another client), when it expires, when the command stops waiting, or when its call completes.
//!
//! A question's text quotes the model (the summary of a call, the program's prompt): it is made [`printable`].

use std::collections::VecDeque;

use efr_protocol::events::{ApprovalRequested, SurfaceQuestionRequested};
use efr_protocol::events::{EventBody, ToolCallInputChanged};
use efr_protocol::wire::{AnswerInput, InputWait};

use crate::clean::printable;

/// What a question asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskKind {
    /// `[y]es / [n]o`, and `[a]lways` when the question offers a rule.
    Approval {
        /// The question offers allow_always.
        always: bool,
    },
    /// A line for a command that waits for input.
    Input {
        /// The kind of answer to send.
        input: AnswerInput,
        /// Echo off while it is typed (a hidden wait, or a visible one that looks secret).
        hidden: bool,
    },
    /// `[y]es / [n]o`: keep a surface change (sandbox.surface_respond). The turn does not wait for it.
    Surface {
        /// The question's id (`s1`, ...).
        question_id: String,
    },
}

/// One question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// The call it is about.
    pub call_id: String,
    /// What it asks for.
    pub kind: AskKind,
    /// The question's text.
    pub text: String,
}

impl Ask {
    /// The question of an approval_requested event; `always` comes from its `exit.always` (the rule in words, set
    /// only when a rule may cover the call; spec, "phase E").
    #[must_use]
    pub fn approval(question: &ApprovalRequested) -> Self {
        let always = question.exit.as_ref().is_some_and(|exit| exit.always.is_some());
        let reason = question.reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default();
        let keys = if always {
            "[y]es / [n]o / [a]lways"
        } else {
            "[y]es / [n]o"
        };
        // An exit's question shows the exit on a line of its own (its reason is the question's).
        let text = match &question.exit {
            Some(exit) => format!(
                "allow {}?\n  {}  {keys} ",
                printable(&question.summary),
                super::exits::question_line(exit)
            ),
            None => printable(&format!("allow {}?{reason}  {keys} ", question.summary)).into_owned(),
        };
        Self {
            call_id: question.call_id.0.clone(),
            kind: AskKind::Approval { always },
            text,
        }
    }

    /// The question of a surface_question_requested event.
    #[must_use]
    pub fn surface(question: &SurfaceQuestionRequested) -> Self {
        Self {
            call_id: question.call_id.0.clone(),
            kind: AskKind::Surface {
                question_id: question.question_id.to_string(),
            },
            text: super::surface::question_text(question, true),
        }
    }

    /// The question of an input wait, or `None` for a wait that ended (`none`). `prompt` is the program's own
    /// prompt (the pty row that holds the cursor, from shell.status): shown on the answer's line, so the user sees
    /// what is asked before typing (`Continue? [y/N] `); without it the line is only the command's title.
    #[must_use]
    pub fn input(wait: &ToolCallInputChanged, title: &str, prompt: Option<&str>) -> Option<Self> {
        let (input, hidden) = match wait.input {
            InputWait::Hidden => (AnswerInput::Hidden, true),
            InputWait::Visible => (AnswerInput::Visible, wait.looks_secret),
            InputWait::None => return None,
        };
        let shown = if hidden { "hidden input, not shown" } else { "input" };
        let text = match prompt {
            Some(prompt) => format!("{title} waits for {shown}:\n  {prompt} "),
            None => format!("{title} waits for {shown}: "),
        };
        Some(Self {
            call_id: wait.call_id.0.clone(),
            kind: AskKind::Input { input, hidden },
            text: printable(&text).into_owned(),
        })
    }
}

/// The open question and those waiting behind it.
#[derive(Debug, Default)]
pub struct Questions {
    current: Option<Ask>,
    waiting: VecDeque<Ask>,
}

/// What changed after an event.
#[derive(Debug, PartialEq, Eq)]
pub enum Change {
    /// Nothing for the user to see.
    None,
    /// The open question went away without an answer from here (answered elsewhere, expired, stopped waiting).
    Withdrawn,
}

impl Questions {
    /// The open question.
    #[must_use]
    pub fn current(&self) -> Option<&Ask> {
        self.current.as_ref()
    }

    /// Adds a question; returns it when it becomes the open one (to be shown now).
    pub fn push(&mut self, ask: Ask) -> Option<&Ask> {
        let same = |a: &Ask| a.call_id == ask.call_id && a.kind == ask.kind;
        if self.current.as_ref().is_some_and(same) || self.waiting.iter().any(same) {
            return None;
        }
        if self.current.is_none() {
            self.current = Some(ask);
            return self.current.as_ref();
        }
        self.waiting.push_back(ask);
        None
    }

    /// Closes the open question (answered here); returns the next one to show.
    pub fn next(&mut self) -> Option<&Ask> {
        self.current = self.waiting.pop_front();
        self.current.as_ref()
    }

    /// Drops the questions of `call_id` that `keep` refuses; tells whether the open one went.
    fn drop_where(&mut self, call_id: &str, is_gone: impl Fn(&AskKind) -> bool) -> Change {
        self.waiting.retain(|a| !(a.call_id == call_id && is_gone(&a.kind)));
        if self
            .current
            .as_ref()
            .is_some_and(|a| a.call_id == call_id && is_gone(&a.kind))
        {
            self.current = None;
            return Change::Withdrawn;
        }
        Change::None
    }

    /// Updates the questions after an event that may end one.
    pub fn on_event(&mut self, body: &EventBody) -> Change {
        let approval = |k: &AskKind| matches!(k, AskKind::Approval { .. });
        let input = |k: &AskKind| matches!(k, AskKind::Input { .. });
        match body {
            EventBody::ApprovalResolved(e) => self.drop_where(e.call_id.as_str(), approval),
            EventBody::ApprovalExpired(e) => self.drop_where(e.call_id.as_str(), approval),
            EventBody::ToolCallInputChanged(e) if e.input == InputWait::None => {
                self.drop_where(e.call_id.as_str(), input)
            }
            EventBody::ToolCallCompleted(e) => {
                self.drop_where(e.call_id.as_str(), |k| !matches!(k, AskKind::Surface { .. }))
            }
            EventBody::SurfaceQuestionAnswered(e) => self.drop_surface(e.question_id.as_str()),
            _ => Change::None,
        }
    }

    /// Drops the surface question `question_id` (answered, here or elsewhere); tells whether the open one went.
    fn drop_surface(&mut self, question_id: &str) -> Change {
        let is_it = |a: &Ask| matches!(&a.kind, AskKind::Surface { question_id: q } if q == question_id);
        self.waiting.retain(|a| !is_it(a));
        if self.current.as_ref().is_some_and(is_it) {
            self.current = None;
            return Change::Withdrawn;
        }
        Change::None
    }

    /// Whether a surface question is open or waits: efr stays after the turn's end until it is answered.
    #[must_use]
    pub fn has_surface(&self) -> bool {
        self.current
            .iter()
            .chain(&self.waiting)
            .any(|a| matches!(a.kind, AskKind::Surface { .. }))
    }

    /// At the turn's end: drops every question but the surface ones; tells whether the open one went.
    pub fn end_turn(&mut self) -> Change {
        let surface = |a: &Ask| matches!(a.kind, AskKind::Surface { .. });
        self.waiting.retain(surface);
        if self.current.as_ref().is_some_and(|a| !surface(a)) {
            self.current = self.waiting.pop_front();
            return Change::Withdrawn;
        }
        Change::None
    }

    /// Drops every question (the turn ended).
    pub fn clear(&mut self) -> Change {
        self.waiting.clear();
        if self.current.take().is_some() {
            Change::Withdrawn
        } else {
            Change::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn approval(call: &str, raw: serde_json::Value) -> Ask {
        let mut raw = raw;
        raw["call_id"] = json!(call);
        raw["summary"] = json!("rm -rf build");
        let question: ApprovalRequested = serde_json::from_value(raw).unwrap();
        Ask::approval(&question)
    }

    fn body(value: serde_json::Value) -> EventBody {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_surface_question_outlives_its_call_and_the_turn_and_goes_when_answered() {
        let surface = |id: &str| {
            let question: SurfaceQuestionRequested = serde_json::from_value(json!({
                "question_id": id, "call_id": "c1",
                "change": {"path": ".envrc", "surface": "envrc", "change": "added", "runs_code": true}
            }))
            .unwrap();
            Ask::surface(&question)
        };
        let mut questions = Questions::default();
        assert!(questions.push(approval("c2", json!({}))).is_some());
        assert!(questions.push(surface("s1")).is_none());
        assert!(questions.push(surface("s2")).is_none());
        let completed = body(json!({"kind": "tool_call_completed", "call_id": "c1", "status": "ok", "output": ""}));
        assert_eq!(questions.on_event(&completed), Change::None);
        assert!(questions.has_surface());
        // The turn ends: the approval goes, the surface questions stay, the first one open.
        assert_eq!(questions.end_turn(), Change::Withdrawn);
        assert!(matches!(&questions.current().unwrap().kind, AskKind::Surface { question_id } if question_id == "s1"));
        let answered = |id: &str| {
            body(
                json!({"kind": "surface_question_answered", "question_id": id, "keep": true, "outcome": "kept",
                        "origin": "phone"}),
            )
        };
        assert_eq!(questions.on_event(&answered("s2")), Change::None);
        assert!(questions.has_surface());
        assert_eq!(questions.on_event(&answered("s1")), Change::Withdrawn);
        assert!(!questions.has_surface());
    }

    #[test]
    fn always_is_offered_only_when_the_question_has_a_rule() {
        let plain = approval("c1", json!({}));
        assert_eq!(plain.kind, AskKind::Approval { always: false });
        assert!(plain.text.ends_with("[y]es / [n]o "), "{}", plain.text);
        let exit = json!({"kind": "upload", "needs": {"unsandboxed": true}, "target": "git push origin main",
            "reason": "pushes to a remote of the project", "always": "git push to origin"});
        let rule = approval("c1", json!({ "exit": exit.clone() }));
        assert_eq!(rule.kind, AskKind::Approval { always: true });
        assert!(rule.text.contains("[a]lways"), "{}", rule.text);
        let mut no_rule = exit;
        no_rule.as_object_mut().unwrap().remove("always");
        let no_rule = approval("c1", json!({ "exit": no_rule }));
        assert_eq!(no_rule.kind, AskKind::Approval { always: false });
    }

    #[test]
    fn an_exits_question_shows_its_kind_target_reason_and_who_passed_it_on() {
        let exit = json!({"kind": "host", "also": ["write"], "needs": {"grants": [{"kind": "host", "host": "pypi.org"}]},
            "target": "pypi.org", "reason": "the classifier was unsure", "passed_on_by": "classifier_model"});
        let ask = approval("c1", json!({"reason": "the classifier was unsure", "exit": exit}));
        assert_eq!(
            ask.text,
            "allow rm -rf build?\n  exit host: pypi.org (also write) · the classifier was unsure · passed on by the \
             classifier  [y]es / [n]o "
        );
    }

    #[test]
    fn a_question_quotes_the_model_without_its_control_sequences() {
        let mut raw = json!({"call_id": "c1", "summary": "rm \u{1b}]2;PWNED\u{7}-rf\r x", "reason": "\u{9b}41mwhy"});
        let question: ApprovalRequested = serde_json::from_value(raw.take()).unwrap();
        let ask = Ask::approval(&question);
        // Shown, never dropped: the user sees all of what they allow.
        assert_eq!(ask.text, "allow rm ␛]2;PWNED␇-rf␍ x? (<U+009B>41mwhy)  [y]es / [n]o ");
        let wait: ToolCallInputChanged = serde_json::from_value(json!({"call_id": "c1", "input": "visible"})).unwrap();
        let ask = Ask::input(&wait, "$ x\u{1b}[8m", Some("Go?")).unwrap();
        assert_eq!(ask.text, "$ x␛[8m waits for input:\n  Go? ");
    }

    #[test]
    fn a_wait_that_looks_secret_is_hidden_but_answered_as_visible() {
        let wait: ToolCallInputChanged =
            serde_json::from_value(json!({"call_id": "c1", "input": "visible", "looks_secret": true})).unwrap();
        let ask = Ask::input(&wait, "$ sudo ls", None).unwrap();
        assert_eq!(
            ask.kind,
            AskKind::Input {
                input: AnswerInput::Visible,
                hidden: true
            }
        );
        let none: ToolCallInputChanged = serde_json::from_value(json!({"call_id": "c1", "input": "none"})).unwrap();
        assert_eq!(Ask::input(&none, "$ x", Some("Password:")), None);
    }

    #[test]
    fn the_programs_prompt_is_on_the_answers_line() {
        let wait: ToolCallInputChanged = serde_json::from_value(json!({"call_id": "c1", "input": "visible"})).unwrap();
        let ask = Ask::input(&wait, "$ ./rm-all", Some("Continue? [y/N]")).unwrap();
        assert_eq!(ask.text, "$ ./rm-all waits for input:\n  Continue? [y/N] ");
        let ask = Ask::input(&wait, "$ ./rm-all", None).unwrap();
        assert_eq!(ask.text, "$ ./rm-all waits for input: ");
    }

    #[test]
    fn questions_come_one_at_a_time_and_go_when_answered_elsewhere() {
        let mut questions = Questions::default();
        assert!(questions.push(approval("c1", json!({}))).is_some());
        assert!(
            questions.push(approval("c2", json!({}))).is_none(),
            "c2 waits behind c1"
        );
        assert!(questions.push(approval("c1", json!({}))).is_none(), "no question twice");
        let change = questions.on_event(&body(
            json!({"kind": "approval_resolved", "call_id": "c1", "decision": "allow"}),
        ));
        assert_eq!(change, Change::Withdrawn);
        assert!(questions.current().is_none());
        assert_eq!(questions.next().unwrap().call_id, "c2");
        let change = questions.on_event(&body(json!({"kind": "approval_expired", "call_id": "c2"})));
        assert_eq!(change, Change::Withdrawn);
        assert_eq!(questions.clear(), Change::None);
    }
}
