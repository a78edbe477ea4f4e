//! `efr status`: admin.status, readable.
//!
//! ```text
//! efrd 0.0.6 · pid 4242 · up 3m 12s
//! providers:
//!   openai-api     active  api key sk-proj-...a1b2
//!   anthropic-api          not logged in
//! models: openai-api's catalog, fetched from the provider
//! sandbox: available · landlock ABI 6 · proxy · bus proxy
//! config: /home/u/.config/efr/config.toml
//! ```
//!
//! When no provider has a login, a last line says how to log in, unless the active provider is openai-compat: a
//! local OpenAI-compatible server (llama.cpp, Ollama) often needs no key, and admin.status cannot tell whether this
//! one does, so its row says neutrally "no key stored" rather than "not logged in" (R-report 12).

use std::fmt::Write as _;
use std::process::ExitCode;

use efr_protocol::wire::{AdminStatusResult, Catalog, CatalogOrigin, LoginKind, SandboxStatus};
use serde_json::json;

use super::{human_secs, read};
use crate::report::LOGIN_HINT;

/// The provider that may need no key (an OpenAI-compatible server such as llama.cpp or Ollama).
const COMPAT: &str = "openai-compat";

/// Runs `efr status`.
pub async fn run(json: bool) -> ExitCode {
    let client = match crate::report::connect(None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let mut shown = false;
    let code = super::unary_on(&client, "admin.status", json!({}), json, |value| {
        let status: AdminStatusResult = read("admin.status", value)?;
        crate::out::print(&render(&status));
        shown = true;
        Ok(())
    })
    .await;
    if shown && let Ok(value) = client.call_value("jobs.list", json!({})).await {
        let jobs: efr_protocol::wire::JobsListResult = read("jobs.list", &value).unwrap_or_default();
        crate::out::print(&jobs_line(&jobs.jobs));
    }
    code
}

/// The line of the running jobs (`jobs: 2 running (efr jobs)`), empty when none runs.
#[must_use]
pub fn jobs_line(jobs: &[efr_protocol::wire::JobInfo]) -> String {
    let running = jobs
        .iter()
        .filter(|job| job.state == efr_protocol::wire::JobState::Running)
        .count();
    if running == 0 {
        String::new()
    } else {
        format!("jobs: {running} running (efr jobs)\n")
    }
}

/// The readable form of a status.
#[must_use]
pub fn render(status: &AdminStatusResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "efrd {} · pid {} · up {}",
        status.version,
        status.pid,
        human_secs(status.uptime_secs)
    );
    out.push_str("providers:\n");
    for provider in &status.providers {
        let active = if provider.active { "active" } else { "" };
        let login = match (&provider.login, &provider.key_hint) {
            (Some(LoginKind::ApiKey), Some(hint)) => format!("api key {hint}"),
            (Some(LoginKind::ApiKey), None) => "api key".to_owned(),
            (Some(LoginKind::Subscription), _) => "subscription".to_owned(),
            (None, _) if provider.provider == COMPAT => "no key stored".to_owned(),
            (None, _) => "not logged in".to_owned(),
        };
        let refused = provider
            .key_refused_at
            .as_ref()
            .map(|at| format!(" · key refused at {}", at.0.to_rfc3339()))
            .unwrap_or_default();
        let _ = writeln!(out, "  {:<14} {active:<7} {login}{refused}", provider.provider);
    }
    if let Some(catalog) = &status.catalog {
        let _ = writeln!(out, "models: {}", catalog_words(catalog));
    }
    if let Some(sandbox) = &status.sandbox {
        let _ = writeln!(out, "sandbox: {}", sandbox_line(sandbox));
        if let Some(fix) = sandbox.fix.as_deref().filter(|_| !sandbox.available) {
            let _ = writeln!(out, "  fix: {fix}");
        }
    }
    if let Some(remote) = &status.remote {
        let _ = writeln!(out, "tailnet: {}", remote_line(remote));
    }
    if let Some(config) = &status.config {
        let exists = if config.exists { "" } else { " (not there: defaults)" };
        let _ = writeln!(out, "config: {}{exists}", config.path.display());
        if let Some(error) = &config.reload_error {
            let _ = writeln!(out, "  last reload failed: {}", error.message);
        }
    }
    let compat_active = status.providers.iter().any(|p| p.active && p.provider == COMPAT);
    if !compat_active && !status.providers.iter().any(|p| p.login.is_some()) {
        let _ = writeln!(out, "no provider is logged in; {LOGIN_HINT}");
    }
    out
}

/// The tailnet listener in words: `listening on 100.101.102.103:8765 · 1 device connected`, `off`, or why it waits.
#[must_use]
pub fn remote_line(remote: &efr_protocol::wire::RemoteStatus) -> String {
    use efr_protocol::wire::ListenerState;
    match (remote.state, remote.address, remote.port) {
        (ListenerState::Listening, Some(address), Some(port)) => {
            let devices = if remote.connections == 1 { "device" } else { "devices" };
            format!(
                "listening on {address}:{port} · {} {devices} connected",
                remote.connections
            )
        }
        (ListenerState::Off, ..) => "off ([remote] enabled = false)".to_owned(),
        _ => "not listening: is tailscaled running and this machine on a tailnet?".to_owned(),
    }
}

/// Where the model catalog came from, in words: `openai-api's catalog, fetched from the provider`, `... from the
/// cache of an earlier fetch`, `... built into efr`, or `no model catalog yet` (origin `missing`).
#[must_use]
pub fn catalog_words(catalog: &Catalog) -> String {
    let whose = catalog
        .provider
        .as_ref()
        .map_or_else(|| "the catalog".to_owned(), |p| format!("{p}'s catalog"));
    match catalog.origin {
        CatalogOrigin::Backend => format!("{whose}, fetched from the provider"),
        CatalogOrigin::Cache => format!("{whose}, from the cache of an earlier fetch"),
        CatalogOrigin::Builtin => format!("{whose}, built into efr"),
        CatalogOrigin::Missing => match &catalog.provider {
            Some(provider) => format!("no model catalog yet for {provider}"),
            None => "no model catalog yet".to_owned(),
        },
    }
}

/// What an unavailable sandbox means for the modes (docs/modes.md).
pub const UNAVAILABLE_MEANS: &str = "auto runs as cautious, and cautious runs read-only commands uncontained and asks before reading a credential store";

/// One line for a sandbox status: available with its layers, or unavailable with why and what that means.
#[must_use]
pub fn sandbox_line(sandbox: &SandboxStatus) -> String {
    if !sandbox.available {
        let reason = sandbox.reason.as_deref().unwrap_or("no reason given");
        return format!("unavailable: {reason} ({UNAVAILABLE_MEANS})");
    }
    let mut parts = vec!["available".to_owned()];
    if let Some(abi) = sandbox.landlock_abi {
        parts.push(format!("landlock ABI {abi}"));
    }
    if sandbox.netview {
        parts.push("network view".to_owned());
    }
    if sandbox.proxy {
        parts.push("proxy".to_owned());
    }
    if sandbox.bus_proxy {
        parts.push("bus proxy".to_owned());
    }
    if let Some(off) = sandbox.bus_proxy_off {
        let reason = serde_json::to_value(off)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "unknown".to_owned());
        parts.push(format!("bus proxy off: {reason}"));
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tailnet_line_says_where_it_listens_or_why_not() {
        use efr_protocol::wire::{ListenerState, RemoteStatus};
        let listening = RemoteStatus {
            state: ListenerState::Listening,
            address: Some(std::net::Ipv4Addr::new(100, 101, 102, 103)),
            port: Some(8765),
            connections: 1,
        };
        assert_eq!(
            remote_line(&listening),
            "listening on 100.101.102.103:8765 · 1 device connected"
        );
        let two = RemoteStatus {
            connections: 2,
            ..listening.clone()
        };
        assert!(remote_line(&two).ends_with("2 devices connected"));
        let off = RemoteStatus {
            state: ListenerState::Off,
            address: None,
            port: None,
            connections: 0,
        };
        assert!(remote_line(&off).starts_with("off"));
        let waiting = RemoteStatus {
            state: ListenerState::NotListening,
            ..off
        };
        assert!(remote_line(&waiting).starts_with("not listening"));
    }

    use super::*;

    #[test]
    fn the_fixture_reads_and_renders_every_provider() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../protocol/fixtures/v1/admin_status_result.json"
        ))
        .unwrap();
        let status: AdminStatusResult = serde_json::from_str(&text).unwrap();
        let out = render(&status);
        assert!(
            out.starts_with(&format!("efrd {} · pid {}", status.version, status.pid)),
            "{out}"
        );
        for provider in &status.providers {
            assert!(out.contains(&provider.provider), "{out}");
        }
        assert!(out.contains("sandbox: "), "{out}");
    }

    #[test]
    fn openai_compat_without_a_key_reads_naturally() {
        let status: AdminStatusResult = serde_json::from_value(json!({
            "version": "0.0.6", "pid": 7, "uptime_secs": 5,
            "providers": [{"provider": "openai-api"}, {"provider": "openai-compat", "active": true}],
            "catalog": {"provider": "openai-compat", "origin": "missing"}
        }))
        .unwrap();
        let out = render(&status);
        assert!(out.contains("openai-compat  active  no key stored\n"), "{out}");
        assert!(out.contains("openai-api             not logged in\n"), "{out}");
        assert!(
            out.contains("models: no model catalog yet for openai-compat\n"),
            "{out}"
        );
        assert!(!out.contains("catalog from"), "{out}");
        assert!(
            !out.contains("no provider is logged in"),
            "a local server may need no key: {out}"
        );
    }

    #[test]
    fn a_catalog_says_where_it_came_from() {
        let catalog: Catalog = serde_json::from_value(json!({"provider": "openai-api", "origin": "backend"})).unwrap();
        assert_eq!(
            catalog_words(&catalog),
            "openai-api's catalog, fetched from the provider"
        );
    }

    #[test]
    fn an_unavailable_sandbox_shows_its_fix_under_the_sandbox_line() {
        let mut status: AdminStatusResult = serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../protocol/fixtures/v1/admin_status_result.json"
            ))
            .unwrap(),
        )
        .unwrap();
        status.sandbox = Some(
            serde_json::from_value(json!({
                "available": false,
                "reason": "bubblewrap is not installed (no bwrap on PATH)",
                "fix": "install bubblewrap 0.8.0 or newer"
            }))
            .unwrap(),
        );
        let text = render(&status);
        assert!(
            text.contains("sandbox: unavailable: bubblewrap is not installed (no bwrap on PATH)")
                && text.contains("\n  fix: install bubblewrap 0.8.0 or newer\n"),
            "{text}"
        );
        status.sandbox.as_mut().unwrap().available = true;
        assert!(!render(&status).contains("fix:"), "an available sandbox shows no fix");
    }

    #[test]
    fn an_unavailable_sandbox_says_why() {
        let sandbox: SandboxStatus =
            serde_json::from_value(json!({"available": false, "reason": "bwrap is missing"})).unwrap();
        assert_eq!(
            sandbox_line(&sandbox),
            format!("unavailable: bwrap is missing ({UNAVAILABLE_MEANS})")
        );
    }
}
