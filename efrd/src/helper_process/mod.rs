//! efrd's long-lived helper processes, `efr-proxy` (docs/network.md) and `efr-bus-proxy` (docs/bus.md): one
//! supervision for both.
//!
//! - [`supervisor`]: start on first need, restart with backoff when the process ends, the state for admin.status
//!   and the log, requests over its control socket.
//! - [`control`]: efrd's end of a helper's control socket (requests and their answers by id).

pub mod control;
pub mod supervisor;

pub use supervisor::{HelperError, Instance, Supervisor, backoff};
