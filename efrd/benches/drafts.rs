//! Bench: the draft path (docs/architecture.md, "Budgets"; ADR 0024; `cargo bench -p efrd --bench drafts`, also run
//! by `cargo xtask bench`).
//!
//! - `draft to subscriber`: from the moment the turn hands a parsed text delta to its conversation's draft hub to
//!   the moment a subscriber has the draft that holds its bytes: the hub, the subscriber's queue (merging while the
//!   subscriber is busy), the JSON of the item written to a Unix socket, and the subscriber reading and parsing it.
//!   A 2 MB answer in 1 KiB deltas, one every 100 µs, with 100 other drafts subscribers that read nothing. Budget:
//!   p50 under 1 ms (p99 printed).
//!
//! Prints the load average with the numbers; exits 1 when the budget fails.

#![allow(clippy::print_stdout, clippy::expect_used, clippy::unwrap_used)] // A bench: a broken setup is a failed run.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use efr_protocol::ids::TurnId;
use efr_protocol::streams::SubscribeItem;
use efr_protocol::wire::DraftPart;
use efrd::conversation::drafts::DraftHub;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BUDGET: Duration = Duration::from_millis(1);
const DELTAS: usize = 2048;
const DELTA_BYTES: usize = 1024;
const SPACING: Duration = Duration::from_micros(100);

fn main() -> ExitCode {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load average: {}",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut latencies = runtime.block_on(run());
    latencies.sort_unstable();
    let p50 = latencies[latencies.len() / 2];
    let p99 = latencies[latencies.len() * 99 / 100];
    let ok = p50 < BUDGET;
    println!(
        "draft to subscriber after the parsed delta: p50 {p50:?}, p99 {p99:?} over {} deltas (budget: p50 under {BUDGET:?}) {}",
        latencies.len(),
        if ok { "ok" } else { "OVER BUDGET" }
    );
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

async fn run() -> Vec<Duration> {
    let hub = Arc::new(DraftHub::default());
    let turn = TurnId::new();
    let idle: Vec<_> = (0..100).map(|_| hub.subscribe()).collect();
    let queue = hub.subscribe();
    let (mut read, mut write) = tokio::net::UnixStream::pair().unwrap();
    // The subscription's side: each draft as its item's JSON frame, length first.
    tokio::spawn(async move {
        loop {
            let draft = queue.next().await;
            let frame = serde_json::to_vec(&SubscribeItem::Draft(draft)).unwrap();
            let len = u32::try_from(frame.len()).unwrap();
            write.write_all(&len.to_be_bytes()).await.unwrap();
            write.write_all(&frame).await.unwrap();
        }
    });
    let published: Arc<Mutex<BTreeMap<u64, Instant>>> = Arc::default();
    let publisher = {
        let (hub, published) = (Arc::clone(&hub), Arc::clone(&published));
        std::thread::spawn(move || {
            let delta = "ö".repeat(DELTA_BYTES / 2);
            let mut next = Instant::now();
            for n in 0..DELTAS {
                while Instant::now() < next {
                    std::hint::spin_loop();
                }
                next += SPACING;
                let offset = (n * DELTA_BYTES) as u64;
                published.lock().unwrap().insert(offset, Instant::now());
                hub.publish(
                    turn,
                    DraftPart::Text {
                        index: 0,
                        offset,
                        delta: delta.clone(),
                    },
                );
            }
        })
    };
    let mut latencies = Vec::with_capacity(DELTAS);
    let total = (DELTAS * DELTA_BYTES) as u64;
    let mut have = 0;
    while have < total {
        let mut len = [0; 4];
        read.read_exact(&mut len).await.unwrap();
        let mut frame = vec![0; u32::from_be_bytes(len) as usize];
        read.read_exact(&mut frame).await.unwrap();
        let item: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        let arrived = Instant::now();
        let draft = &item["draft"]["draft"];
        let end = draft["offset"].as_u64().unwrap() + draft["delta"].as_str().unwrap().len() as u64;
        let mut published = published.lock().unwrap();
        let done: Vec<u64> = published.range(..end).map(|(offset, _)| *offset).collect();
        for offset in done {
            latencies.push(arrived - published.remove(&offset).unwrap());
        }
        have = end;
    }
    publisher.join().unwrap();
    drop(idle);
    latencies
}
