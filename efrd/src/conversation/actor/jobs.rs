//! The notices of a conversation's background jobs (docs/jobs.md, "Notices"): each waits for the next turn, and
//! one that may wake starts a turn of its own when none is queued. A woken turn runs with the last turn's settings,
//! at most auto (a notice never starts a turn in a mode above auto), and its input is the notices alone.

use efr_protocol::events::{EventBody, JobNotice};
use efr_protocol::ids::TurnId;
use efr_protocol::wire::{Mode, Origin};

use super::{Actor, Queued};

impl Actor {
    /// A job's notice: kept for the next turn; when it may wake and no turn is queued, a woken turn is queued.
    pub(super) fn job_notice(&mut self, notice: crate::jobs::Notice) {
        let wake = notice.wake;
        self.job_notices.push(notice);
        if !wake || !self.queue.is_empty() {
            return;
        }
        let Some((mut settings, overridden)) = self.last_settings.clone() else {
            return;
        };
        if settings.mode == Mode::Full {
            settings.mode = Mode::Auto;
        }
        self.queue.push_back(Queued {
            turn_id: TurnId::new(),
            text: String::new(),
            settings,
            overridden,
            origin: Origin::Daemon,
            desktop: None,
            user_prompt: String::new(),
            woken: true,
        });
    }

    /// The notices that go with a turn that starts: their job_notice events (`woke` for a woken turn's) and the text
    /// block the model reads before the prompt (empty when none).
    pub(super) fn take_job_notices(&mut self, woken: bool) -> (Vec<EventBody>, String) {
        let notices = std::mem::take(&mut self.job_notices);
        if notices.is_empty() {
            return (Vec::new(), String::new());
        }
        let mut block = String::from("<job_notices>\n");
        let bodies = notices
            .into_iter()
            .map(|notice| {
                block.push_str(&notice.text);
                block.push('\n');
                EventBody::JobNotice(JobNotice {
                    job_id: notice.job_id,
                    notice_kind: notice.kind,
                    woke: woken && notice.wake,
                    source_seq: notice.source_seq,
                    not_user_input: true,
                    text: notice.text,
                })
            })
            .collect();
        block.push_str("</job_notices>\n");
        if !woken {
            block.push('\n');
        }
        (bodies, block)
    }
}
