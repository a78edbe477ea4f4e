//! Bench: durable events per second through the event store (docs/architecture.md, "Budgets": at least 20,000 in
//! batches).
//!
//! A real SQLite file on the target's disk (`CARGO_TARGET_TMPDIR`, not a tmpfs), WAL with `synchronous=FULL`, so
//! every acknowledged event is on disk. Three shapes, each run several times, the median printed next to the budget:
//!
//! - `batched` (the budget's shape): 8 conversation actors each commit 100 events at a time, as a turn flushes its
//!   coalesced deltas; the writer also groups the actors' commits.
//! - `group commit` (informative): 64 actors each commit ONE event at a time, so every event is its own commit and
//!   only the writer's grouping amortizes the WAL sync. Its rate is about (commits per batch) / (sync latency): on
//!   a quiet disk far above the budget, on a disk that others load (sync 2–3 ms) near it. Printed with the budget for
//!   comparison, not held to it.
//! - `lone commit` (informative): one actor, one event at a time: the latency of one durable commit, i.e. one sync.
//!
//! Wall-clock rates move with the machine's load; the CPU per event (all threads) barely does, so compare that
//! between runs. Exits with status 1 when the budgeted shape is below the budget. Run with
//! `cargo bench -p efr-store --bench store` (or `cargo xtask bench`).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use efr_protocol::ids::{ConversationId, Timestamp, TurnId};
use efr_store::{Commit, ConversationSummary, EventRow, Store};

/// The budget in docs/architecture.md, "Budgets".
const BUDGET_EVENTS_PER_SEC: f64 = 20_000.0;
/// Runs per shape; the median is reported.
const RUNS: usize = 3;

/// An event of about 300 bytes, the size of a coalesced `assistant_message_updated`.
fn event(conversation_id: ConversationId, turn_id: TurnId, seq: u64) -> EventRow {
    let at = Timestamp::now();
    let body = format!(
        r#"{{"seq":{seq},"at":"{at}","conversation_id":"{conversation_id}","turn_id":"{turn_id}","kind":"assistant_message_updated","index":0,"offset":{offset},"delta":"{delta}"}}"#,
        offset = seq * 120,
        delta =
            "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et",
    );
    EventRow {
        conversation_id,
        seq,
        kind: "assistant_message_updated".into(),
        turn_id: Some(turn_id),
        at,
        body,
    }
}

/// CPU time (user + system) this process has used: unlike wall time, it barely moves when other work shares the
/// machine, so CPU per event is the number to compare between runs.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct we pass; a zeroed rusage is a valid value for it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    micros(usage.ru_utime) + micros(usage.ru_stime)
}

/// What one run measured.
struct Measured {
    /// Durable events per second of wall time.
    rate: f64,
    /// Mean time from `commit` to its acknowledgement.
    latency: Duration,
    /// CPU time per event, over every thread of the process.
    cpu_per_event: Duration,
}

/// Creates `actors` conversations, then has each commit `events_each` events, `per_commit` at a time, all at once.
async fn run(store: &Store, actors: usize, events_each: u64, per_commit: u64) -> Result<Measured> {
    let mut ids = Vec::new();
    for _ in 0..actors {
        let id = ConversationId::new();
        let now = Timestamp::now();
        let summary = ConversationSummary {
            id,
            title: Some("bench".into()),
            status: "running".into(),
            cwd: None,
            created_at: now,
            updated_at: now,
            turn_count: 1,
            extra: serde_json::Map::new(),
        };
        store
            .commit(Commit::default().with_conversation(summary))
            .await
            .context("create a conversation")?;
        ids.push(id);
    }
    let start = Instant::now();
    let cpu_start = cpu_time();
    let mut tasks = Vec::new();
    for id in ids {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let turn = TurnId::new();
            let mut seq = 1;
            let mut local = Duration::ZERO;
            while seq <= events_each {
                let events = (seq..seq + per_commit).map(|s| event(id, turn, s)).collect();
                let t = Instant::now();
                store.commit(Commit::events(events)).await?;
                local += t.elapsed();
                seq += per_commit;
            }
            Ok::<_, efr_store::StoreError>(local)
        }));
    }
    let mut latency_sum = Duration::ZERO;
    for task in tasks {
        latency_sum += task.await.context("an actor panicked")?.context("commit")?;
    }
    let elapsed = start.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_start);
    let total = actors as f64 * events_each as f64;
    let commits = total / per_commit as f64;
    Ok(Measured {
        rate: total / elapsed.as_secs_f64(),
        latency: latency_sum.div_f64(commits),
        cpu_per_event: cpu.div_f64(total),
    })
}

/// Runs one shape `RUNS` times on fresh databases; prints and returns the median events per second.
/// How a shape's rate is judged.
#[derive(Clone, Copy)]
enum Judge {
    /// Below the budget fails the bench.
    Budget,
    /// Compared with the budget, for information.
    Compare,
    /// No comparison.
    None,
}

async fn shape(name: &str, actors: usize, events_each: u64, per_commit: u64, judge: Judge) -> Result<bool> {
    let mut rates = Vec::new();
    let mut latencies = Vec::new();
    let mut cpus = Vec::new();
    for _ in 0..RUNS {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
        let store = Store::open(dir.path().join("efr.db")).await?;
        let measured = run(&store, actors, events_each, per_commit).await?;
        store.close().await?;
        rates.push(measured.rate);
        latencies.push(measured.latency);
        cpus.push(measured.cpu_per_event);
    }
    rates.sort_by(f64::total_cmp);
    latencies.sort();
    cpus.sort();
    let rate = rates[RUNS / 2];
    let latency = latencies[RUNS / 2];
    let cpu = cpus[RUNS / 2];
    let budget = BUDGET_EVENTS_PER_SEC;
    let ratio = rate / budget;
    let verdict = match judge {
        Judge::Budget if rate >= budget => format!("budget ≥ {budget:.0}/s: ok, {ratio:.1}×"),
        Judge::Budget => format!("budget ≥ {budget:.0}/s: BELOW BUDGET, {ratio:.2}×"),
        Judge::Compare => format!("informative: {ratio:.2}× the budget"),
        Judge::None => "informative".to_owned(),
    };
    println!(
        "store {name:<12} {actors:>3} actors × {per_commit:>3} events/commit: {rate:>9.0} durable events/s, \
         mean commit {:>6.2} ms, CPU {:>5.1} µs/event  [{verdict}]",
        latency.as_secs_f64() * 1000.0,
        cpu.as_secs_f64() * 1e6,
    );
    Ok(!matches!(judge, Judge::Budget) || rate >= budget)
}

fn main() -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let ok = runtime.block_on(async {
        let batched = shape("batched", 8, 20_000, 100, Judge::Budget).await?;
        shape("group commit", 64, 1_000, 1, Judge::Compare).await?;
        shape("lone commit", 1, 300, 1, Judge::None).await?;
        anyhow::Ok(batched)
    })?;
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
