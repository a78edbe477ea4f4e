//! Bench: what cautious's read-only sandbox costs a read-only command (docs/adr/0009-cautious-reads-contained.md):
//! `cat` of a small file and `git status` in a small repository, each run through the launcher with a read-only
//! plan (no writable root, the default masks, git's program-starting config neutralised) against the same command
//! run direct.
//!
//! The two are run in pairs, interleaved run by run, [`RUNS`] pairs after a warm-up; the median of the per-pair
//! ratios is printed with its spread and the load average. The contained run pays for bubblewrap's namespaces and
//! mounts, the launcher's inner stage and the plan file; a real call adds the hidden shell's `env -0` run (a few
//! milliseconds) on top. Against direct there is no budget (the sandbox's own cost dominates a read); the budget is
//! what a read adds to a contained `true`: at most [`READ_BUDGET`] times. Prints `PASS` or `FAIL` and exits with
//! status 1 on `FAIL`. Run with `cargo bench -p efr-launcher --bench contained_read`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use efr_protocol::internal::{LaunchPlan, ReportTo, default_masks};

/// Timed pairs of each measure.
const RUNS: usize = 30;
/// A contained read at most this many times a contained `true` (docs/architecture.md, "Budgets").
const READ_BUDGET: f64 = 1.5;
/// Untimed runs first (page cache, bwrap's first start).
const WARM_UP: usize = 5;

mod timing;

use efr_test_support::bench::{Pairs, load_average};
use timing::{time, workspace};

fn main() -> ExitCode {
    match bench() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("contained_read: {err}");
            ExitCode::FAILURE
        }
    }
}

fn bench() -> Result<bool, String> {
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
    let load = load_average();
    let mut pass = true;
    for argv in [vec!["cat", "README"], vec!["git", "status", "--short"]] {
        let contained = Contained::new(&bwrap, &project, dir.path(), &argv)?;
        let program = which(argv[0])?;
        let direct = || time(Command::new(&program).args(&argv[1..]).current_dir(&project));
        for _ in 0..WARM_UP {
            contained.run()?;
            direct()?;
        }
        let pairs = Pairs::interleaved(RUNS, || contained.run().map(ms), || direct().map(ms))?;
        println!(
            "contained read `{}`: median {:.2} ms; direct: median {:.2} ms; ratio {} (no budget); load average {load}",
            argv.join(" "),
            pairs.a().median,
            pairs.b().median,
            pairs.ratios(),
        );
    }
    // cautious's read against the cheapest contained call: what reading a file adds to the sandbox's own cost.
    let read = Contained::new(&bwrap, &project, dir.path(), &["cat", "README"])?;
    let nothing = Contained::new(&bwrap, &project, dir.path(), &["true"])?;
    for _ in 0..WARM_UP {
        read.run()?;
        nothing.run()?;
    }
    let pairs = Pairs::interleaved(RUNS, || read.run().map(ms), || nothing.run().map(ms))?;
    let ratio = pairs.ratios();
    pass &= ratio.median <= READ_BUDGET;
    println!(
        "contained `cat README` against a contained `true`: {:.2} ms against {:.2} ms; ratio {ratio} \
         (budget {READ_BUDGET}x); load average {load} {}",
        pairs.a().median,
        pairs.b().median,
        if pass { "PASS" } else { "FAIL" }
    );
    Ok(pass)
}

/// Milliseconds of a duration.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `argv` run through the launcher with a read-only plan (each run writes the one-time plan file again).
struct Contained {
    plan: Vec<u8>,
    plan_path: PathBuf,
}

impl Contained {
    /// The read-only plan of `argv` in `project`, its files in `work`.
    fn new(bwrap: &Path, project: &Path, work: &Path, argv: &[&str]) -> Result<Self, String> {
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
        Ok(Self {
            plan: serde_json::to_vec(&plan).map_err(|e| e.to_string())?,
            plan_path: work.join(format!("plan-{}.json", argv[0])),
        })
    }

    /// One run to its end: how long it took.
    fn run(&self) -> Result<Duration, String> {
        std::fs::write(&self.plan_path, &self.plan).map_err(|e| e.to_string())?;
        time(
            Command::new(env!("CARGO_BIN_EXE_efr-launcher"))
                .arg("--plan-file")
                .arg(&self.plan_path),
        )
    }
}

/// The absolute path of a program in `/usr/bin` or `/bin`.
fn which(name: &str) -> Result<PathBuf, String> {
    ["/usr/bin", "/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|path| path.is_file())
        .ok_or_else(|| format!("{name} is not in /usr/bin or /bin"))
}
