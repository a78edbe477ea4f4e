//! Who is on the other end of a Unix-socket connection.
//!
//! efrd serves only its own user: a peer whose uid (from `SO_PEERCRED`, which the kernel fills in at connect time
//! and the peer cannot forge) is not efrd's is closed before a byte is read (docs/architecture.md, "Processes and trust
//! boundaries").

use std::os::fd::AsFd;

use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
use nix::unistd::Uid;

/// The credentials of a connected peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// The peer's process id at connect time.
    pub pid: i32,
    /// The peer's effective uid at connect time.
    pub uid: u32,
    /// The peer's effective gid at connect time.
    pub gid: u32,
}

/// Why a peer is refused.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// `SO_PEERCRED` failed.
    #[error("cannot read the peer's credentials: {0}")]
    Credentials(#[from] nix::Error),
    /// The peer runs as another user.
    #[error("peer uid {peer} is not efrd's uid {ours}")]
    OtherUser {
        /// The peer's uid.
        peer: u32,
        /// efrd's uid.
        ours: u32,
    },
}

/// Reads the peer's credentials and accepts only a peer of efrd's own effective uid.
///
/// # Errors
/// [`PeerError::OtherUser`] for another uid; [`PeerError::Credentials`] when the kernel cannot say.
pub fn check_same_user<S: AsFd>(socket: &S) -> Result<Peer, PeerError> {
    let creds = getsockopt(socket, PeerCredentials)?;
    let ours = Uid::effective().as_raw();
    if creds.uid() != ours {
        return Err(PeerError::OtherUser {
            peer: creds.uid(),
            ours,
        });
    }
    Ok(Peer {
        pid: creds.pid(),
        uid: creds.uid(),
        gid: creds.gid(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_of_our_own_uid_is_accepted() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let peer = check_same_user(&a).unwrap();
        assert_eq!(peer.uid, Uid::effective().as_raw());
        assert_eq!(peer.pid, i32::try_from(std::process::id()).unwrap());
    }
}
