//! Bench: what a background job costs to start (docs/jobs.md; `cargo bench -p efrd --bench jobs`, also run by
//! `cargo xtask bench`).
//!
//! - `a job's start against a contained call's`: on the real efrd (release build) in auto, each pair of runs is one
//!   turn with a contained `true` call (tool_call_started → tool_call_completed, as its client sees them) and one
//!   with a contained background `true` (tool_call_started → job_started), interleaved. Budget: the median of the
//!   pairs' differences (job minus call) under 20 ms.
//! - `a job's cgroup`: in process, `Jobs::start` of a direct `/bin/true` up to job_started recorded, with a cgroup of
//!   its own (a child of this process's cgroup, which the bench must be able to write: run it as root, as CI does)
//!   against the same registry without cgroups, interleaved. Budget: the median of the pairs' differences under 5 ms.
//!   The same under a systemd user manager (the test recipe, as root), a transient scope asked for over the session
//!   bus against none, with the same budget.
//!
//! Prints the load average with the numbers; exits 1 when a budget fails, 2 when the bench cannot run.

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::expect_used)] // A bench: a broken setup is a failed run.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use efr_protocol::ErrorBody;
use efr_protocol::events::EventBody;
use efr_protocol::ids::{CallId, ConversationId, TurnId};
use efr_protocol::wire::Launch;
use efr_test_support::daemon::TestDaemon;
use efr_test_support::scripted::{Reply, Script, ScriptedModel};
use efrd::jobs::{JobHead, JobSink, JobSpec, Jobs, Notice, SinkFuture};
use serde_json::json;

const PAIRS: usize = 30;
const START_BUDGET: Duration = Duration::from_millis(20);
const CGROUP_BUDGET: Duration = Duration::from_millis(5);

fn main() -> ExitCode {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load average: {}",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let mut ok = true;
    match runtime.block_on(through_efrd()) {
        Ok(pairs) => {
            ok &= report(
                "a job's start against a contained call's (job minus call)",
                &pairs,
                START_BUDGET,
            );
        }
        Err(error) => {
            eprintln!("the end-to-end bench cannot run: {error:#}");
            return ExitCode::from(2);
        }
    }
    match runtime.block_on(cgroup_cost(None)) {
        Ok(pairs) => ok &= report("a job's cgroup (delegated child minus none)", &pairs, CGROUP_BUDGET),
        Err(error) => {
            eprintln!("the cgroup bench cannot run: {error:#}");
            return ExitCode::from(2);
        }
    }
    let dir = tempfile::tempdir().expect("a folder");
    let scope = efr_test_support::systemd::UserManager::start(&dir.path().join("manager"))
        .and_then(|manager| runtime.block_on(cgroup_cost(Some(manager.runtime_dir()))));
    match scope {
        Ok(pairs) => {
            ok &= report(
                "a job's systemd scope (StartTransientUnit minus none)",
                &pairs,
                CGROUP_BUDGET,
            );
        }
        Err(error) => {
            eprintln!("the scope bench cannot run (it needs root and systemd, as CI has): {error:#}");
            return ExitCode::from(2);
        }
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Builds the helpers a contained call needs beside the release efrd (`cargo bench -p efrd` builds efrd alone).
fn build_helpers() -> Result<()> {
    let status = std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args([
            "build",
            "--release",
            "--locked",
            "-p",
            "efr-launcher",
            "-p",
            "efr-proxy",
            "-p",
            "efr-bus-proxy",
        ])
        .status()
        .context("cargo build of the helpers")?;
    anyhow::ensure!(status.success(), "the helpers did not build ({status})");
    Ok(())
}

/// Pairs of (contained call, job start) through a release efrd, as differences in ms.
async fn through_efrd() -> Result<Vec<f64>> {
    build_helpers()?;
    let mut replies = Vec::new();
    for _ in 0..PAIRS {
        replies.push(Reply::shell_with("call_true", &json!({"command": "true"})));
        replies.push(Reply::text("ran"));
        replies.push(Reply::shell_with(
            "call_job",
            &json!({"command": "true", "background": true}),
        ));
        replies.push(Reply::text("started"));
    }
    let server = ScriptedModel::start(Script::replies(replies)).await?;
    let home = tempfile::Builder::new()
        .prefix("efr-bench-jobs")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let config = efr_test_support::daemon::config_for(&server.base_url());
    let efrd = TestDaemon::start(
        Path::new(env!("CARGO_BIN_EXE_efrd")),
        home.path(),
        Some(&config),
        &[("OPENAI_API_KEY", "sk-proj-benchkey000000000000000a1b2")],
    )
    .context("efrd starts")?;
    let mut client = efrd.client().await?;
    let cwd = tempfile::tempdir()?;
    let mut conversation: Option<String> = None;
    let mut sub = None;
    let mut pairs = Vec::with_capacity(PAIRS);
    for _ in 0..PAIRS {
        let mut pair = [0.0_f64; 2];
        for (side, until) in [(0, "tool_call_completed"), (1, "job_started")] {
            let mut params = json!({"command_id": uuid::Uuid::new_v4().to_string(), "text": "go",
                "context": {"cwd": cwd.path()}, "settings": {"mode": "auto"}});
            if let Some(id) = &conversation {
                params["conversation_id"] = json!(id);
            }
            let sent = client.ok("prompt.send", params).await?;
            if conversation.is_none() {
                let id = sent["conversation_id"].as_str().context("an id")?.to_owned();
                let (subscription, _) = efr_test_support::subscription::subscribe(&mut client, &id, Some(0)).await?;
                sub = Some(subscription);
                conversation = Some(id);
            }
            let sub = sub.context("subscribed")?;
            efr_test_support::subscription::events_through(&mut client, sub, "tool_call_started").await?;
            let started = Instant::now();
            efr_test_support::subscription::events_through(&mut client, sub, until).await?;
            pair[side] = started.elapsed().as_secs_f64() * 1e3;
            efr_test_support::subscription::events_through(&mut client, sub, "turn_completed").await?;
        }
        pairs.push(pair[1] - pair[0]);
    }
    Ok(pairs)
}

/// A sink that counts events and drops notices.
#[derive(Debug, Default)]
struct Counting {
    seq: AtomicU64,
}

impl JobSink for Counting {
    fn record_as(&self, _turn: Option<TurnId>, bodies: Vec<EventBody>) -> SinkFuture<'_, Result<u64, ErrorBody>> {
        let seq = self.seq.fetch_add(bodies.len() as u64, Ordering::Relaxed);
        Box::pin(async move { Ok(seq + 1) })
    }

    fn notice(&self, _notice: Notice) -> SinkFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Pairs of `Jobs::start` of `/bin/true` with a cgroup (a scope when `manager` is given) and without, differences in
/// ms.
async fn cgroup_cost(manager: Option<std::path::PathBuf>) -> Result<Vec<f64>> {
    let root = tempfile::tempdir()?;
    if let Some(runtime_dir) = &manager {
        // What makes a job's cgroup a scope rather than a delegated child.
        anyhow::ensure!(
            runtime_dir.join("bus").exists(),
            "the user manager opened no session bus in {} (dbus-user-session's dbus.socket)",
            runtime_dir.display()
        );
    }
    let with = Jobs::new(root.path().join("with"), manager.clone());
    let without = Jobs::new(root.path().join("without"), manager).without_cgroups();
    let sink: Arc<dyn JobSink> = Arc::new(Counting::default());
    let mut pairs = Vec::with_capacity(PAIRS);
    for _ in 0..PAIRS {
        let conversation = ConversationId::new();
        let mut pair = [0.0_f64; 2];
        for (side, jobs) in [&without, &with].into_iter().enumerate() {
            let spec = JobSpec {
                head: JobHead {
                    conversation_id: conversation,
                    turn_id: TurnId::new(),
                    call_id: CallId("bench".into()),
                    command: "true".into(),
                    launch: Launch::Direct,
                    max_minutes: 1,
                    forwards_through: None,
                },
                argv: vec!["/bin/true".into()],
                cwd: root.path().to_owned(),
                env: vec![("PATH".into(), "/usr/bin:/bin".into())],
                watch: None,
                wake_turn: false,
                in_woken_turn: false,
                on_end: None,
                full: false,
            };
            let started = Instant::now();
            let info = jobs.start(spec, Arc::clone(&sink)).await?;
            pair[side] = started.elapsed().as_secs_f64() * 1e3;
            anyhow::ensure!(
                side == 0 || info.cgroup.as_ref().is_some_and(|c| c.off.is_none()),
                "the job got no cgroup: {:?}",
                info.cgroup
            );
            // The job ends by itself; wait for it so jobs do not pile up.
            let begun = Instant::now();
            while jobs.running() > 0 && begun.elapsed() < Duration::from_secs(5) {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        pairs.push(pair[1] - pair[0]);
    }
    Ok(pairs)
}

/// The median, p10 and p90 of `values`.
fn stats(values: &[f64]) -> (f64, f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |q: usize| {
        sorted
            .get((sorted.len().saturating_sub(1)) * q / 100)
            .copied()
            .unwrap_or_default()
    };
    (at(50), at(10), at(90))
}

/// Prints one measure (a median of pairs' differences in ms) with its spread and PASS or FAIL against `budget`.
fn report(name: &str, pairs: &[f64], budget: Duration) -> bool {
    let (median, p10, p90) = stats(pairs);
    let limit = budget.as_secs_f64() * 1e3;
    let pass = median < limit;
    println!(
        "{name}: {median:.3} ms over {} pairs (p10 {p10:.3}, p90 {p90:.3}; budget {limit} ms) {}",
        pairs.len(),
        if pass { "PASS" } else { "FAIL" }
    );
    pass
}
