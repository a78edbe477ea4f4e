//! The exits of commands that stay on the machine: package installs, services, kills, sockets, devices, buses, the
//! desktop, and tools that cannot run in a sandbox at all.
//!
//! # Desktop commands
//!
//! A desktop exit needs the prompt's desktop ([`ExitContext::desktop`]) with the variable of the command's desktop;
//! without it there is no exit, and the command fails contained. `desktop_read` is set when every desktop command
//! of the line only reads the desktop's state or reloads its config:
//!
//! | command | reads |
//! |---|---|
//! | `hyprctl` (Hyprland) | `clients`, `monitors`, `workspaces`, `activewindow`, `activeworkspace`, `devices`, `layers`, `binds`, `version`, `getoption`, `cursorpos`, `instances`, `systeminfo`, `splash`, `globalshortcuts`, `reload` |
//! | `swaymsg` (Sway), `i3-msg` (i3) | `-t get_*`, `reload` |
//! | `niri msg` (niri) | `windows`, `workspaces`, `outputs`, `focused-window`, `focused-output`, `version`, `layers`, `keyboard-layouts` |
//! | `xdotool`, `xprop`, `xwininfo`, `xrandr`, `wmctrl` (X11) | `xdotool get…`/`search`, `xprop`, `xwininfo`, `xrandr` alone or `-q`, `wmctrl -l`/`-d`/`-m` |
//! | `wl-paste`, `wl-copy`, `grim`, `wtype`, `wlr-randr` (Wayland), `xclip`, `xsel` (X11), `gio open`, `xdg-open` | never: the clipboard may hold a password, and the rest type, capture or open |

use std::path::{Path, PathBuf};

use efr_protocol::wire::{Bus, DesktopKind, ExitKind, ExitTarget, Grant, TargetClass};

use super::Finder;
use crate::exits::find::Exit;
use efr_policy::SeenCommand;

/// The bus names of the secret service: the bus filter refuses them whatever the grant, so only the whole bus
/// reaches them (ADR 0016, kind 8).
const SECRET_NAMES: &[&str] = &[
    "org.freedesktop.secrets",
    "org.gnome.keyring",
    "org.kde.kwalletd5",
    "org.kde.kwalletd6",
];

impl Finder<'_> {
    /// The rules of a command that stays on the machine; for a privileged one, only what it does (an install, a
    /// service, a kill).
    pub(super) fn local(&mut self, cmd: &SeenCommand) {
        let values: Vec<&str> = cmd.values().collect();
        let privileged = cmd.privileged.is_some();
        match cmd.name.as_str() {
            "apt" | "apt-get" | "aptitude" | "dnf" | "yum" | "zypper" | "apk" | "pacman" | "snap" | "flatpak"
            | "dpkg" | "rpm" => self.system_install(cmd, &values),
            "systemctl" => self.systemctl(cmd, &values),
            "systemd-run" | "at" | "batch" => self.add(ExitKind::Service, Exit::unsandboxed(cmd.text())),
            "crontab" if values.contains(&"-l") => self.add(ExitKind::Outside, Exit::unsandboxed(cmd.text())),
            "crontab" => self.add(ExitKind::Service, Exit::unsandboxed(cmd.text())),
            "loginctl" if values.iter().any(|v| v.ends_with("-linger")) => {
                self.add(ExitKind::Service, Exit::unsandboxed(cmd.text()));
            }
            "kill" | "pkill" | "killall" => self.kill(cmd, &values),
            _ if privileged => {}
            "cargo" | "npm" | "pnpm" | "yarn" | "bun" | "pip" | "pip3" | "pipx" | "uv" | "go" | "gem" => {}
            "docker" | "docker-compose" => self.docker(&values),
            "podman" | "buildah" | "toolbox" | "distrobox" | "firejail" => {
                self.add(ExitKind::Unsandboxed, Exit::unsandboxed(cmd.text()));
            }
            "psql" => self.database(&values, "-h", "/run/postgresql", Some(".s.PGSQL.5432")),
            "mysql" | "mariadb" => self.database(&values, "-h", "/run/mysqld/mysqld.sock", None),
            "aws" => {
                if let Some(store) = self.ctx.home.map(|h| h.join(".aws")) {
                    self.unmask(&store);
                }
            }
            "qemu-system-x86_64" | "qemu-system-aarch64" | "qemu-kvm" => {
                if cmd.name == "qemu-kvm" || values.iter().any(|v| v.contains("kvm")) {
                    self.device(Path::new("/dev/kvm"));
                }
            }
            _ => {
                self.bus(cmd, &values);
                self.desktop(cmd, &values);
            }
        }
        if !privileged {
            for path in cmd.values().filter(|v| v.starts_with("/dev/")) {
                self.device(Path::new(path));
            }
        }
    }

    /// systemctl: reading the service manager is a bus exit; changing it is a service exit.
    fn systemctl(&mut self, cmd: &SeenCommand, values: &[&str]) {
        const READS: &[&str] = &[
            "status",
            "show",
            "cat",
            "list-units",
            "list-unit-files",
            "list-timers",
            "list-sockets",
            "list-dependencies",
            "list-jobs",
            "list-machines",
            "is-active",
            "is-enabled",
            "is-failed",
            "is-system-running",
            "get-default",
            "show-environment",
            "help",
        ];
        let verb = values.iter().copied().find(|v| !v.starts_with('-'));
        if verb.is_none_or(|v| READS.contains(&v)) && cmd.privileged.is_none() {
            let bus = if values.contains(&"--user") {
                Bus::Session
            } else {
                Bus::System
            };
            self.bus_names(bus, &["org.freedesktop.systemd1"]);
        } else if verb.is_some() {
            self.add(ExitKind::Service, Exit::unsandboxed(cmd.text()));
        }
    }

    /// kill, pkill, killall: the signal runs outside. A process group, pid 0 or 1, `-1` (every process), a pid that
    /// is not a process of the user ([`ExitContext::program_of`](crate::exits::find::ExitContext::program_of)) or
    /// one of efr's own programs gets no exit: it fails in the sandbox's own process namespace.
    fn kill(&mut self, cmd: &SeenCommand, values: &[&str]) {
        let mut targets = Vec::new();
        if cmd.name == "kill" {
            if values.iter().any(|v| matches!(*v, "-l" | "-L" | "--list" | "--table")) {
                return;
            }
            let mut operands = values.iter().copied().peekable();
            // The signal: `-9`, `-KILL`, `-s KILL`, `-n 9`.
            if let Some(first) = operands.peek().copied() {
                if matches!(first, "-s" | "-n") {
                    operands.next();
                    operands.next();
                } else if first.starts_with('-') && first != "--" && values.len() > 1 {
                    operands.next();
                }
            }
            let mut pids = Vec::new();
            for operand in operands.filter(|v| *v != "--") {
                match operand.parse::<u32>() {
                    Ok(pid) if pid > 1 => pids.push(pid),
                    _ => return,
                }
            }
            if pids.is_empty() {
                return;
            }
            for pid in pids {
                // No such process of the user, or one of efr's own: refused (ADR 0016, kind 14), so no exit.
                let Some(program) = (self.ctx.program_of)(pid) else {
                    return;
                };
                let name = program.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                if matches!(name, "efrd" | "efr-launcher" | "efr-proxy" | "efr-bus-proxy") {
                    return;
                }
                targets.push(ExitTarget {
                    path: program,
                    class: TargetClass::Process,
                    masked: false,
                    backup_before_write: false,
                });
            }
        }
        self.add(ExitKind::Kill, Exit::unsandboxed(cmd.text()).targets(targets));
    }

    /// docker: the engine's socket (`-H unix://…` or `/run/docker.sock`), whatever the subcommand.
    fn docker(&mut self, values: &[&str]) {
        if values.iter().any(|v| matches!(*v, "--version" | "-v" | "--help")) && values.len() == 1 {
            return;
        }
        let host = values
            .iter()
            .position(|v| matches!(*v, "-H" | "--host"))
            .and_then(|i| values.get(i + 1).copied())
            .or_else(|| values.iter().find_map(|v| v.strip_prefix("--host=")));
        match host {
            Some(host) => match host.strip_prefix("unix://") {
                Some(path) => self.socket(PathBuf::from(path)),
                None => self.raw_hosts(&[host]),
            },
            None => self.socket(PathBuf::from("/run/docker.sock")),
        }
    }

    /// A database client: its Unix socket by default or with a folder as host; a host name is the open network.
    fn database(&mut self, values: &[&str], host_option: &str, default: &str, socket_name: Option<&str>) {
        let socket_option = values
            .iter()
            .position(|v| matches!(*v, "-S" | "--socket"))
            .and_then(|i| values.get(i + 1))
            .copied();
        let host = values
            .iter()
            .position(|v| *v == host_option || *v == "--host")
            .and_then(|i| values.get(i + 1))
            .copied();
        let path = match (socket_option, host) {
            (Some(socket), _) => PathBuf::from(socket),
            (None, Some(host)) if !host.starts_with('/') => return self.raw_hosts(&[host]),
            (None, Some(dir)) => socket_name.map_or_else(|| PathBuf::from(dir), |name| PathBuf::from(dir).join(name)),
            (None, None) => {
                socket_name.map_or_else(|| PathBuf::from(default), |name| PathBuf::from(default).join(name))
            }
        };
        self.socket(path);
    }

    /// The open network to hosts named alone.
    fn raw_hosts(&mut self, hosts: &[&str]) {
        let facts = hosts
            .iter()
            .filter_map(|h| super::url_host(h).or_else(|| super::NamedHost::plain(h)))
            .map(|h| self.ctx.host_fact(&h))
            .collect();
        self.add(
            ExitKind::OpenNetwork,
            Exit::grants(vec![Grant::OpenNetwork]).hosts(facts),
        );
    }

    /// A device node the sandbox's `/dev` lacks. What the sandbox's fresh `/dev` provides is there already (its
    /// harmless nodes, `pts`, `ptmx`, `fd`, and a private `/dev/shm`: a grant would bring in the host's shared
    /// memory); a block device (a disk or a partition) is never granted, so it gets no exit and fails contained.
    fn device(&mut self, path: &Path) {
        let path = efr_policy::paths::normalize(path);
        let rest = path
            .strip_prefix("/dev")
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_default();
        const HARMLESS: &[&str] = &[
            "null", "zero", "full", "random", "urandom", "stdin", "stdout", "stderr", "tty", "ptmx", "core", "fd",
            "pts", "shm",
        ];
        const BLOCK: &[&str] = &[
            "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "loop", "dm-", "md", "sr", "nbd", "zram", "mapper/", "disk/",
            "block/",
        ];
        let dynamic = ["fd/", "shm/", "pts/", "tcp/", "udp/"]
            .iter()
            .any(|p| rest.starts_with(p));
        if rest.is_empty() || HARMLESS.contains(&rest.as_str()) || dynamic || BLOCK.iter().any(|b| rest.starts_with(b))
        {
            return;
        }
        let target = ExitTarget {
            path: path.clone(),
            class: TargetClass::Device,
            masked: false,
            backup_before_write: false,
        };
        self.add(
            ExitKind::Device,
            Exit::grants(vec![Grant::Device { path }]).targets(vec![target]),
        );
    }

    /// D-Bus clients: the bus and the names the line addresses.
    fn bus(&mut self, cmd: &SeenCommand, values: &[&str]) {
        let option = |names: &[&str]| {
            values.iter().enumerate().find_map(|(i, v)| {
                names.iter().find_map(|name| {
                    if v == name {
                        values.get(i + 1).copied()
                    } else {
                        v.strip_prefix(name).and_then(|r| r.strip_prefix('='))
                    }
                })
            })
        };
        let system = values.contains(&"--system");
        let bus = if system { Bus::System } else { Bus::Session };
        match cmd.name.as_str() {
            "notify-send" => self.bus_names(Bus::Session, &["org.freedesktop.Notifications"]),
            "secret-tool" => self.bus_names(Bus::Session, &["org.freedesktop.secrets"]),
            "gdbus" | "dbus-send" => match option(&["--dest", "-d"]) {
                Some(name) => self.bus_names(bus, &[name]),
                None => self.bus_names(bus, &[]),
            },
            "busctl" => {
                let bus = if values.contains(&"--user") {
                    Bus::Session
                } else {
                    Bus::System
                };
                let mut operands = values.iter().copied().filter(|v| !v.starts_with('-'));
                let verb = operands.next();
                match (verb, operands.next()) {
                    (Some("call" | "introspect" | "get-property" | "set-property" | "tree" | "status"), Some(name)) => {
                        self.bus_names(bus, &[name]);
                    }
                    _ => self.bus_names(bus, &[]),
                }
            }
            "loginctl" => self.bus_names(Bus::System, &["org.freedesktop.login1"]),
            "hostnamectl" => self.bus_names(Bus::System, &["org.freedesktop.hostname1"]),
            "timedatectl" => self.bus_names(Bus::System, &["org.freedesktop.timedate1"]),
            "nmcli" => self.bus_names(Bus::System, &["org.freedesktop.NetworkManager"]),
            "gsettings"
                if values
                    .first()
                    .is_some_and(|v| matches!(*v, "set" | "reset" | "reset-recursively")) =>
            {
                self.bus_names(Bus::Session, &["ca.desrt.dconf"]);
            }
            _ => {}
        }
    }

    /// A bus exit: the call's filtered socket when the filter runs and the names are known (and are not the secret
    /// service, which the filter refuses whatever the grant), else the whole bus.
    pub(super) fn bus_names(&mut self, bus: Bus, names: &[&str]) {
        let secret = names.iter().any(|n| SECRET_NAMES.contains(n));
        let grant = if self.ctx.bus_filter && !names.is_empty() && !secret {
            Grant::BusFilter { bus }
        } else {
            Grant::Bus { bus }
        };
        let mut exit = Exit::grants(vec![grant]);
        exit.facts.bus_names = names.iter().map(|n| (*n).to_owned()).collect();
        self.add(ExitKind::Bus, exit);
    }

    /// Desktop commands (see the module's table).
    fn desktop(&mut self, cmd: &SeenCommand, values: &[&str]) {
        let first = values.first().copied().unwrap_or_default();
        let (kind, read) = match cmd.name.as_str() {
            "hyprctl" => {
                const READS: &[&str] = &[
                    "clients",
                    "monitors",
                    "workspaces",
                    "activewindow",
                    "activeworkspace",
                    "devices",
                    "layers",
                    "binds",
                    "version",
                    "getoption",
                    "cursorpos",
                    "instances",
                    "systeminfo",
                    "splash",
                    "globalshortcuts",
                    "reload",
                ];
                let sub = values.iter().copied().find(|v| !v.starts_with('-')).unwrap_or_default();
                (DesktopKind::Hyprland, READS.contains(&sub))
            }
            "swaymsg" | "i3-msg" => {
                let kind = if cmd.name == "swaymsg" {
                    DesktopKind::Sway
                } else {
                    DesktopKind::I3
                };
                let typed = values
                    .iter()
                    .position(|v| matches!(*v, "-t" | "--type"))
                    .and_then(|i| values.get(i + 1))
                    .copied()
                    .or_else(|| values.iter().find_map(|v| v.strip_prefix("--type=")));
                let operands: Vec<&str> = values.iter().copied().filter(|v| !v.starts_with('-')).collect();
                let read = match typed {
                    Some(t) => t.starts_with("get_") || t == "subscribe",
                    None => operands == ["reload"],
                };
                (kind, read)
            }
            "niri" if first == "msg" => {
                const READS: &[&str] = &[
                    "windows",
                    "workspaces",
                    "outputs",
                    "focused-window",
                    "focused-output",
                    "version",
                    "layers",
                    "keyboard-layouts",
                ];
                let sub = values[1..]
                    .iter()
                    .copied()
                    .find(|v| !v.starts_with('-'))
                    .unwrap_or_default();
                (DesktopKind::Niri, READS.contains(&sub))
            }
            "wl-paste" | "wl-copy" | "grim" | "slurp" | "wtype" | "wlr-randr" => (DesktopKind::Wayland, false),
            "xdotool" => (DesktopKind::X11, first.starts_with("get") || first == "search"),
            "xprop" | "xwininfo" => (DesktopKind::X11, true),
            "xrandr" => (
                DesktopKind::X11,
                values.is_empty() || values == ["-q"] || values == ["--query"],
            ),
            "wmctrl" => (DesktopKind::X11, matches!(values, ["-l" | "-d" | "-m"])),
            "xclip" | "xsel" => (DesktopKind::X11, false),
            "gio" if first == "open" => (self.opener(), false),
            "xdg-open" => (self.opener(), false),
            _ => return,
        };
        let Some(desktop) = self.ctx.desktop else { return };
        let present = match kind {
            DesktopKind::Wayland => desktop.wayland_display.is_some(),
            DesktopKind::X11 => desktop.display.is_some(),
            DesktopKind::Hyprland => desktop.hyprland_instance_signature.is_some(),
            DesktopKind::Sway => desktop.swaysock.is_some(),
            DesktopKind::I3 => desktop.i3sock.is_some(),
            DesktopKind::Niri => desktop.niri_socket.is_some(),
        };
        if !present {
            return;
        }
        let mut exit = Exit::grants(vec![Grant::Desktop { desktop: kind }]);
        exit.facts.desktop_read = read;
        self.add(ExitKind::Desktop, exit);
    }

    /// The desktop that `gio open` and `xdg-open` use: Wayland when the shell has it, else X11.
    fn opener(&self) -> DesktopKind {
        if self.ctx.desktop.is_some_and(|d| d.wayland_display.is_some()) {
            DesktopKind::Wayland
        } else {
            DesktopKind::X11
        }
    }
}
