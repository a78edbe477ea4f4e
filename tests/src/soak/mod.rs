//! The soak run: one real efrd, the scripted model server, [`SoakPlan::clients`] clients and many turns with shell
//! calls, patches and questions, bounded in turns and in time. `cargo xtask soak` runs it long on a release build
//! (`efrd/benches/soak.rs`); efrd's integration tests run a short one.
//!
//! # What it does
//!
//! Each client works in a project folder of its own and sends prompts one after another, reading its events to the
//! turn's end and answering every question with `allow`. Every [`TURNS_PER_CONVERSATION`] turns it starts a new
//! conversation: a daemon that runs for months serves many conversations of bounded length, and one conversation of
//! thousands of turns would measure its own history (resent with every request until compaction comes) rather than
//! the daemon. Before each prompt it adds
//! three steps to the model's script: a shell call, a patch that adds a file, and a text answer. The model server
//! hands steps out in order to whichever turn calls, so turns of different clients take each other's calls; every
//! turn still ends at its first text, and the script never runs dry while a turn runs (texts added = turns started).
//! Every third prompt runs in `manual` mode, so its calls ask; the rest run in `full` mode. The shell call removes the
//! files the patches added, so the projects stay small and the run measures efrd, not a growing tree.
//!
//! # What it measures
//!
//! After a warm-up (the first fifth of the turns) and at the end: efrd's RSS (`VmRSS`), its open descriptors, and the
//! latency of a turn (prompt.send sent → the turn's end read) as p50 and p99 over a window of turns; at the end the
//! database's bytes per event (`efr.db` after efrd's graceful stop checkpointed its WAL, over the events of every
//! conversation). RSS is also sampled after each further tenth, to tell memory that grows all along (a leak) from
//! memory that settles: in a 10,000-turn run efrd's RSS rises over the first 2,000–3,000 turns, while SQLite's page
//! caches (2 MiB for each of the store's five connections) fill as the database passes 10 MB, then stays flat; a
//! warm-up of a tenth measured that rise as growth (docs/operations.md, "A long run").

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;
use tokio::sync::Mutex;

use crate::client::{Client, StreamFrame};
use crate::daemon::{TestDaemon, config_for};
use crate::scripted::{Reply, Script, ScriptedModel, Step};

pub use prose::{ANSWER_WORDS, PROMPT_WORDS};

mod prose;

/// How long a soak run is.
#[derive(Debug, Clone, Copy)]
pub struct SoakPlan {
    /// Clients, each with its own conversation.
    pub clients: usize,
    /// Turns in all; the run stops earlier at `time_limit`.
    pub turns: usize,
    /// The bound on the whole run.
    pub time_limit: Duration,
    /// Turns in each latency window (the first after the warm-up, and the last).
    pub window: usize,
    /// `[daemon] search_index` of the soak's efrd.
    pub search_index: bool,
    /// Prompts and answers of the length of real ones ([`PROMPT_WORDS`] and [`ANSWER_WORDS`] words of a seeded
    /// vocabulary, each turn's own) instead of a few words: what the search index costs depends on the texts'
    /// length.
    pub prose: bool,
    /// How long efrd stays idle after the run before its memory is sampled once more (`None`: not sampled): what
    /// an idle efrd gives back (docs/adr/0033-a-lean-daemon.md).
    pub quiet: Option<Duration>,
}

impl SoakPlan {
    /// A plan of `turns` turns by `clients` clients within `time_limit`, latency windows of `window` turns; the
    /// search index on and short texts.
    #[must_use]
    pub fn new(clients: usize, turns: usize, time_limit: Duration, window: usize) -> Self {
        Self {
            clients,
            turns,
            time_limit,
            window,
            search_index: true,
            prose: false,
            quiet: None,
        }
    }
}

/// What a soak run measured.
#[derive(Debug, Clone)]
pub struct SoakReport {
    /// Turns that ended.
    pub turns: usize,
    /// The run's wall time.
    pub elapsed: Duration,
    /// efrd's RSS after the warm-up and at the end, in KiB.
    pub rss_kib: (u64, u64),
    /// efrd's open descriptors after the warm-up and at the end.
    pub fds: (usize, usize),
    /// Turn latency p50 and p99 of the first window after the warm-up.
    pub start_latency: (Duration, Duration),
    /// Turn latency p50 and p99 of the last window.
    pub end_latency: (Duration, Duration),
    /// efrd's RSS and its anonymous part (heap, stacks) in KiB, after the warm-up and after each further tenth of the
    /// turns: whether memory grows all along (a leak) or settles (caches filling).
    pub rss_trace: Vec<(u64, u64)>,
    /// Events in every conversation's log.
    pub events: u64,
    /// `efr.db` and `efr.db-wal` in bytes.
    pub db_bytes: u64,
    /// The CPU time efrd used from the first prompt to the end (its idle conversations retired), user and system.
    pub cpu: Duration,
    /// efrd's RSS and its anonymous part in KiB after [`SoakPlan::quiet`] more of idleness.
    pub quiet_rss_kib: Option<(u64, u64)>,
}

impl SoakReport {
    /// The RSS growth from the warm-up to the end, as a fraction (0.1 is 10%).
    #[must_use]
    pub fn rss_growth(&self) -> f64 {
        ratio(self.rss_kib.1, self.rss_kib.0) - 1.0
    }

    /// The database's bytes per event.
    #[must_use]
    pub fn bytes_per_event(&self) -> u64 {
        self.db_bytes / self.events.max(1)
    }

    /// efrd's CPU time per turn that ended.
    #[must_use]
    pub fn cpu_per_turn(&self) -> Duration {
        self.cpu / u32::try_from(self.turns.max(1)).unwrap_or(u32::MAX)
    }

    /// The end window's p50 and p99 over the start window's.
    #[must_use]
    pub fn latency_ratios(&self) -> (f64, f64) {
        (
            ratio_d(self.end_latency.0, self.start_latency.0),
            ratio_d(self.end_latency.1, self.start_latency.1),
        )
    }

    /// The report, one measure a line.
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        let (r50, r99) = self.latency_ratios();
        vec![
            format!("turns: {} in {:.1} s", self.turns, self.elapsed.as_secs_f64()),
            format!(
                "RSS: {} KiB after warm-up, {} KiB at the end ({:+.1}%)",
                self.rss_kib.0,
                self.rss_kib.1,
                self.rss_growth() * 100.0
            ),
            format!(
                "RSS (anonymous) by tenth of the turns, MiB: {}",
                self.rss_trace
                    .iter()
                    .map(|(rss, anon)| format!("{:.1} ({:.1})", kib_mib(*rss), kib_mib(*anon)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "open descriptors: {} after warm-up, {} at the end",
                self.fds.0, self.fds.1
            ),
            format!(
                "turn latency p50: {} → {} (×{r50:.2}); p99: {} → {} (×{r99:.2})",
                ms(self.start_latency.0),
                ms(self.end_latency.0),
                ms(self.start_latency.1),
                ms(self.end_latency.1)
            ),
            match self.quiet_rss_kib {
                Some((rss, anon)) => format!(
                    "RSS when quiet after the run: {:.1} MiB ({:.1} anonymous)",
                    kib_mib(rss),
                    kib_mib(anon)
                ),
                None => "RSS when quiet after the run: not sampled".to_owned(),
            },
            format!(
                "efrd's CPU time: {:.2} s, {:.2} ms a turn",
                self.cpu.as_secs_f64(),
                self.cpu_per_turn().as_secs_f64() * 1000.0
            ),
            format!(
                "database: {} bytes for {} events, {} bytes per event",
                self.db_bytes,
                self.events,
                self.bytes_per_event()
            ),
        ]
    }
}

fn kib_mib(kib: u64) -> f64 {
    ratio(kib, 1024)
}

fn ratio(a: u64, b: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)] // Sizes far below 2^52.
    let (a, b) = (a as f64, b.max(1) as f64);
    a / b
}

fn ratio_d(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-6)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// `[daemon] conversation_idle_secs` of the soak's efrd.
const IDLE_SECS: u64 = 2;

/// Turns of one conversation before its client starts the next.
pub const TURNS_PER_CONVERSATION: usize = 20;

/// The key efrd gets through the environment: a dummy for the scripted server.
const SOAK_KEY: &str = "sk-proj-soakkey0000000000000000a1b2";

/// Runs a soak of `efrd` (the binary) in `home` (an empty folder on a real disk).
///
/// # Errors
/// When efrd does not start, a turn fails or does not end within a minute, or the run passes its time limit before
/// the warm-up and both windows are done.
pub async fn run(efrd_binary: &Path, home: &Path, plan: SoakPlan) -> Result<SoakReport> {
    let model = ScriptedModel::start(Script {
        models: vec!["gpt-5".into()],
        ..Script::default()
    })
    .await
    .context("the scripted model server")?;
    let daemon = TestDaemon::start(
        efrd_binary,
        home,
        // Idle conversations retire after IDLE_SECS, so the run also checks that they let their shells go.
        Some(
            &(config_for(&model.base_url())
                + &format!(
                    "\n[daemon]\nconversation_idle_secs = {IDLE_SECS}\nsearch_index = {}\n",
                    plan.search_index
                )),
        ),
        &[("OPENAI_API_KEY", SOAK_KEY)],
    )?;
    let pid = daemon.pid().context("efrd's pid")?;
    let shared = Arc::new(Shared {
        model,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        answers: AtomicUsize::new(0),
        latencies: Mutex::new(Vec::with_capacity(plan.turns)),
        samples: Mutex::new(Vec::new()),
    });
    let warmup = plan.turns / 5;
    let cpu_before = crate::proc::cpu_time(pid)?;
    let started = Instant::now();
    let deadline = started + plan.time_limit;
    let mut tasks = Vec::new();
    for index in 0..plan.clients {
        let client = daemon.client().await?;
        let project = home.join(format!("project-{index}"));
        std::fs::create_dir_all(&project)?;
        // A repository of its own: otherwise the project would be whatever repository holds `home`.
        let init = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&project)
            .status()?;
        if !init.success() {
            bail!("git init failed in {}", project.display());
        }
        let shared = Arc::clone(&shared);
        tasks.push(tokio::spawn(client_loop(
            client, project, shared, plan, warmup, deadline, pid,
        )));
    }
    for task in tasks {
        let outcome = task.await.context("a soak client panicked")?;
        if let Err(error) = outcome {
            let log = daemon.log();
            let tail: Vec<&str> = log.lines().rev().take(20).collect();
            bail!("{error:#}; efrd's last log lines (newest first):\n{}", tail.join("\n"));
        }
    }
    let elapsed = started.elapsed();
    let turns = shared.done.load(Ordering::Relaxed);
    // The end is measured once the conversations the clients left have had the time to retire.
    tokio::time::sleep(Duration::from_secs(IDLE_SECS * 2 + 1)).await;
    let end = sample(pid)?;
    let cpu = crate::proc::cpu_time(pid)?.saturating_sub(cpu_before);
    let quiet = match plan.quiet {
        Some(quiet) => {
            tokio::time::sleep(quiet).await;
            let sample = sample(pid)?;
            Some((sample.rss, sample.anon))
        }
        None => None,
    };
    let latencies = shared.latencies.lock().await.clone();
    if turns < warmup + 2 * plan.window {
        bail!(
            "only {turns} turns within {:?}: fewer than the warm-up and two windows",
            plan.time_limit
        );
    }
    let after = &latencies[warmup..];
    let start_window: Vec<Duration> = after.iter().take(plan.window).copied().collect();
    let end_window: Vec<Duration> = latencies[latencies.len() - plan.window..].to_vec();
    let mut samples = shared.samples.lock().await.clone();
    let warm = samples.first().copied().unwrap_or(end);
    samples.push(end);
    let mut client = daemon.client().await?;
    let events = total_events(&mut client).await?;
    drop(client);
    // A graceful stop checkpoints the WAL into the file: its size is then the log's, not the WAL's high-water mark.
    let mut daemon = daemon;
    daemon.stop(Duration::from_secs(10))?;
    let data = home.join("data");
    let db_bytes = ["efr.db", "efr.db-wal"]
        .iter()
        .filter_map(|name| std::fs::metadata(data.join(name)).ok())
        .map(|m| m.len())
        .sum();
    Ok(SoakReport {
        turns,
        elapsed,
        rss_kib: (warm.rss, end.rss),
        fds: (warm.fds, end.fds),
        rss_trace: samples.iter().map(|s| (s.rss, s.anon)).collect(),
        start_latency: percentiles(start_window),
        end_latency: percentiles(end_window),
        events,
        db_bytes,
        cpu,
        quiet_rss_kib: quiet,
    })
}

struct Shared {
    model: ScriptedModel,
    /// The next turn's number, across clients.
    next: AtomicUsize,
    /// Turns that ended.
    done: AtomicUsize,
    /// Questions answered (their command ids).
    answers: AtomicUsize,
    /// Each turn's latency, in the order the turns ended.
    latencies: Mutex<Vec<Duration>>,
    /// Samples taken when the warm-up ended and after each further tenth of the turns.
    samples: Mutex<Vec<Sample>>,
}

async fn client_loop(
    mut client: Client,
    project: PathBuf,
    shared: Arc<Shared>,
    plan: SoakPlan,
    warmup: usize,
    deadline: Instant,
    pid: u32,
) -> Result<()> {
    let mut conversation: Option<String> = None;
    let mut subscription = None;
    let mut last_seq = 0;
    let mut turns_here = 0;
    loop {
        let turn = shared.next.fetch_add(1, Ordering::Relaxed);
        if turn >= plan.turns || Instant::now() > deadline {
            return Ok(());
        }
        if turns_here == TURNS_PER_CONVERSATION {
            if let Some(sub) = subscription.take() {
                client.cancel(sub).await?;
            }
            conversation = None;
            last_seq = 0;
            turns_here = 0;
        }
        turns_here += 1;
        // Nobody reads the model server's record of requests in a soak.
        shared.model.clear_requests();
        for step in steps(turn, plan.prose) {
            shared.model.push(step);
        }
        let mode = if turn % 3 == 2 { "manual" } else { "full" };
        let text = if plan.prose {
            prose::prose(turn, 0, PROMPT_WORDS)
        } else {
            format!("turn {turn}")
        };
        let mut params = json!({"command_id": uuid(turn), "text": text,
            "context": {"cwd": project}, "settings": {"mode": mode}});
        if let Some(id) = &conversation {
            params["conversation_id"] = json!(id);
        }
        let sent_at = Instant::now();
        let sent = client.ok("prompt.send", params).await?;
        if conversation.is_none() {
            let id = sent["conversation_id"]
                .as_str()
                .context("a conversation id")?
                .to_owned();
            let (sub, _) = crate::subscription::subscribe(&mut client, &id, Some(0)).await?;
            subscription = Some(sub);
            conversation = Some(id);
        }
        let (sub, id) = (
            subscription.context("subscribed")?,
            conversation.clone().context("a conversation")?,
        );
        last_seq = read_turn(&mut client, sub, &id, last_seq, &shared.answers).await?;
        let latency = sent_at.elapsed();
        shared.latencies.lock().await.push(latency);
        let done = shared.done.fetch_add(1, Ordering::Relaxed) + 1;
        if done >= warmup && done.is_multiple_of((plan.turns / 10).max(1)) && done < plan.turns {
            shared.samples.lock().await.push(sample(pid)?);
        }
    }
}

/// Reads events of `sub` until the turn ends, answering questions; checks that seqs follow `last_seq` with no gap.
async fn read_turn(
    client: &mut Client,
    sub: u64,
    conversation: &str,
    mut last_seq: u64,
    answers: &AtomicUsize,
) -> Result<u64> {
    let limit = Instant::now() + Duration::from_secs(60);
    // The last events read, for the error of a turn that stalls.
    let mut recent: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    loop {
        if Instant::now() > limit {
            bail!("a turn did not end within 60 s");
        }
        let item = match client
            .next_of(sub)
            .await
            .with_context(|| format!("waiting after event {last_seq}"))?
        {
            StreamFrame::Item(item) => item,
            other => bail!("the subscription ended: {other:?}"),
        };
        let event = &item["event"];
        if recent.len() == 8 {
            recent.pop_front();
        }
        let mut shown = event.to_string();
        shown.truncate(300);
        recent.push_back(shown);
        let seq = event["seq"].as_u64().context("an event's seq")?;
        if seq != last_seq + 1 {
            bail!("seq {seq} after {last_seq}: a gap or a repeat");
        }
        last_seq = seq;
        match event["kind"].as_str().unwrap_or_default() {
            "approval_requested" => {
                let answer = json!({"command_id": uuid((1 << 40) + answers.fetch_add(1, Ordering::Relaxed)),
                    "conversation_id": conversation, "call_id": event["call_id"], "decision": "allow"});
                client.ok("approval.respond", answer).await?;
            }
            "turn_completed" => return Ok(last_seq),
            kind @ ("turn_failed" | "turn_interrupted" | "turn_cancelled") => {
                bail!("a turn ended with {kind}: {event}")
            }
            _ => {}
        }
    }
}

/// A turn's three steps: a shell call that removes what the patches added, a patch that adds a file, a text
/// (`prose`: of [`ANSWER_WORDS`] words).
fn steps(turn: usize, prose: bool) -> Vec<Step> {
    let answer = if prose {
        prose::prose(turn, 1, ANSWER_WORDS)
    } else {
        format!("turn {turn} is done")
    };
    vec![
        Reply::shell(&format!("call_shell_{turn}"), "rm -f added-*.txt; echo soak").into(),
        Reply::patch(
            &format!("call_patch_{turn}"),
            &format!("*** Begin Patch\n*** Add File: added-{turn}.txt\n+turn {turn}\n*** End Patch\n"),
        )
        .into(),
        Reply::text(answer).into(),
    ]
}

/// A command id unique to `n` in this run.
fn uuid(n: usize) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

/// efrd's memory and descriptors at one moment.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// `VmRSS`, KiB.
    rss: u64,
    /// `RssAnon`, KiB: the heap and stacks, without the mapped binary and files.
    anon: u64,
    /// Open descriptors.
    fds: usize,
}

/// efrd's RSS in KiB and its open descriptors.
fn sample(pid: u32) -> Result<Sample> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))?.count();
    Ok(Sample {
        rss: crate::proc::rss_kib(pid)?,
        anon: crate::proc::status_kib(pid, "RssAnon")?,
        fds,
    })
}

async fn total_events(client: &mut Client) -> Result<u64> {
    let mut total = 0;
    let mut cursor: Option<String> = None;
    // Bounded: 10,000 pages of 200 is far more than any soak makes.
    for _ in 0..10_000 {
        let mut params = json!({"limit": 200});
        if let Some(cursor) = &cursor {
            params["cursor"] = json!(cursor);
        }
        let page = client.ok("conversations.list", params).await?;
        total += page["conversations"]
            .as_array()
            .context("conversations")?
            .iter()
            .filter_map(|row| row["last_seq"].as_u64())
            .sum::<u64>();
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(total),
        }
    }
    bail!("conversations.list did not end")
}

fn percentiles(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    let at = |p: usize| times[(times.len() * p / 100).min(times.len() - 1)];
    (at(50), at(99))
}
