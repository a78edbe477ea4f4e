//! What a conversation's log says of its background jobs, read when efrd loads the conversation: the last job
//! number (so a new job never reuses an id), the jobs that have no end in the log (they ran when the efrd before
//! this one died), and the notices the model has not heard (docs/jobs.md, "After a restart").

use std::collections::BTreeMap;

use efr_protocol::events::{Event, EventBody};
use efr_protocol::wire::{JobId, NoticeKind};

/// A job started in the log and not ended there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfinished {
    /// The job.
    pub job_id: JobId,
    /// Its command line.
    pub command: String,
    /// Its first process and that process's start time, to tell it from a later process with the same pid.
    pub launcher_pid: u32,
    /// See `launcher_pid`.
    pub launcher_start: u64,
}

/// A notice the log holds the source of but no job_notice for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unheard {
    /// The job.
    pub job_id: JobId,
    /// What it tells.
    pub kind: NoticeKind,
    /// The seq of job_ended or job_watch_matched.
    pub source_seq: u64,
    /// The text for the model.
    pub text: String,
}

/// The jobs of a log, as it is read.
#[derive(Debug, Default)]
pub struct JobsLog {
    /// The highest job number in the log (0 for none).
    pub last_number: u64,
    commands: BTreeMap<u64, String>,
    running: BTreeMap<u64, Unfinished>,
    unheard: BTreeMap<u64, Unheard>,
}

impl JobsLog {
    /// Reads one event.
    pub fn observe(&mut self, event: &Event) {
        match &event.body {
            EventBody::JobStarted(started) => {
                let number = started.job.id.number();
                self.last_number = self.last_number.max(number);
                self.commands.insert(number, started.job.command.clone());
                self.running.insert(
                    number,
                    Unfinished {
                        job_id: started.job.id.clone(),
                        command: started.job.command.clone(),
                        launcher_pid: started.launcher_pid,
                        launcher_start: started.launcher_start,
                    },
                );
            }
            EventBody::JobEnded(ended) => {
                let number = ended.job_id.number();
                self.running.remove(&number);
                let command = self.commands.get(&number).cloned().unwrap_or_default();
                let how = match (ended.stopped_by, ended.exit_code) {
                    (Some(by), _) => format!("was stopped ({by})"),
                    (None, Some(code)) => format!("ended with exit status {code}"),
                    _ => format!("ended ({})", ended.state),
                };
                self.unheard.insert(
                    event.seq,
                    Unheard {
                        job_id: ended.job_id.clone(),
                        kind: NoticeKind::Exited,
                        source_seq: event.seq,
                        text: format!("[job {} (`{command}`) {how} after {} s]", ended.job_id, ended.ran_secs),
                    },
                );
            }
            EventBody::JobWatchMatched(matched) => {
                let command = self.commands.get(&matched.job_id.number()).cloned().unwrap_or_default();
                self.unheard.insert(
                    event.seq,
                    Unheard {
                        job_id: matched.job_id.clone(),
                        kind: NoticeKind::Watch,
                        source_seq: event.seq,
                        text: format!(
                            "[job {} (`{command}`) printed a line its watch matches: `{}`]",
                            matched.job_id, matched.line
                        ),
                    },
                );
            }
            EventBody::JobNotice(notice) => {
                self.unheard.remove(&notice.source_seq);
            }
            _ => {}
        }
    }

    /// The jobs without an end, and the notices not heard, in the log's order.
    #[must_use]
    pub fn finish(self) -> (Vec<Unfinished>, Vec<Unheard>) {
        (
            self.running.into_values().collect(),
            self.unheard.into_values().collect(),
        )
    }
}
