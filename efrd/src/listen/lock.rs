//! The single-instance lock: an exclusive `flock` on `$runtime/efrd.lock`, held for the life of the process.
//!
//! `flock` (not a pid file alone) because the kernel drops the lock when the process dies, however it dies, so a
//! crash never leaves a lock that blocks the next start. One moment after a crash is the exception: a child efrd
//! was starting, between its fork and its exec, shares the open file until its exec closes it (close-on-exec), so an
//! efrd started in that moment is refused; systemd kills such children with the service before it restarts it. The
//! file also holds the pid of its holder, for the message that a second efrd prints; the pid is information only,
//! never the lock itself.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use super::ListenError;

/// The held lock. Dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct InstanceLock {
    _file: Flock<File>,
    path: PathBuf,
}

impl InstanceLock {
    /// Takes the lock at `path` without waiting, creating the file (mode 0600) when missing, and writes our pid
    /// into it.
    ///
    /// # Errors
    /// [`ListenError::AlreadyRunning`] when another process (or another open of the file in this process) holds
    /// it, with that holder's pid when the file names one; [`ListenError::Io`] when the file cannot be opened or
    /// locked.
    pub fn acquire(path: &Path) -> Result<Self, ListenError> {
        let io = |what: &'static str| {
            move |source| ListenError::Io {
                what,
                path: path.to_owned(),
                source,
            }
        };
        // No truncate on open: the file may hold the pid of a running holder, which a refused start reports.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(io("open the lock file"))?;
        let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => locked,
            Err((mut file, Errno::EWOULDBLOCK)) => {
                let mut text = String::new();
                let pid = file
                    .read_to_string(&mut text)
                    .ok()
                    .and_then(|_| text.trim().parse::<u32>().ok());
                return Err(ListenError::AlreadyRunning {
                    lock: path.to_owned(),
                    pid,
                });
            }
            Err((_, errno)) => return Err(io("lock the lock file")(errno.into())),
        };
        file.set_len(0).map_err(io("write the lock file"))?;
        file.rewind().map_err(io("write the lock file"))?;
        writeln!(file, "{}", std::process::id()).map_err(io("write the lock file"))?;
        Ok(Self {
            _file: file,
            path: path.to_owned(),
        })
    }

    /// The lock file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}
