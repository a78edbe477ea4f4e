//! admin.sandbox_check, sandbox.explain, sandbox.explain_host, and the sandbox members of admin.status
//! (docs/protocol.md, "The sandbox check and explain").
//!
//! The probe and its cache are in [`crate::sandbox::state`], the base plan in [`crate::sandbox::plan`], the answer
//! of explain in [`crate::sandbox::explain`](mod@crate::sandbox::explain), that of explain_host in
//! [`crate::network::explain`](mod@crate::network::explain); this file maps them to the wire.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use efr_protocol::ErrorBody;
use efr_protocol::internal::host::DEFAULT_PORT;
use efr_protocol::wire::{
    AdminSandboxCheckResult, PathView, SandboxExplainHostParams, SandboxExplainParams, SandboxExplainResult,
    SandboxPaths, SandboxStatus,
};
use serde_json::Value;
use tracing::warn;

use super::{params, result};
use crate::network::credentials::credential_entries;
use crate::sandbox::probe::Probe;
use crate::sandbox::{Layout, View, base_plan, explain, project_root};
use crate::server::RequestCtx;
use efr_policy::paths::normalize_from_root;
use efr_store::PageRequest;

/// How many recent conversations give the `writable` project roots of `sandbox_paths`.
const RECENT_CONVERSATIONS: u32 = 50;

/// Where explain's plan says bubblewrap is when no probe found it: explain reads only the plan's mounts, which do
/// not depend on the program.
const BWRAP_FALLBACK: &str = "/usr/bin/bwrap";

/// admin.sandbox_check: runs the probe again (a real contained `true` and the net_view self-test, about 20 ms or
/// more), caches it for admin.status and auto mode, and reports every step.
///
/// # Errors
/// Never in practice: a sandbox that cannot run is reported in the result (`sandbox.available` false and why), not
/// as an error; `internal` if the result cannot be serialized.
pub async fn sandbox_check(ctx: &RequestCtx) -> Result<Value, ErrorBody> {
    let probe = ctx.daemon.sandbox.recheck().await;
    result(&AdminSandboxCheckResult {
        sandbox: probe.status.clone(),
        sandbox_paths: sandbox_paths(ctx, &probe).await,
        bwrap_version: probe.bwrap_version.clone(),
        probes: probe.steps.clone(),
    })
}

/// The `sandbox` and `sandbox_paths` members of admin.status, from the cached probe. When none is cached (before
/// the first probe, or after a setup error made the daemon forget it) both are absent and a probe starts in the
/// background, so admin.status never waits for one.
pub async fn status_members(ctx: &RequestCtx) -> (Option<SandboxStatus>, Option<SandboxPaths>) {
    let Some(probe) = ctx.daemon.sandbox.peek() else {
        ctx.daemon.sandbox.probe_in_background();
        return (None, None);
    };
    (Some(probe.status.clone()), Some(sandbox_paths(ctx, &probe).await))
}

/// sandbox.explain: what a contained call in `cwd` would see at `path`, and which rule decides. The plan is the
/// base plan of such a call: `cwd`'s project root writable, `$SCRATCH` (the scratch folder) writable, the masks,
/// a private `/tmp`. Reads no file but the `.git` markers that find the project; `path` need not exist.
///
/// # Errors
/// `invalid` for a relative `cwd`, a relative `path` without `cwd`, or a path the plan cannot hold (such as one with
/// a NUL byte); the message says which.
pub async fn explain_path(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: SandboxExplainParams = params(raw)?;
    let cwd = match &params.cwd {
        Some(cwd) if !cwd.is_absolute() => {
            return Err(ErrorBody::invalid(format!(
                "bad params: `cwd`: {} is not an absolute path",
                cwd.display()
            )));
        }
        Some(cwd) => Some(normalize_from_root(cwd)),
        None => None,
    };
    if params.path.is_relative() && cwd.is_none() {
        return Err(ErrorBody::invalid(format!(
            "bad params: `path`: {:?} is relative; give a `cwd` to resolve it against",
            params.path
        )));
    }
    let layout = layout(ctx);
    let bwrap = ctx
        .daemon
        .sandbox
        .peek()
        .and_then(|probe| probe.paths.bwrap.clone())
        .unwrap_or_else(|| PathBuf::from(BWRAP_FALLBACK));
    let plan_cwd = cwd.clone().unwrap_or_else(|| PathBuf::from("/"));
    let home = ctx.daemon.sandbox.options().home.clone();
    let project = cwd.as_deref().and_then(|cwd| project_root(cwd, Some(&home)));
    let plan = base_plan(
        &layout,
        &bwrap,
        vec!["true".into()],
        &plan_cwd,
        project.as_deref(),
        &layout.scratch_root,
    );
    let answer = explain(&params.path, cwd.as_deref(), &plan).map_err(|e| ErrorBody::invalid(e.to_string()))?;
    result(&SandboxExplainResult {
        path: answer.path,
        view: match answer.view {
            View::Writable => PathView::Writable,
            View::ReadOnly => PathView::ReadOnly,
            View::Masked => PathView::Masked,
            View::Hidden => PathView::Hidden,
        },
        rule_path: answer.rule_path,
        rule: answer.rule,
    })
}

/// sandbox.explain_host: which rule decides `host` on `port` (443 when absent) for a contained call, under the
/// config's `[network]` lists as they are now (a reload applies to the next answer) and the credential files as
/// they are now. Reads the credential files and runs git off the async runtime.
///
/// # Errors
/// `invalid` for params that do not parse or port 0; every `host` string gets a verdict.
pub async fn explain_host(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: SandboxExplainHostParams = params(raw)?;
    let port = params.port.unwrap_or(DEFAULT_PORT);
    if port == 0 {
        return Err(ErrorBody::invalid("bad params: `port` must be from 1 to 65535"));
    }
    let config = ctx.daemon.config();
    let (allow, deny) = (config.network.allow.clone(), config.network.deny.clone());
    let home = ctx.daemon.roots.home.clone();
    let answer = tokio::task::spawn_blocking(move || {
        let credentials = home.as_deref().map(credential_entries).unwrap_or_default();
        crate::network::explain_host(&params.host, port, &allow, &deny, &credentials)
    })
    .await
    .map_err(|e| ErrorBody::internal(format!("explaining the host failed: {e}")))?;
    result(&answer)
}

/// This daemon's sandbox layout: its home and runtime folder, its four roots, the config's masks as they are now
/// (a reload applies to the next answer; the turns' contained calls build theirs the same way).
fn layout(ctx: &RequestCtx) -> Layout {
    let config = ctx.daemon.config();
    Layout::new(
        ctx.daemon.sandbox.options(),
        &ctx.daemon.roots,
        &config.sandbox.extra_masks,
    )
}

/// The probe's program paths, and the layout's scratch folder, masks and the recent project roots.
async fn sandbox_paths(ctx: &RequestCtx, probe: &Probe) -> SandboxPaths {
    let layout = layout(ctx);
    SandboxPaths {
        scratch: Some(layout.scratch_root.clone()),
        masks: layout.masks().into_iter().map(|mask| mask.path).collect(),
        writable: recent_projects(ctx).await,
        ..probe.paths.clone()
    }
}

/// The project roots of the most recently updated conversations, newest first, without repeats. A store that cannot
/// be read gives none (logged): the rest of the answer still holds.
async fn recent_projects(ctx: &RequestCtx) -> Vec<PathBuf> {
    let home = ctx.daemon.sandbox.options().home.clone();

    let page = match ctx
        .daemon
        .store
        .list_conversations(PageRequest {
            limit: RECENT_CONVERSATIONS,
            after: None,
        })
        .await
    {
        Ok(page) => page,
        Err(error) => {
            warn!(%error, "cannot read the conversations for the sandbox's writable roots");
            return Vec::new();
        }
    };
    let mut seen = HashSet::new();
    page.conversations
        .iter()
        .filter_map(|summary| summary.cwd.as_deref().map(Path::new))
        .filter(|cwd| cwd.is_absolute())
        .filter_map(|cwd| project_root(&normalize_from_root(cwd), Some(&home)))
        .filter(|root| seen.insert(root.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use efr_protocol::methods::{Method, Scope, Transport};

    #[test]
    fn the_check_and_explain_host_are_local_only_and_explain_needs_only_read() {
        // The dispatcher checks the table before a handler runs (server::session), so these lines are what keeps
        // a phone, which never holds admin and connects over the tailnet, away from the check, and from the hosts
        // the user holds tokens for and the files that hold them.
        let check = Method::AdminSandboxCheck.spec();
        assert_eq!(check.scope, Scope::Admin);
        for method in [Method::AdminSandboxCheck, Method::SandboxExplainHost] {
            let spec = method.spec();
            assert!(spec.transports.allows(Transport::Local), "{method}");
            assert!(!spec.transports.allows(Transport::Remote), "{method}");
        }
        for method in [Method::SandboxExplain, Method::SandboxExplainHost] {
            let explain = method.spec();
            assert_eq!(explain.scope, Scope::Read);
            assert!(!explain.write, "{method} takes no command id");
        }
        assert!(Method::SandboxExplain.spec().transports.allows(Transport::Remote));
    }
}
