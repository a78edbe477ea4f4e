//! The socket maker of a contained job's port forwards (docs/jobs.md, "Port forwards").
//!
//! A TCP socket belongs to the network namespace it was made in, whatever process holds it later. efrd forwards a
//! port that a contained job listens on in its sandbox's namespace by connecting, for each host connection, a
//! socket made inside that namespace; but efrd cannot enter the namespace itself (a threaded process cannot join the
//! sandbox's user namespace, and joining its network namespace needs `CAP_SYS_ADMIN` there). So efrd starts
//! `efr-launcher sockets --pid PID` with one end of a Unix socket pair as its standard input:
//!
//! - it joins the network namespace of PID, a process of the sandbox, after the user namespace that owns it (when
//!   that is not its own). The user who made the sandbox may: the owner's user has every capability in it;
//! - it confines itself as the proxy bridge does (no capabilities, no_new_privs, Landlock with no filesystem access
//!   and no TCP bind or connect, seccomp with no exec), with TCP sockets allowed instead of Unix ones: it can make
//!   an unconnected socket and nothing else;
//! - for each byte it reads (`4` or `6`), it sends back one new TCP socket of that family (SCM_RIGHTS), and ends at
//!   the end of its input. efrd connects the socket to the job's port and copies the bytes.
//!
//! Exit status 0 at the end of the input; [`efr_protocol::internal::SETUP_ERROR_EXIT`] when it cannot join or
//! confine itself (its reason on standard error).

use std::fs::File;
use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::process::ExitCode;

use nix::sched::{CloneFlags, setns};
use nix::sys::socket::{AddressFamily, ControlMessage, MsgFlags, SockFlag, SockType, recvmsg, sendmsg, socket};

use crate::{privileges, ruleset, seccomp};

/// Runs the socket maker for the sandbox of `pid`, serving on standard input.
#[must_use]
pub fn run(pid: u32) -> ExitCode {
    if let Err(message) = enter(pid).and_then(|()| confine()) {
        eprintln!("efr-launcher sockets: {message}");
        return ExitCode::from(efr_protocol::internal::SETUP_ERROR_EXIT);
    }
    // Standard input is the socket pair's end that efrd gave.
    let control = io::stdin();
    match serve(control.as_fd()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("efr-launcher sockets: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `NS_GET_USERNS` (linux/nsfs.h, `_IO(0xb7, 0x1)`): a new descriptor of the user namespace that owns a namespace.
const NS_GET_USERNS: libc::c_ulong = 0xb701;

/// Joins the network namespace of `pid`, after the user namespace that owns it (unless that is this process's own):
/// joining a network namespace needs `CAP_SYS_ADMIN` both in its owner and in the caller's own user namespace, and
/// the owner's user has every capability in the namespace it made. The owner, not the user namespace of `pid`: the
/// sandbox may run its command in a namespace nested below the one that made the network.
fn enter(pid: u32) -> Result<(), String> {
    let net = File::open(format!("/proc/{pid}/ns/net"))
        .map_err(|e| format!("cannot open the network namespace of {pid}: {e}"))?;
    // SAFETY: an ioctl without argument on a descriptor this function owns; the result is checked.
    let owner = unsafe { libc::ioctl(net.as_raw_fd(), NS_GET_USERNS) };
    if owner < 0 {
        return Err(format!(
            "cannot find the owner of the network namespace of {pid}: {}",
            io::Error::last_os_error()
        ));
    }
    // SAFETY: the kernel just returned this new descriptor; nothing else owns it.
    let owner = File::from(unsafe { OwnedFd::from_raw_fd(owner) });
    let own = std::fs::metadata("/proc/self/ns/user").map_err(|e| format!("cannot read own user namespace: {e}"))?;
    let theirs = owner
        .metadata()
        .map_err(|e| format!("cannot read the owner of {pid}'s network: {e}"))?;
    if (theirs.dev(), theirs.ino()) != (own.dev(), own.ino()) {
        setns(&owner, CloneFlags::CLONE_NEWUSER)
            .map_err(|e| format!("cannot join the user namespace that owns {pid}'s network: {e}"))?;
    }
    setns(&net, CloneFlags::CLONE_NEWNET).map_err(|e| format!("cannot join the network namespace of {pid}: {e}"))
}

/// The maker's own sandbox: it may make TCP sockets, and do nothing else with them or with files.
fn confine() -> Result<(), String> {
    privileges::drop_thread_capabilities()?;
    efr_helper::harden::set_no_new_privs()?;
    ruleset::apply_bridge()?;
    let programs = seccomp::socket_maker_filters().map_err(|e| format!("cannot build the seccomp filters: {e}"))?;
    efr_helper::harden::seccomp::install(&programs)
}

/// Answers each request byte on `control` with a new socket, until the end of its input.
fn serve(control: BorrowedFd<'_>) -> io::Result<()> {
    loop {
        let mut byte = [0_u8; 1];
        let mut iov = [IoSliceMut::new(&mut byte)];
        let received = recvmsg::<()>(control.as_raw_fd(), &mut iov, None, MsgFlags::empty())?;
        if received.bytes == 0 {
            return Ok(());
        }
        let family = match byte[0] {
            b'4' => AddressFamily::Inet,
            b'6' => AddressFamily::Inet6,
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("a request of byte {other}, not 4 or 6"),
                ));
            }
        };
        let made: OwnedFd = socket(family, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)?;
        let fds = [made.as_raw_fd()];
        sendmsg::<()>(
            control.as_raw_fd(),
            &[IoSlice::new(&byte)],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::empty(),
            None,
        )?;
    }
}
