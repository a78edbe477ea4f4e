//! The input row of a running turn (spec, "steer, queue and withdraw from the input row of a turn"): a line typed
//! while no question waits steers the turn with Enter (turn.steer; a late one is queued instead, `if_late`), or is
//! queued as the next prompt with Tab (prompt.send); Ctrl+X withdraws the newest prompt queued from here
//! (prompt.withdraw). Ctrl+C with steers that no model call read asks whether to send them again after the
//! interrupt (turn.interrupt's `resend_steers`, else `withdraw_steers`).

use efr_protocol::events::{Event, EventBody};
use efr_protocol::ids::{CommandId, ConversationId, TurnId};
use efr_protocol::wire::{
    PromptContext, PromptSendParams, PromptSendResult, PromptSettings, PromptWithdrawParams, PromptWithdrawResult,
    QueueAs, TurnSteerParams, TurnSteerResult, WithdrawTarget,
};

use crate::client::Client;

/// The row's state: the line typed, the steers of this session that no model call read, the prompts it queued.
#[derive(Debug, Default)]
pub(super) struct SteerRow {
    /// The line typed so far.
    pub line: String,
    /// This session's steers that no model call read yet: their seqs and texts, oldest first.
    pub unread: Vec<(u64, String)>,
    /// The prompts queued from here that have not started, oldest first.
    queued: Vec<TurnId>,
    /// Ctrl+C asked whether to send the unread steers again: the next `y` or `n` answers.
    pub asking_resend: bool,
    /// The context and settings of the session's prompt: a steer or a queued line goes with them.
    context: Option<PromptContext>,
    settings: Option<PromptSettings>,
}

impl SteerRow {
    pub(super) fn new(context: Option<PromptContext>, settings: Option<PromptSettings>) -> Self {
        Self {
            context,
            settings,
            ..Self::default()
        }
    }

    /// Follows the conversation's events: steers read, prompts started or withdrawn.
    pub(super) fn observe(&mut self, event: &Event) {
        match &event.body {
            EventBody::SteeringDelivered(delivered) => {
                self.unread.retain(|(seq, _)| !delivered.steers.contains(seq));
            }
            EventBody::SteeringWithdrawn(withdrawn) => {
                self.unread.retain(|(seq, _)| !withdrawn.steers.contains(seq));
            }
            EventBody::TurnStarted(_) | EventBody::PromptWithdrawn(_) => {
                self.queued.retain(|turn| Some(*turn) != event.turn_id);
            }
            _ => {}
        }
    }

    fn queue_as(&self) -> QueueAs {
        QueueAs::Queue {
            context: self.context.clone(),
            last_command: None,
            recent_commands: Vec::new(),
            settings: self.settings.clone(),
        }
    }

    /// Enter: steers `turn` with the line; what efr says.
    pub(super) async fn steer(&mut self, client: &Client, conversation_id: ConversationId, turn: TurnId) -> String {
        let text = std::mem::take(&mut self.line);
        let params = TurnSteerParams {
            command_id: CommandId::new(),
            conversation_id,
            turn_id: Some(turn),
            text: text.clone(),
            if_late: Some(self.queue_as()),
        };
        match client.call::<_, TurnSteerResult>("turn.steer", &params).await {
            Ok(result) if result.queued => {
                self.queued.push(result.turn_id);
                "queued: the turn makes no more model calls, so it runs next".to_owned()
            }
            Ok(result) => {
                self.unread.push((result.seq, text));
                "steered: the turn's next model call reads it".to_owned()
            }
            Err(error) => format!("(not taken: {error})"),
        }
    }

    /// Tab: queues the line as the next prompt; what efr says.
    pub(super) async fn queue(&mut self, client: &Client, conversation_id: ConversationId) -> String {
        let params = PromptSendParams {
            command_id: CommandId::new(),
            new: false,
            text: std::mem::take(&mut self.line),
            conversation_id: Some(conversation_id),
            context: self.context.clone(),
            last_command: None,
            recent_commands: Vec::new(),
            settings: self.settings.clone(),
        };
        match client.call::<_, PromptSendResult>("prompt.send", &params).await {
            Ok(sent) => {
                self.queued.push(sent.turn_id);
                "queued for after this turn (Ctrl+X takes it back)".to_owned()
            }
            Err(error) => format!("(not taken: {error})"),
        }
    }

    /// Ctrl+X: withdraws the newest prompt queued from here; what efr says.
    pub(super) async fn withdraw(&mut self, client: &Client, conversation_id: ConversationId) -> String {
        let Some(turn_id) = self.queued.pop() else {
            return "no prompt queued from here waits".to_owned();
        };
        let params = PromptWithdrawParams {
            command_id: CommandId::new(),
            conversation_id,
            target: WithdrawTarget::Turn { turn_id },
        };
        match client.call::<_, PromptWithdrawResult>("prompt.withdraw", &params).await {
            Ok(result) => format!("withdrew: {}", result.withdrawn.text),
            Err(error) => format!("cannot withdraw it: {error}"),
        }
    }
}

impl super::Session {
    /// A key while no question waits: it edits the row's line, or steers, queues or withdraws.
    pub(super) async fn on_row_key(&mut self, key: super::Key) -> super::Step {
        use super::Key;
        if self.row.asking_resend {
            let resend = match key {
                Key::Char('y' | 'Y') => true,
                Key::Char('n' | 'N') => false,
                _ => return super::Step::Go,
            };
            self.row.asking_resend = false;
            self.view.resume(if resend { "yes" } else { "no" });
            return self.interrupt_with(resend).await;
        }
        match key {
            Key::Char(c) => {
                if self.row.line.is_empty() {
                    self.view.ask("steer (Enter), or queue for after the turn (Tab): ");
                }
                self.row.line.push(c);
                self.view.echo(c.encode_utf8(&mut [0; 4]));
            }
            Key::Backspace if self.row.line.pop().is_some() => self.view.echo("\x08 \x08"),
            Key::ClearLine => {
                let n = self.row.line.chars().count();
                self.view.echo(&"\x08 \x08".repeat(n));
                self.row.line.clear();
            }
            Key::Enter if !self.row.line.trim().is_empty() => {
                let said = self.row.steer(&self.client, self.conversation_id, self.turn_id).await;
                self.view.resume(&said);
            }
            Key::Tab if !self.row.line.trim().is_empty() => {
                let said = self.row.queue(&self.client, self.conversation_id).await;
                self.view.resume(&said);
            }
            Key::CtrlX => {
                let said = self.row.withdraw(&self.client, self.conversation_id).await;
                self.view.notice(&said);
            }
            _ => {}
        }
        super::Step::Go
    }

    /// Ctrl+C: with steers that no model call read, asks whether to send them again after the interrupt; else
    /// interrupts at once. `None`: it asked.
    pub(super) async fn interrupt_asking(&mut self) -> Option<bool> {
        if self.row.unread.is_empty() || self.keys.is_none() {
            return Some(self.interrupt(Vec::new(), Vec::new()).await);
        }
        if self.row.asking_resend {
            // Ctrl+C again: interrupt, and take the steers back.
            self.row.asking_resend = false;
            self.view.resume("no");
            return Some(self.interrupt_steers(false).await);
        }
        self.row.asking_resend = true;
        let n = self.row.unread.len();
        self.view.ask(&format!(
            "interrupt: send your {n} unread steer{} again after it? [y]es / [n]o",
            if n == 1 { "" } else { "s" }
        ));
        None
    }

    async fn interrupt_with(&mut self, resend: bool) -> super::Step {
        let sent = self.interrupt_steers(resend).await;
        self.view.notice(if sent {
            "interrupting the turn (Ctrl+C again leaves at once)"
        } else {
            "Ctrl+C again leaves at once"
        });
        super::Step::Go
    }

    /// Interrupts, resending the unread steers (`resend`) or taking them back.
    async fn interrupt_steers(&mut self, resend: bool) -> bool {
        let seqs: Vec<u64> = self.row.unread.iter().map(|(seq, _)| *seq).collect();
        let (resend_steers, withdraw_steers) = if resend { (seqs, Vec::new()) } else { (Vec::new(), seqs) };
        self.interrupt(resend_steers, withdraw_steers).await
    }
}
