//! `efr jobs [list]`, `efr jobs stop ID` and `efr jobs logs ID [-f]`: jobs.list, jobs.stop and a job's output file
//! (docs/jobs.md).
//!
//! ```text
//! ID  STATE    RAN     MEMORY     CPU     FORWARDS        CONVERSATION  COMMAND
//! j1  running  12m 4s  187.3 MiB  41.2s   127.0.0.1:5173  6f1c1e9e      npm run dev
//! ```
//!
//! Exit codes: 0 done; 1 for an unknown job or bad input; 2 when efrd is not running.

use std::io::{Read, Seek};
use std::process::ExitCode;
use std::time::Duration;

use efr_protocol::ids::{CommandId, ConversationId, Timestamp};
use efr_protocol::wire::{JobId, JobInfo, JobState, JobsListParams, JobsListResult, JobsStopParams, JobsStopResult};
use serde_json::json;

use super::{human_secs, read, run_unary};
use crate::clean::printable;
use crate::cli::{JobsCommand, JobsListArgs};
use crate::report;

/// How often `efr jobs logs -f` looks for more output.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

/// Runs one `efr jobs` command.
pub async fn run(command: Option<JobsCommand>, args: JobsListArgs) -> ExitCode {
    match command {
        None => list(args).await,
        Some(JobsCommand::List(args)) => list(args).await,
        Some(JobsCommand::Stop { id, conversation, json }) => {
            let (job_id, conversation_id) = match ids(&id, conversation.as_deref()) {
                Ok(ids) => ids,
                Err(code) => return code,
            };
            let params = JobsStopParams {
                command_id: CommandId::new(),
                conversation_id,
                job_id,
            };
            run_unary("jobs.stop", json!(params), json, None, |value| {
                let result: JobsStopResult = read("jobs.stop", value)?;
                crate::out::println(&format!("{} {}", result.job.id, result.job.state));
                Ok(())
            })
            .await
        }
        Some(JobsCommand::Logs {
            id,
            conversation,
            follow,
        }) => logs(&id, conversation.as_deref(), follow).await,
    }
}

async fn list(args: JobsListArgs) -> ExitCode {
    let conversation_id = match args
        .conversation
        .as_deref()
        .map(str::parse::<ConversationId>)
        .transpose()
    {
        Ok(id) => id,
        Err(error) => {
            report::error(&format!("--conversation: {error}"));
            return ExitCode::from(report::FAILED);
        }
    };
    run_unary(
        "jobs.list",
        json!(JobsListParams { conversation_id }),
        args.json,
        None,
        |value| {
            let result: JobsListResult = read("jobs.list", value)?;
            crate::out::print_exact(&render(&result.jobs, Timestamp::now()));
            Ok(())
        },
    )
    .await
}

/// The job id and the conversation, read from the arguments.
fn ids(id: &str, conversation: Option<&str>) -> Result<(JobId, Option<ConversationId>), ExitCode> {
    let job_id = id.parse::<JobId>().map_err(|error| {
        report::error(&error);
        ExitCode::from(report::FAILED)
    })?;
    let conversation = conversation
        .map(str::parse::<ConversationId>)
        .transpose()
        .map_err(|error| {
            report::error(&format!("--conversation: {error}"));
            ExitCode::from(report::FAILED)
        })?;
    Ok((job_id, conversation))
}

/// The table of `efr jobs`: a header and a line per job, or a line that says there is none.
#[must_use]
pub fn render(jobs: &[JobInfo], now: Timestamp) -> String {
    if jobs.is_empty() {
        return "no jobs\n".to_owned();
    }
    let rows: Vec<[String; 8]> = jobs.iter().map(|job| row(job, now)).collect();
    let header = [
        "ID",
        "STATE",
        "RAN",
        "MEMORY",
        "CPU",
        "FORWARDS",
        "CONVERSATION",
        "COMMAND",
    ]
    .map(str::to_owned);
    let mut widths = [0_usize; 8];
    for cells in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(cells) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for cells in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = cells
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (cell, width))| if i == 7 { cell.clone() } else { format!("{cell:width$}") })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn row(job: &JobInfo, now: Timestamp) -> [String; 8] {
    let end = job.ended_at.unwrap_or(now);
    let ran = u64::try_from((end.0 - job.started_at.0).num_seconds()).unwrap_or(0);
    let cgroup = job.cgroup.clone().unwrap_or_default();
    let memory = cgroup.memory_bytes.map_or_else(|| "-".to_owned(), super::backup::size);
    #[allow(clippy::cast_precision_loss)] // Seconds with one decimal.
    let cpu = cgroup
        .cpu_usec
        .map_or_else(|| "-".to_owned(), |usec| format!("{:.1}s", usec as f64 / 1e6));
    let forwards: Vec<String> = job
        .forwards
        .iter()
        .map(|f| format!("{}:{}", f.listen, f.port))
        .collect();
    let state = match (job.state, job.exit_code) {
        (JobState::Exited, Some(code)) => format!("exited {code}"),
        (state, _) => state.to_string(),
    };
    let command: String = job.command.chars().take(60).collect();
    [
        job.id.to_string(),
        state,
        human_secs(ran),
        memory,
        cpu,
        if forwards.is_empty() {
            "-".to_owned()
        } else {
            forwards.join(",")
        },
        job.conversation_id.to_string()[..8].to_owned(),
        printable(&command).into_owned(),
    ]
}

/// Prints a job's output; with `follow`, until the job ends.
async fn logs(id: &str, conversation: Option<&str>, follow: bool) -> ExitCode {
    let (job_id, conversation_id) = match ids(id, conversation) {
        Ok(ids) => ids,
        Err(code) => return code,
    };
    let client = match report::connect(None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let mut offset = 0_u64;
    loop {
        let job = match find(&client, &job_id, conversation_id).await {
            Ok(job) => job,
            Err(code) => return code,
        };
        match read_from(&job.output, &mut offset) {
            Ok(text) if !text.is_empty() => crate::out::print(&printable(&text)),
            Ok(_) => {}
            Err(error) => {
                report::error(&format!("cannot read {}: {error}", job.output.display()));
                return ExitCode::from(report::FAILED);
            }
        }
        if !follow || job.state != JobState::Running {
            return ExitCode::SUCCESS;
        }
        tokio::time::sleep(FOLLOW_EVERY).await;
    }
}

async fn find(
    client: &crate::client::Client,
    job_id: &JobId,
    conversation: Option<ConversationId>,
) -> Result<JobInfo, ExitCode> {
    let value = client
        .call_value(
            "jobs.list",
            json!(JobsListParams {
                conversation_id: conversation
            }),
        )
        .await
        .map_err(|error| report::failure(&error))?;
    let result: JobsListResult = read("jobs.list", &value).map_err(|message| {
        report::error(&message);
        ExitCode::from(report::FAILED)
    })?;
    let mut found = result.jobs.into_iter().filter(|job| job.id == *job_id);
    match (found.next(), found.next()) {
        (Some(job), None) => Ok(job),
        (Some(_), Some(_)) => {
            report::error(&format!(
                "{job_id} names jobs of several conversations: give --conversation"
            ));
            Err(ExitCode::from(report::FAILED))
        }
        (None, _) => {
            report::error(&format!("no job {job_id}"));
            Err(ExitCode::from(report::FAILED))
        }
    }
}

/// The bytes of `path` from `offset` on (lossy UTF-8); `offset` moves past them.
fn read_from(path: &std::path::Path, offset: &mut u64) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    file.seek(std::io::SeekFrom::Start(*offset))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    *offset += bytes.len() as u64;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use efr_protocol::wire::{JobCgroup, JobForward, Launch};

    fn job() -> JobInfo {
        let started = Timestamp::from_millis(1_000_000).unwrap();
        JobInfo {
            id: JobId::nth(1),
            conversation_id: "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a10".parse().unwrap(),
            turn_id: efr_protocol::ids::TurnId::new(),
            call_id: "c1".into(),
            command: "npm run dev\u{1b}[2J".into(),
            launch: Launch::Direct,
            state: JobState::Running,
            started_at: started,
            ends_by: started,
            ended_at: None,
            exit_code: None,
            stopped_by: None,
            watch: None,
            output: "/tmp/j1.log".into(),
            output_bytes: 0,
            wakes: 0,
            cgroup: Some(JobCgroup {
                off: None,
                memory_bytes: Some(3 << 20),
                cpu_usec: Some(1_500_000),
            }),
            moved_from: None,
            waits_input: false,
            forwards: vec![JobForward {
                listen: "127.0.0.1".into(),
                port: 5173,
            }],
        }
    }

    #[test]
    fn the_table_shows_state_time_memory_cpu_forwards_and_a_printable_command() {
        let now = Timestamp::from_millis(1_000_000 + 65_000).unwrap();
        let table = render(&[job()], now);
        let line = table.lines().nth(1).unwrap();
        for part in [
            "j1",
            "running",
            "1m 5s",
            "3.0 MiB",
            "1.5s",
            "127.0.0.1:5173",
            "6f1c1e9e",
            "npm run dev",
        ] {
            assert!(line.contains(part), "{part} in {line}");
        }
        assert!(!table.contains('\u{1b}'), "{table:?}");
        assert_eq!(render(&[], now), "no jobs\n");
    }
}
