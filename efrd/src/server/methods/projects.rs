//! projects.list, admin.project_add and admin.project_remove: the owner is `crate::projects`.

use efr_protocol::wire::{
    AdminConfigReloadResult, AdminProjectAddParams, AdminProjectRemoveParams, ConfigError, ProjectWriteResult,
    ProjectsListResult,
};
use efr_protocol::{ErrorBody, ErrorCode};
use serde_json::{Value, json};

use super::{params, result};
use crate::projects::RegistryError;
use crate::server::RequestCtx;

/// The error of a registry that cannot be read or changed (the contract's codes; a broken file's data holds its
/// line and column).
fn error_body(error: RegistryError) -> ErrorBody {
    match error {
        RegistryError::Invalid { message, line, column } => {
            let body = ErrorBody::invalid(message);
            if line.is_some() {
                body.with_data(json!({ "line": line, "column": column }))
            } else {
                body
            }
        }
        RegistryError::Conflict(message) => ErrorBody::new(ErrorCode::Conflict, message),
        RegistryError::NotFound(message) => ErrorBody::new(ErrorCode::NotFound, message),
        RegistryError::Io(message) => ErrorBody::new(ErrorCode::Unavailable, message),
    }
}

/// projects.list: the registry file and the projects it holds now.
///
/// # Errors
/// `invalid` for a broken file, `unavailable` when it cannot be read.
pub fn list(ctx: &RequestCtx) -> Result<Value, ErrorBody> {
    let registry = ctx.daemon.projects.refresh().map_err(error_body)?;
    result(&ProjectsListResult {
        file: ctx.daemon.projects.file().to_owned(),
        projects: registry.projects.clone(),
    })
}

/// admin.project_add.
///
/// # Errors
/// `invalid`, `conflict`, `unavailable` (see `crate::projects::RegistryError`).
pub async fn add(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: AdminProjectAddParams = params(raw)?;
    let projects = std::sync::Arc::clone(&ctx.daemon.projects);
    let project = blocking(move || projects.add(&params.path, params.name.as_deref(), params.git_root)).await?;
    written(ctx, project)
}

/// admin.project_remove.
///
/// # Errors
/// `not_found`, `invalid`, `conflict`, `unavailable`.
pub async fn remove(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: AdminProjectRemoveParams = params(raw)?;
    let projects = std::sync::Arc::clone(&ctx.daemon.projects);
    let project = blocking(move || projects.remove(&params.path)).await?;
    written(ctx, project)
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, RegistryError> + Send + 'static,
) -> Result<T, ErrorBody> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ErrorBody::internal(format!("the registry's write stopped: {e}")))?
        .map_err(error_body)
}

/// The result of a write: the project, the file, and the reload of the registry that followed.
fn written(ctx: &RequestCtx, project: efr_protocol::wire::ProjectInfo) -> Result<Value, ErrorBody> {
    let reload = match ctx.daemon.projects.refresh() {
        Ok(_) => AdminConfigReloadResult {
            applied: true,
            error: None,
            restart_needed: Vec::new(),
            warnings: Vec::new(),
        },
        Err(error) => {
            let (message, line, column) = match error {
                RegistryError::Invalid { message, line, column } => (message, line, column),
                other => (other.to_string(), None, None),
            };
            AdminConfigReloadResult {
                applied: false,
                error: Some(ConfigError {
                    message,
                    line,
                    column,
                    key: None,
                }),
                restart_needed: Vec::new(),
                warnings: Vec::new(),
            }
        }
    };
    result(&ProjectWriteResult {
        project,
        file: ctx.daemon.projects.file().to_owned(),
        reload,
    })
}
