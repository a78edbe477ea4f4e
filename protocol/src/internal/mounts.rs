//! The mounts of a launch plan, in the order the launcher applies them.
//!
//! One function, [`LaunchPlan::mounts`], decides the order, and two readers use it: `efr-launcher` turns each mount
//! into bubblewrap's arguments, and efrd's `sandbox.explain` finds the mount that decides a path. So what explain
//! says is what the sandbox does.
//!
//! # Order
//!
//! 1. `/` read-only, then a fresh `/dev`, a private `/dev/shm` of at most [`SHM_SIZE`](crate::internal::SHM_SIZE) bytes, a fresh `/proc` and a
//!    private `/tmp` (the host's are hidden).
//! 2. Every other mount, shallowest path first. At equal depth: writable binds (project roots, `$SCRATCH`, `write`
//!    grants), then pins (protected git folders), then read-only protected paths, then masks, then `device` and
//!    `socket` grants.
//!
//! A later mount covers an earlier one, so **the deepest rule decides**: a mask inside a writable root stays masked
//! (`~/.ssh` when the root is `~`), `$SCRATCH` inside masked efr state stays writable, a `socket` grant shows one
//! socket inside masked `/run/user/$UID`, and `.git/config` inside a project stays read-only. A path masked and made
//! writable at once stays masked; `unmask` lifts a mask. A protected path stays protected even when a `write` grant
//! names it: no grant lifts it.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::internal::error::PlanError;
use crate::internal::launch::{LaunchPlan, MaskSource, ProtectedSource, WritableSource};
use crate::wire::Grant;

/// What one mount does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MountKind {
    /// The host's `/`, read-only (`--ro-bind / /`).
    RootReadOnly,
    /// A fresh `/dev` with the standard nodes (`--dev`).
    Dev,
    /// A fresh `/proc` of the sandbox's own processes (`--proc`).
    Proc,
    /// A private, empty, writable `/tmp` (`--tmpfs`).
    Tmp,
    /// A private, empty, writable `/dev/shm` of at most [`SHM_SIZE`](crate::internal::SHM_SIZE) bytes (`--size` + `--tmpfs`): the host's
    /// segments are hidden, and the call's own stay inside.
    SharedMemory,
    /// The host path, writable (`--bind`).
    Writable,
    /// Hidden: an empty read-only folder, or an empty file (`--tmpfs` + `--remount-ro`, or `/dev/null`).
    Mask,
    /// A host device node (`--dev-bind`).
    Device,
    /// A host Unix socket (`--bind`).
    Socket,
    /// A `bus_filter` grant's socket: the call's filtered socket of efr-bus-proxy, bound at the bus's address
    /// ([`Mount::source`] is the host path; `--bind SOURCE PATH`).
    BusSocket,
    /// A path inside a writable root bound over itself, still writable: a mount point cannot be renamed or removed
    /// (`--bind P P`).
    Pinned,
    /// A path inside a writable root bound over itself read-only (`--ro-bind P P`); writes fail with `EROFS`, and as a
    /// mount point it cannot be renamed or removed either.
    ReadOnly(IfMissing),
}

/// What a [`MountKind::ReadOnly`] mount puts in place of a path that does not exist when the call starts. A
/// placeholder is a mount point the launcher creates inside the writable root, on the host; it stays after the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IfMissing {
    /// Nothing: the path is left as it is (the call could create it).
    Nothing,
    /// An empty read-only folder (`--tmpfs` + `--remount-ro`).
    EmptyFolder,
    /// An empty read-only file (`--ro-bind /dev/null`).
    EmptyFile,
}

/// The rule that put a mount in the plan, as `sandbox.explain` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// `/` is read-only.
    Root,
    /// The fresh `/dev`.
    FreshDev,
    /// The fresh `/proc`.
    FreshProc,
    /// The private `/tmp`.
    PrivateTmp,
    /// The private `/dev/shm`.
    PrivateShm,
    /// A project root of the call.
    Project,
    /// `$SCRATCH`.
    Scratch,
    /// A `write` grant.
    WriteGrant,
    /// A mask, and where it came from.
    Mask(MaskSource),
    /// A `device` grant.
    DeviceGrant,
    /// A `socket` grant.
    SocketGrant,
    /// A `bus_filter` grant.
    BusFilterGrant,
    /// A whole-`bus` grant.
    BusGrant,
    /// A `desktop` grant.
    DesktopGrant,
    /// A protected path inside a writable root, and why.
    Protected(ProtectedSource),
    /// A read-only call's project root or start folder under `/tmp`, shown over the private `/tmp`.
    ReadOnlyRoot,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rule::Root => "/ is read-only",
            Rule::FreshDev => "the sandbox has a fresh /dev",
            Rule::FreshProc => "the sandbox has a fresh /proc of its own processes",
            Rule::PrivateTmp => "the sandbox has a private /tmp",
            Rule::PrivateShm => "the sandbox has a private /dev/shm",
            Rule::Project => "a project root of the call is writable",
            Rule::ReadOnlyRoot => "the call's folder under /tmp is shown read-only over the private /tmp",
            Rule::Scratch => "$SCRATCH is writable",
            Rule::WriteGrant => "a write grant",
            Rule::Mask(MaskSource::Default) => "masked: a credential store of the default list",
            Rule::Mask(MaskSource::Config) => "masked by the config",
            Rule::Mask(MaskSource::EfrRoot) => "masked: efr's own state and keys",
            Rule::Mask(MaskSource::RunUser) => "masked: the user's runtime folder /run/user/$UID",
            Rule::DeviceGrant => "a device grant",
            Rule::SocketGrant => "a socket grant",
            Rule::BusFilterGrant => "a bus_filter grant: the call's filtered bus socket",
            Rule::BusGrant => "a bus grant: the user's real bus socket",
            Rule::DesktopGrant => "a desktop grant: the control socket of the prompt terminal's desktop",
            Rule::Protected(ProtectedSource::GitDir) => {
                "a git folder in a writable root: writable, but it cannot be moved, replaced or removed"
            }
            Rule::Protected(ProtectedSource::GitFile) => {
                "read-only: a .git file in a writable root, which says where git's folder is"
            }
            Rule::Protected(ProtectedSource::GitCommonDir) => {
                "read-only: a worktree's commondir file, which says where git's configuration is"
            }
            Rule::Protected(ProtectedSource::GitConfig) => {
                "read-only: git's configuration in a writable root, whose commands git runs outside the sandbox"
            }
            Rule::Protected(ProtectedSource::GitHooks) => {
                "read-only: git's hooks in a writable root, which run outside the sandbox"
            }
            Rule::Protected(ProtectedSource::EfrRoots) => {
                "read-only: the folder in a writable root that holds efr's own roots, so it cannot be moved or replaced"
            }
        })
    }
}

/// One mount of the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The path inside the sandbox (the same as the host path: the sandbox keeps the host's layout).
    pub path: PathBuf,
    /// What the mount does.
    pub kind: MountKind,
    /// Why it is there.
    pub rule: Rule,
    /// The host path when it is not `path` (a [`MountKind::BusSocket`]).
    pub source: Option<PathBuf>,
}

impl Mount {
    fn new(path: impl Into<PathBuf>, kind: MountKind, rule: Rule) -> Self {
        Self {
            path: path.into(),
            kind,
            rule,
            source: None,
        }
    }
}

impl LaunchPlan {
    /// The plan's mounts in the order of the module docs. Unmasked masks are left out, and a mount that repeats an
    /// earlier one (same path, same kind) appears once.
    ///
    /// # Errors
    ///
    /// The plan's [`PlanError`] when it does not pass [`LaunchPlan::validate`].
    pub fn mounts(&self) -> Result<Vec<Mount>, PlanError> {
        self.validate()?;
        let mut mounts = vec![
            Mount::new("/", MountKind::RootReadOnly, Rule::Root),
            Mount::new("/dev", MountKind::Dev, Rule::FreshDev),
            Mount::new("/dev/shm", MountKind::SharedMemory, Rule::PrivateShm),
            Mount::new("/proc", MountKind::Proc, Rule::FreshProc),
            Mount::new("/tmp", MountKind::Tmp, Rule::PrivateTmp),
        ];
        let unmasked: HashSet<&Path> = self
            .grants
            .iter()
            .filter_map(|grant| match grant {
                Grant::Unmask { path } => Some(path.as_path()),
                _ => None,
            })
            .collect();
        let mut rest = Vec::new();
        for writable in &self.writable {
            let rule = match writable.source {
                WritableSource::Project => Rule::Project,
                WritableSource::Scratch => Rule::Scratch,
            };
            rest.push(Mount::new(&writable.path, MountKind::Writable, rule));
        }
        for root in &self.read_only_roots {
            rest.push(Mount::new(
                root,
                MountKind::ReadOnly(IfMissing::Nothing),
                Rule::ReadOnlyRoot,
            ));
        }
        for grant in &self.grants {
            match grant {
                Grant::Write { path } => rest.push(Mount::new(path, MountKind::Writable, Rule::WriteGrant)),
                Grant::Device { path } => rest.push(Mount::new(path, MountKind::Device, Rule::DeviceGrant)),
                Grant::Socket { path } => rest.push(Mount::new(path, MountKind::Socket, Rule::SocketGrant)),
                _ => {}
            }
        }
        for socket in &self.bus_sockets {
            let rule = if self.grants.contains(&Grant::Bus { bus: socket.bus }) {
                Rule::BusGrant
            } else {
                Rule::BusFilterGrant
            };
            let mut mount = Mount::new(&socket.path, MountKind::BusSocket, rule);
            mount.source = Some(socket.socket.clone());
            rest.push(mount);
        }
        for socket in &self.desktop_sockets {
            rest.push(Mount::new(&socket.path, MountKind::Socket, Rule::DesktopGrant));
        }
        for protected in &self.protected {
            rest.push(Mount::new(
                &protected.path,
                protected_kind(protected.source),
                Rule::Protected(protected.source),
            ));
        }
        for mask in &self.masks {
            if !unmasked.contains(mask.path.as_path()) {
                rest.push(Mount::new(&mask.path, MountKind::Mask, Rule::Mask(mask.source)));
            }
        }
        // Stable: at equal depth and class, the plan's own order stays.
        rest.sort_by_key(|mount| (mount.path.components().count(), class(mount.kind)));
        let mut seen = HashSet::new();
        rest.retain(|mount| seen.insert((mount.path.clone(), mount.kind)));
        mounts.extend(rest);
        Ok(mounts)
    }
}

/// What the sandbox does at a protected path (the table of [`ProtectedSource`]).
fn protected_kind(source: ProtectedSource) -> MountKind {
    match source {
        ProtectedSource::GitDir => MountKind::Pinned,
        ProtectedSource::GitFile | ProtectedSource::GitCommonDir => MountKind::ReadOnly(IfMissing::Nothing),
        ProtectedSource::GitConfig => MountKind::ReadOnly(IfMissing::EmptyFile),
        ProtectedSource::GitHooks | ProtectedSource::EfrRoots => MountKind::ReadOnly(IfMissing::EmptyFolder),
    }
}

/// The order of kinds at equal depth: writable binds, then pins and read-only protected paths (protection wins over
/// a `write` grant of the same path), then masks (a mask wins over both), then the grants that show one node.
fn class(kind: MountKind) -> u8 {
    match kind {
        MountKind::RootReadOnly | MountKind::Dev | MountKind::SharedMemory | MountKind::Proc | MountKind::Tmp => 0,
        MountKind::Writable => 1,
        MountKind::Pinned => 2,
        MountKind::ReadOnly(_) => 3,
        MountKind::Mask => 4,
        MountKind::Device | MountKind::Socket | MountKind::BusSocket => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::internal::launch::{Mask, Protected, Writable};

    fn paths(mounts: &[Mount]) -> Vec<(&str, MountKind)> {
        mounts.iter().map(|m| (m.path.to_str().unwrap(), m.kind)).collect()
    }

    #[test]
    fn the_deepest_rule_comes_last() {
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/home/u");
        plan.writable.push(Writable {
            path: "/home/u/.local/state/efr/scratch/c1".into(),
            source: WritableSource::Scratch,
        });
        plan.writable.push(Writable {
            path: "/home/u".into(),
            source: WritableSource::Project,
        });
        plan.masks.push(Mask {
            path: "/home/u/.local/state/efr".into(),
            source: MaskSource::EfrRoot,
        });
        plan.masks.push(Mask {
            path: "/home/u/.ssh".into(),
            source: MaskSource::Default,
        });
        plan.masks.push(Mask {
            path: "/run/user/1000".into(),
            source: MaskSource::RunUser,
        });
        plan.grants.push(Grant::Socket {
            path: "/run/user/1000/bus".into(),
        });
        plan.grants.push(Grant::Device {
            path: "/dev/kvm".into(),
        });
        plan.grants.push(Grant::Write { path: "/home/u".into() });
        let mounts = plan.mounts().unwrap();
        assert_eq!(
            paths(&mounts),
            vec![
                ("/", MountKind::RootReadOnly),
                ("/dev", MountKind::Dev),
                ("/dev/shm", MountKind::SharedMemory),
                ("/proc", MountKind::Proc),
                ("/tmp", MountKind::Tmp),
                ("/home/u", MountKind::Writable),
                ("/dev/kvm", MountKind::Device),
                ("/home/u/.ssh", MountKind::Mask),
                ("/run/user/1000", MountKind::Mask),
                ("/run/user/1000/bus", MountKind::Socket),
                ("/home/u/.local/state/efr", MountKind::Mask),
                ("/home/u/.local/state/efr/scratch/c1", MountKind::Writable),
            ]
        );
        // The project root's rule stays the first one that named it.
        assert_eq!(mounts[5].rule, Rule::Project);
        assert_eq!(mounts[2].rule.to_string(), "the sandbox has a private /dev/shm");
    }

    #[test]
    fn a_mask_wins_over_a_bind_of_the_same_path_and_unmask_lifts_it() {
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/");
        plan.masks.push(Mask {
            path: "/home/u/.aws".into(),
            source: MaskSource::Default,
        });
        plan.grants.push(Grant::Write {
            path: "/home/u/.aws".into(),
        });
        // A write grant inside a mask that no unmask grant opens is refused, never laid out.
        assert!(plan.mounts().is_err());
        plan.grants.push(Grant::Unmask {
            path: "/home/u/.aws".into(),
        });
        let mounts = plan.mounts().unwrap();
        assert_eq!(mounts.last().unwrap().kind, MountKind::Writable);
        assert!(!mounts.iter().any(|m| m.kind == MountKind::Mask));
    }

    #[test]
    fn protected_paths_come_after_their_writable_root_and_before_deeper_masks() {
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/var/tmp");
        plan.writable.push(Writable {
            path: "/var/tmp".into(),
            source: WritableSource::Project,
        });
        plan.writable.push(Writable {
            path: "/var/tmp/efr/state/scratch/c1".into(),
            source: WritableSource::Scratch,
        });
        plan.masks.push(Mask {
            path: "/var/tmp/efr/state".into(),
            source: MaskSource::EfrRoot,
        });
        for (path, source) in [
            ("/var/tmp/.git/hooks", ProtectedSource::GitHooks),
            ("/var/tmp/.git/config", ProtectedSource::GitConfig),
            ("/var/tmp/.git", ProtectedSource::GitDir),
            ("/var/tmp/efr", ProtectedSource::EfrRoots),
        ] {
            plan.protected.push(Protected {
                path: path.into(),
                source,
            });
        }
        let mounts = plan.mounts().unwrap();
        assert_eq!(
            paths(&mounts[5..]),
            vec![
                ("/var/tmp", MountKind::Writable),
                ("/var/tmp/.git", MountKind::Pinned),
                ("/var/tmp/efr", MountKind::ReadOnly(IfMissing::EmptyFolder)),
                ("/var/tmp/.git/hooks", MountKind::ReadOnly(IfMissing::EmptyFolder)),
                ("/var/tmp/.git/config", MountKind::ReadOnly(IfMissing::EmptyFile)),
                ("/var/tmp/efr/state", MountKind::Mask),
                ("/var/tmp/efr/state/scratch/c1", MountKind::Writable),
            ]
        );
        assert_eq!(mounts[7].rule, Rule::Protected(ProtectedSource::EfrRoots));
        assert!(mounts[7].rule.to_string().starts_with("read-only: "));
        // A write grant of a protected path is refused: it cannot lift the protection.
        plan.grants.push(Grant::Write {
            path: "/var/tmp/.git/hooks".into(),
        });
        assert!(plan.mounts().is_err());
    }

    #[test]
    fn a_bad_plan_has_no_mounts() {
        let plan = LaunchPlan::new("bwrap", vec!["true".into()], "/");
        assert!(matches!(plan.mounts(), Err(PlanError::NotAbsolute { .. })));
    }
}
