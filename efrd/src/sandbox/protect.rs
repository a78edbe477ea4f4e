//! The protected paths of a plan: what a contained call may not change inside its writable roots, because something
//! outside the sandbox trusts it (docs/adr/0004-contained-calls.md, decision 9).
//!
//! - git: for each writable root that holds a `.git` folder, the folder is pinned (git inside writes objects, refs
//!   and the index, but the folder cannot be swapped for another) and its `config` and `hooks` are read-only: git run
//!   later outside the sandbox (a read-only `git status` of a cautious turn) would run the commands they name. A
//!   `.git` file (worktree, submodule) is read-only, and the git folder it names, and the common folder that folder's
//!   `commondir` names, are protected the same way when they lie inside a writable root (else they are read-only
//!   already).
//! - efr's roots: for each of efr's roots inside a writable root, the topmost folder between the two is read-only, so
//!   the call cannot move it aside and put a config of its own where efr looks. The roots' masks still apply below.
//!
//! Reads the `.git` entries, `gitdir:` and `commondir` files and resolves links (efr's roots are compared both as
//! given and as resolved); a missing or unreadable file protects less but never fails the plan. The launcher refuses
//! a protected path that is a link (the call could replace the link), so a `.git` link is resolved here and its
//! target protected instead; the link itself is checked after the call (`git_link.rs`).

use std::fs;
use std::path::{Component, Path, PathBuf};

use efr_protocol::internal::{LaunchPlan, Protected, ProtectedSource};
use efr_protocol::wire::Grant;

use efr_policy::paths::normalize_from_root;

/// Removes a `commondir` file that a contained call put in the `.git` folder of a project root, and returns the paths
/// removed. A main repository's `.git` never holds one (git keeps `commondir` in a linked worktree's own git folder),
/// and one there would point git at a folder the call wrote, config and hooks included: a later `git status` outside
/// the sandbox would run what that config names. The mounts cannot stop the file being made (`.git` must stay
/// writable for git itself, and git refuses an empty placeholder), so efrd takes it away after each contained call.
pub fn remove_planted_commondirs(roots: &[PathBuf]) -> Vec<PathBuf> {
    roots
        .iter()
        .map(|root| root.join(".git"))
        .filter(|git| fs::symlink_metadata(git).is_ok_and(|m| m.is_dir()))
        .map(|git| git.join("commondir"))
        .filter(|commondir| fs::symlink_metadata(commondir).is_ok() && fs::remove_file(commondir).is_ok())
        .collect()
}

/// The model's line about a `commondir` that [`remove_planted_commondirs`] removed.
#[must_use]
pub fn removed_commondir_note(removed: &Path) -> String {
    format!(
        "[efr removed {}: in a main .git folder it would point git outside the sandbox at other configuration]",
        removed.display()
    )
}

/// Sets `plan.protected` from its writable roots (project roots, `$SCRATCH`, `write` grants) and efr's own roots.
/// Call it again after adding roots or grants: it starts over.
pub fn protect(plan: &mut LaunchPlan, efr_roots: &[PathBuf]) {
    let roots: Vec<PathBuf> = plan
        .writable
        .iter()
        .map(|writable| writable.path.clone())
        .chain(plan.grants.iter().filter_map(|grant| match grant {
            Grant::Write { path } => Some(path.clone()),
            _ => None,
        }))
        .collect();
    let mut found = Vec::new();
    for root in &roots {
        git_paths(root, &roots, &mut found);
        for guard in efr_guards(root, efr_roots) {
            found.push((guard, ProtectedSource::EfrRoots));
        }
    }
    for grant in plan.grants.iter().filter_map(|grant| match grant {
        Grant::Write { path } => Some(path),
        _ => None,
    }) {
        grant_in_protected(grant, efr_roots, &mut found);
    }
    let mut protected: Vec<Protected> = Vec::new();
    for (path, source) in found {
        if !protected.iter().any(|p| p.path == path && p.source == source) {
            protected.push(Protected { path, source });
        }
    }
    plan.protected = protected;
}

/// What a `write` grant lies in: the config and hooks of a git folder among its ancestors (a grant of
/// `repo/.git/hooks` names no `.git` of its own, so [`git_paths`] finds none), and the grant itself when it lies in
/// one of efr's roots. The plan's validation refuses such a grant.
fn grant_in_protected(grant: &Path, efr_roots: &[PathBuf], out: &mut Vec<(PathBuf, ProtectedSource)>) {
    for ancestor in grant.ancestors() {
        let named_git = ancestor.file_name().is_some_and(|name| name == ".git");
        let git_folder = ancestor.join("HEAD").is_file() && ancestor.join("objects").is_dir();
        if named_git || git_folder {
            out.push((ancestor.join("config"), ProtectedSource::GitConfig));
            out.push((ancestor.join("hooks"), ProtectedSource::GitHooks));
        }
    }
    let in_efr = efr_roots.iter().any(|root| {
        let roots = forms(root);
        forms(grant)
            .iter()
            .any(|form| roots.iter().any(|root| form.starts_with(root)))
    });
    if in_efr {
        out.push((grant.to_path_buf(), ProtectedSource::EfrRoots));
    }
}

/// The git paths of `root`'s `.git`, if it has one. A `.git` link is resolved here, once: its target is protected
/// as a `.git` there would be (when it lies in a writable root; else it is read-only already), and the link itself,
/// which no mount can hold, is checked after the call (`git_link.rs`).
fn git_paths(root: &Path, roots: &[PathBuf], out: &mut Vec<(PathBuf, ProtectedSource)>) {
    let dot = root.join(".git");
    let Ok(meta) = fs::symlink_metadata(&dot) else {
        return;
    };
    let (dot, base, meta) = if meta.file_type().is_symlink() {
        let Some(real) = fs::canonicalize(&dot).ok().and_then(|real| within(&real, roots)) else {
            return;
        };
        let Ok(meta) = fs::metadata(&real) else {
            return;
        };
        let base = real.parent().map_or_else(|| root.to_path_buf(), Path::to_path_buf);
        (real, base, meta)
    } else {
        (dot, root.to_path_buf(), meta)
    };
    if meta.is_file() {
        out.push((dot.clone(), ProtectedSource::GitFile));
        if let Some(dir) = gitdir_of(&dot, &base)
            && inside(&dir, roots)
        {
            git_dir(&dir, roots, out);
        }
    } else {
        git_dir(&dot, roots, out);
    }
}

/// `real` (links resolved) as a path under one of `roots` as given, if it lies strictly inside one of them or of
/// their resolved forms: the launcher checks a pin against the roots as the plan names them.
fn within(real: &Path, roots: &[PathBuf]) -> Option<PathBuf> {
    roots.iter().find_map(|root| {
        forms(root).into_iter().find_map(|form| {
            let rest = real.strip_prefix(&form).ok()?;
            (!rest.as_os_str().is_empty()).then(|| root.join(rest))
        })
    })
}

/// A git folder inside a writable root: pinned, with its `commondir` file, and the config and hooks of the folder
/// that holds them (the common folder of a worktree, else the folder itself).
fn git_dir(dir: &Path, roots: &[PathBuf], out: &mut Vec<(PathBuf, ProtectedSource)>) {
    out.push((dir.to_path_buf(), ProtectedSource::GitDir));
    let commondir = dir.join("commondir");
    let common = match fs::read_to_string(&commondir) {
        Ok(text) => {
            out.push((commondir, ProtectedSource::GitCommonDir));
            normalize_from_root(&dir.join(text.trim_end_matches(['\n', '\r'])))
        }
        Err(_) => dir.to_path_buf(),
    };
    if common != dir {
        if !inside(&common, roots) {
            // Outside every writable root: read-only already.
            return;
        }
        out.push((common.clone(), ProtectedSource::GitDir));
    }
    out.push((common.join("config"), ProtectedSource::GitConfig));
    out.push((common.join("hooks"), ProtectedSource::GitHooks));
    // With `extensions.worktreeConfig` git also reads each worktree's `config.worktree` (a lexical look is enough:
    // a false match only protects a file more).
    let worktree_config = fs::read_to_string(common.join("config"))
        .is_ok_and(|text| text.to_ascii_lowercase().contains("worktreeconfig"));
    if worktree_config {
        out.push((dir.join("config.worktree"), ProtectedSource::GitConfig));
    }
}

/// The git folder a `.git` file names (`gitdir: <path>`, relative to the file's folder).
fn gitdir_of(file: &Path, root: &Path) -> Option<PathBuf> {
    let text = fs::read_to_string(file).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    (!target.is_empty()).then(|| normalize_from_root(&root.join(target)))
}

/// Strictly inside one of `roots`.
fn inside(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|root| path != root && path.starts_with(root))
}

/// The topmost folders between `root` and each of efr's roots inside it, as given and as resolved.
fn efr_guards(root: &Path, efr_roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut guards = Vec::new();
    let root_forms = forms(root);
    for efr_root in efr_roots {
        for efr_form in forms(efr_root) {
            for root_form in &root_forms {
                let Ok(rest) = efr_form.strip_prefix(root_form) else {
                    continue;
                };
                if let Some(Component::Normal(first)) = rest.components().next() {
                    let guard = root_form.join(first);
                    if !guards.contains(&guard) {
                        guards.push(guard);
                    }
                }
            }
        }
    }
    guards
}

/// `path` as given and with its links resolved (as far as it exists), without repeats.
fn forms(path: &Path) -> Vec<PathBuf> {
    let path = normalize_from_root(path);
    let real = resolved(&path);
    if real == path { vec![path] } else { vec![path, real] }
}

/// `path` with the links of its longest existing part resolved.
fn resolved(path: &Path) -> PathBuf {
    for ancestor in path.ancestors() {
        if let Ok(real) = fs::canonicalize(ancestor) {
            return match path.strip_prefix(ancestor) {
                Ok(rest) if !rest.as_os_str().is_empty() => real.join(rest),
                _ => real,
            };
        }
    }
    path.to_path_buf()
}

#[cfg(test)]
mod commondir_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_commondir_in_a_main_git_folder_is_removed_and_a_worktrees_stays() {
        let dir = tempfile::tempdir().unwrap();
        let (main, linked) = (dir.path().join("main"), dir.path().join("linked"));
        fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
        fs::write(main.join(".git/commondir"), "../.evil\n").unwrap();
        fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
        fs::create_dir_all(&linked).unwrap();
        fs::write(linked.join(".git"), "gitdir: ../main/.git/worktrees/wt\n").unwrap();
        let removed = remove_planted_commondirs(&[main.clone(), linked.clone()]);
        assert_eq!(removed, vec![main.join(".git/commondir")]);
        assert!(main.join(".git/worktrees/wt/commondir").exists());
        assert!(linked.join(".git").exists());
        assert!(remove_planted_commondirs(&[main]).is_empty());
    }
}

#[cfg(test)]
mod tests {
    use efr_protocol::internal::{Writable, WritableSource};

    use super::*;

    fn plan_with(roots: &[&Path]) -> LaunchPlan {
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/");
        for root in roots {
            plan.writable.push(Writable {
                path: root.to_path_buf(),
                source: WritableSource::Project,
            });
        }
        plan
    }

    fn listed(plan: &LaunchPlan, base: &Path) -> Vec<(String, ProtectedSource)> {
        plan.protected
            .iter()
            .map(|p| {
                let shown = p
                    .path
                    .strip_prefix(base)
                    .map_or_else(|_| p.path.display().to_string(), |rest| rest.display().to_string());
                (shown, p.source)
            })
            .collect()
    }

    /// A real folder (tempdirs may sit behind a link, such as /tmp on some systems).
    fn tempdir() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let real = fs::canonicalize(dir.path()).unwrap();
        (dir, real)
    }

    #[test]
    fn a_repository_gets_its_folder_pinned_and_its_config_and_hooks_read_only() {
        let (_dir, base) = tempdir();
        let repo = base.join("repo");
        fs::create_dir_all(repo.join(".git/hooks")).unwrap();
        fs::write(repo.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        let mut plan = plan_with(&[&repo]);
        protect(&mut plan, &[]);
        plan.validate().unwrap();
        use ProtectedSource::*;
        assert_eq!(
            listed(&plan, &base),
            [
                ("repo/.git".into(), GitDir),
                ("repo/.git/config".into(), GitConfig),
                ("repo/.git/hooks".into(), GitHooks),
            ]
        );
        // The same without hooks: the launcher puts an empty read-only folder there.
        fs::remove_dir(repo.join(".git/hooks")).unwrap();
        protect(&mut plan, &[]);
        assert_eq!(plan.protected.len(), 3);
        // With worktree configs on, config.worktree too.
        fs::write(repo.join(".git/config"), "[extensions]\n\tworktreeConfig = true\n").unwrap();
        protect(&mut plan, &[]);
        assert_eq!(
            listed(&plan, &base).last().unwrap(),
            &("repo/.git/config.worktree".into(), GitConfig)
        );
        // A folder without .git gets nothing.
        let plain = base.join("plain");
        fs::create_dir(&plain).unwrap();
        let mut plan = plan_with(&[&plain]);
        protect(&mut plan, &[]);
        assert!(plan.protected.is_empty());
    }

    #[test]
    fn a_git_link_protects_its_target_inside_a_writable_root_and_nothing_outside() {
        let (_dir, base) = tempdir();
        let repo = base.join("repo");
        fs::create_dir_all(repo.join("store.git/hooks")).unwrap();
        fs::write(repo.join("store.git/config"), "").unwrap();
        std::os::unix::fs::symlink("store.git", repo.join(".git")).unwrap();
        let mut plan = plan_with(&[&repo]);
        protect(&mut plan, &[]);
        plan.validate().unwrap();
        use ProtectedSource::*;
        // The target, not the link (which the launcher would refuse).
        assert_eq!(
            listed(&plan, &base),
            [
                ("repo/store.git".into(), GitDir),
                ("repo/store.git/config".into(), GitConfig),
                ("repo/store.git/hooks".into(), GitHooks),
            ]
        );
        // A link to a `.git` file: the file and the folder it names, when they lie in a writable root.
        fs::write(repo.join("dot-git"), "gitdir: store.git\n").unwrap();
        fs::remove_file(repo.join(".git")).unwrap();
        std::os::unix::fs::symlink("dot-git", repo.join(".git")).unwrap();
        protect(&mut plan, &[]);
        assert_eq!(
            listed(&plan, &base)[..2],
            [("repo/dot-git".into(), GitFile), ("repo/store.git".into(), GitDir)]
        );
        // A target outside every writable root is read-only already: nothing to add.
        let outside = base.join("outside.git");
        fs::create_dir(&outside).unwrap();
        fs::remove_file(repo.join(".git")).unwrap();
        std::os::unix::fs::symlink(&outside, repo.join(".git")).unwrap();
        protect(&mut plan, &[]);
        assert!(plan.protected.is_empty(), "{:?}", plan.protected);
    }

    #[test]
    fn a_worktree_protects_its_git_file_its_folder_and_the_common_folder_inside_writable_roots() {
        let (_dir, base) = tempdir();
        let main = base.join("main");
        let gitdir = main.join(".git/worktrees/wt");
        fs::create_dir_all(&gitdir).unwrap();
        fs::create_dir_all(main.join(".git/hooks")).unwrap();
        fs::write(main.join(".git/config"), "").unwrap();
        fs::write(gitdir.join("commondir"), "../..\n").unwrap();
        let wt = base.join("wt");
        fs::create_dir(&wt).unwrap();
        fs::write(wt.join(".git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
        use ProtectedSource::*;
        // Only the worktree is writable: its .git file is protected; its git folder is read-only already.
        let mut plan = plan_with(&[&wt]);
        protect(&mut plan, &[]);
        assert_eq!(listed(&plan, &base), [("wt/.git".into(), GitFile)]);
        // Both writable: the worktree's folder and its commondir, then the common folder, its config and hooks.
        let mut plan = plan_with(&[&wt, &main]);
        protect(&mut plan, &[]);
        plan.validate().unwrap();
        assert_eq!(
            listed(&plan, &base),
            [
                ("wt/.git".into(), GitFile),
                ("main/.git/worktrees/wt".into(), GitDir),
                ("main/.git/worktrees/wt/commondir".into(), GitCommonDir),
                ("main/.git".into(), GitDir),
                ("main/.git/config".into(), GitConfig),
                ("main/.git/hooks".into(), GitHooks),
            ]
        );
        // A relative gitdir (a submodule's) resolves against the file's folder.
        let sub = main.join("sub");
        fs::create_dir_all(main.join(".git/modules/sub")).unwrap();
        fs::create_dir(&sub).unwrap();
        fs::write(sub.join(".git"), "gitdir: ../.git/modules/sub\n").unwrap();
        let mut plan = plan_with(&[&main, &sub]);
        protect(&mut plan, &[]);
        let shown = listed(&plan, &base);
        assert!(shown.contains(&("main/.git/modules/sub".into(), GitDir)), "{shown:?}");
        assert!(
            shown.contains(&("main/.git/modules/sub/hooks".into(), GitHooks)),
            "{shown:?}"
        );
    }

    #[test]
    fn the_folder_that_holds_efrs_roots_inside_a_writable_root_is_read_only() {
        let (_dir, base) = tempdir();
        let project = base.join("var-tmp");
        let efr_home = project.join("efr-home");
        for root in ["config", "data", "state", "run"] {
            fs::create_dir_all(efr_home.join(root)).unwrap();
        }
        let roots: Vec<PathBuf> = ["config", "data", "state", "run"]
            .iter()
            .map(|r| efr_home.join(r))
            .collect();
        let mut plan = plan_with(&[&project]);
        plan.writable.push(Writable {
            path: efr_home.join("state/scratch/c1"),
            source: WritableSource::Scratch,
        });
        protect(&mut plan, &roots);
        plan.validate().unwrap();
        assert_eq!(
            listed(&plan, &base),
            [("var-tmp/efr-home".into(), ProtectedSource::EfrRoots)]
        );
        // A root directly in the writable root: the root itself (a placeholder when it is missing).
        let mut plan = plan_with(&[&efr_home]);
        protect(&mut plan, &roots);
        assert_eq!(plan.protected.len(), 4);
        assert!(plan.protected.iter().all(|p| p.source == ProtectedSource::EfrRoots));
        // Roots elsewhere: nothing.
        let mut plan = plan_with(&[&base.join("other")]);
        protect(&mut plan, &roots);
        assert!(plan.protected.is_empty());
        // A root named through a link into the writable root is guarded at its target, and the link itself (which
        // the launcher then refuses).
        let link = base.join("link-home");
        std::os::unix::fs::symlink(&efr_home, &link).unwrap();
        let mut plan = plan_with(&[&project]);
        protect(&mut plan, &[link.join("config")]);
        assert_eq!(
            listed(&plan, &base),
            [("var-tmp/efr-home".into(), ProtectedSource::EfrRoots)]
        );
        let inner_link = project.join("efr-link");
        std::os::unix::fs::symlink(&efr_home, &inner_link).unwrap();
        let mut plan = plan_with(&[&project]);
        protect(&mut plan, &[inner_link.join("config")]);
        assert_eq!(
            listed(&plan, &base),
            [
                ("var-tmp/efr-link".into(), ProtectedSource::EfrRoots),
                ("var-tmp/efr-home".into(), ProtectedSource::EfrRoots),
            ]
        );
    }

    #[test]
    fn a_write_grant_inside_git_hooks_or_config_efrs_roots_or_a_mask_is_refused() {
        let (_dir, base) = tempdir();
        let repo = base.join("other");
        fs::create_dir_all(repo.join(".git/hooks")).unwrap();
        fs::create_dir_all(repo.join(".git/objects")).unwrap();
        fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let bare = base.join("bare.git");
        fs::create_dir_all(bare.join("objects")).unwrap();
        fs::create_dir_all(bare.join("hooks")).unwrap();
        fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let efr_config = base.join("config/efr");
        fs::create_dir_all(&efr_config).unwrap();
        let refused = |path: PathBuf| {
            let mut plan = plan_with(&[]);
            plan.grants.push(Grant::Write { path: path.clone() });
            protect(&mut plan, std::slice::from_ref(&efr_config));
            assert!(plan.validate().is_err(), "{}: {:?}", path.display(), plan.protected);
        };
        refused(repo.join(".git/hooks"));
        refused(repo.join(".git/hooks/pre-push"));
        refused(repo.join(".git/config"));
        refused(bare.join("hooks"));
        refused(efr_config.clone());
        refused(efr_config.join("config.toml"));
        // A grant beside them is not.
        let mut plan = plan_with(&[]);
        plan.grants.push(Grant::Write { path: repo.join("src") });
        plan.grants.push(Grant::Write {
            path: repo.join(".git/objects"),
        });
        protect(&mut plan, std::slice::from_ref(&efr_config));
        plan.validate().unwrap();
        // A mask: refused unless an unmask grant opens it.
        let mut plan = plan_with(&[]);
        plan.masks.push(efr_protocol::internal::Mask {
            path: base.join(".ssh"),
            source: efr_protocol::internal::MaskSource::Default,
        });
        plan.grants.push(Grant::Write {
            path: base.join(".ssh"),
        });
        protect(&mut plan, &[]);
        assert!(plan.validate().is_err());
        plan.grants.push(Grant::Unmask {
            path: base.join(".ssh"),
        });
        plan.validate().unwrap();
    }

    #[test]
    fn write_grants_are_writable_roots_too() {
        let (_dir, base) = tempdir();
        let repo = base.join("granted");
        fs::create_dir_all(repo.join(".git")).unwrap();
        let mut plan = plan_with(&[]);
        plan.grants.push(Grant::Write { path: repo.clone() });
        protect(&mut plan, &[]);
        plan.validate().unwrap();
        assert_eq!(plan.protected.len(), 3);
    }
}
