//! The D-Bus of one contained call: its `efr-bus-proxy` plan opened before the launch (the plan's socket is bound
//! at the session bus's usual address inside, and `DBUS_SESSION_BUS_ADDRESS` names it) and closed after the
//! command ends (its refusals go into the call's `sandbox` summary and one line for the model). The rules
//! themselves are in [`crate::bus`].

use efr_protocol::ids::CallId;
use efr_protocol::internal::LaunchPlan;
use efr_protocol::internal::launch::BusSocket;
use efr_protocol::wire::{Bus, Grant, SandboxSummary};

use super::env::ToolEnv;
use crate::bus::{BusPlan, report};
use crate::helper_process::HelperError;

/// The variable that names the session bus.
const SESSION_VARIABLE: &str = "DBUS_SESSION_BUS_ADDRESS";

/// Opens the bus plan of a call whose grants hold a `bus_filter` grant of the session bus and puts its socket in
/// the launch plan. When the proxy cannot take it, the grant is dropped (the call runs with no bus: the bus is
/// never reached unfiltered) and the returned note tells the model why. A call without the grant never sees the
/// host's `DBUS_SESSION_BUS_ADDRESS`.
pub(super) async fn open(env: &ToolEnv, call_id: &CallId, plan: &mut LaunchPlan) -> (Option<BusPlan>, Option<String>) {
    plan.env.remove(SESSION_VARIABLE);
    let session = Grant::BusFilter { bus: Bus::Session };
    if !plan.grants.contains(&session) {
        return (None, None);
    }
    let opened = match env.bus.open_plan(&call_id.0) {
        Some(open) => env.bus.proxy.open(&open).await.map_err(|e| e.to_string()),
        None => Err("the user's session has no bus".to_owned()),
    };
    match opened {
        Ok(opened) => {
            let inside = env.bus.path_inside();
            plan.env
                .insert(SESSION_VARIABLE.into(), format!("unix:path={}", inside.display()));
            plan.bus_sockets.push(BusSocket {
                bus: Bus::Session,
                socket: opened.socket.clone(),
                path: inside,
            });
            (Some(opened), None)
        }
        Err(why) => {
            plan.grants.retain(|g| *g != session);
            plan.bus_sockets.clear();
            (None, Some(format!("[bus: this call had no D-Bus: {why}]")))
        }
    }
}

/// Closes a call's bus plan and fills its summary (`bus_refused`, `bus_refused_more`). `Ok` holds the line about
/// the refusals for the model (none when nothing was refused); `Err` the line when the proxy died while the call
/// ran: the call fails, its bus was cut.
pub(super) async fn close(
    env: &ToolEnv,
    plan: &BusPlan,
    summary: &mut SandboxSummary,
) -> Result<Option<String>, String> {
    match env.bus.proxy.close(plan).await {
        Ok(closed) => {
            report::fill_summary(summary, &closed);
            Ok(report::model_line(summary))
        }
        Err(HelperError::Died { why, .. }) => Err(format!(
            "[bus: efr-bus-proxy stopped while this call ran ({why}); the call's D-Bus connections were cut, so it \
             may have failed for that; efr starts the proxy again for the next call]"
        )),
        Err(error) => Ok(Some(format!(
            "[bus: the bus proxy's report of this call is lost: {error}]"
        ))),
    }
}
