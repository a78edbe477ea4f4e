//! Bench: a contained `true` against a bare `bwrap --ro-bind / / true` (docs/architecture.md, "Budgets": at most 3×).
//!
//! The contained run is the whole path of a real call: the launcher reads a one-time plan file (the default masks
//! under `$HOME`, a project root, the report in a file), runs bubblewrap with every namespace, mount and mask, and
//! the inner stage drops capabilities and applies Landlock and seccomp before it execs `true`. The two are run
//! alternately, [`RUNS`] times each after a warm-up, and the medians compared; the ratio is what carries from one
//! machine to another.
//!
//! Prints `PASS` or `FAIL` and exits with status 1 on `FAIL`. Run with
//! `cargo bench -p efr-launcher --bench contained_true`.

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Duration;

use efr_protocol::internal::{LaunchPlan, ReportTo, Writable, WritableSource, default_masks};

/// The budget in docs/architecture.md, "Budgets".
const BUDGET_RATIO: f64 = 3.0;
/// Timed runs of each; the median is reported.
const RUNS: usize = 40;
/// Untimed runs first (page cache, bwrap's first start).
const WARM_UP: usize = 5;

mod timing;

use timing::{median, time, workspace};

fn main() -> ExitCode {
    match bench() {
        Ok(pass) => {
            if pass {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(err) => {
            eprintln!("contained_true: {err}");
            ExitCode::FAILURE
        }
    }
}

fn bench() -> Result<bool, String> {
    let (bwrap, dir, project) = workspace("contained-true-")?;
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()));
    let mut plan = LaunchPlan::new(&bwrap, vec!["true".into()], &project);
    plan.env.insert("PATH".into(), "/usr/bin:/bin".into());
    plan.env.insert("HOME".into(), home.display().to_string());
    plan.writable.push(Writable {
        path: project.clone(),
        source: WritableSource::Project,
    });
    let uid = nix::unistd::getuid().as_raw();
    plan.masks = default_masks(&home, &PathBuf::from(format!("/run/user/{uid}")), &[], &[]);
    plan.report = ReportTo::File {
        path: dir.path().join("report"),
    };
    let plan = serde_json::to_vec(&plan).map_err(|e| e.to_string())?;
    let plan_path = dir.path().join("plan.json");

    let contained = || -> Result<Duration, String> {
        std::fs::write(&plan_path, &plan).map_err(|e| e.to_string())?;
        time(
            Command::new(env!("CARGO_BIN_EXE_efr-launcher"))
                .arg("--plan-file")
                .arg(&plan_path),
        )
    };
    let bare = || time(Command::new(&bwrap).args(["--ro-bind", "/", "/", "true"]));
    for _ in 0..WARM_UP {
        contained()?;
        bare()?;
    }
    let mut contained_runs = Vec::with_capacity(RUNS);
    let mut bare_runs = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        contained_runs.push(contained()?);
        bare_runs.push(bare()?);
    }
    let contained = median(&mut contained_runs);
    let bare = median(&mut bare_runs);
    let ratio = contained.as_secs_f64() / bare.as_secs_f64();
    let pass = ratio <= BUDGET_RATIO;
    println!(
        "contained true: median {:.2} ms; bare bwrap --ro-bind / / true: median {:.2} ms; ratio {ratio:.2} \
         (budget {BUDGET_RATIO}x, {RUNS} runs each) {}",
        contained.as_secs_f64() * 1e3,
        bare.as_secs_f64() * 1e3,
        if pass { "PASS" } else { "FAIL" }
    );
    Ok(pass)
}
