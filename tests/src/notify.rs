//! The manager's end of `NOTIFY_SOCKET` (sd_notify(3)) in a test: one datagram a message.

use std::io;
use std::os::unix::net::UnixDatagram;

/// The most bytes of one notification read.
const MAX_MESSAGE: usize = 4096;

/// The next message on `socket`, within the socket's read timeout.
///
/// A signal that interrupts the wait is not an error: a socket with a read timeout is never restarted after a
/// signal handler (signal(7)), and the test process has one for `SIGCHLD` as soon as a test there spawned a child
/// through tokio.
///
/// # Errors
/// `WouldBlock`/`TimedOut` when no message comes within the timeout, or the socket's error.
pub fn recv(socket: &UnixDatagram) -> io::Result<String> {
    let mut buf = [0u8; MAX_MESSAGE];
    loop {
        match socket.recv(&mut buf) {
            Ok(n) => return Ok(String::from_utf8_lossy(&buf[..n]).into_owned()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
