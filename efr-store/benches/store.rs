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
//! - `indexed` A/B (informative): the `batched` shape without index entries (A) and with them (B: one entry of
//!   about 400 characters of seeded words for every 5th event), run interleaved A, B, B, A, ... so that the
//!   machine's load falls on both alike. The index's budget is held on efrd's real write load instead
//!   (`efrd/benches/index.rs`; docs/adr/0025-search-index.md, "The budget, restated"): at this shape's rate no
//!   tokenizer that matches parts of words fits in 10%.
//!
//! - `indexed` A/B in the group-commit shape (informative; `-- group-index` runs only it): the index's cost where
//!   every event is its own commit, as efrd writes.
//!
//! - `secure_delete` A/B (informative): the batched shape, plain and indexed, with `PRAGMA secure_delete` OFF (A)
//!   and FAST (B, as the store runs), interleaved the same way.
//!
//! Wall-clock rates move with the machine's load; the CPU per event (all threads) barely does, so compare that
//! between runs. Exits with status 1 when the budgeted shape is below the budget. Run with
//! `cargo bench -p efr-store --bench store` (or `cargo xtask bench`).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use efr_protocol::ids::{ConversationId, Timestamp, TurnId};
use efr_store::{Commit, ConversationSummary, EventRow, IndexEntry, Store};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

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

/// About 400 characters of seeded made-up words: every text differs, as real prompts and answers do.
fn indexed_text(rng: &mut StdRng) -> String {
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
    let mut text = String::with_capacity(420);
    while text.len() < 400 {
        let length = rng.random_range(2..10);
        text.extend((0..length).map(|_| char::from(LETTERS[rng.random_range(0..LETTERS.len())])));
        text.push(' ');
    }
    text
}

/// The index entries of `events` in shape B: one for every 5th event.
fn entries(events: &[EventRow], rng: &mut StdRng) -> Vec<IndexEntry> {
    events
        .iter()
        .filter(|event| event.seq % 5 == 0)
        .map(|event| IndexEntry {
            conversation_id: event.conversation_id,
            seq: event.seq,
            kind: "answer".into(),
            turn_id: event.turn_id,
            at: event.at,
            text: indexed_text(rng),
        })
        .collect()
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
async fn run(store: &Store, actors: usize, events_each: u64, per_commit: u64, indexed: bool) -> Result<Measured> {
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
    for (n, id) in (0_u64..).zip(ids) {
        let store = store.clone();
        let seed = n;
        tasks.push(tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed);
            let turn = TurnId::new();
            let mut seq = 1;
            let mut local = Duration::ZERO;
            while seq <= events_each {
                let events: Vec<EventRow> = (seq..seq + per_commit).map(|s| event(id, turn, s)).collect();
                let index = if indexed {
                    entries(&events, &mut rng)
                } else {
                    Vec::new()
                };
                let t = Instant::now();
                store.commit(Commit::events(events).with_index(index)).await?;
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
        let measured = run(&store, actors, events_each, per_commit, false).await?;
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

/// One side of an interleaved A/B: whether every 5th event carries an index entry, and `secure_delete`.
#[derive(Clone, Copy)]
struct Side {
    indexed: bool,
    /// `PRAGMA secure_delete=FAST` (as the store opens) or OFF.
    secure_delete: bool,
}

/// The batched shape on sides `a` and `b`, run interleaved A, B, B, A, ... (each side first as often as the other,
/// so the machine's load falls on both alike); returns the medians of the rates and of the CPU per event.
async fn interleaved(a: Side, b: Side) -> Result<[(f64, Duration); 2]> {
    interleaved_in(a, b, (8, 10_000, 100)).await
}

/// [`interleaved`] in the shape (actors, events each, events per commit).
async fn interleaved_in(
    a: Side,
    b: Side,
    (actors, each, per_commit): (usize, u64, u64),
) -> Result<[(f64, Duration); 2]> {
    const AB_RUNS: usize = 5;
    let mut sides: [(Vec<f64>, Vec<Duration>); 2] = Default::default();
    for i in 0..AB_RUNS * 2 {
        let which = usize::from(matches!(i % 4, 1 | 2));
        let side = [a, b][which];
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
        let store = Store::open(dir.path().join("efr.db")).await?;
        if !side.secure_delete {
            store.set_secure_delete(false).await?;
        }
        let measured = run(&store, actors, each, per_commit, side.indexed).await?;
        store.close().await?;
        sides[which].0.push(measured.rate);
        sides[which].1.push(measured.cpu_per_event);
    }
    Ok(sides.map(|(mut rates, mut cpus)| {
        rates.sort_by(f64::total_cmp);
        cpus.sort();
        (rates[rates.len() / 2], cpus[cpus.len() / 2])
    }))
}

/// The search index's cost in the batched shape: without (A) and with (B) index entries (informative).
async fn indexed_ab() -> Result<()> {
    let [(a, a_cpu), (b, b_cpu)] = interleaved(
        Side {
            indexed: false,
            secure_delete: true,
        },
        Side {
            indexed: true,
            secure_delete: true,
        },
    )
    .await?;
    let ratio = b / a;
    println!(
        "store indexed A/B: {a:>9.0} durable events/s without the index, {b:>9.0} with it (every 5th event indexed): \
         {:.1}% cost; CPU {:.1} → {:.1} µs/event  (informative: the budget is efrd/benches/index.rs's)",
        (1.0 - ratio) * 100.0,
        a_cpu.as_secs_f64() * 1e6,
        b_cpu.as_secs_f64() * 1e6,
    );
    Ok(())
}

/// The search index's cost in the shape efrd writes: every event its own commit (a turn commits each event as it
/// comes, the deltas coalesced), 64 actors so that the writer groups their commits. Informative, beside the budget's
/// batched shape (docs/adr/0025-search-index.md, "Measurements").
async fn indexed_group_ab() -> Result<()> {
    let [(a, a_cpu), (b, b_cpu)] = interleaved_in(
        Side {
            indexed: false,
            secure_delete: true,
        },
        Side {
            indexed: true,
            secure_delete: true,
        },
        (64, 1_000, 1),
    )
    .await?;
    println!(
        "store indexed A/B, group commit (64 actors × 1 event a commit): {a:>9.0} durable events/s without the \
         index, {b:>9.0} with it: {:.1}% cost; CPU {:.1} → {:.1} µs/event  [informative]",
        (1.0 - b / a) * 100.0,
        a_cpu.as_secs_f64() * 1e6,
        b_cpu.as_secs_f64() * 1e6,
    );
    Ok(())
}

/// What `secure_delete=FAST` (ADR 0027) costs the writes: the batched shape, plain and indexed (whose FTS5 merges
/// free cells), each with it OFF (A) and FAST (B, as the store runs), interleaved. Informative.
async fn secure_delete_ab() -> Result<()> {
    for indexed in [false, true] {
        let [(a, a_cpu), (b, b_cpu)] = interleaved(
            Side {
                indexed,
                secure_delete: false,
            },
            Side {
                indexed,
                secure_delete: true,
            },
        )
        .await?;
        println!(
            "store secure_delete A/B ({}): {a:>9.0} durable events/s with it OFF, {b:>9.0} with FAST: {:.1}% cost; \
             CPU {:.1} → {:.1} µs/event  [informative]",
            if indexed { "indexed" } else { "plain" },
            (1.0 - b / a) * 100.0,
            a_cpu.as_secs_f64() * 1e6,
            b_cpu.as_secs_f64() * 1e6,
        );
    }
    Ok(())
}

fn main() -> Result<ExitCode> {
    println!(
        "load average: {}",
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    if std::env::args().any(|a| a == "group-index") {
        runtime.block_on(indexed_group_ab())?;
        return Ok(ExitCode::SUCCESS);
    }
    let ok = runtime.block_on(async {
        let batched = shape("batched", 8, 20_000, 100, Judge::Budget).await?;
        shape("group commit", 64, 1_000, 1, Judge::Compare).await?;
        shape("lone commit", 1, 300, 1, Judge::None).await?;
        indexed_ab().await?;
        indexed_group_ab().await?;
        secure_delete_ab().await?;
        anyhow::Ok(batched)
    })?;
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
