//! The listening socket of efrd, the single-instance lock, and notifications to systemd.
//!
//! [`Listener::acquire`] gives efrd its Unix socket in one of two ways (docs/architecture.md, "Start, stop and
//! systemd"):
//!
//! - **systemd** ([`activation`]): `efrd.socket` listens on `%t/efr/daemon.sock` and passes it as fd 3
//!   (`LISTEN_FDS`, `LISTEN_PID`, `LISTEN_FDNAMES`); the fd is checked to be a listening `AF_UNIX` stream socket.
//! - **self-bound** (`bind.rs`): efrd binds `$runtime/daemon.sock` itself, mode 0600, in the runtime root (0700),
//!   removing a stale socket only after a connect to it is refused.
//!
//! Either way efrd first takes the single-instance lock ([`lock`], `flock` on `$runtime/efrd.lock`) and holds it
//! until it exits, so a second efrd of the same runtime root fails at once with [`ListenError::AlreadyRunning`]
//! and exits with [`EXIT_ALREADY_RUNNING`]. A live socket is never removed ([`ListenError::SocketInUse`], same
//! exit code).
//!
//! [`Notifier`] ([`notify`]) sends `READY=1`, `STATUS=`, `WATCHDOG=1` and `STOPPING=1`; it is a no-op without
//! `NOTIFY_SOCKET`.
//!
//! ```no_run
//! # async fn start(roots: &efrd::config::Roots) -> Result<(), efrd::listen::ListenError> {
//! use efrd::listen::{Listener, Notifier};
//!
//! let notifier = Notifier::from_env()?;
//! let listener = Listener::acquire(roots)?; // exit with err.exit_code() on failure
//! notifier.ready(&format!("listening on {}", listener.path().display())).ok();
//! let _watchdog = notifier.spawn_watchdog();
//! let (stream, _addr) = listener.accept().await.map_err(|source| efrd::listen::ListenError::Io {
//!     what: "accept",
//!     path: listener.path().to_owned(),
//!     source,
//! })?;
//! # drop(stream);
//! # Ok(())
//! # }
//! ```

pub mod activation;
mod bind;
pub mod lock;
pub mod notify;

use std::io;
use std::os::unix::net::UnixListener as StdUnixListener;
use std::path::{Path, PathBuf};

use tokio::net::{UnixListener, UnixStream};

use crate::config::{DirError, Roots, ensure_private_dir};

pub use lock::InstanceLock;
pub use notify::Notifier;

/// The exit code of an efrd that finds another one running: the lock is held, or a live socket sits at the path.
/// Distinct from 1 (any other failure) so that scripts and `efr daemon run` can tell "already running" apart.
pub const EXIT_ALREADY_RUNNING: i32 = 3;

/// How the socket was obtained; reported in logs and `admin.status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketSource {
    /// Passed by systemd (socket activation), with its `LISTEN_FDNAMES` name.
    Systemd {
        /// The fd's name, `FileDescriptorName=` of the socket unit (by default the unit's name), or `unknown`.
        name: String,
    },
    /// Bound by efrd itself at `$runtime/daemon.sock`.
    SelfBound,
}

impl SocketSource {
    /// `systemd` or `self_bound`.
    #[must_use]
    pub const fn as_str(&self) -> &'static str {
        match self {
            Self::Systemd { .. } => "systemd",
            Self::SelfBound => "self_bound",
        }
    }
}

/// Why efrd cannot listen. [`ListenError::exit_code`] gives the process exit code for each.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// Another process holds the single-instance lock.
    #[error("efrd is already running{} (lock {lock} is held)", pid.map(|p| format!(" as pid {p}")).unwrap_or_default())]
    AlreadyRunning {
        /// The lock file.
        lock: PathBuf,
        /// The holder's pid, as it wrote it in the lock file.
        pid: Option<u32>,
    },
    /// A live socket is at the path: another process serves it, so it is left alone.
    #[error("another process is serving {path}; it is left alone")]
    SocketInUse {
        /// The socket path.
        path: PathBuf,
    },
    /// Something that is not a socket is at the socket path; it is left alone.
    #[error("{path} exists and is not a socket; move it away to start efrd")]
    NotASocket {
        /// The socket path.
        path: PathBuf,
    },
    /// A systemd variable is not valid.
    #[error("{var}: {message}")]
    Env {
        /// The variable.
        var: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The fd that systemd passed is not a listening Unix stream socket.
    #[error("fd {fd} from systemd cannot be used: {message}")]
    BadFd {
        /// The fd number.
        fd: i32,
        /// What is wrong with it.
        message: String,
    },
    /// The runtime root cannot be made ready.
    #[error(transparent)]
    Dir(#[from] DirError),
    /// A system call failed.
    #[error("cannot {what} ({path}): {source}")]
    Io {
        /// What efrd was doing, such as "bind the socket".
        what: &'static str,
        /// The file concerned.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// [`Listener::acquire`] was called outside a tokio runtime.
    #[error("the listener must be acquired inside a tokio runtime")]
    NoRuntime,
}

impl ListenError {
    /// The process exit code: [`EXIT_ALREADY_RUNNING`] when another efrd serves, 1 otherwise.
    #[must_use]
    pub const fn exit_code(&self) -> i32 {
        match self {
            Self::AlreadyRunning { .. } | Self::SocketInUse { .. } => EXIT_ALREADY_RUNNING,
            _ => 1,
        }
    }
}

/// The listening socket, the lock that goes with it, and how it was obtained.
///
/// Dropping a self-bound listener removes its socket file (only if the file at the path is still the one it
/// bound), then releases the lock.
#[derive(Debug)]
pub struct Listener {
    listener: UnixListener,
    source: SocketSource,
    path: PathBuf,
    bound: Option<bind::BoundFile>,
    lock: InstanceLock,
}

impl Listener {
    /// Gets the socket: from systemd when it passed one, else bound at `roots.socket_path()`; see the module docs.
    ///
    /// Creates the runtime root (0700) if missing and takes the lock at `roots.lock_path()` for the life of the
    /// returned value. Removes the `LISTEN_*` variables from the environment, so call it once, early at start,
    /// before threads that could read the environment from C exist. Must be called inside a tokio runtime.
    ///
    /// # Errors
    /// See [`ListenError`]; [`ListenError::exit_code`] maps each to the exit code.
    pub fn acquire(roots: &Roots) -> Result<Self, ListenError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(ListenError::NoRuntime);
        }
        // The variables go first, whatever happens next, so no child ever inherits them.
        let activated = activation::take()?;
        ensure_private_dir(&roots.runtime.path)?;
        let lock = InstanceLock::acquire(&roots.lock_path())?;

        let (std_listener, source, path, bound) = match activated {
            Some(activation::Activated { fd, name }) => {
                let std_listener = StdUnixListener::from(fd);
                let path = std_listener
                    .local_addr()
                    .ok()
                    .and_then(|a| a.as_pathname().map(Path::to_path_buf))
                    .unwrap_or_else(|| roots.socket_path());
                (std_listener, SocketSource::Systemd { name }, path, None)
            }
            None => {
                let path = roots.socket_path();
                let (std_listener, bound) = bind::bind(&path)?;
                (std_listener, SocketSource::SelfBound, path, Some(bound))
            }
        };
        let io_err = |what: &'static str| {
            let path = path.clone();
            move |source| ListenError::Io { what, path, source }
        };
        std_listener
            .set_nonblocking(true)
            .map_err(io_err("make the socket non-blocking"))?;
        let listener = UnixListener::from_std(std_listener).map_err(io_err("register the socket with tokio"))?;
        tracing::info!(path = %path.display(), source = source.as_str(), "listening");
        Ok(Self {
            listener,
            source,
            path,
            bound,
            lock,
        })
    }

    /// Accepts one connection.
    ///
    /// # Errors
    /// The accept failed (such as `EMFILE`); the listener stays usable.
    pub async fn accept(&self) -> io::Result<(UnixStream, tokio::net::unix::SocketAddr)> {
        self.listener.accept().await
    }

    /// The tokio listener, for callers that need more than [`Listener::accept`].
    #[must_use]
    pub const fn listener(&self) -> &UnixListener {
        &self.listener
    }

    /// How the socket was obtained.
    #[must_use]
    pub const fn source(&self) -> &SocketSource {
        &self.source
    }

    /// The socket's path (for systemd's socket, the path it is bound to).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The held single-instance lock.
    #[must_use]
    pub const fn lock(&self) -> &InstanceLock {
        &self.lock
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(bound) = self.bound {
            bound.remove_if_ours(&self.path);
        }
    }
}

#[cfg(test)]
mod tests;
