//! Binding `$runtime/daemon.sock` when systemd did not pass a socket.
//!
//! The caller holds the single-instance lock, so no other efrd of this user is starting or running with this
//! runtime root. A file left at the path is still checked before it goes:
//!
//! - a socket that refuses a connection (`ECONNREFUSED`) is stale (its process died) and is removed;
//! - a socket that accepts, or whose backlog is full (`EAGAIN`), is live: some other process serves it (an efrd
//!   started without this lock, or one with another runtime root that shares the folder) and it is never removed;
//! - anything else (a file, a folder, a symlink) is never removed.
//!
//! The socket is bound under `umask 0177` so it is created 0600: there is no moment when it is open to others.

use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::Path;

use nix::errno::Errno;
use nix::sys::socket::{AddressFamily, SockFlag, SockType, UnixAddr, connect, socket};
use nix::sys::stat::{Mode, umask};
use std::os::fd::AsRawFd;

use super::ListenError;

/// The identity of the socket file we bound, so that only that file is removed at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BoundFile {
    dev: u64,
    ino: u64,
}

impl BoundFile {
    /// Removes the socket file at `path` if it is still the one we bound (not one that replaced it).
    pub(crate) fn remove_if_ours(self, path: &Path) {
        if let Ok(meta) = fs::symlink_metadata(path)
            && meta.dev() == self.dev
            && meta.ino() == self.ino
            && let Err(e) = fs::remove_file(path)
        {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove the socket file");
        }
    }
}

/// What a connect to an existing socket file found.
enum Probe {
    Live,
    Stale,
    Gone,
}

/// A non-blocking connect, so a live socket with a full backlog answers at once (`EAGAIN`) instead of hanging.
fn probe(path: &Path) -> Result<Probe, ListenError> {
    let io_err = |what: &'static str| {
        move |e: Errno| ListenError::Io {
            what,
            path: path.to_owned(),
            source: e.into(),
        }
    };
    let fd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(io_err("create a probe socket"))?;
    let addr = UnixAddr::new(path).map_err(io_err("probe the socket"))?;
    match connect(fd.as_raw_fd(), &addr) {
        Ok(()) | Err(Errno::EAGAIN | Errno::EINPROGRESS) => Ok(Probe::Live),
        Err(Errno::ECONNREFUSED) => Ok(Probe::Stale),
        Err(Errno::ENOENT) => Ok(Probe::Gone),
        Err(e) => Err(io_err("probe the socket")(e)),
    }
}

/// Clears a stale socket at `path` (see the module docs) and binds a new one, mode 0600.
///
/// # Errors
/// [`ListenError::SocketInUse`] for a live socket; [`ListenError::NotASocket`] for another kind of file;
/// [`ListenError::Io`] when a step fails.
pub(crate) fn bind(path: &Path) -> Result<(UnixListener, BoundFile), ListenError> {
    let io_err = |what: &'static str| {
        move |source: io::Error| ListenError::Io {
            what,
            path: path.to_owned(),
            source,
        }
    };
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => match probe(path)? {
            Probe::Live => return Err(ListenError::SocketInUse { path: path.to_owned() }),
            Probe::Stale => {
                tracing::info!(path = %path.display(), "removing a stale socket (connect refused)");
                match fs::remove_file(path) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(io_err("remove the stale socket")(e)),
                    _ => {}
                }
            }
            Probe::Gone => {}
        },
        Ok(_) => return Err(ListenError::NotASocket { path: path.to_owned() }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("check the socket path")(e)),
    }

    // umask is per process; the window is one bind(2), and a file another thread creates meanwhile gets a mode
    // that is tighter, never looser.
    let old = umask(Mode::from_bits_truncate(0o177));
    let bound = UnixListener::bind(path);
    umask(old);
    let listener = bound.map_err(io_err("bind the socket"))?;

    let meta = fs::symlink_metadata(path).map_err(io_err("check the new socket"))?;
    if meta.mode() & 0o777 != 0o600 {
        // Only when the kernel ignored the umask (it never does for AF_UNIX on Linux); kept as a check, not a hope.
        fs::set_permissions(path, fs::Permissions::from_mode(0o600)).map_err(io_err("set the socket mode"))?;
    }
    Ok((
        listener,
        BoundFile {
            dev: meta.dev(),
            ino: meta.ino(),
        },
    ))
}
