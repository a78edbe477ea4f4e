//! The supervisor of `efr-bus-proxy`, the process that filters a contained call's D-Bus (docs/bus.md; the control
//! messages are `efr_protocol::internal::bus_proxy`).
//!
//! The supervision (start on first need, restart with backoff) is [`crate::helper_process`]'s, shared with
//! `efr-proxy`. Here: a call's bus plan opened and closed. A plan whose proxy ended while it was open fails at its
//! close with [`HelperError::Died`]: the proxy took the call's filtered socket and connections with it. There is no
//! admin.status member for this process: its starts and ends are logged, and the sandbox status says whether the
//! filter is on (`bus_proxy`, `bus_proxy_off`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use efr_protocol::internal::bus_proxy::{CLOSE, ClosedBus, OPEN, OpenBusPlan, OpenedBus};
use efr_protocol::internal::proxy::ClosePlan;
use efr_protocol::wire::ProxyProcess;

use crate::helper_process::{HelperError, Instance, Supervisor};

/// The program's name.
pub const NAME: &str = "efr-bus-proxy";

/// The efr-bus-proxy of one daemon. One per daemon, in an `Arc`.
#[derive(Debug)]
pub struct BusSupervisor {
    helper: Arc<Supervisor>,
}

/// An open bus plan of one call: close it with [`BusSupervisor::close`] when the call ends.
#[derive(Debug, Clone)]
pub struct BusPlan {
    instance: Arc<Instance>,
    /// The plan's number in that proxy.
    pub plan: u64,
    /// The plan's listening socket on the host (a launch plan's `bus_sockets` entry binds it).
    pub socket: PathBuf,
}

impl BusSupervisor {
    /// A supervisor of `program` whose plan sockets go in `sockets`; nothing starts yet.
    #[must_use]
    pub fn new(program: PathBuf, sockets: PathBuf) -> Self {
        Self {
            helper: Arc::new(Supervisor::new(NAME, program, sockets)),
        }
    }

    /// The program of the default setup: `$EFR_BUS_PROXY`, else `efr-bus-proxy` next to the running efrd.
    #[must_use]
    pub fn default_program() -> PathBuf {
        Supervisor::default_program(NAME, "EFR_BUS_PROXY")
    }

    /// The program efrd starts.
    #[must_use]
    pub fn program(&self) -> &Path {
        self.helper.program()
    }

    /// Whether the program is installed (a file at its path): without it, contained calls have no bus.
    #[must_use]
    pub fn installed(&self) -> bool {
        self.helper.installed()
    }

    /// The process's state (state, pid, restarts, last error), for the log and tests.
    #[must_use]
    pub fn status(&self) -> ProxyProcess {
        self.helper.status()
    }

    /// Opens a bus plan for one call, starting the proxy first when none runs.
    ///
    /// # Errors
    /// [`HelperError::NotInstalled`], [`HelperError::Start`], or [`HelperError::Control`] when the proxy refused the
    /// plan (a rule it does not take, a bus it cannot reach) or did not answer in time.
    pub async fn open(&self, plan: &OpenBusPlan) -> Result<BusPlan, HelperError> {
        let (instance, opened): (_, OpenedBus) = self.helper.call(OPEN, plan).await?;
        Ok(BusPlan {
            instance,
            plan: opened.plan,
            socket: opened.socket,
        })
    }

    /// Closes a call's bus plan and returns its refusals.
    ///
    /// # Errors
    /// [`HelperError::Died`] when the proxy that served the plan ended while it was open (the call's bus was cut),
    /// [`HelperError::Control`] when the proxy refused the close or did not answer.
    pub async fn close(&self, plan: &BusPlan) -> Result<ClosedBus, HelperError> {
        self.helper
            .call_on(&plan.instance, CLOSE, &ClosePlan { plan: plan.plan })
            .await
    }
}
