//! The network of one contained call: its `efr-proxy` plan opened before the launch (the plan's socket goes into
//! the launch plan) and closed after the command ends (its refusals go into the call's `sandbox` summary and one
//! line for the model). The rules themselves are in [`crate::network`].

use efr_protocol::ids::CallId;
use efr_protocol::internal::LaunchPlan;
use efr_protocol::wire::{Grant, SandboxSummary};

use super::env::ToolEnv;
use crate::network::{ProxyError, ProxyPlan, report};

/// Opens the `efr-proxy` plan of a call whose grants hold `host` grants and puts its socket in the launch plan.
/// When the proxy cannot take it, the host grants are dropped (the call runs with no network: the network never
/// opens without the proxy) and the returned note tells the model why.
pub(super) async fn open(
    env: &ToolEnv,
    call_id: &CallId,
    plan: &mut LaunchPlan,
) -> (Option<ProxyPlan>, Option<String>) {
    if !plan.grants.iter().any(|g| matches!(g, Grant::Host { .. })) {
        return (None, None);
    }
    let network = env.network.clone();
    let grants = plan.grants.clone();
    let call = call_id.0.clone();
    // The credential hosts come from files and git: off the runtime.
    let open = tokio::task::spawn_blocking(move || network.open_plan(&call, &grants))
        .await
        .ok()
        .flatten();
    let opened = match open {
        Some(open) => env.network.proxy.open(&open).await.map_err(|e| e.to_string()),
        None => Err("its plan could not be made".to_owned()),
    };
    match opened {
        Ok(opened) => {
            plan.proxy = Some(opened.socket.clone());
            (Some(opened), None)
        }
        Err(why) => {
            plan.grants.retain(|g| !matches!(g, Grant::Host { .. }));
            plan.proxy = None;
            (None, Some(format!("[network: this call had no network: {why}]")))
        }
    }
}

/// Closes a call's proxy plan and fills its summary (`blocked`, `blocked_more`). `Ok` holds the line about the
/// refusals for the model (none when nothing was refused); `Err` the line when the proxy died while the call ran:
/// the call fails, its connections were cut.
pub(super) async fn close(
    env: &ToolEnv,
    plan: &ProxyPlan,
    summary: &mut SandboxSummary,
) -> Result<Option<String>, String> {
    match env.network.proxy.close(plan).await {
        Ok(closed) => {
            report::fill_summary(summary, &closed);
            Ok(report::model_line(summary))
        }
        Err(ProxyError::Died { why, .. }) => Err(format!(
            "[network: efr-proxy stopped while this call ran ({why}); the call's connections were cut, so it may \
             have failed for that; efr starts the proxy again for the next call]"
        )),
        Err(error) => Ok(Some(format!(
            "[network: the proxy's report of this call is lost: {error}]"
        ))),
    }
}
