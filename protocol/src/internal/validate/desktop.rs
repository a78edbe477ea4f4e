//! The desktop and bus rules of a plan: a `desktop` grant binds the control sockets of its desktop that
//! `desktop_sockets` names, and a whole-`bus` grant binds the real bus socket that `bus_sockets` names (the module
//! docs of [`crate::internal::launch`], "Rules"; docs/protocol.md, "The contract": "desktop grants").

use crate::internal::launch::LaunchPlan;
use crate::wire::{Bus, DesktopKind, Grant};

use super::{PlanError, check_path};

/// Each desktop socket is absolute and normal and goes with a `desktop` grant of its desktop; each `desktop` grant
/// has at least one socket of its desktop.
pub(super) fn check_desktop_sockets(plan: &LaunchPlan) -> Result<(), PlanError> {
    for socket in &plan.desktop_sockets {
        check_path("desktop socket", &socket.path)?;
        if !plan.grants.contains(&Grant::Desktop {
            desktop: socket.desktop,
        }) {
            return Err(PlanError::RefusedGrant {
                kind: "desktop",
                reason: "a socket in desktop_sockets needs a desktop grant of its desktop",
            });
        }
    }
    Ok(())
}

/// The grant arm of a `desktop` grant: it needs a socket of its desktop in `desktop_sockets`.
pub(super) fn check_desktop_grant(plan: &LaunchPlan, desktop: DesktopKind) -> Result<(), PlanError> {
    if plan.desktop_sockets.iter().any(|socket| socket.desktop == desktop) {
        Ok(())
    } else {
        Err(PlanError::RefusedGrant {
            kind: "desktop",
            reason: "a desktop grant needs a socket of its desktop in desktop_sockets (the prompt's terminal named none)",
        })
    }
}

/// The grant arm of a whole-`bus` grant: exactly one bus socket of its bus, and no `bus_filter` grant of the same
/// bus (the filter and the real bus cannot share the bus's address inside).
pub(super) fn check_bus_grant(plan: &LaunchPlan, bus: Bus) -> Result<(), PlanError> {
    if plan.grants.contains(&Grant::BusFilter { bus }) {
        return Err(PlanError::RefusedGrant {
            kind: "bus",
            reason: "a bus grant and a bus_filter grant of the same bus exclude each other",
        });
    }
    if plan.bus_sockets.iter().filter(|socket| socket.bus == bus).count() != 1 {
        return Err(PlanError::RefusedGrant {
            kind: "bus",
            reason: "a bus grant needs exactly one bus socket of its bus in bus_sockets",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::internal::launch::{BusSocket, DesktopSocket};
    use crate::internal::{MountKind, Rule};

    fn plan() -> LaunchPlan {
        LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/work")
    }

    fn wayland() -> DesktopSocket {
        DesktopSocket {
            desktop: DesktopKind::Wayland,
            path: "/run/user/1000/wayland-0".into(),
        }
    }

    #[test]
    fn a_desktop_grant_goes_with_a_socket_of_its_desktop() {
        let grant = Grant::Desktop {
            desktop: DesktopKind::Wayland,
        };
        let mut p = plan();
        p.grants.push(grant.clone());
        let err = p.validate().unwrap_err();
        assert!(matches!(err, PlanError::RefusedGrant { kind: "desktop", .. }), "{err}");
        // A socket of another desktop is no help, and is refused on its own.
        p.desktop_sockets.push(DesktopSocket {
            desktop: DesktopKind::Sway,
            path: "/run/user/1000/sway-ipc.sock".into(),
        });
        assert!(matches!(
            p.validate(),
            Err(PlanError::RefusedGrant { kind: "desktop", .. })
        ));
        p.desktop_sockets = vec![wayland()];
        assert_eq!(p.validate(), Ok(()));
        let mounts = p.mounts().unwrap();
        let bound = mounts.iter().find(|m| m.rule == Rule::DesktopGrant).unwrap();
        assert_eq!(bound.kind, MountKind::Socket);
        assert_eq!(bound.path, wayland().path);
        // A socket without its grant, and a relative path, are refused.
        p.grants.clear();
        assert!(matches!(
            p.validate(),
            Err(PlanError::RefusedGrant { kind: "desktop", .. })
        ));
        p.grants.push(grant);
        p.desktop_sockets[0].path = "wayland-0".into();
        assert!(matches!(p.validate(), Err(PlanError::NotAbsolute { .. })));
    }

    #[test]
    fn a_bus_grant_binds_one_real_socket_and_never_with_the_filter() {
        let real = BusSocket {
            bus: Bus::Session,
            socket: "/run/user/1000/bus".into(),
            path: "/run/user/1000/bus".into(),
        };
        let mut p = plan();
        p.grants.push(Grant::Bus { bus: Bus::Session });
        assert!(matches!(p.validate(), Err(PlanError::RefusedGrant { kind: "bus", .. })));
        p.bus_sockets.push(real.clone());
        assert_eq!(p.validate(), Ok(()));
        let mounts = p.mounts().unwrap();
        let bound = mounts.iter().find(|m| m.kind == MountKind::BusSocket).unwrap();
        assert_eq!(bound.rule, Rule::BusGrant);
        p.grants.push(Grant::BusFilter { bus: Bus::Session });
        assert!(matches!(p.validate(), Err(PlanError::RefusedGrant { kind: "bus", .. })));
        p.grants.remove(1);
        p.bus_sockets.push(real);
        assert!(matches!(p.validate(), Err(PlanError::RefusedGrant { kind: "bus", .. })));
    }
}
