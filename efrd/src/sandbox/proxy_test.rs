//! The probe's proxy self-test (the sandbox status's `proxy`, the `proxy` step of `admin.sandbox_check`): a real
//! contained call, with a `host` grant and its own `efr-proxy` plan, sends two CONNECT requests through the bridge
//! the launcher gives it (`$HTTPS_PROXY`):
//!
//! - one for [`ALLOWED`], which the plan allows: the proxy answers 200 once the name passes its rules, before it
//!   resolves anything, so the test needs no internet and proves the path (call → bridge → socket → proxy) and
//!   the allow rule;
//! - one for [`DENIED`], which the plan denies: the proxy answers 403, and the plan's close counts it `denied`.
//!
//! It runs after the blocking probe, only when the sandbox itself works, and starts the proxy when none runs (the
//! probe is a need).

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use efr_protocol::internal::LaunchReport;
use efr_protocol::internal::host::HostPattern;
use efr_protocol::internal::proxy::OpenPlan;
use efr_protocol::wire::{BlockReason, Grant, ProbeName};

use super::probe::{Probe, ProbeOptions, base_plan, launch};
use crate::network::ProxySupervisor;

/// The host the test's plan allows. `.invalid` names resolve nowhere (RFC 6761), and the proxy answers before it
/// resolves.
pub const ALLOWED: &str = "allowed.proxy-test.efr.invalid";
/// The host the test's plan denies.
pub const DENIED: &str = "denied.proxy-test.efr.invalid";

/// The contained command: two CONNECTs through `$HTTPS_PROXY` with bash's `/dev/tcp`, each status checked. Exit 2:
/// no proxy variable; 3: the bridge refused the connection; 4: the allowed host was not answered 200; 5: the denied
/// one was not answered 403.
const SCRIPT: &str = r#"proxy=${HTTPS_PROXY#http://}; proxy=${proxy%/}
[ -n "$proxy" ] || exit 2
ask() {
  exec 3<>"/dev/tcp/${proxy%:*}/${proxy##*:}" || exit 3
  printf 'CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n' "$1" "$1" >&3
  IFS=' ' read -r -t 10 _ code _ <&3
  exec 3<&-
  [ "$code" = "$2" ] || exit "$3"
}
ask "$1" 200 4
ask "$2" 403 5
"#;

/// Runs the self-test when the sandbox is available and records it: `status.proxy`, `paths.proxy` (the program,
/// when installed) and the [`ProbeName::Proxy`] step.
pub async fn add_proxy_test(found: &mut Probe, options: &ProbeOptions, proxy: &Arc<ProxySupervisor>) {
    if proxy.installed() {
        found.paths.proxy = Some(proxy.program().to_path_buf());
    }
    if found.steps.iter().any(|step| step.name == ProbeName::Proxy) {
        // The probe stopped early and marked the step "not checked".
        return;
    }
    let outcome = match (found.status.available, found.paths.bwrap.clone()) {
        (true, Some(bwrap)) => self_test(options, bwrap, found.bwrap_version.as_deref(), proxy).await,
        _ => Err("not checked: the sandbox cannot run".to_owned()),
    };
    found.status.proxy = outcome.is_ok();
    found.step(ProbeName::Proxy, outcome.err(), None);
}

async fn self_test(
    options: &ProbeOptions,
    bwrap: PathBuf,
    bwrap_version: Option<&str>,
    proxy: &Arc<ProxySupervisor>,
) -> Result<(), String> {
    let pattern = |host: &str| HostPattern::from_str(host).map_err(|e| format!("the test host does not parse: {e}"));
    let open = OpenPlan {
        call: "proxy-self-test".into(),
        allow: vec![pattern(ALLOWED)?],
        deny: vec![pattern(DENIED)?],
    };
    let plan = proxy.open(&open).await.map_err(|e| e.to_string())?;
    let mut launch_plan = base_plan(
        options,
        &bwrap,
        vec![
            "bash".into(),
            "-c".into(),
            SCRIPT.into(),
            "proxy-self-test".into(),
            ALLOWED.into(),
            DENIED.into(),
        ],
        bwrap_version,
    );
    launch_plan.grants.push(Grant::Host {
        host: ALLOWED.into(),
        port: None,
    });
    launch_plan.proxy = Some(plan.socket.clone());
    let launcher = options.launcher.clone();
    let report = tokio::task::spawn_blocking(move || launch(&launcher, launch_plan)).await;
    let closed = proxy.close(&plan).await.map_err(|e| e.to_string())?;
    let report = report
        .map_err(|e| format!("the self-test did not run: {e}"))?
        .map_err(|e| format!("cannot run efr-launcher: {e}"))?;
    match LaunchReport::end(&report) {
        Some(LaunchReport::Exited { exit_code: 0, .. }) => {}
        Some(LaunchReport::Exited { exit_code, .. }) => {
            return Err(match exit_code {
                2 => "the contained call got no HTTPS_PROXY".to_owned(),
                3 => "the contained call could not reach the proxy's bridge".to_owned(),
                4 => format!("the proxy did not answer 200 for the allowed {ALLOWED}"),
                5 => format!("the proxy did not refuse the denied {DENIED} with 403"),
                127 => "bash is not installed, and the self-test runs in it".to_owned(),
                other => format!("the self-test failed (exit {other})"),
            });
        }
        Some(LaunchReport::SetupError { message, .. }) => {
            return Err(format!("the sandbox refused the host grant: {message}"));
        }
        other => return Err(format!("the self-test did not end ({other:?})")),
    }
    let counted = closed
        .blocked
        .iter()
        .any(|b| b.host == DENIED && b.port == 443 && b.reason == BlockReason::Denied);
    if counted {
        Ok(())
    } else {
        Err(format!("the proxy refused {DENIED} but did not count it as denied"))
    }
}
