//! `efr-bus-proxy`, the process that filters a contained call's D-Bus (docs/bus.md; the control messages are
//! `efr_protocol::internal::bus_proxy`).
//!
//! The supervision (start on first need, restart with backoff) and the plans' life are [`crate::helper_process`]'s,
//! shared with `efr-proxy`. A plan whose proxy ended while it was open fails at its close with
//! [`crate::helper_process::HelperError::Died`]: the proxy took the call's filtered socket and connections with it.
//! There is no admin.status member for this process: its starts and ends are logged, and the sandbox status says
//! whether the filter is on (`bus_proxy`, `bus_proxy_off`).

use std::path::PathBuf;

use efr_protocol::internal::bus_proxy::{CLOSE, ClosedBus, OPEN, OpenBusPlan, OpenedBus};

use crate::helper_process::{HelperPlan, OpenedPlan, PlanKind, PlanSupervisor};

/// The program's name.
pub const NAME: &str = "efr-bus-proxy";

/// efr-bus-proxy's plan messages.
#[derive(Debug, Clone)]
pub struct EfrBusProxy;

impl PlanKind for EfrBusProxy {
    const NAME: &'static str = NAME;
    const VARIABLE: &'static str = "EFR_BUS_PROXY";
    const OPEN: &'static str = OPEN;
    const CLOSE: &'static str = CLOSE;
    type Open = OpenBusPlan;
    type Opened = OpenedBus;
    type Closed = ClosedBus;
}

impl OpenedPlan for OpenedBus {
    fn plan(&self) -> u64 {
        self.plan
    }

    fn socket(&self) -> PathBuf {
        self.socket.clone()
    }
}

/// The efr-bus-proxy of one daemon. One per daemon, in an `Arc`.
pub type BusSupervisor = PlanSupervisor<EfrBusProxy>;

/// An open bus plan of one call (a launch plan's `bus_sockets` entry binds its socket): close it with
/// [`BusSupervisor::close`] when the call ends.
pub type BusPlan = HelperPlan<EfrBusProxy>;
