//! Test support for efr: the scripted model server ([`scripted`]) and the helpers of the workspace-level
//! integration tests.

pub mod binaries;
pub mod client;
pub mod daemon;
pub mod scripted;
pub mod systemd;
