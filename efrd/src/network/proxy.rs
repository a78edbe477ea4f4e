//! `efr-proxy`, the process that alone decides what contained calls reach on the network (docs/network.md; the
//! control messages are `efr_protocol::internal::proxy`).
//!
//! The supervision (start on first need, restart with backoff, the status for admin.status) and the plans' life are
//! [`crate::helper_process`]'s, shared with `efr-bus-proxy`. A plan whose proxy ended while it was open fails at its
//! close with [`ProxyError::Died`]: the proxy took its sockets and tunnels with it, so the network never stays open.
//! A program that is not installed is never started: auto's calls get no host grant (no network), and the status
//! says `not_installed`.

use std::path::PathBuf;

use efr_protocol::internal::proxy::{CLOSE, Closed, OPEN, OpenPlan, Opened};

use crate::helper_process::{HelperPlan, OpenedPlan, PlanKind, PlanSupervisor};

pub use crate::helper_process::HelperError as ProxyError;

/// The program's name.
pub const NAME: &str = "efr-proxy";

/// efr-proxy's plan messages.
#[derive(Debug, Clone)]
pub struct EfrProxy;

impl PlanKind for EfrProxy {
    const NAME: &'static str = NAME;
    const VARIABLE: &'static str = "EFR_PROXY";
    const OPEN: &'static str = OPEN;
    const CLOSE: &'static str = CLOSE;
    type Open = OpenPlan;
    type Opened = Opened;
    type Closed = Closed;
}

impl OpenedPlan for Opened {
    fn plan(&self) -> u64 {
        self.plan
    }

    fn socket(&self) -> PathBuf {
        self.socket.clone()
    }
}

/// The efr-proxy of one daemon. One per daemon, in an `Arc`.
pub type ProxySupervisor = PlanSupervisor<EfrProxy>;

/// An open plan of one call (its socket is the launch plan's `proxy`): close it with [`ProxySupervisor::close`]
/// when the call ends.
pub type ProxyPlan = HelperPlan<EfrProxy>;

#[cfg(test)]
mod tests {
    use efr_protocol::wire::ProxyState;

    use super::*;

    #[tokio::test]
    async fn a_missing_program_is_not_installed_and_never_started() {
        let dir = tempfile::tempdir().unwrap();
        let supervisor = ProxySupervisor::new(dir.path().join("no-such-efr-proxy"), dir.path().join("proxy"));
        assert!(!supervisor.installed());
        let plan = OpenPlan {
            call: "c1".into(),
            allow: Vec::new(),
            deny: Vec::new(),
        };
        let error = supervisor.open(&plan).await.unwrap_err();
        assert_eq!(
            error,
            ProxyError::NotInstalled {
                name: NAME,
                program: dir.path().join("no-such-efr-proxy")
            }
        );
        assert_eq!(
            error.to_string(),
            format!(
                "efr-proxy is not installed at {}",
                dir.path().join("no-such-efr-proxy").display()
            )
        );
        let status = supervisor.status();
        assert_eq!(status.state, ProxyState::NotInstalled);
        assert_eq!(status.restarts, 0);
        assert!(status.last_error.unwrap().contains("not installed"));
        assert!(
            !dir.path().join("proxy").exists(),
            "nothing was made for a proxy that cannot start"
        );
    }
}
