//! Bench: a turn's covered snapshot (the cost of undo) next to git on the same tree (docs/architecture.md,
//! "Budgets"; docs/undo.md).
//!
//! A project of 20,000 small text files in 200 folders, a git repository, on the target's disk
//! (`CARGO_TARGET_TMPDIR`, not a tmpfs). Three measures; the first two run the snapshot and git in pairs (which runs
//! first alternates), and the verdict is the median of the per-pair ratios, printed with its spread and the load
//! average next to the budget:
//!
//! - `warm`: the covered snapshot after a one-file change (with the previous snapshot, as a turn takes it) against
//!   `git add -A && git write-tree` on a warm index. Budget: no more than git.
//! - `first`: the first covered snapshot into an empty store (every file read, hashed and stored) against
//!   `git add -A` into a new repository. Budget: no more than 2× git.
//! - `dedup` (printed, no budget): the store's size on disk over 100 turns that each change one file, next to the
//!   tree's size: the contents are stored once, so each turn adds its manifest and one blob.
//!
//! Exits with status 1 when a budget fails. Run with `cargo bench -p efr-snapshot --bench undo` (or `cargo xtask bench`);
//! `cargo bench -p efr-snapshot --bench undo -- warm` runs only the measures named (`warm`, `first`, `dedup`), and
//! `EFR_BENCH_PHASES=1` prints each snapshot's parts (finding the stat cache, the walk, the keeping, the save).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use efr_snapshot::{Limits, Snapshot, SnapshotStore, UndoBounds};
use efr_test_support::bench::{Pairs, load_average};

/// Files in the project.
const FILES: usize = 20_000;
/// Files per folder.
const PER_FOLDER: usize = 100;
/// Pairs per measure; the median of the per-pair ratios is the verdict.
const RUNS: usize = 9;
/// Turns of the dedup measure.
const TURNS: usize = 100;
/// Budget: the warm snapshot over `git add -A && git write-tree`.
const BUDGET_WARM: f64 = 1.0;
/// Budget: the first snapshot over `git add -A` from scratch.
const BUDGET_FIRST: f64 = 2.0;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs git with `args` in `dir`; fails with its stderr.
fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"])
        .args(args)
        .output()
        .context("running git (is it installed?)")?;
    if !out.status.success() {
        bail!("git {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// The bytes under `path` (apparent sizes of its files).
fn size_of(path: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(path).with_context(|| format!("reading {}", path.display()))? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            size_of(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

/// Writes the project: `FILES` text files of about 1 KiB each, in folders of `PER_FOLDER`.
fn make_project(root: &Path) -> Result<()> {
    for i in 0..FILES {
        let folder = root.join(format!("src/m{:03}", i / PER_FOLDER));
        if i % PER_FOLDER == 0 {
            fs::create_dir_all(&folder)?;
        }
        let line = format!("pub fn f{i}() -> usize {{ {i} }} // some text so the file is about a kilobyte\n");
        fs::write(folder.join(format!("f{i:05}.rs")), line.repeat(1024 / line.len() + 1))?;
    }
    Ok(())
}

/// Changes one file of the project (a different one each `turn`).
fn change_one(root: &Path, turn: usize) -> Result<()> {
    let i = (turn * 7919) % FILES;
    let path = root.join(format!("src/m{:03}/f{i:05}.rs", i / PER_FOLDER));
    let mut text = fs::read_to_string(&path)?;
    text.push_str(&format!("// turn {turn}\n"));
    fs::write(path, text)?;
    Ok(())
}

/// A store with the covered bounds of config `[undo]`'s defaults.
fn store(dir: &Path) -> Result<(SnapshotStore, Limits)> {
    let store = SnapshotStore::open(dir)?;
    store.set_undo(Some(UndoBounds {
        max_files: 100_000,
        max_bytes: 2 << 30,
        max_file_bytes: 64 << 20,
        max_time: Duration::from_secs(30),
    }));
    let limits = store.undo_limits().context("undo limits")?;
    Ok((store, limits))
}

/// Takes a covered snapshot of `root` as a turn does (with the store's last one), keeps it and saves it under `id`.
fn turn_snapshot(store: &SnapshotStore, limits: &Limits, root: &Path, id: &str) -> Result<Arc<Snapshot>> {
    let t0 = Instant::now();
    let previous = store.last_of(root);
    let t1 = Instant::now();
    let snapshot = Snapshot::take(root, limits, previous.as_deref())?;
    let t2 = Instant::now();
    if snapshot.truncated.is_some() || !snapshot.not_covered.is_empty() || snapshot.files.len() != FILES {
        bail!(
            "the snapshot did not cover the project: {} files, truncated {:?}, {} not covered",
            snapshot.files.len(),
            snapshot.truncated,
            snapshot.not_covered.len()
        );
    }
    let snapshot = store.remember(snapshot);
    let t3 = Instant::now();
    store.save(id, &snapshot)?;
    let t4 = Instant::now();
    if std::env::var_os("EFR_BENCH_PHASES").is_some() {
        eprintln!(
            "{id}: last_of {:.1} ms, take {:.1} ms, remember {:.1} ms, save {:.1} ms",
            ms(t1 - t0),
            ms(t2 - t1),
            ms(t3 - t2),
            ms(t4 - t3)
        );
    }
    Ok(snapshot)
}

fn verdict(name: &str, ratio: f64, budget: f64) -> bool {
    let ok = ratio <= budget;
    println!(
        "{} {name}: {ratio:.2}× git (budget at most {budget}×)",
        if ok { "PASS" } else { "FAIL" }
    );
    ok
}

/// The measures a run makes: those named on the command line (`warm`, `first`, `dedup`), else all.
fn chosen() -> Vec<String> {
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| ["warm", "first", "dedup"].contains(&arg.as_str()))
        .collect();
    if named.is_empty() {
        vec!["warm".to_owned(), "first".to_owned(), "dedup".to_owned()]
    } else {
        named
    }
}

fn run(base: &Path) -> Result<bool> {
    let chosen = chosen();
    let root = base.join("project");
    fs::create_dir_all(&root)?;
    make_project(&root)?;
    git(&root, &["init", "-q"])?;
    // Past git's and the snapshot's racily-clean window (2 s), so unchanged files are trusted by their stat.
    std::thread::sleep(Duration::from_millis(2100));
    println!(
        "project: {FILES} files, {:.1} MiB",
        size_of(&root.join("src"))? as f64 / f64::from(1 << 20)
    );
    let mut ok = true;
    // warm: measured first: on ext4, files created just after the bench deleted the first measure's stores (100,000
    // files) cost many times more (the inode allocator skips recently deleted inodes), which would be measured
    // instead of the snapshot.
    if chosen.iter().any(|name| name == "warm") {
        ok &= warm(base, &root)?;
    }
    if chosen.iter().any(|name| name == "first") {
        ok &= first(base, &root)?;
    }
    if chosen.iter().any(|name| name == "dedup") {
        dedup(base, &root)?;
    }
    Ok(ok)
}

/// warm: one file changed, the previous snapshot and a warm index.
fn warm(base: &Path, root: &Path) -> Result<bool> {
    let (store_warm, limits) = store(&base.join("warm-store"))?;
    turn_snapshot(&store_warm, &limits, root, "warm-0")?;
    git(root, &["add", "-A"])?;
    git(root, &["write-tree"])?;
    let mut pairs = Pairs::new();
    for run in 1..=RUNS {
        change_one(root, run)?;
        let snapshot = || -> Result<f64> {
            let started = Instant::now();
            turn_snapshot(&store_warm, &limits, root, &format!("warm-{run}"))?;
            Ok(ms(started.elapsed()))
        };
        let git_tree = || -> Result<f64> {
            let started = Instant::now();
            git(root, &["add", "-A"])?;
            git(root, &["write-tree"])?;
            Ok(ms(started.elapsed()))
        };
        // Which side runs first alternates, so that neither always finds the other's pages in the cache.
        let (a, b) = if run % 2 == 1 {
            let a = snapshot()?;
            (a, git_tree()?)
        } else {
            let b = git_tree()?;
            (snapshot()?, b)
        };
        pairs.push(a, b);
    }
    fs::remove_dir_all(store_warm.dir())?;
    let ratio = pairs.ratios();
    println!(
        "warm snapshot after a one-file change: {:.1} ms, git add -A && git write-tree: {:.1} ms (medians of {RUNS} \
         pairs); ratio {ratio}; load average {}",
        pairs.a().median,
        pairs.b().median,
        load_average()
    );
    Ok(verdict("warm snapshot", ratio.median, BUDGET_WARM))
}

/// first: an empty store against `git add -A` into a new repository (outside the tree).
fn first(base: &Path, root: &Path) -> Result<bool> {
    let mut pairs = Pairs::new();
    for run in 0..RUNS {
        let snapshot = || -> Result<f64> {
            let (store, limits) = store(&base.join(format!("first-store-{run}")))?;
            let started = Instant::now();
            turn_snapshot(&store, &limits, root, "first")?;
            let took = ms(started.elapsed());
            fs::remove_dir_all(store.dir())?;
            Ok(took)
        };
        let git_add = || -> Result<f64> {
            let git_dir = base.join(format!("first-git-{run}"));
            let git_dir_arg = format!("--git-dir={}", git_dir.display());
            let work_tree_arg = format!("--work-tree={}", root.display());
            git(base, &["init", "-q", "--bare", &git_dir.display().to_string()])?;
            let started = Instant::now();
            git(base, &[&git_dir_arg, &work_tree_arg, "add", "-A"])?;
            let took = ms(started.elapsed());
            fs::remove_dir_all(&git_dir)?;
            Ok(took)
        };
        let (a, b) = if run % 2 == 0 {
            let a = snapshot()?;
            (a, git_add()?)
        } else {
            let b = git_add()?;
            (snapshot()?, b)
        };
        pairs.push(a, b);
    }
    let ratio = pairs.ratios();
    println!(
        "first snapshot: {:.1} ms, git add -A from scratch: {:.1} ms (medians of {RUNS} pairs); ratio {ratio}; \
         load average {}",
        pairs.a().median,
        pairs.b().median,
        load_average()
    );
    Ok(verdict("first snapshot", ratio.median, BUDGET_FIRST))
}

/// dedup: 100 turns, each one file changed, a snapshot per turn (no budget: the store's growth is printed).
fn dedup(base: &Path, root: &Path) -> Result<()> {
    let (store_dedup, limits) = store(&base.join("dedup-store"))?;
    turn_snapshot(&store_dedup, &limits, root, "turn-000-pre")?;
    let after_first = size_of(store_dedup.dir())?;
    for turn in 1..=TURNS {
        change_one(root, RUNS + turn)?;
        turn_snapshot(&store_dedup, &limits, root, &format!("turn-{turn:03}-post"))?;
    }
    let after_all = size_of(store_dedup.dir())?;
    let blobs = size_of(&store_dedup.blobs())?;
    fs::remove_dir_all(store_dedup.dir())?;
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    println!(
        "store: {:.1} MiB after the first snapshot, {:.1} MiB after {TURNS} more one-file turns ({:.1} KiB a turn; \
         blobs {:.1} MiB, manifests the rest)",
        mib(after_first),
        mib(after_all),
        (after_all - after_first) as f64 / 1024.0 / TURNS as f64,
        mib(blobs),
    );
    Ok(())
}

fn main() -> ExitCode {
    let base: PathBuf = std::env::var_os("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let dir = match tempfile::Builder::new().prefix("efr-undo-bench").tempdir_in(&base) {
        Ok(dir) => dir,
        Err(error) => {
            eprintln!("FAIL: cannot make a folder in {}: {error}", base.display());
            return ExitCode::FAILURE;
        }
    };
    match run(dir.path()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("FAIL: {error:#}");
            ExitCode::FAILURE
        }
    }
}
