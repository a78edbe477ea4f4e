//! Telling systemd how efrd is doing (`sd_notify(3)`): `READY=1`, `STATUS=...`, `WATCHDOG=1`, `STOPPING=1`.
//!
//! `efrd.service` is `Type=notify` with a watchdog (docs/architecture.md, "Start, stop and systemd"). A [`Notifier`] is
//! made once at start from `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID`, which are then removed from the
//! environment so no child inherits them. Without `NOTIFY_SOCKET` every call is a no-op, which is how efrd runs outside
//! systemd and in most tests.
//!
//! Each message is one datagram of `KEY=VALUE` lines, formatted by `sd-notify`'s [`NotifyState`]. The datagram is
//! sent from a fresh unbound non-blocking socket, so a manager that does not read never blocks efrd.

use std::ffi::OsStr;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::PathBuf;
use std::time::Duration;

use sd_notify::NotifyState;

use super::ListenError;
use super::activation::unset_env_at_start;

/// The variables that the notifier reads and then removes.
pub const NOTIFY_VARS: [&str; 3] = ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"];

/// Where notifications go.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Path(PathBuf),
    /// An abstract socket (`NOTIFY_SOCKET=@name`), without the `@`.
    Abstract(Vec<u8>),
}

/// Sends notifications to the service manager; cheap to clone (the watchdog task holds a clone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notifier {
    target: Option<Target>,
    watchdog: Option<Duration>,
}

impl Notifier {
    /// A notifier that sends nothing.
    #[must_use]
    pub const fn disabled() -> Self {
        Self {
            target: None,
            watchdog: None,
        }
    }

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` of this process, then removes them.
    ///
    /// Call once at start, before threads that could read the environment from C exist (as for
    /// `Listener::acquire`).
    ///
    /// # Errors
    /// As [`Notifier::new`]; the variables are removed either way.
    pub fn from_env() -> Result<Self, ListenError> {
        let [socket, usec, pid] = NOTIFY_VARS.map(std::env::var_os);
        unset_env_at_start(&NOTIFY_VARS);
        Self::new(socket.as_deref(), usec.as_deref(), pid.as_deref(), std::process::id())
    }

    /// A notifier from the values of the three variables and our pid. Pure; `from_env` uses it and tests call it.
    ///
    /// The watchdog is on when `WATCHDOG_USEC` is set and `WATCHDOG_PID` is unset or `pid`, as
    /// `sd_watchdog_enabled(3)` says; it pings at half of `WATCHDOG_USEC`, the interval systemd recommends.
    ///
    /// # Errors
    /// [`ListenError::Env`] for a `NOTIFY_SOCKET` that is neither an absolute path nor `@abstract`, or a
    /// `WATCHDOG_USEC` or `WATCHDOG_PID` that is not a positive number.
    pub fn new(
        notify_socket: Option<&OsStr>,
        watchdog_usec: Option<&OsStr>,
        watchdog_pid: Option<&OsStr>,
        pid: u32,
    ) -> Result<Self, ListenError> {
        let target = match notify_socket.filter(|s| !s.is_empty()) {
            None => None,
            Some(s) if s.as_bytes().starts_with(b"@") => Some(Target::Abstract(s.as_bytes()[1..].to_vec())),
            Some(s) if s.as_bytes().starts_with(b"/") => Some(Target::Path(PathBuf::from(s))),
            Some(s) => {
                return Err(ListenError::Env {
                    var: "NOTIFY_SOCKET",
                    message: format!(
                        "must be an absolute path or start with @, not {:?}",
                        s.to_string_lossy()
                    ),
                });
            }
        };
        let number = |var: &'static str, value: &OsStr| -> Result<u64, ListenError> {
            value
                .to_str()
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| ListenError::Env {
                    var,
                    message: format!("must be a positive number, not {:?}", value.to_string_lossy()),
                })
        };
        let usec = watchdog_usec.map(|v| number("WATCHDOG_USEC", v)).transpose()?;
        let for_us = match watchdog_pid {
            None => true,
            Some(p) => number("WATCHDOG_PID", p)? == u64::from(pid),
        };
        let watchdog = usec.filter(|_| for_us).map(|usec| Duration::from_micros(usec / 2));
        Ok(Self { target, watchdog })
    }

    /// Whether notifications go anywhere (`NOTIFY_SOCKET` was set).
    #[must_use]
    pub const fn is_enabled(&self) -> bool {
        self.target.is_some()
    }

    /// The watchdog ping interval (half of `WATCHDOG_USEC`), when the watchdog is on for this process and there is
    /// a socket to ping.
    #[must_use]
    pub fn watchdog_interval(&self) -> Option<Duration> {
        self.watchdog.filter(|_| self.target.is_some())
    }

    /// Sends the states in one datagram. A no-op without a socket.
    ///
    /// # Errors
    /// The socket cannot be created or the datagram not sent (no listener at the path, its queue is full).
    pub fn send(&self, states: &[NotifyState<'_>]) -> io::Result<()> {
        let Some(target) = &self.target else { return Ok(()) };
        let mut message = String::new();
        for state in states {
            message.push_str(&state.to_string());
            message.push('\n');
        }
        let socket = UnixDatagram::unbound()?;
        socket.set_nonblocking(true)?;
        let sent = match target {
            Target::Path(path) => socket.send_to(message.as_bytes(), path)?,
            Target::Abstract(name) => {
                socket.send_to_addr(message.as_bytes(), &SocketAddr::from_abstract_name(name)?)?
            }
        };
        if sent == message.len() {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "the notification was cut short",
            ))
        }
    }

    /// `READY=1` with a status line: the store is open and the socket accepts.
    ///
    /// # Errors
    /// As [`Notifier::send`].
    pub fn ready(&self, status: &str) -> io::Result<()> {
        self.send(&[NotifyState::Ready, NotifyState::Status(&one_line(status))])
    }

    /// `STATUS=<line>`, shown by `systemctl status`. Newlines become spaces: the protocol is one line per key.
    ///
    /// # Errors
    /// As [`Notifier::send`].
    pub fn status(&self, line: &str) -> io::Result<()> {
        self.send(&[NotifyState::Status(&one_line(line))])
    }

    /// `WATCHDOG=1`: efrd is alive.
    ///
    /// # Errors
    /// As [`Notifier::send`].
    pub fn watchdog(&self) -> io::Result<()> {
        self.send(&[NotifyState::Watchdog])
    }

    /// `STOPPING=1` with a status line, at the start of a graceful stop.
    ///
    /// # Errors
    /// As [`Notifier::send`].
    pub fn stopping(&self, status: &str) -> io::Result<()> {
        self.send(&[NotifyState::Stopping, NotifyState::Status(&one_line(status))])
    }

    /// Starts a task that sends `WATCHDOG=1` now and then every [`Notifier::watchdog_interval`]; `None` when the
    /// watchdog is off. Abort the handle before `STOPPING=1`. A failed ping is logged, and the task goes on: a
    /// manager that missed pings stops efrd, which is the watchdog's job.
    ///
    /// Must be called inside a tokio runtime.
    #[must_use]
    pub fn spawn_watchdog(&self) -> Option<tokio::task::JoinHandle<()>> {
        let interval = self.watchdog_interval()?;
        let notifier = self.clone();
        Some(tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(e) = notifier.watchdog() {
                    tracing::warn!(error = %e, "watchdog ping failed");
                }
            }
        }))
    }
}

fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}
