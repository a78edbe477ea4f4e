//! Ctrl+B: the running shell call moves to a background job (call.background). A call in the sandbox moves at once;
//! one outside it shows its preview, and `y` moves it (the preview's token goes back), `n` leaves it running.

use efr_protocol::ids::{CallId, CommandId};
use efr_protocol::wire::{CallBackgroundParams, CallBackgroundResult, ShellStatusParams, ShellStatusResult};

use super::keys::Key;
use super::{Session, Step};

/// A preview the user is asked about: the call and the token that moves it.
#[derive(Debug, Clone)]
pub(super) struct Asked {
    call_id: CallId,
    token: String,
}

impl Session {
    /// Ctrl+B: moves the call that holds the hidden shell, or asks first for one outside the sandbox.
    pub(super) async fn on_ctrl_b(&mut self) -> Step {
        let status = ShellStatusParams {
            conversation_id: self.conversation_id,
        };
        let busy = match self.client.call::<_, ShellStatusResult>("shell.status", &status).await {
            Ok(status) => status.busy,
            Err(error) => {
                self.view.notice(&format!("cannot see what runs: {error}"));
                return Step::Go;
            }
        };
        let Some(busy) = busy else {
            self.view
                .notice("no command runs now (Ctrl+B moves a running shell command to a background job)");
            return Step::Go;
        };
        self.move_call(busy.call_id, None).await;
        Step::Go
    }

    /// The answer to a preview's question: `y` moves the call, `n` leaves it. `None` when no preview is asked.
    pub(super) async fn on_background_key(&mut self, key: &Key) -> Option<Step> {
        let asked = self.background.clone()?;
        let yes = match key {
            Key::Char('y' | 'Y') => true,
            Key::Char('n' | 'N') | Key::CtrlB => false,
            _ => return Some(Step::Go),
        };
        self.background = None;
        self.view.resume(if yes { "yes" } else { "no" });
        if yes {
            self.move_call(asked.call_id, Some(asked.token)).await;
        }
        Some(Step::Go)
    }

    async fn move_call(&mut self, call_id: CallId, confirm: Option<String>) {
        let params = CallBackgroundParams {
            command_id: CommandId::new(),
            conversation_id: self.conversation_id,
            call_id: call_id.clone(),
            confirm,
        };
        match self
            .client
            .call::<_, CallBackgroundResult>("call.background", &params)
            .await
        {
            Ok(CallBackgroundResult::Moved { job_id }) => self.view.notice(&format!(
                "moved to background job {job_id}: `efr jobs` lists it, `efr jobs logs {job_id} -f` follows it"
            )),
            Ok(CallBackgroundResult::Preview {
                token,
                command,
                max_minutes,
                exits,
            }) => {
                let exits = if exits.is_empty() {
                    String::new()
                } else {
                    format!(" ({} exit(s) of the sandbox)", exits.len())
                };
                self.view.ask(&format!(
                    "`{command}` runs outside the sandbox{exits}; keep it running as a background job, stopped \
                     after {max_minutes} min? [y/n] "
                ));
                self.background = Some(Asked { call_id, token });
            }
            Ok(CallBackgroundResult::Unknown) => self.view.notice("efrd answered call.background in a newer form"),
            Err(error) => self.view.notice(&format!("not moved: {error}")),
        }
    }
}
