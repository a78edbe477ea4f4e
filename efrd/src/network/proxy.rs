//! The supervisor of `efr-proxy`, the process that alone decides what contained calls reach on the network
//! (docs/network.md; the control messages are `efr_protocol::internal::proxy`).
//!
//! The supervision itself (start on first need, restart with backoff, the status for admin.status) is
//! [`crate::helper_process`]'s, shared with `efr-bus-proxy`. Here: a call's plan opened and closed. A plan whose
//! proxy ended while it was open fails at its close with [`ProxyError::Died`]: the proxy took its sockets and
//! tunnels with it, so the network never stays open. A program that is not installed is never started: auto's
//! calls get no host grant (no network), and the status says `not_installed`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use efr_protocol::internal::proxy::{CLOSE, ClosePlan, Closed, OPEN, OpenPlan, Opened};
use efr_protocol::wire::ProxyProcess;

use crate::helper_process::{Instance, Supervisor};

pub use crate::helper_process::HelperError as ProxyError;

/// The program's name.
pub const NAME: &str = "efr-proxy";

/// The efr-proxy of one daemon. One per daemon, in an `Arc`.
#[derive(Debug)]
pub struct ProxySupervisor {
    helper: Arc<Supervisor>,
}

/// An open plan of one call: close it with [`ProxySupervisor::close`] when the call ends.
#[derive(Debug, Clone)]
pub struct ProxyPlan {
    instance: Arc<Instance>,
    /// The plan's number in that proxy.
    pub plan: u64,
    /// The plan's listening socket (the launch plan's `proxy`).
    pub socket: PathBuf,
}

impl ProxySupervisor {
    /// A supervisor of `program` whose plan sockets go in `sockets`; nothing starts yet.
    #[must_use]
    pub fn new(program: PathBuf, sockets: PathBuf) -> Self {
        Self {
            helper: Arc::new(Supervisor::new(NAME, program, sockets)),
        }
    }

    /// The program of the default setup: `$EFR_PROXY`, else `efr-proxy` next to the running efrd.
    #[must_use]
    pub fn default_program() -> PathBuf {
        Supervisor::default_program(NAME, "EFR_PROXY")
    }

    /// The program efrd starts.
    #[must_use]
    pub fn program(&self) -> &Path {
        self.helper.program()
    }

    /// Whether the program is installed (a file at its path): without it, contained calls have no network.
    #[must_use]
    pub fn installed(&self) -> bool {
        self.helper.installed()
    }

    /// The state for admin.status.
    #[must_use]
    pub fn status(&self) -> ProxyProcess {
        self.helper.status()
    }

    /// Opens a plan for one call, starting the proxy first when none runs.
    ///
    /// # Errors
    /// [`ProxyError::NotInstalled`], [`ProxyError::Start`], or [`ProxyError::Control`] when the proxy refused the
    /// plan or did not answer in time.
    pub async fn open(&self, plan: &OpenPlan) -> Result<ProxyPlan, ProxyError> {
        let (instance, opened): (_, Opened) = self.helper.call(OPEN, plan).await?;
        Ok(ProxyPlan {
            instance,
            plan: opened.plan,
            socket: opened.socket,
        })
    }

    /// Closes a call's plan and returns what its connections did.
    ///
    /// # Errors
    /// [`ProxyError::Died`] when the proxy that served the plan ended while it was open (the call must fail: its
    /// connections were cut), [`ProxyError::Control`] when the proxy refused the close or did not answer.
    pub async fn close(&self, plan: &ProxyPlan) -> Result<Closed, ProxyError> {
        self.helper
            .call_on(&plan.instance, CLOSE, &ClosePlan { plan: plan.plan })
            .await
    }
}

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
