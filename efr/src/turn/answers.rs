//! The user's answers sent to efrd (approval.respond, sandbox.surface_respond, input.respond) and the interrupt of
//! the turn (turn.interrupt, with the unread steers resent or taken back): the methods of [`Session`] that write.

use std::process::ExitCode;

use efr_protocol::ids::CommandId;
use efr_protocol::secret::SecretText;
use efr_protocol::wire::{
    ApprovalDecision, ApprovalRespondParams, InputRespondParams, SandboxSurfaceRespondParams,
    SandboxSurfaceRespondResult, TurnInterruptParams,
};
use serde_json::Value;

use super::questions::Ask;
use super::{Session, Step, surface};
use crate::report;

impl Session {
    pub(super) async fn answer_approval(&mut self, ask: &Ask, decision: ApprovalDecision) {
        let params = ApprovalRespondParams {
            command_id: CommandId::new(),
            conversation_id: self.conversation_id,
            call_id: efr_protocol::ids::CallId(ask.call_id.clone()),
            decision,
        };
        self.answered.insert(ask.call_id.clone());
        let word = match decision {
            ApprovalDecision::AllowAlways => "always",
            ApprovalDecision::Deny => "no",
            _ => "yes",
        };
        match self.client.call::<_, Value>("approval.respond", &params).await {
            Ok(_) => self.view.resume(word),
            Err(error) => self.view.resume(&format!("(not taken: {error})")),
        }
        self.show_next();
    }

    pub(super) async fn answer_surface(&mut self, question_id: &str, keep: bool) {
        let Ok(question_id) = question_id.parse() else {
            self.view.resume("(not taken: a bad question id)");
            self.show_next();
            return;
        };
        let params = SandboxSurfaceRespondParams {
            command_id: CommandId::new(),
            conversation_id: self.conversation_id,
            question_id,
            keep,
        };
        match self
            .client
            .call::<_, SandboxSurfaceRespondResult>("sandbox.surface_respond", &params)
            .await
        {
            Ok(result) => self.view.resume(&surface::answer_word(keep, result.outcome)),
            Err(error) => self.view.resume(&format!("(not taken: {error})")),
        }
        self.show_next();
    }

    pub(super) async fn answer_input(&mut self, ask: &Ask, input: efr_protocol::wire::AnswerInput, hidden: bool) {
        let params = InputRespondParams {
            conversation_id: self.conversation_id,
            call_id: efr_protocol::ids::CallId(ask.call_id.clone()),
            text: SecretText::new(std::mem::take(&mut self.line)),
            input,
            manual: false,
        };
        let result = self.client.call::<_, Value>("input.respond", &params).await;
        let sent = if hidden { "(sent)" } else { "" };
        match result {
            Ok(_) => self.view.resume(sent),
            Err(error) => self.view.resume(&format!("(not taken: {error})")),
        }
        self.show_next();
    }

    pub(super) async fn on_interrupt(&mut self) -> Step {
        if let Some(code) = self.leave_with {
            self.view.resume("");
            self.view.notice("left; the surface changes stay held until answered");
            return Step::Exit(code);
        }
        if self.interrupt_sent {
            self.view.notice("left; the turn may still be ending in efrd");
            return Step::Exit(ExitCode::from(report::INTERRUPTED));
        }
        if self.questions.current().is_some() {
            self.view.resume("");
        }
        let Some(sent) = self.interrupt_asking().await else {
            return Step::Go;
        };
        self.view.notice(if sent {
            "interrupting the turn (Ctrl+C again leaves at once)"
        } else {
            "Ctrl+C again leaves at once"
        });
        Step::Go
    }

    /// Sends turn.interrupt for this turn (once); tells whether efrd took it (a failure is shown). The turn then
    /// ends with turn_interrupted, which exits 130.
    pub(super) async fn interrupt(&mut self, resend_steers: Vec<u64>, withdraw_steers: Vec<u64>) -> bool {
        self.interrupt_sent = true;
        let params = TurnInterruptParams {
            command_id: CommandId::new(),
            conversation_id: self.conversation_id,
            turn_id: Some(self.turn_id),
            resend_steers,
            resend_as: None,
            withdraw_steers,
            withdraw: Vec::new(),
        };
        // efrd stops the turn's running command itself (SIGINT, as a terminal's Ctrl+C would).
        match self
            .client
            .call::<_, efr_protocol::wire::TurnInterruptResult>("turn.interrupt", &params)
            .await
        {
            Ok(result) => {
                if let Some(resent) = result.resent {
                    self.view.notice(&format!(
                        "your unread steers run next, as turn {} (efr shows it in this conversation)",
                        resent.turn_id
                    ));
                }
                true
            }
            Err(error) => {
                self.view.notice(&format!("cannot interrupt: {error}"));
                false
            }
        }
    }
}
