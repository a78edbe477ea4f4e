//! What the outer stage tells the inner stage ([`InnerSpec`]) and what the inner stage answers ([`InnerStatus`]).
//!
//! Both travel on pipes that only the two stages hold: the spec on a pipe the inner stage reads to its end, the
//! status as JSON lines on a pipe that closes when the command execs (close-on-exec), so the command can neither read
//! the plan nor write a status of its own.

use std::path::PathBuf;

use efr_protocol::internal::{LaunchCommand, LaunchPlan, MountKind, Network, PlanError, Rlimit};
use serde::{Deserialize, Serialize};

use crate::cover::Unshared;

/// The inner stage's part of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InnerSpec {
    /// What to exec.
    pub command: LaunchCommand,
    /// The network the call sees (decides the socket families and whether the Landlock scope is required).
    pub network: Network,
    /// The paths Landlock lets the command write: the writable mounts, the private `/tmp` and `/dev/shm`.
    pub writable: Vec<PathBuf>,
    /// Granted device nodes (read and write).
    pub devices: Vec<PathBuf>,
    /// Resource limits.
    pub rlimits: Vec<Rlimit>,
    /// Landlock and seccomp alone, without bubblewrap ([`crate::unshared`]): what the call may read and where it
    /// may write. `None` inside bubblewrap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unshared: Option<Unshared>,
}

impl InnerSpec {
    /// The inner part of `plan`.
    ///
    /// # Errors
    ///
    /// The plan's [`PlanError`] when it does not pass [`LaunchPlan::validate`].
    pub fn from_plan(plan: &LaunchPlan) -> Result<Self, PlanError> {
        let mounts = plan.mounts()?;
        let of_kind = |kind: MountKind| -> Vec<PathBuf> {
            mounts
                .iter()
                .filter(|m| m.kind == kind)
                .map(|m| m.path.clone())
                .collect()
        };
        // Pins need no rule of their own: they lie inside a writable root (a plan rule), whose rule covers them.
        let mut writable = of_kind(MountKind::Tmp);
        writable.extend(of_kind(MountKind::SharedMemory));
        writable.extend(of_kind(MountKind::Writable));
        Ok(Self {
            command: plan.command.clone(),
            network: plan.network(),
            writable,
            devices: of_kind(MountKind::Device),
            rlimits: plan.rlimits.clone(),
            unshared: None,
        })
    }
}

/// One line of the inner stage's status pipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InnerStatus {
    /// The sandbox is complete; the command execs next.
    Ready {
        /// The Landlock ABI in force.
        landlock_abi: u32,
        /// Abstract Unix sockets and signals are scoped.
        scoped: bool,
    },
    /// The inner stage refused to run the command; nothing ran.
    Refused {
        /// Why.
        message: String,
    },
    /// The exec failed (after `ready`).
    ExecFailed {
        /// The error.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use efr_protocol::internal::{Mask, MaskSource, Writable, WritableSource};
    use efr_protocol::wire::Grant;

    use super::*;

    #[test]
    fn the_spec_takes_writable_mounts_devices_and_the_network() {
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/p");
        plan.writable.push(Writable {
            path: "/p".into(),
            source: WritableSource::Project,
        });
        plan.masks.push(Mask {
            path: "/home/u/.ssh".into(),
            source: MaskSource::Default,
        });
        plan.grants.push(Grant::Write {
            path: "/home/u/.cache".into(),
        });
        plan.grants.push(Grant::Device {
            path: "/dev/kvm".into(),
        });
        plan.grants.push(Grant::OpenNetwork);
        let spec = InnerSpec::from_plan(&plan).unwrap();
        assert_eq!(
            spec.writable,
            [
                PathBuf::from("/tmp"),
                "/dev/shm".into(),
                "/p".into(),
                "/home/u/.cache".into()
            ]
        );
        assert_eq!(spec.devices, [PathBuf::from("/dev/kvm")]);
        assert_eq!(spec.network, Network::OpenNetwork);
        let line = serde_json::to_string(&InnerStatus::Ready {
            landlock_abi: 6,
            scoped: true,
        })
        .unwrap();
        assert_eq!(line, r#"{"kind":"ready","landlock_abi":6,"scoped":true}"#);
    }
}
