//! efrd's long-lived helper processes, `efr-proxy` (docs/network.md) and `efr-bus-proxy` (docs/bus.md): one
//! supervision for both.
//!
//! - [`supervisor`]: start on first need, restart with backoff when the process ends, the state for admin.status
//!   and the log, requests over its control socket.
//! - [`plans`]: a helper's plans, one per contained call, opened and closed over its control socket.
//! - [`control`]: efrd's end of a helper's control socket (requests and their answers by id).

pub mod control;
pub mod plans;
pub mod supervisor;

pub use plans::{HelperPlan, OpenedPlan, PlanKind, PlanSupervisor};
pub use supervisor::{HelperError, Instance, Supervisor, backoff};
