//! Tests of the listener: self-binding on a real tempdir, the lock, sd_notify on a real datagram socket, and
//! socket activation through a real `systemd-socket-activate` (the test binary runs itself as the daemon).

mod activation;
mod notify;
mod self_bound;
