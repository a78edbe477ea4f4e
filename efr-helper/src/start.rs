//! A helper's first steps: take over the control socket it inherited (`--control-fd`, fd 3 when efrd starts it),
//! check its sockets folder (`--sockets`), and make the sockets it will create private to the user.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use nix::fcntl::{FcntlArg, FdFlag, fcntl};
use nix::sys::stat::{Mode, umask};

/// The descriptor a helper's control socket is on when [`crate::spawn::HelperCommand`] starts it.
pub const CONTROL_FD: RawFd = 3;

/// What a helper holds once it has taken over: its control socket and its sockets folder.
#[derive(Debug)]
pub struct Handover {
    /// The control socket, close-on-exec.
    pub control: OwnedFd,
    /// The sockets folder, canonical (Landlock rules and the plans' socket paths name it).
    pub sockets: PathBuf,
}

/// Takes over the control socket `control_fd` ([`take_socket`]) and the sockets folder `sockets` (made canonical
/// and checked to be a folder), then sets the umask to 0177, so every socket the helper makes is 0600: only the
/// user (efrd and the sandboxes it starts) can connect.
///
/// # Errors
/// A sentence for efrd's log: the descriptor is not an open socket, or the folder is missing or not a folder.
pub fn take_over(control_fd: RawFd, sockets: &Path) -> Result<Handover, String> {
    let control = take_socket(control_fd)?;
    let sockets = sockets
        .canonicalize()
        .map_err(|e| format!("the sockets folder {}: {e}", sockets.display()))?;
    if !sockets.is_dir() {
        return Err(format!("the sockets folder {} is not a folder", sockets.display()));
    }
    umask(Mode::from_bits_truncate(0o177));
    Ok(Handover { control, sockets })
}

/// Takes the inherited descriptor `fd` (3 or more), after checking that it is an open socket, and marks it
/// close-on-exec.
///
/// # Errors
/// A standard stream, a closed descriptor or one that is not a socket, in words naming `--control-fd`.
pub fn take_socket(fd: RawFd) -> Result<OwnedFd, String> {
    if fd < 3 {
        return Err(format!("--control-fd {fd} is a standard stream"));
    }
    // SAFETY: fstat writes only into `stat`; a closed descriptor makes it fail.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &raw mut stat) } != 0 {
        return Err(format!(
            "--control-fd {fd} is not open: {}",
            std::io::Error::last_os_error()
        ));
    }
    if stat.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(format!("--control-fd {fd} is not a socket"));
    }
    // SAFETY: the descriptor is open, is a socket, and nothing else in this process owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    fcntl(&owned, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(|e| format!("--control-fd {fd}: {e}"))?;
    Ok(owned)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

    use std::os::fd::{AsRawFd, IntoRawFd};
    use std::os::unix::net::UnixStream;

    use super::*;

    #[test]
    fn a_socket_is_taken_and_made_close_on_exec() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        nix::fcntl::fcntl(&theirs, FcntlArg::F_SETFD(FdFlag::empty())).unwrap();
        let fd = OwnedFd::from(theirs).into_raw_fd();
        let owned = take_socket(fd).unwrap();
        let flags = nix::fcntl::fcntl(&owned, FcntlArg::F_GETFD).unwrap();
        assert_ne!(flags & libc::FD_CLOEXEC, 0);
        drop(ours);
    }

    #[test]
    fn what_is_not_a_socket_is_refused() {
        assert!(take_socket(1).unwrap_err().contains("standard stream"));
        let file = tempfile::tempfile().unwrap();
        let error = take_socket(file.as_raw_fd()).unwrap_err();
        assert!(error.contains("is not a socket"), "{error}");
        // A descriptor number far above any this test opened.
        let error = take_socket(4000).unwrap_err();
        assert!(error.contains("is not open"), "{error}");
    }

    #[test]
    fn a_missing_sockets_folder_is_refused() {
        let (_ours, theirs) = UnixStream::pair().unwrap();
        let fd = OwnedFd::from(theirs).into_raw_fd();
        let error = take_over(fd, Path::new("/nonexistent/sockets")).unwrap_err();
        assert!(error.contains("the sockets folder"), "{error}");
    }
}
