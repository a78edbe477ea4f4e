//! The notices of a conversation's background jobs (docs/jobs.md, "Notices"): each waits for the next turn, and
//! one that may wake starts a turn of its own when none is queued. A woken turn runs with the last turn's settings,
//! at most auto (a notice never starts a turn in a mode above auto), and its input is the notices alone.

use efr_protocol::ErrorBody;
use efr_protocol::events::{EventBody, JobEnded, JobNotice, JobNoticeHeld};
use efr_protocol::ids::TurnId;
use efr_protocol::wire::{HeldReason, JobState, Mode, NoticeKind, Origin};

use super::{Actor, Queued};

impl Actor {
    /// A loaded conversation's jobs: numbering goes on after the log's last job; a job without an end ran when the
    /// efrd before this one died: what is left of it is killed, and its end is recorded (`launcher_lost`, its notice
    /// held for the next prompt); the notices the model has not heard wait for the next turn.
    pub(super) async fn recover_jobs(&mut self, log: crate::conversation::jobs_log::JobsLog) -> Result<(), ErrorBody> {
        self.deps.jobs.seen(self.id, log.last_number);
        let (unfinished, unheard) = log.finish();
        for heard in unheard {
            self.job_notices.push(crate::jobs::Notice {
                job_id: heard.job_id,
                kind: heard.kind,
                source_seq: heard.source_seq,
                text: heard.text,
                wake: false,
            });
        }
        for job in unfinished {
            crate::jobs::kill_leftover(job.launcher_pid, job.launcher_start);
            let ended = EventBody::JobEnded(JobEnded {
                job_id: job.job_id.clone(),
                state: JobState::Failed,
                exit_code: None,
                stopped_by: None,
                output_bytes: 0,
                ran_secs: 0,
                tail: String::new(),
                surface_changes: Vec::new(),
                quarantined: Vec::new(),
                survivors: Vec::new(),
                launcher_lost: true,
                output_truncated: false,
                blocked: Vec::new(),
                blocked_more: 0,
                bus_refused: Vec::new(),
                bus_refused_more: 0,
            });
            // job_ended and its held notice in one commit: the notice names the end's seq.
            let seq = self.last_seq + 1;
            let held = EventBody::JobNoticeHeld(JobNoticeHeld {
                job_id: job.job_id.clone(),
                source_seq: seq,
                reason: HeldReason::DaemonRestart,
            });
            self.commit(vec![(None, ended), (None, held)], None)
                .await
                .map_err(ErrorBody::from)?;
            self.job_notices.push(crate::jobs::Notice {
                text: format!(
                    "[job {} (`{}`) ended with the efrd that ran it (efrd restarted); its exit status is not known]",
                    job.job_id, job.command
                ),
                job_id: job.job_id,
                kind: NoticeKind::Exited,
                source_seq: seq,
                wake: false,
            });
        }
        Ok(())
    }

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
            settings.fallback = Some(efr_protocol::wire::ModeFallback {
                asked: Mode::Full,
                reason: crate::conversation::settings::JOB_NOTICE_CAP.to_owned(),
            });
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
            context: None,
            asked: None,
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
