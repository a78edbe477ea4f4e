//! The `git_code` fact of an auto call's `outside` and `upload` exits (docs/adr/0016-exit-kinds.md, kinds 11 and 15;
//! spec: "the facts of an exit record gain git_code"): a git or gh line that runs outside the sandbox runs the
//! repository's own code there (a hook, `core.sshcommand`). efrd checks the repositories of the line's git commands
//! ([`super::git_check`]); what can run a program and a contained call could write (so a model could have planted
//! it) makes the exit one that only the user approves, and so does a repository efrd could not check. Finding leaves
//! the fact absent; the turn fills it here.

use std::path::{Path, PathBuf};

use efr_protocol::wire::{ExitKind, ExitRecord, GitCode, GitCodeItem};

use super::contained;
use super::env::ToolEnv;
use super::git_check;
use efr_policy::{GitTrust, LineAnalysis};

/// Fills `git_code` of the `outside` and `upload` records of a line with git commands, when the check makes them
/// exits that only the user approves (a writable item, or a repository not checked); leaves it absent otherwise.
pub async fn add_git_code(env: &ToolEnv, analysis: &LineAnalysis, records: &mut [ExitRecord]) {
    let concerned = |r: &ExitRecord| matches!(r.kind, ExitKind::Outside | ExitKind::Upload);
    if analysis.git.is_empty() || !records.iter().any(concerned) {
        return;
    }
    let found = git_check::inspect_unless_sandboxed(&analysis.git).await;
    let writable = |path: &Path| writable_in_sandbox(env, path);
    let mut code = git_code(found.into_iter().map(|(_, trust)| trust), &writable).unwrap_or(GitCode {
        checked: true,
        items: Vec::new(),
    });
    add_hooks(&mut code, analysis, &writable).await;
    if code.checked && code.items.is_empty() {
        return;
    }
    for record in records.iter_mut().filter(|r| concerned(r)) {
        record.facts.git_code = Some(code.clone());
    }
}

/// Names the hooks that the line's git commands run (`git push`'s `pre-push`, `git commit`'s, `git am`'s, `git
/// rebase`'s, and a read's) and a contained call could write, such as those of a `core.hooksPath` inside the project:
/// they run outside the sandbox when the exit does, so the user sees them before approving.
pub async fn add_hooks(code: &mut GitCode, analysis: &LineAnalysis, writable: &(dyn Fn(&Path) -> bool + Sync)) {
    if !code.checked {
        return;
    }
    let mut hooks: Vec<&str> = Vec::new();
    for command in analysis.commands.iter().filter(|c| c.name == "git") {
        let sub = efr_policy::readonly::git::subcommand(&command.args);
        for hook in sub.map_or(&[][..], |sub| git_check::hooks_of(sub)) {
            if !hooks.contains(hook) {
                hooks.push(hook);
            }
        }
    }
    for place in &analysis.git {
        match git_check::hook_files(place, &hooks).await {
            Ok(files) => {
                for (repo, item, file) in files {
                    if writable(&file) && !code.items.iter().any(|i| i.file == file) {
                        code.items.push(GitCodeItem {
                            repo,
                            item,
                            file,
                            writable: true,
                        });
                    }
                }
            }
            Err(_) => code.checked = false,
        }
    }
}

/// The fact of what the check found: `None` when nothing makes the exit one the user alone approves.
pub fn git_code(found: impl IntoIterator<Item = GitTrust>, writable: &dyn Fn(&Path) -> bool) -> Option<GitCode> {
    let mut code = GitCode {
        checked: true,
        items: Vec::new(),
    };
    for trust in found {
        match trust {
            GitTrust::Plain => {}
            GitTrust::Unchecked(_) => code.checked = false,
            GitTrust::Runs { what, repository } => {
                let repo = git_dir(&repository);
                let file = if what.starts_with("hooks/") {
                    repo.join(&what)
                } else {
                    repo.join("config")
                };
                // The record keeps only the writable items (spec).
                if writable(&file) {
                    code.items.push(GitCodeItem {
                        repo,
                        item: what,
                        file,
                        writable: true,
                    });
                }
            }
        }
    }
    (!code.checked || !code.items.is_empty()).then_some(code)
}

/// The git folder of a repository given by its top folder or its git folder (a `.git` file's `gitdir:` followed).
fn git_dir(repository: &Path) -> PathBuf {
    let dot_git = repository.join(".git");
    if dot_git.is_dir() {
        return dot_git;
    }
    if let Ok(text) = std::fs::read_to_string(&dot_git)
        && let Some(target) = text.trim().strip_prefix("gitdir:")
    {
        let target = Path::new(target.trim());
        return if target.is_absolute() {
            target.to_path_buf()
        } else {
            repository.join(target)
        };
    }
    repository.to_path_buf()
}

/// Leaves out the `write` and `delete` records with a target that the sandbox protects (a writable root's git
/// config and hooks, the folders of efr's roots): those paths are read-only so that a contained call cannot plant
/// code that git runs outside the sandbox later, and no exit lifts that (the call fails inside, as before exits).
pub fn drop_ungrantable(env: &ToolEnv, records: &mut Vec<ExitRecord>) {
    let protected = contained::mounts_plan(env, &[]).protected;
    records.retain(|record| {
        !matches!(record.kind, ExitKind::Write | ExitKind::Delete)
            || !record.targets.iter().any(|target| {
                let real = efr_policy::paths::resolve(&target.path).unwrap_or_else(|_| target.path.clone());
                protected.iter().any(|p| real.starts_with(&p.path))
            })
    });
}

/// Whether a contained call of this turn could write `path` (the project roots and `$SCRATCH`, but not a root's
/// protected git config and hooks).
fn writable_in_sandbox(env: &ToolEnv, path: &Path) -> bool {
    writable_with(env, path, &[])
}

/// Whether a contained call of this turn with `grants` could write `path`.
fn writable_with(env: &ToolEnv, path: &Path, grants: &[efr_protocol::wire::Grant]) -> bool {
    let real = efr_policy::paths::resolve(path).unwrap_or_else(|_| path.to_path_buf());
    contained::writable_in(&contained::mounts_plan(env, grants), &real)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_writable_code_or_an_unchecked_repository_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("vendor/lib");
        std::fs::create_dir_all(repo.join(".git/hooks")).unwrap();
        let runs = |what: &str| GitTrust::Runs {
            what: what.into(),
            repository: repo.clone(),
        };
        let writable_hooks = |path: &Path| path.starts_with(repo.join(".git/hooks"));
        assert_eq!(git_code([GitTrust::Plain], &writable_hooks), None);
        assert_eq!(
            git_code([runs("core.sshcommand")], &writable_hooks),
            None,
            "an unwritable config"
        );
        let code = git_code([GitTrust::Plain, runs("hooks/pre-push")], &writable_hooks).unwrap();
        assert!(code.checked);
        assert_eq!(
            code.items,
            vec![GitCodeItem {
                repo: repo.join(".git"),
                item: "hooks/pre-push".into(),
                file: repo.join(".git/hooks/pre-push"),
                writable: true,
            }]
        );
        let code = git_code([GitTrust::Unchecked("a sandbox runs".into())], &writable_hooks).unwrap();
        assert!(!code.checked && code.items.is_empty());
    }

    #[tokio::test]
    async fn a_hook_in_a_nested_repository_of_the_project_is_writable_but_the_projects_own_is_protected() {
        let dir = tempfile::tempdir().unwrap();
        let env = super::super::testing::tool_env(dir.path(), "/usr/bin/bwrap", efr_protocol::wire::Mode::Auto);
        let project = efr_policy::paths::resolve(&env.roots[0]).unwrap();
        std::fs::create_dir_all(project.join(".git/hooks")).unwrap();
        std::fs::write(project.join(".git/config"), "").unwrap();
        std::fs::create_dir_all(project.join("vendor/lib/.git/hooks")).unwrap();
        assert!(!writable_in_sandbox(&env, &project.join(".git/hooks/pre-push")));
        assert!(!writable_in_sandbox(&env, &project.join(".git/config")));
        assert!(writable_in_sandbox(
            &env,
            &project.join("vendor/lib/.git/hooks/pre-push")
        ));
        assert!(!writable_in_sandbox(&env, Path::new("/etc/gitconfig")));
        let outside = dir.path().join("elsewhere/file");
        let grant = vec![efr_protocol::wire::Grant::Write { path: outside.clone() }];
        assert!(writable_with(&env, &outside, &grant));
        // A write exit into a protected path is none: no grant lifts the protection.
        let write = |path: PathBuf| ExitRecord {
            kind: ExitKind::Write,
            source: efr_protocol::wire::ExitSource::Report,
            action: efr_protocol::wire::ExitAction {
                tool: "shell".into(),
                command: Some("x".into()),
                edit: None,
                ..Default::default()
            },
            needs: efr_protocol::wire::Needs {
                grants: vec![efr_protocol::wire::Grant::Write { path: path.clone() }],
                unsandboxed: false,
            },
            targets: vec![efr_protocol::wire::ExitTarget {
                path,
                class: efr_protocol::wire::TargetClass::Home,
                masked: false,
                backup_before_write: false,
            }],
            facts: efr_protocol::wire::ExitFacts::default(),
            judgement: None,
        };
        let mut records = vec![write(project.join(".git/hooks/pre-commit")), write(outside)];
        drop_ungrantable(&env, &mut records);
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].targets[0].path, dir.path().join("elsewhere/file"));
    }

    fn host_git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
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
    }

    fn hook(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\ntouch /tmp/efr-hook-ran\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The records of `line` in a project at `repo`, with git_code added as the turn adds it.
    async fn git_code_of(dir: &Path, repo: &Path, line: &str) -> Option<GitCode> {
        let mut env = crate::turn::testing::tool_env(dir, "/usr/bin/bwrap", efr_protocol::wire::Mode::Auto);
        env.roots = vec![repo.to_path_buf()];
        env.cwd = repo.to_path_buf();
        let call = efr_policy::ShellCall {
            command: line.to_owned(),
            cwd: repo.to_path_buf(),
        };
        let ctx = efr_policy::PolicyContext::new(env.roots.clone(), env.origin);
        let analysis = efr_policy::analyse_call(&call, &ctx);
        let mut records = vec![ExitRecord {
            kind: ExitKind::Upload,
            source: efr_protocol::wire::ExitSource::Line,
            action: efr_protocol::wire::ExitAction {
                tool: "shell".into(),
                command: Some(line.into()),
                edit: None,
                ..Default::default()
            },
            needs: efr_protocol::wire::Needs {
                grants: Vec::new(),
                unsandboxed: true,
            },
            targets: Vec::new(),
            facts: efr_protocol::wire::ExitFacts::default(),
            judgement: None,
        }];
        add_git_code(&env, &analysis, &mut records).await;
        records.remove(0).facts.git_code
    }

    #[tokio::test]
    async fn the_hooks_a_push_commit_am_or_rebase_runs_from_a_writable_hooks_path_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("home/project");
        std::fs::create_dir_all(&repo).unwrap();
        host_git(&repo, &["init", "-q"]);
        host_git(&repo, &["commit", "--allow-empty", "-qm", "x"]);
        host_git(&repo, &["config", "core.hooksPath", ".husky"]);
        for name in ["pre-push", "pre-commit", "applypatch-msg", "pre-rebase"] {
            hook(&repo.join(".husky").join(name));
        }
        // The project's own .git/hooks is read-only in the sandbox: not named even if it were used.
        hook(&repo.join(".git/hooks/pre-push"));
        let items = |code: Option<GitCode>| -> Vec<String> {
            let code = code.expect("a writable hook makes the fact");
            assert!(code.checked);
            code.items.iter().map(|item| item.item.clone()).collect()
        };
        assert_eq!(
            items(git_code_of(dir.path(), &repo, "git push origin main").await),
            ["hooks/pre-push"]
        );
        let code = git_code_of(dir.path(), &repo, "git push origin main").await.unwrap();
        assert_eq!(code.items[0].file, repo.join(".husky/pre-push"));
        assert_eq!(
            items(git_code_of(dir.path(), &repo, "git commit -qm y && git push").await),
            ["hooks/pre-commit", "hooks/pre-push"]
        );
        assert_eq!(
            items(git_code_of(dir.path(), &repo, "git am x.patch").await),
            ["hooks/applypatch-msg"]
        );
        assert_eq!(
            items(git_code_of(dir.path(), &repo, "git rebase main").await),
            ["hooks/pre-rebase"]
        );
        // A fetch runs none of them.
        assert_eq!(git_code_of(dir.path(), &repo, "git fetch origin").await, None);
    }
}
