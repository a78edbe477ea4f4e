//! The check behind cautious's read-only git commands: what the repositories of a line's git commands can make git
//! run. The rules are in [`efr_policy::git_config`]; this module asks git itself, so that repository discovery,
//! `.git` files, `commondir`, `core.worktree`, includes and worktree config are read exactly as the git that runs the
//! line reads them.
//!
//! Per repository, with the place's own location options (`-C`, `--git-dir`, `--work-tree`) every time:
//! 1. `git config --list --show-scope -z`: the keys, judged first; nothing below runs before they are found plain;
//! 2. `git rev-parse --path-format=absolute --git-common-dir --git-path hooks/<hook>…`: the hooks a read can run
//!    (`post-index-change` on an index refresh, `pre-auto-gc`, `reference-transaction`), where `core.hooksPath`
//!    puts them;
//! 3. the git folders under `<common dir>/modules` (submodules' repositories, populated or not), each judged by 1
//!    and 2;
//! 4. `git rev-parse --show-toplevel`, then `git ls-files --stage -z --full-name -- :/`: the gitlinks of the index,
//!    each populated one checked from 1 as a repository of its own.
//!
//! None of these runs a program from the repository, and each runs as [`efr_git::command`] makes it, with what
//! could start one (an fsmonitor for `ls-files`, say) switched off all the same. At most [`MAX_REPOSITORIES`]
//! repositories and [`MAX_DEPTH`] levels of submodules are checked, each git process gets [`GIT_TIMEOUT`]; past
//! any of them the place is [`GitTrust::Unchecked`] and cautious asks.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use efr_policy::git_config::{self, GitPlace, GitTrust};

/// The most repositories (a place's own and its submodules) checked for one place.
pub const MAX_REPOSITORIES: usize = 32;
/// The deepest submodule checked (1: the place's repository's own submodules).
pub const MAX_DEPTH: usize = 3;
/// How long one git process of the check may take.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(5);

/// [`inspect`], unless a sandbox of efrd's still runs (a contained command left running, in any conversation): it
/// could change a repository between the check and the run, so every place is then
/// [`GitTrust::Unchecked`] and cautious asks. Nothing is checked for a line without git.
pub async fn inspect_unless_sandboxed(places: &[GitPlace]) -> Vec<(GitPlace, GitTrust)> {
    if places.is_empty() {
        return Vec::new();
    }
    if crate::sandbox::live::sandbox_runs_below(std::process::id()) {
        let why = "a command in efr's sandbox still runs and could change the repository";
        return places
            .iter()
            .map(|place| (place.clone(), GitTrust::Unchecked(why.to_owned())))
            .collect();
    }
    inspect(places).await
}

/// Checks every place; a place without a directory is left out (the policy asks about it anyway).
pub async fn inspect(places: &[GitPlace]) -> Vec<(GitPlace, GitTrust)> {
    let mut out = Vec::new();
    for place in places {
        let Some(dir) = &place.dir else { continue };
        let mut budget = MAX_REPOSITORIES;
        let trust = check(dir, &place.location, 0, &mut budget).await;
        out.push((place.clone(), trust));
    }
    out
}

/// One repository (found from `dir` and `location` as git would find it) and its submodules.
async fn check(dir: &Path, location: &[String], depth: usize, budget: &mut usize) -> GitTrust {
    match check_one(dir, location, depth, budget).await {
        Ok(trust) | Err(trust) => trust,
    }
}

/// The hooks that a command git runs without a question can start.
const READ_HOOKS: &[&str] = &["post-index-change", "pre-auto-gc", "reference-transaction"];

/// [`check`], with an early verdict as `Err`.
async fn check_one(dir: &Path, location: &[String], depth: usize, budget: &mut usize) -> Result<GitTrust, GitTrust> {
    let common = judge_git_dir(dir, location, budget).await?;
    if let Some(trust) = judge_modules(&common, budget).await? {
        return Ok(trust);
    }
    let top = match run_git(dir, location, &["rev-parse", "--show-toplevel"]).await? {
        Ran::Out(top) => PathBuf::from(String::from_utf8_lossy(&top).trim_end_matches('\n')),
        // A bare repository, or a git folder without a worktree: no index of files to enter.
        Ran::Failed(stderr) if stderr.contains("must be run in a work tree") => return Ok(GitTrust::Plain),
        Ran::Failed(stderr) => return Err(failed(&stderr)),
    };
    let args = ["ls-files", "--stage", "-z", "--full-name", "--", ":/"];
    let index = git(dir, location, &args).await?;
    for link in git_config::gitlinks(&index) {
        let sub = top.join(&link);
        // A submodule that is not populated has no worktree for git to enter; its git folder in `modules` was
        // judged above.
        if std::fs::symlink_metadata(sub.join(".git")).is_err() {
            continue;
        }
        if depth + 1 > MAX_DEPTH {
            let why = format!("submodules nested more than {MAX_DEPTH} deep");
            return Err(GitTrust::Unchecked(why));
        }
        let trust = Box::pin(check(&sub, &[], depth + 1, budget)).await;
        if trust != GitTrust::Plain {
            return Ok(trust);
        }
    }
    Ok(GitTrust::Plain)
}

/// Steps 1 and 2 for the repository at `dir` and `location`: `Err` with the verdict when it is not plain (or there
/// is none), else its common git folder.
async fn judge_git_dir(dir: &Path, location: &[String], budget: &mut usize) -> Result<PathBuf, GitTrust> {
    if *budget == 0 {
        let why = format!("more than {MAX_REPOSITORIES} repositories and submodules");
        return Err(GitTrust::Unchecked(why));
    }
    *budget -= 1;
    let listing = git(dir, location, &["config", "--list", "--show-scope", "-z"]).await?;
    if let Some(key) = git_config::first_unplain_key(&listing).map_err(GitTrust::Unchecked)? {
        let repository = repository_of(dir, location).await;
        let what = format!("config key `{key}`");
        return Err(GitTrust::Runs { what, repository });
    }
    let mut args = vec![
        "rev-parse",
        "--path-format=absolute",
        "--absolute-git-dir",
        "--git-common-dir",
    ];
    let hooks: Vec<String> = READ_HOOKS.iter().map(|hook| format!("hooks/{hook}")).collect();
    for hook in &hooks {
        args.extend(["--git-path", hook.as_str()]);
    }
    let paths = String::from_utf8_lossy(&git(dir, location, &args).await?).into_owned();
    let mut lines = paths.lines();
    let (git_dir, common) = (lines.next().map(PathBuf::from), lines.next().map(PathBuf::from));
    let found: Vec<&str> = lines.collect();
    let (Some(git_dir), Some(common), true) = (git_dir, common, found.len() == READ_HOOKS.len()) else {
        return Err(GitTrust::Unchecked("git rev-parse said too little".to_owned()));
    };
    // A config that is a link to `/dev/stdin` (or a fifo) reads differently for the check (no input) and for the
    // run (`git status < evil.cfg`).
    for config in [common.join("config"), git_dir.join("config.worktree")] {
        if std::fs::symlink_metadata(&config).is_ok() && !std::fs::metadata(&config).is_ok_and(|m| m.is_file()) {
            let why = format!("{} is not a regular file", config.display());
            return Err(GitTrust::Unchecked(why));
        }
    }
    for (path, hook) in found.iter().zip(READ_HOOKS) {
        if std::fs::symlink_metadata(path).is_ok() {
            let repository = repository_of(dir, location).await;
            let what = format!("hook `{hook}`");
            return Err(GitTrust::Runs { what, repository });
        }
    }
    Ok(common)
}

/// The hooks that `git <subcommand>` may run on this machine, besides those of a read (githooks(5)); none for a
/// subcommand that runs no hook of its own.
#[must_use]
pub fn hooks_of(subcommand: &str) -> &'static [&'static str] {
    const COMMIT: &[&str] = &[
        "pre-commit",
        "prepare-commit-msg",
        "commit-msg",
        "post-commit",
        "post-rewrite",
    ];
    match subcommand {
        "push" => &["pre-push", "push-to-checkout"],
        "commit" => COMMIT,
        "am" => &[
            "applypatch-msg",
            "pre-applypatch",
            "post-applypatch",
            "post-rewrite",
            "post-checkout",
        ],
        "rebase" => &[
            "pre-rebase",
            "post-rewrite",
            "post-checkout",
            "prepare-commit-msg",
            "commit-msg",
            "post-commit",
        ],
        "pull" | "merge" => &[
            "pre-merge-commit",
            "post-merge",
            "prepare-commit-msg",
            "commit-msg",
            "pre-rebase",
            "post-rewrite",
            "post-checkout",
        ],
        "cherry-pick" | "revert" => COMMIT,
        "checkout" | "switch" | "clone" => &["post-checkout"],
        _ => &[],
    }
}

/// The hooks of `hooks` (and those a read runs) that exist in the repository of `place`, where git looks for them
/// (`core.hooksPath` followed, as `rev-parse --git-path` does): `(common git folder, hook, file)` each.
///
/// # Errors
/// Why the repository could not be asked (the exit then counts as not checked).
pub async fn hook_files(place: &GitPlace, hooks: &[&str]) -> Result<Vec<(PathBuf, String, PathBuf)>, String> {
    let Some(dir) = &place.dir else {
        return Err("the line's git command has no place efr can find".to_owned());
    };
    let mut all: Vec<&str> = READ_HOOKS.to_vec();
    all.extend(hooks.iter().filter(|hook| !READ_HOOKS.contains(hook)));
    let paths: Vec<String> = all.iter().map(|hook| format!("hooks/{hook}")).collect();
    let mut args = vec!["rev-parse", "--path-format=absolute", "--git-common-dir"];
    for path in &paths {
        args.extend(["--git-path", path.as_str()]);
    }
    let out = match git(dir, &place.location, &args).await {
        Ok(out) => out,
        Err(GitTrust::Plain) => return Ok(Vec::new()),
        Err(GitTrust::Unchecked(why) | GitTrust::Runs { what: why, .. }) => return Err(why),
    };
    let text = String::from_utf8_lossy(&out).into_owned();
    let mut lines = text.lines();
    let common = PathBuf::from(lines.next().unwrap_or_default());
    let found: Vec<&str> = lines.collect();
    if found.len() != all.len() {
        return Err("git rev-parse said too little".to_owned());
    }
    Ok(found
        .iter()
        .zip(&all)
        .filter(|(path, _)| std::fs::symlink_metadata(path).is_ok())
        .map(|(path, hook)| (common.clone(), format!("hooks/{hook}"), PathBuf::from(path)))
        .collect())
}

/// Step 3: the git folders of submodules under `common/modules` (a submodule's name may hold `/`, and a submodule
/// has its own `modules`), each judged by steps 1 and 2. `Ok(Some)` for the first that is not plain.
async fn judge_modules(common: &Path, budget: &mut usize) -> Result<Option<GitTrust>, GitTrust> {
    let mut folders = vec![(common.join("modules"), 0)];
    while let Some((folder, depth)) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if depth >= 2 * MAX_DEPTH {
                let why = format!("submodules nested more than {MAX_DEPTH} deep");
                return Err(GitTrust::Unchecked(why));
            }
            if path.join("HEAD").exists() {
                let location = [format!("--git-dir={}", path.display())];
                match judge_git_dir(&path, &location, budget).await {
                    Ok(_) => folders.push((path.join("modules"), depth + 1)),
                    Err(GitTrust::Plain) => {}
                    Err(trust) => return Ok(Some(trust)),
                }
            } else {
                folders.push((path, depth + 1));
            }
        }
    }
    Ok(None)
}

/// The folder a question names for the repository at `dir`: its top, or its git folder when it has no worktree.
async fn repository_of(dir: &Path, location: &[String]) -> PathBuf {
    for args in [["rev-parse", "--show-toplevel"], ["rev-parse", "--absolute-git-dir"]] {
        if let Ok(out) = git(dir, location, &args).await {
            return PathBuf::from(String::from_utf8_lossy(&out).trim_end_matches('\n'));
        }
    }
    dir.to_path_buf()
}

/// What a git process of the check did.
enum Ran {
    /// It succeeded: its standard output.
    Out(Vec<u8>),
    /// It failed: its standard error.
    Failed(String),
}

/// Runs `git <location> <args>` in `dir` as efrd runs git ([`efr_git::command`]: nothing of the repository's
/// starts), with no input and English messages. `Err` when it did not run or ran too long.
async fn run_git(dir: &Path, location: &[String], args: &[&str]) -> Result<Ran, GitTrust> {
    // Where the repository's hooks are must be asked without efrd's own `core.hooksPath`.
    let mut command = if args.contains(&"--git-path") {
        efr_git::command_for_hook_paths()
    } else {
        efr_git::tokio_command()
    };
    command
        .args(location)
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = match tokio::time::timeout(GIT_TIMEOUT, command.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(error)) => return Err(GitTrust::Unchecked(format!("git did not start: {error}"))),
        Err(_) => {
            let why = format!("git took more than {} s", GIT_TIMEOUT.as_secs());
            return Err(GitTrust::Unchecked(why));
        }
    };
    if output.status.success() {
        Ok(Ran::Out(output.stdout))
    } else {
        Ok(Ran::Failed(String::from_utf8_lossy(&output.stderr).into_owned()))
    }
}

/// [`run_git`], for a command that must succeed: its standard output, or the place's verdict as `Err`:
/// [`GitTrust::Plain`] when git found no repository (nothing of a repository's can run), [`GitTrust::Unchecked`]
/// for any other failure.
async fn git(dir: &Path, location: &[String], args: &[&str]) -> Result<Vec<u8>, GitTrust> {
    match run_git(dir, location, args).await? {
        Ran::Out(out) => Ok(out),
        Ran::Failed(stderr) if stderr.contains("not a git repository") => Err(GitTrust::Plain),
        Ran::Failed(stderr) => Err(failed(&stderr)),
    }
}

/// The verdict for a git command that failed: its first line of error.
fn failed(stderr: &str) -> GitTrust {
    let first: String = stderr
        .lines()
        .next()
        .unwrap_or("no message")
        .trim()
        .chars()
        .take(160)
        .collect();
    GitTrust::Unchecked(format!("git failed: {first}"))
}

#[cfg(test)]
#[path = "git_check_tests.rs"]
mod tests;
