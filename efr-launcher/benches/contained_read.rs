//! Bench: what cautious's read-only sandbox costs a read-only command (docs/adr/0009-cautious-reads-contained.md):
//! `cat` of a small file and `git status` in a small repository, each run through the launcher with a read-only
//! plan (no writable root, the default masks, git's program-starting config neutralised) against the same command
//! run direct.
//!
//! The two are run alternately, [`RUNS`] times each after a warm-up, and the medians compared. The contained run
//! pays for bubblewrap's namespaces and mounts, the launcher's inner stage and the plan file; a real call adds the
//! hidden shell's `env -0` run (a few milliseconds) on top. There is no budget yet: the ratio is printed, and the
//! bench fails only when a run fails. Run with `cargo bench -p efr-launcher --bench contained_read`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use efr_protocol::internal::{LaunchPlan, ReportTo, default_masks};

/// Timed runs of each; the median is reported.
const RUNS: usize = 30;
/// Untimed runs first (page cache, bwrap's first start).
const WARM_UP: usize = 5;

mod timing;

use timing::{median, time, workspace};

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("contained_read: {err}");
            ExitCode::FAILURE
        }
    }
}

fn bench() -> Result<(), String> {
    let (bwrap, dir, project) = workspace("contained-read-")?;
    std::fs::write(project.join("README"), "a small file\n".repeat(20)).map_err(|e| e.to_string())?;
    for args in [
        &["init", "-q"][..],
        &["add", "README"],
        &[
            "-c",
            "user.name=B",
            "-c",
            "user.email=b@example.invalid",
            "commit",
            "-qm",
            "one",
        ],
    ] {
        let status = Command::new("git")
            .args(args)
            .current_dir(&project)
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("git: {e}"))?;
        if !status.success() {
            return Err(format!("git {args:?} failed"));
        }
    }
    for argv in [vec!["cat", "README"], vec!["git", "status", "--short"]] {
        let (contained, direct) = compare(&bwrap, &project, dir.path(), &argv)?;
        println!(
            "contained read `{}`: median {:.2} ms; direct: median {:.2} ms; ratio {:.1} ({RUNS} runs each, no budget)",
            argv.join(" "),
            contained.as_secs_f64() * 1e3,
            direct.as_secs_f64() * 1e3,
            contained.as_secs_f64() / direct.as_secs_f64()
        );
    }
    Ok(())
}

/// The medians of `argv` run contained (read-only plan) and direct, in `project`.
fn compare(bwrap: &Path, project: &Path, work: &Path, argv: &[&str]) -> Result<(Duration, Duration), String> {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()));
    let program = which(argv[0])?;
    let mut args = vec![program.display().to_string()];
    args.extend(argv[1..].iter().map(|a| (*a).to_owned()));
    let mut plan = LaunchPlan::new(bwrap, args, project);
    plan.env.insert("PATH".into(), "/usr/bin:/bin".into());
    plan.env.insert("HOME".into(), home.display().to_string());
    // What cautious's read-only call adds for git (efrd's `GIT_NEUTRAL`, in part).
    for (n, (key, value)) in [
        ("core.fsmonitor", "false"),
        ("core.hooksPath", "/dev/null"),
        ("core.pager", "cat"),
    ]
    .iter()
    .enumerate()
    {
        plan.env.insert(format!("GIT_CONFIG_KEY_{n}"), (*key).to_owned());
        plan.env.insert(format!("GIT_CONFIG_VALUE_{n}"), (*value).to_owned());
    }
    plan.env.insert("GIT_CONFIG_COUNT".into(), "3".into());
    let uid = nix::unistd::getuid().as_raw();
    plan.masks = default_masks(&home, &PathBuf::from(format!("/run/user/{uid}")), &[], &[]);
    plan.report = ReportTo::File {
        path: work.join("report"),
    };
    let plan = serde_json::to_vec(&plan).map_err(|e| e.to_string())?;
    let plan_path = work.join("plan.json");
    let contained = || -> Result<Duration, String> {
        std::fs::write(&plan_path, &plan).map_err(|e| e.to_string())?;
        time(
            Command::new(env!("CARGO_BIN_EXE_efr-launcher"))
                .arg("--plan-file")
                .arg(&plan_path),
        )
    };
    let direct = || time(Command::new(&program).args(&argv[1..]).current_dir(project));
    for _ in 0..WARM_UP {
        contained()?;
        direct()?;
    }
    let mut contained_runs = Vec::with_capacity(RUNS);
    let mut direct_runs = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        contained_runs.push(contained()?);
        direct_runs.push(direct()?);
    }
    Ok((median(&mut contained_runs), median(&mut direct_runs)))
}

/// The absolute path of a program in `/usr/bin` or `/bin`.
fn which(name: &str) -> Result<PathBuf, String> {
    ["/usr/bin", "/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|path| path.is_file())
        .ok_or_else(|| format!("{name} is not in /usr/bin or /bin"))
}
