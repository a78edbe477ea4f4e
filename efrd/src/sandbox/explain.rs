//! `sandbox.explain`: what a contained call would see at one path, and which rule decides (docs/protocol.md, "The
//! sandbox check and explain").
//!
//! Pure: it reads the plan's mounts ([`LaunchPlan::mounts`], the same list the launcher turns into bubblewrap's
//! options) and no file. The mount that decides is the last one in that order whose path holds the asked path, which
//! is what bubblewrap ends up with: the deepest rule wins.
//!
//! Views:
//! - `writable`: a project root, `$SCRATCH`, a `write` grant, the private `/tmp` and `/dev/shm` themselves, the
//!   standard nodes of the fresh `/dev`, a granted device or socket, a pinned git folder (writable, but it cannot be
//!   moved);
//! - `read_only`: everything else under `/`, the sandbox's own `/proc`, and the protected paths inside a writable
//!   root (git's config and hooks, the folder that holds efr's roots), with the rule that protects them;
//! - `masked`: a credential store, efr's own roots, `/run/user/$UID` (an empty folder or an empty file);
//! - `hidden`: what the fresh `/dev`, the private `/tmp` and the private `/dev/shm` replace (the host's files there are
//!   not seen).

use std::path::{Component, Path, PathBuf};

use efr_protocol::internal::{LaunchPlan, MountKind, PlanError, Rule};
use serde::Serialize;

use efr_policy::paths::normalize_from_root;

/// What a contained call sees at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// It can read and write there.
    Writable,
    /// It can read there.
    ReadOnly,
    /// The path shows empty: a credential store or another masked path.
    Masked,
    /// The host's file there is not seen (the sandbox has its own `/dev` and `/tmp`).
    Hidden,
}

/// The answer of [`explain`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The path asked about, absolute and without `.` and `..`.
    pub path: PathBuf,
    /// What the call sees there.
    pub view: View,
    /// The path of the mount that decides (such as the project root or the masked folder).
    pub rule_path: PathBuf,
    /// The rule, in words (such as "masked: a credential store of the default list").
    pub rule: String,
}

/// Why a path cannot be explained.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExplainError {
    /// A relative path and no working directory.
    #[error("the path {0:?} is relative; give a cwd to resolve it")]
    RelativeWithoutCwd(PathBuf),
    /// The working directory is relative.
    #[error("the cwd {0:?} is not absolute")]
    RelativeCwd(PathBuf),
    /// The plan is not valid.
    #[error("the sandbox plan is not valid: {0}")]
    Plan(#[from] PlanError),
}

/// The nodes of bubblewrap's fresh `/dev` (its `--dev`).
const DEV_NODES: &[&str] = &[
    "null", "zero", "full", "random", "urandom", "tty", "ptmx", "pts", "shm", "fd", "stdin", "stdout", "stderr", "core",
];

/// What a call with `plan` would see at `path` (relative paths resolve against `cwd`).
///
/// # Errors
///
/// [`ExplainError`]: a relative path without a cwd, a relative cwd, or a plan that is not valid.
pub fn explain(path: &Path, cwd: Option<&Path>, plan: &LaunchPlan) -> Result<Explanation, ExplainError> {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        let cwd = cwd.ok_or_else(|| ExplainError::RelativeWithoutCwd(path.to_path_buf()))?;
        if !cwd.is_absolute() {
            return Err(ExplainError::RelativeCwd(cwd.to_path_buf()));
        }
        cwd.join(path)
    };
    let path = normalize_from_root(&joined);
    let mounts = plan.mounts()?;
    // The root mount holds every absolute path, so there is always one.
    let Some(mount) = mounts.iter().rev().find(|mount| path.starts_with(&mount.path)) else {
        return Ok(Explanation {
            path,
            view: View::ReadOnly,
            rule_path: "/".into(),
            rule: Rule::Root.to_string(),
        });
    };
    let below = path != mount.path;
    let view = match mount.kind {
        MountKind::RootReadOnly | MountKind::Proc => View::ReadOnly,
        MountKind::Writable | MountKind::Pinned | MountKind::Device | MountKind::Socket | MountKind::BusSocket => {
            View::Writable
        }
        MountKind::ReadOnly(_) => View::ReadOnly,
        MountKind::Mask => View::Masked,
        MountKind::Tmp | MountKind::SharedMemory if below => View::Hidden,
        MountKind::Tmp | MountKind::SharedMemory => View::Writable,
        MountKind::Dev if !below => View::ReadOnly,
        MountKind::Dev => {
            let first = path
                .strip_prefix(&mount.path)
                .ok()
                .and_then(|rest| rest.components().next());
            match first {
                Some(Component::Normal(name)) if DEV_NODES.iter().any(|node| name == *node) => View::Writable,
                _ => View::Hidden,
            }
        }
    };
    Ok(Explanation {
        path,
        view,
        rule_path: mount.path.clone(),
        rule: mount.rule.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use efr_protocol::internal::{
        Mask, MaskSource, Protected, ProtectedSource, Writable, WritableSource, default_masks,
    };
    use efr_protocol::wire::Grant;

    use super::*;

    fn plan() -> LaunchPlan {
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/home/u/src/efr");
        plan.writable.push(Writable {
            path: "/home/u/src/efr".into(),
            source: WritableSource::Project,
        });
        plan.writable.push(Writable {
            path: "/home/u/.local/state/efr/scratch/c1".into(),
            source: WritableSource::Scratch,
        });
        plan.masks = default_masks(
            Path::new("/home/u"),
            Path::new("/run/user/1000"),
            &["/home/u/.local/state/efr".into()],
            &[],
        );
        plan.grants.push(Grant::Socket {
            path: "/run/user/1000/bus".into(),
        });
        plan
    }

    fn view(path: &str, cwd: Option<&str>) -> (View, String) {
        let answer = explain(Path::new(path), cwd.map(Path::new), &plan()).unwrap();
        (answer.view, answer.rule)
    }

    #[test]
    fn each_view_and_its_rule() {
        assert_eq!(
            view("/home/u/src/efr/Cargo.toml", None),
            (View::Writable, Rule::Project.to_string())
        );
        assert_eq!(view("/usr/bin/ls", None), (View::ReadOnly, "/ is read-only".into()));
        assert_eq!(view("/home/u/.ssh/id_ed25519", None).0, View::Masked);
        assert_eq!(
            view("/home/u/.ssh", None).1,
            "masked: a credential store of the default list"
        );
        assert_eq!(
            view("/home/u/.local/state/efr/keys.json", None).1,
            "masked: efr's own state and keys"
        );
        assert_eq!(
            view("/home/u/.local/state/efr/scratch/c1/out", None),
            (View::Writable, Rule::Scratch.to_string())
        );
        assert_eq!(view("/run/user/1000/gnupg/S.gpg-agent", None).0, View::Masked);
        assert_eq!(
            view("/run/user/1000/bus", None),
            (View::Writable, "a socket grant".into())
        );
        assert_eq!(view("/tmp", None).0, View::Writable);
        assert_eq!(
            view("/tmp/host-file", None),
            (View::Hidden, "the sandbox has a private /tmp".into())
        );
        assert_eq!(view("/dev/shm", None).0, View::Writable);
        assert_eq!(
            view("/dev/shm/host-segment", None),
            (View::Hidden, "the sandbox has a private /dev/shm".into())
        );
        assert_eq!(view("/dev/null", None).0, View::Writable);
        assert_eq!(view("/dev/sda", None).0, View::Hidden);
        assert_eq!(view("/proc/self/status", None).0, View::ReadOnly);
    }

    #[test]
    fn relative_paths_resolve_against_the_cwd() {
        let answer = explain(
            Path::new("../efr/./src/main.rs"),
            Some(Path::new("/home/u/src/efr")),
            &plan(),
        )
        .unwrap();
        assert_eq!(answer.path, Path::new("/home/u/src/efr/src/main.rs"));
        assert_eq!(
            (answer.view, answer.rule_path),
            (View::Writable, PathBuf::from("/home/u/src/efr"))
        );
        // `..` cannot climb out of the project into a masked store unnoticed.
        assert_eq!(view("/home/u/src/efr/../../.ssh/config", None).0, View::Masked);
    }

    #[test]
    fn errors_are_clear() {
        assert_eq!(
            explain(Path::new("src"), None, &plan()),
            Err(ExplainError::RelativeWithoutCwd("src".into()))
        );
        assert_eq!(
            explain(Path::new("src"), Some(Path::new("work")), &plan()),
            Err(ExplainError::RelativeCwd("work".into()))
        );
        let mut bad = plan();
        bad.masks.push(Mask {
            path: "/".into(),
            source: MaskSource::Config,
        });
        assert!(matches!(
            explain(Path::new("/x"), None, &bad),
            Err(ExplainError::Plan(_))
        ));
    }

    #[test]
    fn protected_paths_read_as_read_only_with_their_rule() {
        let mut plan = plan();
        for (path, source) in [
            ("/home/u/src/efr/.git", ProtectedSource::GitDir),
            ("/home/u/src/efr/.git/config", ProtectedSource::GitConfig),
            ("/home/u/src/efr/.git/hooks", ProtectedSource::GitHooks),
            ("/home/u/src/efr/efr-home", ProtectedSource::EfrRoots),
        ] {
            plan.protected.push(Protected {
                path: path.into(),
                source,
            });
        }
        let explained = |path: &str| explain(Path::new(path), None, &plan).unwrap();
        let answer = explained("/home/u/src/efr/.git/hooks/pre-commit");
        assert_eq!(answer.view, View::ReadOnly);
        assert_eq!(answer.rule_path, Path::new("/home/u/src/efr/.git/hooks"));
        assert_eq!(answer.rule, Rule::Protected(ProtectedSource::GitHooks).to_string());
        assert_eq!(explained("/home/u/src/efr/.git/config").view, View::ReadOnly);
        let answer = explained("/home/u/src/efr/.git/objects/ab");
        assert_eq!(
            (answer.view, answer.rule),
            (View::Writable, Rule::Protected(ProtectedSource::GitDir).to_string())
        );
        let answer = explained("/home/u/src/efr/efr-home/config/config.toml");
        assert_eq!(answer.view, View::ReadOnly);
        assert!(answer.rule.contains("efr's own roots"), "{}", answer.rule);
        assert_eq!(explained("/home/u/src/efr/src/main.rs").view, View::Writable);
    }

    #[test]
    fn an_unmasked_store_reads_as_the_rule_below_it() {
        let mut plan = plan();
        plan.grants.push(Grant::Unmask {
            path: "/home/u/.aws".into(),
        });
        let answer = explain(Path::new("/home/u/.aws/credentials"), None, &plan).unwrap();
        assert_eq!(answer.view, View::ReadOnly);
    }
}
