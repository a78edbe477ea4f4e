//! The check behind cautious's read-only git commands: what the repositories of a line's git commands can make git
//! run. The rules are in [`crate::policy::git_config`]; this module asks git itself, so that repository discovery,
//! `.git` files, `commondir`, includes and worktree config are read exactly as the git that runs the line reads them.
//!
//! Per repository, at most four git processes, none of which runs a program from config:
//! `git <location> config --list --show-scope -z` (the keys, judged first: nothing below runs before the config is
//! found plain), `git <location> rev-parse --path-format=absolute --git-path hooks/post-index-change
//! --is-inside-work-tree`, and in a worktree `rev-parse --show-toplevel` and `ls-files --stage -z` for the
//! submodules, each of which is checked the same way when it is populated. At most [`MAX_REPOSITORIES`] repositories
//! and [`MAX_DEPTH`] levels of submodules are checked, each git process gets [`GIT_TIMEOUT`]; past any of them the
//! place is [`GitTrust::Unchecked`] and cautious asks.

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

/// One repository (found from `dir` and `location` as git would find it) and its populated submodules.
async fn check(dir: &Path, location: &[String], depth: usize, budget: &mut usize) -> GitTrust {
    match check_one(dir, location, depth, budget).await {
        Ok(trust) | Err(trust) => trust,
    }
}

/// [`check`], with an early verdict as `Err`.
async fn check_one(dir: &Path, location: &[String], depth: usize, budget: &mut usize) -> Result<GitTrust, GitTrust> {
    if *budget == 0 {
        let why = format!("more than {MAX_REPOSITORIES} repositories and submodules");
        return Err(GitTrust::Unchecked(why));
    }
    *budget -= 1;
    let listing = git(dir, location, &["config", "--list", "--show-scope", "-z"]).await?;
    if let Some(key) = git_config::first_unplain_key(&listing).map_err(GitTrust::Unchecked)? {
        let repository = repository_of(dir, location).await;
        let what = format!("config key `{key}`");
        return Ok(GitTrust::Runs { what, repository });
    }
    let args = [
        "rev-parse",
        "--path-format=absolute",
        "--git-path",
        "hooks/post-index-change",
        "--is-inside-work-tree",
    ];
    let paths = String::from_utf8_lossy(&git(dir, location, &args).await?).into_owned();
    let mut lines = paths.lines();
    let (Some(hook), Some(inside)) = (lines.next(), lines.next()) else {
        return Err(GitTrust::Unchecked("git rev-parse said too little".to_owned()));
    };
    if std::fs::symlink_metadata(hook).is_ok() {
        let repository = repository_of(dir, location).await;
        let what = "hook `post-index-change`".to_owned();
        return Ok(GitTrust::Runs { what, repository });
    }
    if inside != "true" {
        return Ok(GitTrust::Plain);
    }
    let top = git(dir, location, &["rev-parse", "--show-toplevel"]).await?;
    let top = PathBuf::from(String::from_utf8_lossy(&top).trim_end_matches('\n'));
    let index = git(&top, &[], &["ls-files", "--stage", "-z"]).await?;
    for link in git_config::gitlinks(&index) {
        let sub = top.join(&link);
        // A submodule that is not populated has no repository of its own for git to enter.
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

/// The folder a question names for the repository at `dir`: its top, or its git folder when it has no worktree.
async fn repository_of(dir: &Path, location: &[String]) -> PathBuf {
    for args in [["rev-parse", "--show-toplevel"], ["rev-parse", "--absolute-git-dir"]] {
        if let Ok(out) = git(dir, location, &args).await {
            return PathBuf::from(String::from_utf8_lossy(&out).trim_end_matches('\n'));
        }
    }
    dir.to_path_buf()
}

/// Runs `git <location> <args>` in `dir`, with no input, no prompt and English messages, and gives its standard
/// output. `Err` is the place's verdict when git did not answer: [`GitTrust::Plain`] when it found no repository
/// (nothing of a repository's can run), [`GitTrust::Unchecked`] for any other failure.
async fn git(dir: &Path, location: &[String], args: &[&str]) -> Result<Vec<u8>, GitTrust> {
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
        return Ok(output.stdout);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("not a git repository") {
        return Err(GitTrust::Plain);
    }
    let first: String = stderr
        .lines()
        .next()
        .unwrap_or("no message")
        .trim()
        .chars()
        .take(160)
        .collect();
    Err(GitTrust::Unchecked(format!("git failed: {first}")))
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
