//! admin.status, admin.config_reload, admin.login_api_key, admin.logout, admin.backup and models.list.

use efr_protocol::events::{DaemonEventBody, LoginCompleted, LogoutCompleted};
use efr_protocol::ids::Timestamp;
use efr_protocol::wire::admin::{
    AdminStatusResult, ConfigStatus as WireConfigStatus, LoginKind, ProviderStatus, Root as WireRoot,
    RootSource as WireRootSource, Roots as WireRoots,
};
use efr_protocol::wire::{AdminBackupParams, AdminBackupResult};
use efr_protocol::wire::{
    AdminConfigReloadResult, AdminLoginApiKeyParams, AdminLoginApiKeyResult, AdminLogoutParams, AdminLogoutResult,
    Catalog as WireCatalog, CatalogOrigin as WireOrigin, ConfigError as WireConfigError, ModelInfo as WireModel,
    ModelSource as WireSource, ModelsListResult,
};
use efr_protocol::{ErrorBody, ErrorCode};
use secrecy::SecretString;
use serde_json::Value;

use super::{params, result};
use crate::config::{ConfigError, Root, RootSource};
use crate::server::RequestCtx;
use efr_model::catalog::{CatalogOrigin, ModelSource};
use efr_model::keys::{KeyCheck, KeyError, KeySource};
use efr_model::{Catalog, ProviderKind};

/// The providers that admin.status lists, in its order.
const LISTED: [ProviderKind; 3] = [
    ProviderKind::OpenAiApi,
    ProviderKind::AnthropicApi,
    ProviderKind::OpenAiCompat,
];

fn time(at: chrono::DateTime<chrono::Utc>) -> Timestamp {
    Timestamp::from_millis(at.timestamp_millis()).unwrap_or_else(Timestamp::now)
}

fn wire_root(root: &Root) -> WireRoot {
    let source = match root.source {
        RootSource::DirVariable => WireRootSource::DirVariable,
        RootSource::EfrHome => WireRootSource::EfrHome,
        RootSource::Xdg => WireRootSource::Xdg,
        RootSource::RunUser => WireRootSource::RunUser,
    };
    WireRoot {
        path: root.path.clone(),
        source,
    }
}

fn wire_config_error(error: &ConfigError) -> WireConfigError {
    WireConfigError {
        message: error.message.clone(),
        line: error.line,
        column: error.column,
        key: error.key.clone(),
    }
}

fn wire_catalog(catalog: &Catalog) -> WireCatalog {
    WireCatalog {
        provider: Some(catalog.provider.name().to_owned()),
        origin: match catalog.origin {
            CatalogOrigin::Backend => WireOrigin::Backend,
            CatalogOrigin::Cache => WireOrigin::Cache,
            CatalogOrigin::Builtin => WireOrigin::Builtin,
            CatalogOrigin::Missing => WireOrigin::Missing,
        },
        fetched_at: catalog.fetched_at.map(time),
    }
}

fn provider_param(name: &str) -> Result<ProviderKind, ErrorBody> {
    match ProviderKind::from_name(name) {
        Some(kind @ (ProviderKind::OpenAiApi | ProviderKind::AnthropicApi)) => Ok(kind),
        _ => Err(ErrorBody::invalid(format!(
            "bad params: `provider`: {name:?} is not openai-api or anthropic-api"
        ))
        .with_data(
            serde_json::json!({"setting": "provider", "value": name, "choices": ["openai-api", "anthropic-api"]}),
        )),
    }
}

/// admin.status. The sandbox members come from the cached probe and never wait for one
/// ([`super::sandbox::status_members`]).
///
/// # Errors
/// Never in practice; `internal` if the result cannot be serialized.
pub async fn status(ctx: &RequestCtx) -> Result<Value, ErrorBody> {
    let daemon = &ctx.daemon;
    let roots = &daemon.roots;
    let config = daemon.config.status();
    let active = daemon.models.active();
    let providers = LISTED
        .iter()
        .map(|&kind| {
            let key = daemon.models.keys().status(kind);
            ProviderStatus {
                provider: kind.name().to_owned(),
                active: kind == active,
                login: key.source.map(|source| match source {
                    KeySource::Stored | KeySource::Environment => LoginKind::ApiKey,
                }),
                key_hint: key.key_hint,
                key_refused_at: key.refused_at.map(time),
                key_checked_at: key.checked_at.map(time),
            }
        })
        .collect();
    let (sandbox, sandbox_paths) = super::sandbox::status_members(ctx).await;
    result(&AdminStatusResult {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        pid: std::process::id(),
        uptime_secs: daemon.uptime().as_secs(),
        roots: Some(WireRoots {
            config: wire_root(&roots.config),
            data: wire_root(&roots.data),
            state: wire_root(&roots.state),
            runtime: wire_root(&roots.runtime),
        }),
        config: Some(WireConfigStatus {
            path: config.path,
            exists: config.exists,
            symlink_target: config.symlink_target,
            reload_error: config.reload_error.as_ref().map(wire_config_error),
            restart_needed: config.restart_needed,
            held: config
                .held
                .map(|loosens| efr_protocol::wire::full::HeldConfig { loosens }),
        }),
        providers,
        catalog: Some(wire_catalog(&daemon.models.catalog())),
        sandbox,
        sandbox_paths,
        proxy: Some(daemon.sandbox.proxy().status()),
        remote: Some(remote_status(daemon)),
        full_mode: Some(crate::config::full::status(
            &daemon.config(),
            crate::config::full::FullFacts::of_process(&roots.state.path.join("snapshots")),
        )),
    })
}

/// admin.config_reload: reads config.toml now and reports the outcome; a broken file keeps the previous config.
///
/// # Errors
/// Never in practice: a broken file is reported in the result, not as an error.
pub async fn config_reload(ctx: &RequestCtx) -> Result<Value, ErrorBody> {
    let outcome = ctx.daemon.config.reload();
    if outcome.applied {
        // The provider or the extra models may have changed.
        ctx.daemon.models.refresh_catalog().await;
    }
    result(&AdminConfigReloadResult {
        applied: outcome.applied,
        error: outcome.error.as_ref().map(wire_config_error),
        restart_needed: outcome.restart_needed,
        warnings: outcome.warnings,
    })
}

/// models.list: the active provider's catalog.
///
/// # Errors
/// Never in practice.
pub fn models_list(ctx: &RequestCtx) -> Result<Value, ErrorBody> {
    let catalog = ctx.daemon.models.catalog();
    let models = catalog
        .models
        .iter()
        .map(|m| WireModel {
            id: m.id.clone(),
            efforts: m.efforts.clone(),
            default_effort: m.default_effort.clone(),
            default: m.default,
            source: match m.source {
                ModelSource::Builtin => WireSource::Builtin,
                ModelSource::Config => WireSource::Config,
            },
            context_window: m.context_window,
            max_context_window: None,
            prefer_websockets: false,
        })
        .collect();
    result(&ModelsListResult {
        models,
        catalog: Some(wire_catalog(&catalog)),
    })
}

/// admin.login_api_key: checks (unless `check` is false) and stores the key, then records login_completed.
///
/// # Errors
/// `invalid` for another provider or a malformed key, `unauthorized` when the provider refused it, `unavailable`
/// when the check got no answer or the key file cannot be written. Nothing is stored on any error.
pub async fn login_api_key(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: AdminLoginApiKeyParams = params(raw)?;
    let kind = provider_param(&params.provider)?;
    let models = &ctx.daemon.models;
    let check = params.check.then(|| KeyCheck {
        http: models.http().clone(),
        base_url: models.base_url(kind),
    });
    let key = SecretString::from(params.key.expose().to_owned());
    let login = models
        .keys()
        .login(kind, key, check.as_ref())
        .await
        .map_err(|e| key_error(&e))?;
    let active = models.active() == kind;
    if active {
        models.refresh_catalog().await;
    }
    ctx.daemon
        .record_daemon_event(DaemonEventBody::LoginCompleted(LoginCompleted {
            provider: kind.name().to_owned(),
            login: LoginKind::ApiKey,
            key_hint: Some(login.key_hint.clone()),
        }));
    result(&AdminLoginApiKeyResult {
        provider: kind.name().to_owned(),
        key_hint: login.key_hint,
        checked: login.checked,
        active,
    })
}

/// admin.logout: removes the stored key, then records logout_completed.
///
/// # Errors
/// `invalid` for another provider, `unavailable` when the key file cannot be removed.
pub fn logout(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: AdminLogoutParams = params(raw)?;
    let kind = provider_param(&params.provider)?;
    let models = &ctx.daemon.models;
    let logged_out = models.keys().logout(kind).map_err(|e| key_error(&e))?;
    if logged_out {
        ctx.daemon
            .record_daemon_event(DaemonEventBody::LogoutCompleted(LogoutCompleted {
                provider: kind.name().to_owned(),
            }));
    }
    result(&AdminLogoutResult {
        provider: kind.name().to_owned(),
        logged_out,
        active: models.active() == kind,
    })
}

fn key_error(error: &KeyError) -> ErrorBody {
    let code = match error {
        KeyError::Unsupported(_) | KeyError::Invalid(_) => ErrorCode::Invalid,
        KeyError::Refused { .. } => ErrorCode::Unauthorized,
        KeyError::Check(_) | KeyError::Io { .. } => ErrorCode::Unavailable,
    };
    ErrorBody::new(code, error.to_string())
}

/// admin.backup: a consistent copy of the event log at an absolute path that must not exist
/// ([`efr_store::Store::backup`] holds the rules).
///
/// # Errors
/// `invalid` for a relative path or a folder that cannot be written, `conflict` for an existing file, `not_found`
/// for a missing folder, `unavailable` for a full disk; each leaves nothing behind.
pub async fn backup(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: AdminBackupParams = params(raw)?;
    let outcome = ctx.daemon.store.backup(params.path).await.map_err(|e| {
        tracing::warn!(error = %e, "admin.backup failed");
        ErrorBody::new(e.code(), e.to_string())
    })?;
    tracing::info!(path = %outcome.path.display(), bytes = outcome.bytes, events = outcome.events, "backup written");
    result(&AdminBackupResult {
        path: outcome.path,
        bytes: outcome.bytes,
        events: outcome.events,
    })
}

/// The tailnet listener's line of admin.status.
fn remote_status(daemon: &crate::daemon::Daemon) -> efr_protocol::wire::RemoteStatus {
    use crate::remote::ListenerState as Now;
    use efr_protocol::wire::ListenerState;
    let (state, address, port) = match daemon.remote.state() {
        Now::Off => (ListenerState::Off, None, None),
        Now::NotListening => (ListenerState::NotListening, None, None),
        Now::Listening { addr, .. } => (ListenerState::Listening, Some(*addr.ip()), Some(addr.port())),
    };
    efr_protocol::wire::RemoteStatus {
        state,
        address,
        port,
        connections: u32::try_from(daemon.remote.connections()).unwrap_or(u32::MAX),
    }
}
