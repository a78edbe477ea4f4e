//! The D-Bus of contained calls, efrd's side (docs/bus.md): only `efr-bus-proxy` stands between a call and the
//! user's session bus.
//!
//! - [`proxy`]: the `efr-bus-proxy` process (supervised by [`crate::helper_process`]): a call's bus plan opened
//!   and closed.
//! - [`rules`]: the config's `[bus]` lists and the default policy made into a call's `bus_filter` grant and its
//!   bus plan; where the user's session bus is.
//! - [`report`]: a closed bus plan's refusals as the call's `sandbox` summary and the one line the model gets.

pub mod proxy;
pub mod report;
pub mod rules;

pub use proxy::{BusPlan, BusSupervisor};
pub use rules::{CallBus, session_bus};
