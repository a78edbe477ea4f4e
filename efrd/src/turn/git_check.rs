//! The check behind cautious's read-only git commands: what the repositories of a line's git commands can make git
//! run. The rules are in [`crate::policy::git_config`]; this module asks git itself, so that repository discovery,
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
//! 4. `git rev-parse --show-toplevel`, then `git -c core.fsmonitor=false ls-files --stage -z --full-name -- :/`:
//!    the gitlinks of the index, each populated one checked from 1 as a repository of its own.
//!
//! None of these runs a program from the repository (`ls-files` could run an fsmonitor, so it is switched off on
//! its command line). At most [`MAX_REPOSITORIES`] repositories and [`MAX_DEPTH`] levels of submodules are checked,
//! each git process gets [`GIT_TIMEOUT`]; past any of them the place is [`GitTrust::Unchecked`] and cautious asks.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::policy::git_config::{self, GitPlace, GitTrust};

/// The most repositories (a place's own and its submodules) checked for one place.
pub const MAX_REPOSITORIES: usize = 32;
/// The deepest submodule checked (1: the place's repository's own submodules).
pub const MAX_DEPTH: usize = 3;
/// How long one git process of the check may take.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(5);

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
    let args = [
        "-c",
        "core.fsmonitor=false",
        "ls-files",
        "--stage",
        "-z",
        "--full-name",
        "--",
        ":/",
    ];
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
    let mut args = vec!["rev-parse", "--path-format=absolute", "--git-common-dir"];
    let hooks: Vec<String> = READ_HOOKS.iter().map(|hook| format!("hooks/{hook}")).collect();
    for hook in &hooks {
        args.extend(["--git-path", hook.as_str()]);
    }
    let paths = String::from_utf8_lossy(&git(dir, location, &args).await?).into_owned();
    let mut lines = paths.lines();
    let common = lines.next().map(PathBuf::from);
    let found: Vec<&str> = lines.collect();
    let (Some(common), true) = (common, found.len() == READ_HOOKS.len()) else {
        return Err(GitTrust::Unchecked("git rev-parse said too little".to_owned()));
    };
    for (path, hook) in found.iter().zip(READ_HOOKS) {
        if std::fs::symlink_metadata(path).is_ok() {
            let repository = repository_of(dir, location).await;
            let what = format!("hook `{hook}`");
            return Err(GitTrust::Runs { what, repository });
        }
    }
    Ok(common)
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

/// Runs `git <location> <args>` in `dir`, with no input, no prompt and English messages. `Err` when it did not run
/// or ran too long.
async fn run_git(dir: &Path, location: &[String], args: &[&str]) -> Result<Ran, GitTrust> {
    let mut command = Command::new("git");
    command
        .args(location)
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
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
mod tests {
    use std::process::Command as StdCommand;

    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let status = StdCommand::new("git")
            .args(["-c", "user.name=T", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(dir)
            .status()
            .expect("git must be installed (apt-get install git)");
        assert!(status.success(), "git {args:?}");
    }

    fn place(dir: &Path, location: &[&str]) -> GitPlace {
        GitPlace {
            dir: Some(dir.to_path_buf()),
            location: location.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    async fn trust(dir: &Path, location: &[&str]) -> GitTrust {
        let checked = inspect(&[place(dir, location)]).await;
        assert_eq!(checked.len(), 1);
        checked.into_iter().next().map(|(_, trust)| trust).unwrap()
    }

    #[tokio::test]
    async fn a_fresh_repository_and_a_folder_outside_any_are_plain() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        git(&repo, &["remote", "add", "origin", "https://example.com/r.git"]);
        git(&repo, &["commit", "--allow-empty", "-qm", "one"]);
        std::fs::create_dir(repo.join("src")).unwrap();
        assert_eq!(trust(&repo, &[]).await, GitTrust::Plain);
        assert_eq!(trust(&repo.join("src"), &[]).await, GitTrust::Plain);
        assert_eq!(trust(dir.path(), &["-C", "repo"]).await, GitTrust::Plain);
        // A folder outside any repository: nothing of a repository's can run.
        let plain = tempfile::tempdir().unwrap();
        assert_eq!(trust(plain.path(), &[]).await, GitTrust::Plain);
        // A place efr cannot place is left to the policy, which asks.
        let unplaced = GitPlace {
            dir: None,
            location: Vec::new(),
        };
        assert!(inspect(&[unplaced]).await.is_empty());
    }

    #[tokio::test]
    async fn config_that_runs_programs_is_found_with_the_repository_it_is_in() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        git(&repo, &["config", "core.fsmonitor", "touch pwned; false"]);
        let GitTrust::Runs { what, repository } = trust(&repo, &[]).await else {
            panic!("fsmonitor not found");
        };
        assert_eq!(what, "config key `core.fsmonitor`");
        assert_eq!(repository, repo.canonicalize().unwrap());
        // Through an included file, and through `--git-dir`.
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        git(&other, &["init", "-q"]);
        std::fs::write(dir.path().join("extra"), "[diff \"x\"]\n\ttextconv = evil\n").unwrap();
        git(&other, &["config", "include.path", "../../extra"]);
        let found = trust(dir.path(), &["--git-dir=other/.git"]).await;
        assert!(
            matches!(&found, GitTrust::Runs { what, .. } if what == "config key `include.path`"),
            "{found:?}"
        );
        assert!(!repo.join("pwned").exists() && !dir.path().join("pwned").exists());
    }

    #[tokio::test]
    async fn a_post_index_change_hook_and_a_submodules_config_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        std::fs::write(repo.join(".git/hooks/post-index-change"), "#!/bin/sh\ntouch pwned\n").unwrap();
        let found = trust(&repo, &[]).await;
        assert!(
            matches!(&found, GitTrust::Runs { what, .. } if what == "hook `post-index-change`"),
            "{found:?}"
        );
        std::fs::remove_file(repo.join(".git/hooks/post-index-change")).unwrap();
        assert_eq!(trust(&repo, &[]).await, GitTrust::Plain);
        // Also where `core.hooksPath` puts hooks (as husky does, in the worktree).
        git(&repo, &["config", "core.hooksPath", ".husky/_"]);
        assert_eq!(trust(&repo, &[]).await, GitTrust::Plain);
        std::fs::create_dir_all(repo.join(".husky/_")).unwrap();
        std::fs::write(repo.join(".husky/_/post-index-change"), "#!/bin/sh\ntouch pwned\n").unwrap();
        let found = trust(&repo, &[]).await;
        assert!(
            matches!(&found, GitTrust::Runs { what, .. } if what == "hook `post-index-change`"),
            "{found:?}"
        );
        std::fs::remove_dir_all(repo.join(".husky")).unwrap();

        // A gitlink to a repository inside, as a contained call could make one: `git status` here would enter it
        // and run its fsmonitor.
        let lib = repo.join("lib");
        std::fs::create_dir(&lib).unwrap();
        git(&lib, &["init", "-q"]);
        git(&lib, &["commit", "--allow-empty", "-qm", "x"]);
        let head = StdCommand::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&lib)
            .output()
            .unwrap();
        let head = String::from_utf8(head.stdout).unwrap();
        let cacheinfo = format!("160000,{},lib", head.trim());
        git(&repo, &["update-index", "--add", "--cacheinfo", &cacheinfo]);
        assert_eq!(trust(&repo, &[]).await, GitTrust::Plain, "a plain submodule is plain");
        git(&lib, &["config", "core.fsmonitor", "touch pwned; false"]);
        let found = trust(&repo, &[]).await;
        let GitTrust::Runs { what, repository } = found else {
            panic!("the submodule's fsmonitor not found: {found:?}");
        };
        assert_eq!(what, "config key `core.fsmonitor`");
        assert_eq!(repository, lib.canonicalize().unwrap());
    }

    #[tokio::test]
    async fn a_folder_git_cannot_enter_is_unchecked() {
        let dir = tempfile::tempdir().unwrap();
        let found = trust(dir.path(), &["-C", "missing"]).await;
        assert!(
            matches!(&found, GitTrust::Unchecked(why) if why.contains("cannot change to")),
            "{found:?}"
        );
    }
}

#[cfg(test)]
mod where_git_looks {
    //! The check looks where git itself looks: `core.worktree`, `--work-tree`, `--git-dir`, and submodules' git
    //! folders that are not populated; and it runs nothing of a repository's while it looks.

    use std::process::Command as StdCommand;

    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = StdCommand::new("git")
            .args(["-c", "user.name=T", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git must be installed (apt-get install git)");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// A repository at `dir` with one commit, and with an fsmonitor that leaves `marker` when `evil`.
    fn repo(dir: &Path, evil: Option<&Path>) {
        std::fs::create_dir_all(dir).unwrap();
        git(dir, &["init", "-q"]);
        git(dir, &["commit", "--allow-empty", "-qm", "x"]);
        if let Some(marker) = evil {
            git(
                dir,
                &[
                    "config",
                    "core.fsmonitor",
                    &format!("touch {}; false", marker.display()),
                ],
            );
        }
    }

    /// Links `sub` (a repository inside `parent`'s worktree `top`) into `parent`'s index as a submodule.
    fn link(parent: &Path, top: &Path, sub: &str) {
        let head = git(&top.join(sub), &["rev-parse", "HEAD"]);
        git(
            parent,
            &["update-index", "--add", "--cacheinfo", &format!("160000,{head},{sub}")],
        );
    }

    async fn trust(dir: &Path, location: &[&str]) -> GitTrust {
        let place = GitPlace {
            dir: Some(dir.to_path_buf()),
            location: location.iter().map(|s| (*s).to_owned()).collect(),
        };
        inspect(&[place])
            .await
            .into_iter()
            .next()
            .map(|(_, trust)| trust)
            .unwrap()
    }

    fn runs(trust: &GitTrust) -> bool {
        matches!(trust, GitTrust::Runs { .. })
    }

    #[tokio::test]
    async fn a_worktree_elsewhere_is_entered_as_git_enters_it() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        // N's worktree is W (core.worktree), and N's index links W/sub, whose fsmonitor would run.
        let (n, w) = (dir.path().join("N"), dir.path().join("W"));
        repo(&n, None);
        repo(&w.join("sub"), Some(&marker));
        git(&n, &["config", "core.worktree", w.to_str().unwrap()]);
        link(&n, &w, "sub");
        assert!(runs(&trust(&n, &[]).await));
        assert!(runs(&trust(dir.path(), &["-C", "N"]).await));
        // `--work-tree` on the line: the index is the project's, the worktree W.
        let p = dir.path().join("P");
        repo(&p, None);
        std::fs::create_dir_all(p.join("W")).unwrap();
        repo(&p.join("W/sub"), Some(&marker));
        link(&p, &p.join("W"), "sub");
        assert!(runs(&trust(&p, &["--work-tree=W"]).await));
        assert!(!marker.exists(), "the check ran a program");
    }

    #[tokio::test]
    async fn another_git_folder_is_read_with_the_lines_options_and_the_check_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let (p, e) = (dir.path().join("P"), dir.path().join("E"));
        repo(&p, None);
        repo(&e, Some(&marker));
        // `cd E && git --git-dir=../P/.git --work-tree=. status`: P's config, E as worktree; E's own fsmonitor is
        // not git's concern there, and the check must not run it either.
        assert_eq!(
            trust(&e, &["--git-dir=../P/.git", "--work-tree=."]).await,
            GitTrust::Plain
        );
        assert!(!marker.exists(), "the check ran E's fsmonitor");
        // `--git-dir=alt/.git --work-tree=.` where alt's index links an evil repository.
        let alt = p.join("alt");
        repo(&alt, None);
        repo(&p.join("sub"), Some(&marker));
        link(&alt, &p, "sub");
        assert!(runs(&trust(&p, &["--git-dir=alt/.git", "--work-tree=."]).await));
        assert!(!marker.exists(), "the check ran a program");
    }

    #[tokio::test]
    async fn a_submodules_git_folder_in_modules_is_judged_populated_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("P");
        repo(&p, None);
        let module = p.join(".git/modules/lib/inner");
        std::fs::create_dir_all(&module).unwrap();
        git(&module, &["init", "-q", "--bare"]);
        assert_eq!(trust(&p, &[]).await, GitTrust::Plain);
        git(&module, &["config", "diff.external", "touch ran; :"]);
        let found = trust(&p, &[]).await;
        let GitTrust::Runs { what, .. } = &found else {
            panic!("{found:?}");
        };
        assert_eq!(what, "config key `diff.external`");
    }

    #[tokio::test]
    async fn every_hook_a_read_can_start_is_looked_for() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("P");
        repo(&p, None);
        std::fs::write(p.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
        assert_eq!(trust(&p, &[]).await, GitTrust::Plain, "a hook only a write runs");
        for hook in READ_HOOKS {
            let path = p.join(".git/hooks").join(hook);
            std::fs::write(&path, "#!/bin/sh\n").unwrap();
            let found = trust(&p, &[]).await;
            assert!(
                matches!(&found, GitTrust::Runs { what, .. } if what == &format!("hook `{hook}`")),
                "{hook}: {found:?}"
            );
            std::fs::remove_file(path).unwrap();
        }
    }
}
