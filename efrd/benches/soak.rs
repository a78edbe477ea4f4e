//! Soak: a release efrd for a long run of turns (`cargo xtask soak`, on demand; efrd's integration tests run a short
//! one in CI). See `efr_test_support::soak` for what the run does and measures.
//!
//! Budgets (docs/operations.md, "How big it gets"): efrd's RSS after the warm-up grows by at most 5% over the run;
//! its open descriptors stay flat (at most 2 more at the end); turn latency at the end is at most 1.5× the start's,
//! at p50 and at p99. The database's bytes per event are printed. Prints one line per measure, PASS or FAIL next to
//! each budget; exits with 1 when one fails, 2 when the run itself cannot finish.
//!
//! Arguments (after `--`): `--turns N` (default 10,000), `--minutes M` (the bound on the run, default 30),
//! `--clients C` (default 5), `--prose` (prompts and answers of a real turn's length instead of a few words),
//! `--quiet-secs S` (default 70: efrd's RSS sampled again after S seconds idle, once it gave memory back; printed,
//! the idle budget is the daemon bench's).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use efr_test_support::soak::{self, SoakPlan, SoakReport};

/// The most RSS growth after the warm-up, as a fraction.
const RSS_GROWTH_BUDGET: f64 = 0.05;
/// The most open descriptors the end may have over the warm-up.
const FD_BUDGET: usize = 2;
/// The most the end's turn latency may be over the start's, at p50 and p99.
const LATENCY_BUDGET: f64 = 1.5;

fn main() -> ExitCode {
    let plan = match plan(std::env::args().skip(1)) {
        Ok(plan) => plan,
        Err(error) => {
            eprintln!("soak: {error:#}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("soak: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    println!(
        "soak: efrd {} (release), {} clients, up to {} turns within {} min",
        env!("CARGO_PKG_VERSION"),
        plan.clients,
        plan.turns,
        plan.time_limit.as_secs() / 60
    );
    let report = runtime.block_on(async {
        let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).context("a temporary EFR_HOME")?;
        soak::run(std::path::Path::new(env!("CARGO_BIN_EXE_efrd")), home.path(), plan).await
    });
    match report {
        Ok(report) => {
            if judge(&report) {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("soak: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn plan(mut args: impl Iterator<Item = String>) -> Result<SoakPlan> {
    let mut plan = SoakPlan::new(5, 10_000, Duration::from_secs(30 * 60), 500);
    plan.quiet = Some(Duration::from_secs(70));
    while let Some(arg) = args.next() {
        let mut value = || -> Result<u64> {
            args.next()
                .with_context(|| format!("{arg} needs a value"))?
                .parse()
                .with_context(|| format!("{arg} needs a number"))
        };
        match arg.as_str() {
            "--turns" => plan.turns = usize::try_from(value()?)?,
            "--minutes" => plan.time_limit = Duration::from_secs(value()? * 60),
            "--clients" => plan.clients = usize::try_from(value()?)?,
            "--prose" => plan.prose = true,
            "--quiet-secs" => plan.quiet = Some(Duration::from_secs(value()?)),
            // cargo bench passes `--bench` to a harness-less target.
            "--bench" => {}
            other => bail!("unknown argument {other:?} (--turns N, --minutes M, --clients C, --prose, --quiet-secs S)"),
        }
    }
    if plan.turns < 100 || plan.clients == 0 {
        bail!("a soak needs at least 100 turns and one client");
    }
    plan.window = (plan.turns / 20).max(20);
    Ok(plan)
}

/// Prints the report with PASS or FAIL next to each budget; `true` when all hold.
fn judge(report: &SoakReport) -> bool {
    for line in report.lines() {
        println!("soak: {line}");
    }
    let (r50, r99) = report.latency_ratios();
    let checks = [
        (
            format!(
                "RSS growth after warm-up {:+.1}% (budget +5%)",
                report.rss_growth() * 100.0
            ),
            report.rss_growth() <= RSS_GROWTH_BUDGET,
        ),
        (
            format!(
                "open descriptors {} → {} (budget +{FD_BUDGET})",
                report.fds.0, report.fds.1
            ),
            report.fds.1 <= report.fds.0 + FD_BUDGET,
        ),
        (
            format!("turn latency p50 ×{r50:.2} (budget ×{LATENCY_BUDGET})"),
            r50 <= LATENCY_BUDGET,
        ),
        (
            format!("turn latency p99 ×{r99:.2} (budget ×{LATENCY_BUDGET})"),
            r99 <= LATENCY_BUDGET,
        ),
    ];
    let mut ok = true;
    for (line, pass) in checks {
        println!("{:<60} {}", line, if pass { "PASS" } else { "FAIL" });
        ok &= pass;
    }
    ok
}
