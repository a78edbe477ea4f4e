//! Finding the exits of a line, as the turn does it before a contained call: parse and analyse the line
//! (`efr_policy::analysis::analyse`), then `efrd::exits::find::line_exits` (`cargo bench -p efrd --bench exits`,
//! also run by `cargo xtask bench`).
//!
//! The lines are the exits table's (`efrd/src/exits/find/tests/lines.rs`, over 120 lines: contained work, each kind,
//! lines with two exits). Each run times every line [`ROUNDS`] times, one sample per call; [`RUNS`] runs. Prints the
//! p50 and p99 of each run and judges the median run's p99: the budget is that finding adds under 1 ms at p99 to a
//! call. Exits 1 when it does not.
//!
//! Each sample is the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): the work finding adds to a call. On a shared
//! machine a wall-clock p99 measures the scheduler (a sample that another process preempts waits its time slice,
//! milliseconds), so the wall-clock p50 and p99 are printed for the record only.

#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use efr_policy::analysis::{Scope, analyse};
use efr_policy::{EfrDirs, ShellCall};
use efr_protocol::internal::DEFAULT_HOME_MASKS;
use efr_protocol::wire::Desktop;
use efrd::exits::find::{ExitContext, line_exits};

#[path = "../src/exits/find/tests/lines.rs"]
#[allow(dead_code)]
mod lines;

const RUNS: usize = 5;
const ROUNDS: usize = 40;
/// The budget: p99 of one line's finding.
const BUDGET: Duration = Duration::from_millis(1);

fn main() {
    let home = Path::new("/home/u");
    let project = vec![PathBuf::from("/home/u/proj")];
    let writable = vec![project[0].clone(), home.join(".local/state/efr/scratch/c1")];
    let efr_dirs = EfrDirs {
        config: Some(home.join(".config/efr")),
        data: Some(home.join(".local/share/efr")),
        state: Some(home.join(".local/state/efr")),
        runtime: Some(PathBuf::from("/run/user/1000/efr")),
        scratch: Some(home.join(".local/state/efr/scratch")),
    };
    let mut masked: Vec<PathBuf> = DEFAULT_HOME_MASKS.iter().map(|m| home.join(m)).collect();
    masked.push(PathBuf::from("/run/user/1000"));
    let remotes = vec!["github.com".to_owned()];
    let desktop = Desktop {
        wayland_display: Some("wayland-1".to_owned()),
        hyprland_instance_signature: Some("abc".to_owned()),
        ..Desktop::default()
    };
    let ctx = ExitContext {
        cwd: &project[0],
        project_roots: &project,
        writable_roots: &writable,
        home: Some(home),
        efr_dirs: &efr_dirs,
        masked: &masked,
        allowed_hosts: &|host, _| host == "crates.io",
        project_remotes: &remotes,
        desktop: Some(&desktop),
        bus_filter: true,
        program_of: &|_| None,
    };
    let scope = Scope {
        cwd: &project[0],
        project_roots: &project,
        home: Some(home),
        efr: &efr_dirs,
        extra_read_only: &[],
        extra_masks: &[],
    };
    let calls: Vec<ShellCall> = lines::TABLE
        .iter()
        .map(|(line, _)| ShellCall {
            command: (*line).to_owned(),
            cwd: project[0].clone(),
        })
        .collect();
    println!(
        "exits: {} lines × {ROUNDS} rounds, {RUNS} runs; budget: parse + analysis + line_exits p99 < {} ms",
        calls.len(),
        BUDGET.as_millis()
    );
    let mut p99s = Vec::new();
    let mut exits = 0;
    let mut per_line = vec![Duration::ZERO; calls.len()];
    for run in 1..=RUNS {
        let mut samples = Vec::with_capacity(calls.len() * ROUNDS);
        let mut walls = Vec::with_capacity(calls.len() * ROUNDS);
        for _ in 0..ROUNDS {
            for (i, call) in calls.iter().enumerate() {
                let (started, cpu) = (Instant::now(), thread_cpu());
                let analysis = analyse(&call.command, &scope);
                let found = line_exits(call, &analysis, &ctx);
                let took = thread_cpu().saturating_sub(cpu);
                walls.push(started.elapsed());
                samples.push(took);
                per_line[i] += took;
                exits += found.len();
                std::hint::black_box(found);
            }
        }
        samples.sort();
        walls.sort();
        // The sample at `per_mille`/1000 of a sorted list.
        let at = |list: &[Duration], per_mille: usize| list[(list.len() - 1) * per_mille / 1000];
        let (p50, p99, max) = (at(&samples, 500), at(&samples, 990), at(&samples, 1000));
        println!(
            "  run {run}: cpu p50 {:>7.1} µs  p99 {:>7.1} µs  max {:>8.1} µs   (wall p50 {:>7.1} µs  p99 {:>8.1} µs)",
            micros(p50),
            micros(p99),
            micros(max),
            micros(at(&walls, 500)),
            micros(at(&walls, 990)),
        );
        p99s.push(p99);
    }
    assert!(exits > 0, "the table's lines find exits");
    let mut slowest: Vec<(Duration, &str)> = per_line
        .iter()
        .zip(&calls)
        .map(|(total, call)| {
            (
                *total / u32::try_from(RUNS * ROUNDS).unwrap_or(1),
                call.command.as_str(),
            )
        })
        .collect();
    slowest.sort_by_key(|(mean, _)| std::cmp::Reverse(*mean));
    for (mean, line) in slowest.iter().take(3) {
        println!("  slowest: {:>7.1} µs mean  {line:?}", micros(*mean));
    }
    p99s.sort();
    let p99 = p99s[RUNS / 2];
    let verdict = if p99 < BUDGET { "PASS" } else { "FAIL" };
    println!(
        "  median p99 {:.1} µs (budget {} µs)  {verdict}",
        micros(p99),
        BUDGET.as_micros()
    );
    if p99 >= BUDGET {
        std::process::exit(1);
    }
}

/// The calling thread's CPU time.
fn thread_cpu() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec, and CLOCK_THREAD_CPUTIME_ID is a clock every Linux has.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or_default(),
        u32::try_from(now.tv_nsec).unwrap_or_default(),
    )
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
