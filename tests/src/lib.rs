//! Test support for efr: the scripted model server ([`scripted`]), a network namespace of a test's own with a TLS
//! server and its CA ([`netns`], [`tls`]), a real `dbus-daemon`
//! ([`dbus`]), a process's memory ([`proc`]), a conversation followed
//! to an event ([`subscription`]), and the helpers of the workspace-level integration tests.

pub mod bench;
pub mod binaries;
pub mod client;
pub mod daemon;
pub mod dbus;
pub mod netns;
pub mod notify;
pub mod proc;
pub mod python;
pub mod scripted;
pub mod soak;
pub mod subscription;
pub mod systemd;
pub mod tailscaled;
pub mod tls;
