//! What one contained call gets on the D-Bus (docs/bus.md, "What auto gives"):
//!
//! - its grant ([`CallBus::grants`]): in auto mode, one `bus_filter` grant of the session bus when the user's session
//!   has a bus ([`session_bus`]), `efr-bus-proxy` is installed and `[bus] enabled` is not false; none otherwise (the
//!   call has no bus, as before the filter);
//! - its bus plan ([`CallBus::open_plan`]): the default policy (`efr_protocol::internal::bus_policy`'s
//!   `SESSION_DEFAULT_TALK` and `SESSION_DEFAULT_FDS`) plus the config's `[bus]` lists.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use efr_protocol::internal::bus_policy::{SESSION_DEFAULT_FDS, SESSION_DEFAULT_TALK};
use efr_protocol::internal::bus_proxy::OpenBusPlan;
use efr_protocol::wire::{Bus, Grant};

use super::proxy::BusSupervisor;
use crate::config::BusSection;

/// The bus rules of a turn's contained calls, as the config had them when the turn started (a reload applies to
/// the next turn), the session bus found then, and the proxy that enforces them.
#[derive(Debug, Clone)]
pub struct CallBus {
    /// `[bus]`.
    pub config: BusSection,
    /// The address of the user's session bus (`unix:path=...`); `None`: the session has no bus.
    pub session: Option<String>,
    /// The daemon's bus proxy.
    pub proxy: Arc<BusSupervisor>,
    /// The user's runtime folder (`/run/user/$UID`), masked in the sandbox: the filtered socket is bound at its
    /// `bus`, the session bus's usual address.
    pub runtime_dir: PathBuf,
}

impl CallBus {
    /// The bus grants of an auto contained call: a `bus_filter` grant of the session bus, or none when the session
    /// has no bus, the proxy is not installed, `[bus] enabled` is false or the runtime folder does not exist (the
    /// sandbox masks it with an empty folder, where the socket's mount point is made; without it there is nowhere
    /// to put one on the read-only root).
    #[must_use]
    pub fn grants(&self) -> Vec<Grant> {
        if self.config.enabled && self.session.is_some() && self.proxy.installed() && self.runtime_dir.is_dir() {
            vec![Grant::BusFilter { bus: Bus::Session }]
        } else {
            Vec::new()
        }
    }

    /// The bus plan of a call with a `bus_filter` grant of the session bus; `None` when the session has no bus.
    #[must_use]
    pub fn open_plan(&self, call: &str) -> Option<OpenBusPlan> {
        let upstream = self.session.clone()?;
        let names = |defaults: &[&str], config: &[crate::config::BusName]| -> Vec<String> {
            defaults
                .iter()
                .map(|name| (*name).to_owned())
                .chain(config.iter().map(|name| name.as_str().to_owned()))
                .collect()
        };
        let rules = |config: &[crate::config::BusRule]| config.iter().map(|r| r.as_str().to_owned()).collect();
        Some(OpenBusPlan {
            call: call.to_owned(),
            bus: Bus::Session,
            upstream,
            see: names(&[], &self.config.see),
            talk: names(SESSION_DEFAULT_TALK, &self.config.talk),
            own: names(&[], &self.config.own),
            call_rules: rules(&self.config.call),
            broadcast_rules: rules(&self.config.broadcast),
            fds: names(SESSION_DEFAULT_FDS, &[]),
        })
    }
}

/// The address of the user's session bus, when there is one: `$DBUS_SESSION_BUS_ADDRESS` when it names a
/// `unix:path=` socket that exists, else `$XDG_RUNTIME_DIR/bus` when it is a socket (systemd sets both for a user
/// service). The filter serves socket files only (abstract and TCP addresses are not bound into a sandbox).
#[must_use]
pub fn session_bus() -> Option<String> {
    let from_env = std::env::var("DBUS_SESSION_BUS_ADDRESS").ok().filter(|address| {
        address
            .split(';')
            .find_map(|entry| entry.strip_prefix("unix:"))
            .and_then(|params| params.split(',').find_map(|p| p.strip_prefix("path=")))
            .is_some_and(|path| path.contains('%') || is_socket(Path::new(path)))
    });
    from_env.or_else(|| {
        let path = PathBuf::from(std::env::var_os("XDG_RUNTIME_DIR")?).join("bus");
        let plain = path
            .to_str()
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_alphanumeric() || b"/_-.".contains(&b)));
        (plain && is_socket(&path)).then(|| format!("unix:path={}", path.display()))
    })
}

fn is_socket(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

impl CallBus {
    /// Where a call finds its filtered session bus inside the sandbox: `bus` in the user's runtime folder, the usual
    /// `/run/user/$UID/bus` (docs/bus.md, "What a call sees").
    #[must_use]
    pub fn path_inside(&self) -> PathBuf {
        self.runtime_dir.join("bus")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call_bus(config: BusSection, session: Option<&str>, program: &Path) -> CallBus {
        CallBus {
            config,
            session: session.map(str::to_owned),
            proxy: Arc::new(BusSupervisor::new(
                program.to_path_buf(),
                PathBuf::from("/nonexistent/bus"),
            )),
            runtime_dir: std::env::temp_dir(),
        }
    }

    #[test]
    fn the_plan_is_the_default_policy_plus_the_config() {
        let text = "[bus]\ntalk = [\"org.gnome.Shell\"]\nown = [\"org.example.Own\"]\n\
                    call = [\"org.example.S=org.example.S.Get@/\"]\n";
        let config = crate::config::parse::parse(text).unwrap().config.bus;
        let exe = std::env::current_exe().unwrap();
        let bus = call_bus(config, Some("unix:path=/run/user/1000/bus"), &exe);
        assert_eq!(bus.grants(), vec![Grant::BusFilter { bus: Bus::Session }]);
        let plan = bus.open_plan("c1").unwrap();
        assert_eq!(plan.upstream, "unix:path=/run/user/1000/bus");
        assert_eq!(
            plan.talk,
            [
                "org.freedesktop.Notifications",
                "org.freedesktop.portal.*",
                "org.gnome.Shell"
            ]
        );
        assert_eq!(plan.own, ["org.example.Own"]);
        assert_eq!(plan.call_rules, ["org.example.S=org.example.S.Get@/"]);
        assert_eq!(plan.fds, ["org.freedesktop.portal.*"]);
        assert!(plan.see.is_empty() && plan.broadcast_rules.is_empty());
    }

    #[test]
    fn no_session_bus_no_program_or_switched_off_gives_no_grant() {
        let exe = std::env::current_exe().unwrap();
        assert!(call_bus(BusSection::default(), None, &exe).grants().is_empty());
        assert!(call_bus(BusSection::default(), None, &exe).open_plan("c1").is_none());
        let missing = Path::new("/nonexistent/efr-bus-proxy");
        assert!(
            call_bus(BusSection::default(), Some("unix:path=/x"), missing)
                .grants()
                .is_empty()
        );
        let off = BusSection {
            enabled: false,
            ..BusSection::default()
        };
        assert!(call_bus(off, Some("unix:path=/x"), &exe).grants().is_empty());
        let mut no_runtime = call_bus(BusSection::default(), Some("unix:path=/x"), &exe);
        no_runtime.runtime_dir = PathBuf::from("/nonexistent/run/user/1000");
        assert!(no_runtime.grants().is_empty());
    }
}
