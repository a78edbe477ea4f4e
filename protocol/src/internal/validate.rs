//! The rules of a launch plan ([`LaunchPlan::validate`]) and why a plan is refused ([`PlanError`]).
//!
//! The rules are listed in [`crate::internal::launch`]'s module docs. The launcher checks them before anything
//! runs; efrd's `sandbox.explain` checks them before it reads the mounts. The rules of the proxy and the `host`
//! grants are in its `network` part.

mod desktop;
mod network;

use std::path::{Component, Path};

use crate::internal::error::{MAX_EXEC_STRING, PlanError};
use crate::internal::launch::{Containment, LaunchCommand, LaunchPlan, ProtectedSource, ReportTo};
use crate::wire::Grant;

impl LaunchPlan {
    /// Checks the rules of the module docs.
    ///
    /// # Errors
    ///
    /// The first rule the plan breaks, as a [`PlanError`].
    pub fn validate(&self) -> Result<(), PlanError> {
        check_path("bwrap path", &self.bwrap)?;
        check_path("working directory", &self.cwd)?;
        match &self.command {
            LaunchCommand::Argv { argv } => {
                if argv.is_empty() {
                    return Err(PlanError::EmptyArgv);
                }
                if argv.iter().any(|arg| arg.contains('\0')) {
                    return Err(PlanError::Nul { what: "argv" });
                }
                if let Some(arg) = argv.iter().find(|arg| arg.len() > MAX_EXEC_STRING) {
                    return Err(PlanError::TooLong {
                        what: "argument".into(),
                        bytes: arg.len(),
                    });
                }
            }
            LaunchCommand::Shell { shell, line } => {
                check_path("shell", shell)?;
                if line.contains('\0') {
                    return Err(PlanError::Nul { what: "command line" });
                }
                if line.len() > MAX_EXEC_STRING {
                    return Err(PlanError::TooLong {
                        what: "command line".into(),
                        bytes: line.len(),
                    });
                }
            }
        }
        for (name, value) in &self.env {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(PlanError::BadEnvName { name: name.clone() });
            }
            if value.contains('\0') {
                return Err(PlanError::Nul { what: "environment" });
            }
            let bytes = name.len() + 1 + value.len();
            if bytes > MAX_EXEC_STRING {
                return Err(PlanError::TooLong {
                    what: format!("environment variable {name}"),
                    bytes,
                });
            }
        }
        for writable in &self.writable {
            check_writable("writable root", &writable.path)?;
        }
        if self.containment == Containment::Landlock
            && !(self.writable.is_empty()
                && self.grants.is_empty()
                && self.proxy.is_none()
                && self.bus_sockets.is_empty()
                && self.desktop_sockets.is_empty())
        {
            return Err(PlanError::RefusedGrant {
                kind: "containment",
                reason: "Landlock-only containment runs read-only calls: no writable root, grant, proxy or socket",
            });
        }
        for root in &self.read_only_roots {
            check_path("read-only root", root)?;
            if root == Path::new("/tmp") || !root.starts_with("/tmp") {
                return Err(PlanError::ProtectedForbidden {
                    path: root.clone(),
                    reason: "a read-only root is a folder under the private /tmp",
                });
            }
        }
        for mask in &self.masks {
            check_path("mask", &mask.path)?;
            if mask.path == Path::new("/") {
                return Err(PlanError::MaskForbidden {
                    path: mask.path.clone(),
                    reason: "it is the whole file system",
                });
            }
        }
        self.validate_grants()?;
        for socket in &self.bus_sockets {
            check_path("bus socket", &socket.socket)?;
            check_path("bus socket", &socket.path)?;
            if !self.grants.contains(&Grant::BusFilter { bus: socket.bus })
                && !self.grants.contains(&Grant::Bus { bus: socket.bus })
            {
                return Err(PlanError::RefusedGrant {
                    kind: "bus_filter",
                    reason: "a bus socket in bus_sockets needs a bus_filter or bus grant of its bus",
                });
            }
        }
        desktop::check_desktop_sockets(self)?;
        self.validate_protected()?;
        for limit in &self.rlimits {
            if limit.soft > limit.hard {
                return Err(PlanError::BadRlimit {
                    resource: limit.resource,
                    soft: limit.soft,
                    hard: limit.hard,
                });
            }
        }
        match &self.report {
            ReportTo::Stderr => {}
            ReportTo::Fd { fd } if *fd < 3 => return Err(PlanError::BadReportFd { fd: *fd }),
            ReportTo::Fd { .. } => {}
            ReportTo::File { path } => check_path("report file", path)?,
        }
        Ok(())
    }

    fn validate_protected(&self) -> Result<(), PlanError> {
        let roots: Vec<&Path> = self
            .writable
            .iter()
            .map(|writable| writable.path.as_path())
            .chain(self.grants.iter().filter_map(|grant| match grant {
                Grant::Write { path } => Some(path.as_path()),
                _ => None,
            }))
            .collect();
        for protected in &self.protected {
            let path = protected.path.as_path();
            check_path("protected path", path)?;
            if path == Path::new("/") {
                return Err(PlanError::ProtectedForbidden {
                    path: path.to_path_buf(),
                    reason: "it is the whole file system",
                });
            }
            // A pin is a writable bind: outside a writable root it would open a path the plan does not make writable.
            let inside = roots.iter().any(|root| path != *root && path.starts_with(root));
            if protected.source == ProtectedSource::GitDir && !inside {
                return Err(PlanError::ProtectedForbidden {
                    path: path.to_path_buf(),
                    reason: "a git folder is pinned only inside a writable root",
                });
            }
        }
        self.validate_write_grants()
    }

    /// A `write` grant is never inside what the plan protects: git's config, hooks, `.git` file or `commondir` (git
    /// outside the sandbox runs what they name), a path protected as itself, or a mask that no `unmask` grant opens
    /// (a credential store). The plan is the one place every caller goes through, so no caller can open one.
    fn validate_write_grants(&self) -> Result<(), PlanError> {
        for grant in &self.grants {
            let Grant::Write { path } = grant else { continue };
            for protected in &self.protected {
                let inside = match protected.source {
                    ProtectedSource::GitConfig
                    | ProtectedSource::GitHooks
                    | ProtectedSource::GitFile
                    | ProtectedSource::GitCommonDir => path.starts_with(&protected.path),
                    ProtectedSource::GitDir | ProtectedSource::EfrRoots => path == &protected.path,
                };
                if inside {
                    return Err(PlanError::ProtectedForbidden {
                        path: path.clone(),
                        reason: "a write grant inside a protected path (git's config or hooks, efr's roots)",
                    });
                }
            }
            let masked = self.masks.iter().find(|mask| path.starts_with(&mask.path));
            if let Some(mask) = masked
                && !self.grants.contains(&Grant::Unmask {
                    path: mask.path.clone(),
                })
            {
                return Err(PlanError::WritableForbidden {
                    path: path.clone(),
                    reason: "a write grant inside a masked path that no unmask grant opens",
                });
            }
        }
        Ok(())
    }

    fn validate_grants(&self) -> Result<(), PlanError> {
        for grant in &self.grants {
            match grant {
                Grant::Write { path } => check_writable("write grant", path)?,
                Grant::Device { path } => {
                    check_path("device grant", path)?;
                    if !path.starts_with("/dev") || path == Path::new("/dev") {
                        return Err(PlanError::WritableForbidden {
                            path: path.clone(),
                            reason: "a device grant names a node under /dev",
                        });
                    }
                    // The call has a private /dev/shm already; a grant would bind the host's, with other programs'
                    // shared memory in it.
                    if path.starts_with("/dev/shm") {
                        return Err(PlanError::WritableForbidden {
                            path: path.clone(),
                            reason: "the sandbox has its own /dev/shm; the host's shared memory is never granted",
                        });
                    }
                }
                Grant::Socket { path } => check_path("socket grant", path)?,
                Grant::Unmask { path } => {
                    check_path("unmask grant", path)?;
                    if !self.masks.iter().any(|mask| &mask.path == path) {
                        return Err(PlanError::UnmaskNotMasked { path: path.clone() });
                    }
                }
                Grant::NetView | Grant::OpenNetwork => {}
                Grant::Host { host, port } => network::check_host_grant(host, *port)?,
                Grant::Bus { bus } => desktop::check_bus_grant(self, *bus)?,
                Grant::BusFilter { bus } => {
                    if self.bus_sockets.iter().filter(|socket| socket.bus == *bus).count() != 1 {
                        return Err(PlanError::RefusedGrant {
                            kind: "bus_filter",
                            reason: "a bus_filter grant needs exactly one bus socket of its bus in bus_sockets",
                        });
                    }
                }
                Grant::Desktop { desktop } => desktop::check_desktop_grant(self, *desktop)?,
                Grant::Unknown => {
                    return Err(PlanError::RefusedGrant {
                        kind: "unknown",
                        reason: "this launcher does not know the grant's kind",
                    });
                }
            }
        }
        if self.grants.contains(&Grant::NetView) && self.grants.contains(&Grant::OpenNetwork) {
            return Err(PlanError::NetworkConflict);
        }
        network::check_proxy(self)
    }
}

/// Absolute, normal, no NUL.
fn check_path(what: &'static str, path: &Path) -> Result<(), PlanError> {
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(PlanError::Nul { what });
    }
    if !path.is_absolute() {
        return Err(PlanError::NotAbsolute {
            what,
            path: path.to_path_buf(),
        });
    }
    if path
        .components()
        .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
    {
        return Err(PlanError::NotNormal {
            what,
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

/// A path that may be made writable: not `/`, nothing under the fresh `/proc` and `/dev`.
fn check_writable(what: &'static str, path: &Path) -> Result<(), PlanError> {
    check_path(what, path)?;
    let reason = if path == Path::new("/") {
        "it is the whole file system"
    } else if path.starts_with("/proc") {
        "the sandbox has its own /proc"
    } else if path.starts_with("/dev") {
        "the sandbox has its own /dev; a device comes with a device grant"
    } else {
        return Ok(());
    };
    Err(PlanError::WritableForbidden {
        path: path.to_path_buf(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::internal::launch::{
        Mask, MaskSource, Network, Protected, Rlimit, RlimitResource, Writable, WritableSource,
    };
    use crate::wire::{Bus, DesktopKind};

    fn plan() -> LaunchPlan {
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/work");
        plan.masks.push(Mask {
            path: "/home/u/.ssh".into(),
            source: MaskSource::Default,
        });
        plan
    }

    #[test]
    fn a_plain_plan_passes_and_round_trips() {
        let mut plan = plan();
        plan.env.insert("HOME".into(), "/home/u".into());
        plan.writable.push(Writable {
            path: "/work".into(),
            source: WritableSource::Project,
        });
        plan.grants.push(Grant::Unmask {
            path: "/home/u/.ssh".into(),
        });
        plan.rlimits.push(Rlimit {
            resource: RlimitResource::Nofile,
            soft: 10,
            hard: 10,
        });
        plan.report = ReportTo::Fd { fd: 4 };
        plan.validate().unwrap();
        let json = serde_json::to_string(&plan).unwrap();
        assert_eq!(serde_json::from_str::<LaunchPlan>(&json).unwrap(), plan);
    }

    #[test]
    fn a_write_grant_inside_a_protected_path_or_a_closed_mask_is_refused() {
        let protected = |path: &str, source| crate::internal::launch::Protected {
            path: path.into(),
            source,
        };
        let with = |grant: &str| {
            let mut p = plan();
            p.writable.push(Writable {
                path: "/work".into(),
                source: WritableSource::Project,
            });
            p.protected = vec![
                protected("/work/.git", ProtectedSource::GitDir),
                protected("/work/.git/hooks", ProtectedSource::GitHooks),
                protected("/work/.git/config", ProtectedSource::GitConfig),
                protected("/home/u/.config/efr", ProtectedSource::EfrRoots),
            ];
            p.grants.push(Grant::Write { path: grant.into() });
            p.validate()
        };
        for refused in [
            "/work/.git/hooks",
            "/work/.git/hooks/pre-push",
            "/work/.git/config",
            "/home/u/.config/efr",
        ] {
            assert!(
                matches!(with(refused), Err(PlanError::ProtectedForbidden { .. })),
                "{refused}"
            );
        }
        assert!(matches!(
            with("/home/u/.ssh/keys"),
            Err(PlanError::WritableForbidden { .. })
        ));
        assert_eq!(with("/work/.git/objects"), Ok(()));
        assert_eq!(with("/home/u/notes"), Ok(()));
    }

    #[test]
    fn a_bus_filter_grant_goes_with_one_bus_socket_of_its_bus() {
        let socket = |bus| crate::internal::launch::BusSocket {
            bus,
            socket: "/run/user/1000/efr/bus/bus-1.sock".into(),
            path: "/run/user/1000/bus".into(),
        };
        let mut p = plan();
        p.grants.push(Grant::BusFilter { bus: Bus::Session });
        assert!(matches!(
            p.validate(),
            Err(PlanError::RefusedGrant { kind: "bus_filter", .. })
        ));
        p.bus_sockets.push(socket(Bus::System));
        assert!(matches!(
            p.validate(),
            Err(PlanError::RefusedGrant { kind: "bus_filter", .. })
        ));
        p.bus_sockets = vec![socket(Bus::Session)];
        assert_eq!(p.validate(), Ok(()));
        let mounts = p.mounts().unwrap();
        let bound = mounts
            .iter()
            .find(|m| m.kind == crate::internal::MountKind::BusSocket)
            .unwrap();
        assert_eq!(bound.path, Path::new("/run/user/1000/bus"));
        assert_eq!(
            bound.source.as_deref(),
            Some(Path::new("/run/user/1000/efr/bus/bus-1.sock"))
        );
        p.grants.clear();
        assert!(matches!(
            p.validate(),
            Err(PlanError::RefusedGrant { kind: "bus_filter", .. })
        ));
    }

    #[test]
    fn unknown_members_are_refused() {
        let err = serde_json::from_str::<LaunchPlan>(
            r#"{"bwrap":"/b","command":{"kind":"argv","argv":["x"]},"cwd":"/","writeable":[]}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("writeable"), "{err}");
    }

    #[test]
    fn paths_must_be_absolute_and_normal() {
        let mut bad = plan();
        bad.cwd = "work".into();
        assert!(matches!(
            bad.validate(),
            Err(PlanError::NotAbsolute {
                what: "working directory",
                ..
            })
        ));
        let mut bad = plan();
        bad.writable.push(Writable {
            path: "/work/../etc".into(),
            source: WritableSource::Project,
        });
        assert!(matches!(
            bad.validate(),
            Err(PlanError::NotNormal {
                what: "writable root",
                ..
            })
        ));
        let mut bad = plan();
        bad.bwrap = "/usr/bin/bw\0rap".into();
        assert_eq!(bad.validate(), Err(PlanError::Nul { what: "bwrap path" }));
        let mut bad = plan();
        bad.report = ReportTo::File { path: "report".into() };
        assert!(matches!(
            bad.validate(),
            Err(PlanError::NotAbsolute {
                what: "report file",
                ..
            })
        ));
    }

    #[test]
    fn commands_and_env_are_checked() {
        let mut bad = plan();
        bad.command = LaunchCommand::Argv { argv: vec![] };
        assert_eq!(bad.validate(), Err(PlanError::EmptyArgv));
        let mut bad = plan();
        bad.command = LaunchCommand::Argv {
            argv: vec!["a\0b".into()],
        };
        assert_eq!(bad.validate(), Err(PlanError::Nul { what: "argv" }));
        let mut bad = plan();
        bad.command = LaunchCommand::Shell {
            shell: "bash".into(),
            line: "true".into(),
        };
        assert!(matches!(
            bad.validate(),
            Err(PlanError::NotAbsolute { what: "shell", .. })
        ));
        let mut bad = plan();
        bad.command = LaunchCommand::Shell {
            shell: "/bin/bash".into(),
            line: "a\0".into(),
        };
        assert_eq!(bad.validate(), Err(PlanError::Nul { what: "command line" }));
        let mut bad = plan();
        bad.env.insert("A=B".into(), "x".into());
        assert_eq!(bad.validate(), Err(PlanError::BadEnvName { name: "A=B".into() }));
        let mut bad = plan();
        bad.env.insert(String::new(), "x".into());
        assert!(matches!(bad.validate(), Err(PlanError::BadEnvName { .. })));
        let mut bad = plan();
        bad.env.insert("A".into(), "x\0".into());
        assert_eq!(bad.validate(), Err(PlanError::Nul { what: "environment" }));
        let mut bad = plan();
        bad.env.insert("BIG".into(), "x".repeat(MAX_EXEC_STRING - 3));
        assert_eq!(
            bad.validate(),
            Err(PlanError::TooLong {
                what: "environment variable BIG".into(),
                bytes: MAX_EXEC_STRING + 1
            })
        );
        bad.env.insert("BIG".into(), "x".repeat(MAX_EXEC_STRING - 4));
        bad.validate().unwrap();
        let mut bad = plan();
        bad.command = LaunchCommand::Shell {
            shell: "/bin/sh".into(),
            line: "x".repeat(MAX_EXEC_STRING + 1),
        };
        assert!(matches!(bad.validate(), Err(PlanError::TooLong { .. })));
        bad.command = LaunchCommand::Argv {
            argv: vec!["x".repeat(MAX_EXEC_STRING + 1)],
        };
        assert!(matches!(bad.validate(), Err(PlanError::TooLong { .. })));
    }

    #[test]
    fn forbidden_writable_and_masked_paths() {
        for path in ["/", "/proc/1", "/dev/sda"] {
            let mut bad = plan();
            bad.grants.push(Grant::Write { path: path.into() });
            assert!(
                matches!(bad.validate(), Err(PlanError::WritableForbidden { .. })),
                "{path}"
            );
        }
        let mut bad = plan();
        bad.masks.push(Mask {
            path: "/".into(),
            source: MaskSource::Config,
        });
        assert!(matches!(bad.validate(), Err(PlanError::MaskForbidden { .. })));
        let mut bad = plan();
        bad.grants.push(Grant::Device {
            path: "/home/u/kvm".into(),
        });
        assert!(matches!(bad.validate(), Err(PlanError::WritableForbidden { .. })));
        // The host's shared memory, or anything in it, whoever asked for it.
        for shm in ["/dev/shm", "/dev/shm/sem.lock", "/dev/shm/a/b"] {
            let mut bad = plan();
            bad.grants.push(Grant::Device { path: shm.into() });
            assert!(
                matches!(bad.validate(), Err(PlanError::WritableForbidden { .. })),
                "{shm}"
            );
        }
        let mut good = plan();
        good.grants.push(Grant::Device {
            path: "/dev/shmx".into(),
        });
        assert!(good.validate().is_ok());
    }

    #[test]
    fn read_only_roots_lie_under_tmp() {
        let mut good = plan();
        good.read_only_roots.push("/tmp/proj".into());
        assert!(good.validate().is_ok());
        for bad_root in ["/tmp", "/home/u", "/tmpx/a", "tmp/a"] {
            let mut bad = plan();
            bad.read_only_roots.push(bad_root.into());
            assert!(bad.validate().is_err(), "{bad_root}");
        }
    }

    #[test]
    fn protected_paths_are_checked() {
        let protect = |path: &str, source| {
            let mut plan = plan();
            plan.writable.push(Writable {
                path: "/work".into(),
                source: WritableSource::Project,
            });
            plan.protected.push(Protected {
                path: path.into(),
                source,
            });
            plan.validate()
        };
        protect("/work/.git", ProtectedSource::GitDir).unwrap();
        protect("/work/.git/config", ProtectedSource::GitConfig).unwrap();
        // Read-only outside a writable root changes nothing, and is allowed (a root reached through a link).
        protect("/srv/efr", ProtectedSource::EfrRoots).unwrap();
        for (path, source) in [
            ("/", ProtectedSource::GitHooks),
            ("/work", ProtectedSource::GitDir),
            ("/elsewhere/.git", ProtectedSource::GitDir),
        ] {
            assert!(
                matches!(protect(path, source), Err(PlanError::ProtectedForbidden { .. })),
                "{path}"
            );
        }
        assert!(matches!(
            protect("/work/../.git", ProtectedSource::GitDir),
            Err(PlanError::NotNormal { .. })
        ));
        // A write grant is a writable root too.
        let mut plan = plan();
        plan.grants.push(Grant::Write { path: "/srv/r".into() });
        plan.protected.push(Protected {
            path: "/srv/r/.git".into(),
            source: ProtectedSource::GitDir,
        });
        plan.validate().unwrap();
    }

    #[test]
    fn grants_without_their_sockets_or_a_known_kind_are_refused_with_a_message() {
        // Each needs its socket in the plan; without it, it is refused.
        let refused = [
            (Grant::Bus { bus: Bus::Session }, "bus"),
            (Grant::BusFilter { bus: Bus::System }, "bus_filter"),
            (
                Grant::Desktop {
                    desktop: DesktopKind::Wayland,
                },
                "desktop",
            ),
            (Grant::Unknown, "unknown"),
        ];
        for (grant, kind) in refused {
            let mut bad = plan();
            bad.grants.push(grant);
            let err = bad.validate().unwrap_err();
            assert!(
                matches!(err, PlanError::RefusedGrant { kind: k, .. } if k == kind),
                "{err}"
            );
            assert!(
                err.to_string().starts_with(&format!("the {kind} grant is refused: ")),
                "{err}"
            );
        }
    }

    #[test]
    fn network_follows_the_grants() {
        let mut plan = plan();
        assert_eq!(plan.network(), Network::None);
        plan.grants.push(Grant::NetView);
        assert_eq!(plan.network(), Network::NetView);
        plan.validate().unwrap();
        plan.grants.push(Grant::OpenNetwork);
        assert_eq!(plan.validate(), Err(PlanError::NetworkConflict));
        plan.grants.retain(|grant| grant != &Grant::NetView);
        assert_eq!(plan.network(), Network::OpenNetwork);
    }

    #[test]
    fn unmask_names_a_mask_and_limits_are_ordered() {
        let mut bad = plan();
        bad.grants.push(Grant::Unmask {
            path: "/home/u/.aws".into(),
        });
        assert_eq!(
            bad.validate(),
            Err(PlanError::UnmaskNotMasked {
                path: "/home/u/.aws".into()
            })
        );
        let mut bad = plan();
        bad.rlimits.push(Rlimit {
            resource: RlimitResource::Cpu,
            soft: 2,
            hard: 1,
        });
        assert!(matches!(bad.validate(), Err(PlanError::BadRlimit { .. })));
        let mut bad = plan();
        bad.report = ReportTo::Fd { fd: 2 };
        assert_eq!(bad.validate(), Err(PlanError::BadReportFd { fd: 2 }));
    }
}
