//! The check against real repositories made with git: what it finds, where git looks (`core.worktree`,
//! `--work-tree`, `--git-dir`, submodules' git folders that are not populated), and that it runs nothing of a
//! repository's while it looks.

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
    self::repo(&lib, None);
    link(&repo, &repo, "lib");
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

#[tokio::test]
async fn a_config_that_is_not_a_regular_file_is_unchecked() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("P");
    repo(&p, None);
    let config = p.join(".git/config");
    let kept = std::fs::read(&config).unwrap();
    std::fs::remove_file(&config).unwrap();
    std::os::unix::fs::symlink("/dev/stdin", &config).unwrap();
    let found = trust(&p, &[]).await;
    assert!(
        matches!(&found, GitTrust::Unchecked(why) if why.contains("not a regular file")),
        "{found:?}"
    );
    std::fs::remove_file(&config).unwrap();
    std::fs::write(&config, kept).unwrap();
    assert_eq!(trust(&p, &[]).await, GitTrust::Plain);
}

#[tokio::test]
async fn the_check_starts_none_of_the_programs_a_repository_names() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let program = dir.path().join("evil");
    std::fs::write(
        &program,
        format!("#!/bin/sh\necho ran >> '{}'\ncat\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&program, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let program = program.display().to_string();
    let keys = [
        "core.fsmonitor",
        "diff.evil.textconv",
        "diff.external",
        "filter.evil.clean",
        "core.pager",
        "core.sshCommand",
        "gpg.program",
    ];
    for (n, key) in keys.iter().enumerate() {
        let p = dir.path().join(format!("P{n}"));
        repo(&p, None);
        std::fs::write(p.join(".gitattributes"), "* diff=evil filter=evil\n").unwrap();
        std::fs::write(p.join("file"), "x\n").unwrap();
        git(&p, &["add", "file"]);
        std::fs::write(p.join("file"), "y\n").unwrap();
        git(&p, &["config", key, &program]);
        let found = trust(&p, &[]).await;
        assert!(
            matches!(&found, GitTrust::Runs { what, .. } if *what == format!("config key `{}`", key.to_lowercase())),
            "{key}: {found:?}"
        );
    }
    // A hook in `core.hooksPath` that a read starts.
    let p = dir.path().join("hooked");
    repo(&p, None);
    std::fs::create_dir(p.join("hooks")).unwrap();
    std::fs::copy(&program, p.join("hooks/post-index-change")).unwrap();
    git(&p, &["config", "core.hooksPath", "hooks"]);
    assert!(runs(&trust(&p, &[]).await));
    assert!(
        !marker.exists(),
        "the check started {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
}
