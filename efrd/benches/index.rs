//! Bench: what the search index costs efrd under its real write load (docs/architecture.md, "Budgets";
//! docs/adr/0025-search-index.md; `cargo bench -p efrd --bench index`, also run by `cargo xtask bench`).
//!
//! Each run is a short soak ([`efr_test_support::soak`]) of a release efrd in a fresh home: [`CLIENTS`] clients send
//! [`TURNS`] turns as fast as the scripted model answers (the busiest an efrd can be: its own work is the whole of a
//! turn), each turn a prompt of about 250 characters, a shell call, a patch and an answer of about 1,600 characters,
//! every third one asking its questions. The runs come in pairs, one with `[daemon] search_index` on and one with it
//! off, [`PAIRS`] pairs; the two runs of a pair run side by side, at the same time, each its own efrd, clients and
//! model server. Run one after the other, a single run's CPU per turn moved by up to ±25% with the host's load, more
//! than the index costs; side by side, both runs of a pair see the same moment of the machine, and that noise cancels
//! in their ratio (docs/adr/0025-search-index.md, "The budget, measured side by side"). Per run: efrd's CPU time per
//! turn (user and system, all its threads, from the first prompt until its idle conversations retired) and its
//! durable events per second. Budgets: the median of the per-pair ratios, printed with its spread and the load
//! average: the index adds under 10% to efrd's CPU per turn, and takes under 10% of its durable events per second.
//!
//! Exits 1 when a budget fails, 2 when the bench cannot run.

#![allow(clippy::print_stdout, clippy::print_stderr)] // A bench prints its measures.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use efr_test_support::bench::{Pairs, load_average};
use efr_test_support::soak::{self, SoakPlan, SoakReport};

/// Pairs of runs (odd, so that the median is one pair's ratio).
const PAIRS: usize = 15;
/// Turns per run.
const TURNS: usize = 400;
/// Clients per run.
const CLIENTS: usize = 5;
/// The most the index may add to efrd's CPU per turn, as a ratio.
const CPU_BUDGET: f64 = 1.10;
/// The least share of efrd's durable events per second the index may leave.
const RATE_BUDGET: f64 = 0.90;

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("index: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    println!("index: load average {} at the start", load_average());
    match runtime.block_on(measure()) {
        Ok((cpu, rate)) => {
            if report(&cpu, &rate) {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("index: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// The pairs of (index on, index off), each pair's two runs side by side: CPU per turn in ms, and durable events
/// per second.
async fn measure() -> Result<(Pairs, Pairs)> {
    let efrd = Path::new(env!("CARGO_BIN_EXE_efrd"));
    let (mut cpu, mut rate) = (Pairs::new(), Pairs::new());
    for pair in 0..PAIRS {
        // Which efrd starts first alternates.
        let (on, off) = if pair % 2 == 0 {
            tokio::try_join!(run(efrd, true), run(efrd, false))?
        } else {
            let (off, on) = tokio::try_join!(run(efrd, false), run(efrd, true))?;
            (on, off)
        };
        println!(
            "index: pair {}: on {:.2} ms a turn, {:.0} events/s; off {:.2} ms a turn, {:.0} events/s (load {})",
            pair + 1,
            millis(on.cpu_per_turn()),
            events_per_second(&on),
            millis(off.cpu_per_turn()),
            events_per_second(&off),
            load_average()
        );
        cpu.push(millis(on.cpu_per_turn()), millis(off.cpu_per_turn()));
        rate.push(events_per_second(&on), events_per_second(&off));
    }
    Ok((cpu, rate))
}

/// One short soak with the index on or off, in a fresh home.
async fn run(efrd: &Path, index: bool) -> Result<SoakReport> {
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).context("a temporary EFR_HOME")?;
    let mut plan = SoakPlan::new(CLIENTS, TURNS, Duration::from_secs(600), TURNS / 8);
    plan.search_index = index;
    plan.prose = true;
    let report = soak::run(efrd, home.path(), plan).await?;
    anyhow::ensure!(report.turns == TURNS, "only {} of {TURNS} turns ended", report.turns);
    Ok(report)
}

fn events_per_second(report: &SoakReport) -> f64 {
    #[allow(clippy::cast_precision_loss)] // Far below 2^52 events.
    let events = report.events as f64;
    events / report.elapsed.as_secs_f64().max(1e-9)
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Prints both measures next to their budgets; `true` when both hold.
fn report(cpu: &Pairs, rate: &Pairs) -> bool {
    let cpu_ratio = cpu.ratios();
    let rate_ratio = rate.ratios();
    let cpu_ok = cpu_ratio.median <= CPU_BUDGET;
    let rate_ok = rate_ratio.median >= RATE_BUDGET;
    println!(
        "index: efrd's CPU per turn, on {:.2} / off {:.2} ms (medians): on / off {cpu_ratio}   [budget ≤ {CPU_BUDGET}: {}]",
        cpu.a().median,
        cpu.b().median,
        verdict(cpu_ok)
    );
    println!(
        "index: durable events/s, on {:.0} / off {:.0} (medians): on / off {rate_ratio}   [budget ≥ {RATE_BUDGET}: {}]",
        rate.a().median,
        rate.b().median,
        verdict(rate_ok)
    );
    println!("index: load average {} at the end", load_average());
    cpu_ok && rate_ok
}

fn verdict(ok: bool) -> &'static str {
    if ok { "PASS" } else { "FAIL" }
}
