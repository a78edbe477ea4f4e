//! The sockets of a call's `desktop` and whole-`bus` grants, resolved into its launch plan
//! (`efr_protocol::internal::launch`, "Rules"; docs/protocol.md, "The contract": "desktop grants").
//!
//! A `desktop` grant binds the one control socket of the desktop of the prompt's terminal, from the prompt's
//! `shell_context.desktop` (the values of the six variables in the user's shell) and the user's runtime folder:
//!
//! | desktop  | socket(s)                                                        | variable inside               |
//! |----------|------------------------------------------------------------------|-------------------------------|
//! | wayland  | `$XDG_RUNTIME_DIR/$WAYLAND_DISPLAY` (or the value, when absolute) | `WAYLAND_DISPLAY`             |
//! | hyprland | `$XDG_RUNTIME_DIR/hypr/<sig>/.socket.sock` and `.socket2.sock`   | `HYPRLAND_INSTANCE_SIGNATURE` |
//! | sway     | `$SWAYSOCK`                                                      | `SWAYSOCK`                    |
//! | i3       | `$I3SOCK`                                                        | `I3SOCK`                      |
//! | niri     | `$NIRI_SOCKET`                                                   | `NIRI_SOCKET`                 |
//! | x11      | `/tmp/.X11-unix/X<n>` of a local `$DISPLAY` (`:n` or `:n.s`)      | `DISPLAY`                     |
//!
//! The X11 cookie (`$XAUTHORITY`) is not bound: the wire never carries its path, only `has_xauthority`. A whole
//! `bus` grant binds the user's real bus socket (session: the `unix:path=` of `DBUS_SESSION_BUS_ADDRESS`; system:
//! `/run/dbus/system_bus_socket`) at the bus's usual address inside. A grant whose socket cannot be found here gets
//! none, and the launcher refuses the call with a message that says so: it fails closed.

use std::path::{Component, Path, PathBuf};

use efr_protocol::internal::LaunchPlan;
use efr_protocol::internal::launch::{BusSocket, DesktopSocket};
use efr_protocol::wire::{Bus, Desktop, DesktopKind, Grant};

/// The system bus's socket, on the host and inside.
pub const SYSTEM_BUS_SOCKET: &str = "/run/dbus/system_bus_socket";

/// The sockets of a `desktop` grant of `kind` and the variable that names the desktop inside (`NAME`, value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesktopBinds {
    /// The sockets on the host, absolute; bound at the same paths inside.
    pub sockets: Vec<PathBuf>,
    /// The variable and its value, as the user's shell has it.
    pub variable: (&'static str, String),
}

/// The binds of a `desktop` grant of `kind` for the prompt terminal's `desktop` and the runtime folder `runtime`
/// (see the module docs); `None` when the shell has no such variable, or its value names no local socket (a remote
/// X display, a relative path, a name with `/` or `..`).
#[must_use]
pub fn desktop_binds(kind: DesktopKind, desktop: &Desktop, runtime: &Path) -> Option<DesktopBinds> {
    let absolute = |value: &str| {
        let path = Path::new(value);
        (path.is_absolute()
            && path
                .components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_))))
        .then(|| path.to_path_buf())
    };
    let name = |value: &str| (!value.is_empty() && !value.contains('/') && value != "." && value != "..").then_some(());
    let (sockets, variable, value) = match kind {
        DesktopKind::Wayland => {
            let value = desktop.wayland_display.clone()?;
            let socket = absolute(&value).or_else(|| name(&value).map(|()| runtime.join(&value)))?;
            (vec![socket], "WAYLAND_DISPLAY", value)
        }
        DesktopKind::Hyprland => {
            let value = desktop.hyprland_instance_signature.clone()?;
            name(&value)?;
            let folder = runtime.join("hypr").join(&value);
            let sockets = vec![folder.join(".socket.sock"), folder.join(".socket2.sock")];
            (sockets, "HYPRLAND_INSTANCE_SIGNATURE", value)
        }
        DesktopKind::Sway => {
            let value = desktop.swaysock.clone()?;
            (vec![absolute(&value)?], "SWAYSOCK", value)
        }
        DesktopKind::I3 => {
            let value = desktop.i3sock.clone()?;
            (vec![absolute(&value)?], "I3SOCK", value)
        }
        DesktopKind::Niri => {
            let value = desktop.niri_socket.clone()?;
            (vec![absolute(&value)?], "NIRI_SOCKET", value)
        }
        DesktopKind::X11 => {
            let value = desktop.display.clone()?;
            (vec![x11_socket(&value)?], "DISPLAY", value)
        }
    };
    Some(DesktopBinds {
        sockets,
        variable: (variable, value),
    })
}

/// The socket of a local X display `:n` or `:n.s` (`unix:n` too); `None` for a display on another host.
fn x11_socket(display: &str) -> Option<PathBuf> {
    let local = display.strip_prefix("unix:").or_else(|| display.strip_prefix(':'))?;
    let number = local.split_once('.').map_or(local, |(number, _)| number);
    (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
        .then(|| PathBuf::from(format!("/tmp/.X11-unix/X{number}")))
}

/// The host socket of a D-Bus address's first `unix:path=` entry; `None` for another transport or an abstract
/// socket (which a contained call's own network namespace cannot reach).
#[must_use]
pub fn bus_address_path(address: &str) -> Option<PathBuf> {
    address.split(';').find_map(|entry| {
        let keys = entry.strip_prefix("unix:")?;
        keys.split(',')
            .find_map(|key| key.strip_prefix("path="))
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    })
}

/// Adds the sockets (and the variables that name them inside) of the plan's `desktop` and whole-`bus` grants:
/// `desktop` from the prompt terminal's desktop, `session_bus` from the user's `DBUS_SESSION_BUS_ADDRESS`. A grant
/// it cannot resolve gets no socket, so the launcher refuses the call (see the module docs).
pub fn resolve(plan: &mut LaunchPlan, desktop: Option<&Desktop>, runtime: &Path, session_bus: Option<&str>) {
    for grant in plan.grants.clone() {
        match grant {
            Grant::Desktop { desktop: kind } => {
                let Some(binds) = desktop.and_then(|desktop| desktop_binds(kind, desktop, runtime)) else {
                    continue;
                };
                plan.desktop_sockets.extend(
                    binds
                        .sockets
                        .into_iter()
                        .map(|path| DesktopSocket { desktop: kind, path }),
                );
                let (name, value) = binds.variable;
                plan.env.insert(name.to_owned(), value);
            }
            Grant::Bus { bus: Bus::Session } => {
                let Some(socket) = session_bus.and_then(bus_address_path) else {
                    continue;
                };
                let inside = runtime.join("bus");
                plan.env.insert(
                    "DBUS_SESSION_BUS_ADDRESS".into(),
                    format!("unix:path={}", inside.display()),
                );
                plan.bus_sockets.push(BusSocket {
                    bus: Bus::Session,
                    socket,
                    path: inside,
                });
            }
            Grant::Bus { bus: Bus::System } => {
                plan.env.insert(
                    "DBUS_SYSTEM_BUS_ADDRESS".into(),
                    format!("unix:path={SYSTEM_BUS_SOCKET}"),
                );
                plan.bus_sockets.push(BusSocket {
                    bus: Bus::System,
                    socket: SYSTEM_BUS_SOCKET.into(),
                    path: SYSTEM_BUS_SOCKET.into(),
                });
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNTIME: &str = "/run/user/1000";

    fn binds(kind: DesktopKind, desktop: &Desktop) -> Option<DesktopBinds> {
        desktop_binds(kind, desktop, Path::new(RUNTIME))
    }

    #[test]
    fn each_desktop_finds_its_socket_and_variable() {
        let desktop = Desktop {
            wayland_display: Some("wayland-1".into()),
            display: Some(":0.0".into()),
            hyprland_instance_signature: Some("abc_123".into()),
            swaysock: Some("/run/user/1000/sway-ipc.1000.42.sock".into()),
            i3sock: Some("/run/user/1000/i3/ipc-socket.42".into()),
            niri_socket: Some("/run/user/1000/niri.wayland-1.42.sock".into()),
            has_xauthority: true,
        };
        let wayland = binds(DesktopKind::Wayland, &desktop).unwrap();
        assert_eq!(wayland.sockets, [PathBuf::from("/run/user/1000/wayland-1")]);
        assert_eq!(wayland.variable, ("WAYLAND_DISPLAY", "wayland-1".into()));
        let hyprland = binds(DesktopKind::Hyprland, &desktop).unwrap();
        assert_eq!(
            hyprland.sockets,
            [
                PathBuf::from("/run/user/1000/hypr/abc_123/.socket.sock"),
                PathBuf::from("/run/user/1000/hypr/abc_123/.socket2.sock")
            ]
        );
        assert_eq!(hyprland.variable.0, "HYPRLAND_INSTANCE_SIGNATURE");
        assert_eq!(
            binds(DesktopKind::Sway, &desktop).unwrap().sockets,
            [PathBuf::from("/run/user/1000/sway-ipc.1000.42.sock")]
        );
        assert_eq!(binds(DesktopKind::I3, &desktop).unwrap().variable.0, "I3SOCK");
        assert_eq!(binds(DesktopKind::Niri, &desktop).unwrap().variable.0, "NIRI_SOCKET");
        let x11 = binds(DesktopKind::X11, &desktop).unwrap();
        assert_eq!(x11.sockets, [PathBuf::from("/tmp/.X11-unix/X0")]);
        assert_eq!(x11.variable, ("DISPLAY", ":0.0".into()));
    }

    #[test]
    fn a_missing_variable_or_a_value_that_names_no_local_socket_gives_none() {
        let none = Desktop::default();
        for kind in DesktopKind::ALL {
            assert_eq!(binds(*kind, &none), None, "{kind:?}");
        }
        let bad = Desktop {
            wayland_display: Some("../wayland-0".into()),
            display: Some("remote.example:10.0".into()),
            hyprland_instance_signature: Some("../../etc".into()),
            swaysock: Some("sway.sock".into()),
            i3sock: Some("/run/user/1000/../../etc/shadow".into()),
            niri_socket: Some(String::new()),
            has_xauthority: false,
        };
        for kind in DesktopKind::ALL {
            assert_eq!(binds(*kind, &bad), None, "{kind:?}");
        }
        // An absolute WAYLAND_DISPLAY is a path of its own.
        let absolute = Desktop {
            wayland_display: Some("/run/user/1000/w/wayland-2".into()),
            ..Desktop::default()
        };
        assert_eq!(
            binds(DesktopKind::Wayland, &absolute).unwrap().sockets,
            [PathBuf::from("/run/user/1000/w/wayland-2")]
        );
    }

    #[test]
    fn bus_addresses_give_their_unix_path() {
        assert_eq!(
            bus_address_path("unix:path=/run/user/1000/bus"),
            Some(PathBuf::from("/run/user/1000/bus"))
        );
        assert_eq!(
            bus_address_path("unix:abstract=/tmp/dbus-x,guid=1;unix:guid=2,path=/tmp/dbus-y"),
            Some(PathBuf::from("/tmp/dbus-y"))
        );
        assert_eq!(bus_address_path("unix:abstract=/tmp/dbus-x"), None);
        assert_eq!(bus_address_path("tcp:host=localhost,port=1"), None);
    }

    #[test]
    fn resolve_fills_the_plan_and_leaves_an_unresolved_grant_to_the_launchers_refusal() {
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/work");
        plan.grants = vec![
            Grant::Desktop {
                desktop: DesktopKind::Wayland,
            },
            Grant::Bus { bus: Bus::Session },
        ];
        let desktop = Desktop {
            wayland_display: Some("wayland-0".into()),
            ..Desktop::default()
        };
        resolve(
            &mut plan,
            Some(&desktop),
            Path::new(RUNTIME),
            Some("unix:path=/run/user/1000/bus"),
        );
        assert_eq!(plan.validate(), Ok(()));
        assert_eq!(plan.desktop_sockets[0].path, Path::new("/run/user/1000/wayland-0"));
        assert_eq!(plan.env["WAYLAND_DISPLAY"], "wayland-0");
        assert_eq!(plan.env["DBUS_SESSION_BUS_ADDRESS"], "unix:path=/run/user/1000/bus");
        assert_eq!(plan.bus_sockets[0].socket, Path::new("/run/user/1000/bus"));

        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/work");
        plan.grants = vec![Grant::Desktop {
            desktop: DesktopKind::Sway,
        }];
        resolve(&mut plan, Some(&desktop), Path::new(RUNTIME), None);
        assert!(plan.desktop_sockets.is_empty());
        assert!(plan.validate().is_err(), "an unresolved desktop grant is refused");
    }
}
