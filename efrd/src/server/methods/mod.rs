//! Method handlers, one file per method family. Each handler parses its params, calls the owner module, and maps
//! the outcome to a result or an error; rules live in the owner modules, not here.

pub mod admin;
pub mod conversation;
pub mod device;
pub mod hello;
pub mod jobs;
pub mod presence;
pub mod projects;
pub mod sandbox;
pub mod search;
pub mod shell;
pub mod steer;
pub mod surface;
pub mod trash;
pub mod undo;
pub mod watch;

use efr_protocol::ErrorBody;
use efr_protocol::methods::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{RequestCtx, StreamSink};

/// Reads a method's params into its type. Absent params read as `{}`, so a method whose params are all optional
/// may be called without them.
///
/// # Errors
/// `invalid` with a message that names the member at fault by its path (`settings.mode: unknown variant ...`).
pub fn params<T: DeserializeOwned>(params: Option<Value>) -> Result<T, ErrorBody> {
    let value = params.unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if path == "." {
            ErrorBody::invalid(format!("bad params: {inner}"))
        } else {
            ErrorBody::invalid(format!("bad params: `{path}`: {inner}"))
        }
    })
}

/// Serializes a result.
///
/// # Errors
/// `internal` when the value cannot be serialized (a bug).
pub fn result<T: Serialize>(value: &T) -> Result<Value, ErrorBody> {
    serde_json::to_value(value).map_err(|e| ErrorBody::internal(format!("cannot serialize the result: {e}")))
}

/// The answer of a method that the table has but this efrd does not serve yet (ADR 0001).
fn not_served(method: Method) -> ErrorBody {
    ErrorBody::invalid(format!("efrd does not serve `{method}` yet"))
}

/// Runs a unary method.
///
/// # Errors
/// The handler's error.
pub async fn unary(ctx: &RequestCtx, method: Method, raw: Option<Value>) -> Result<Value, ErrorBody> {
    match method {
        Method::PromptSend => conversation::prompt_send(ctx, raw).await,
        Method::TurnInterrupt => conversation::turn_interrupt(ctx, raw).await,
        Method::TurnSteer => steer::turn_steer(ctx, raw).await,
        Method::PromptWithdraw => steer::prompt_withdraw(ctx, raw).await,
        Method::TurnUndo => undo::turn_undo(ctx, raw).await,
        Method::JobsList => jobs::list(ctx, raw),
        Method::JobsStop => jobs::stop(ctx, raw).await,
        Method::CallBackground => jobs::call_background(ctx, raw).await,
        Method::TrashList => trash::trash_list(ctx, raw).await,
        Method::TrashRestore => trash::trash_restore(ctx, raw).await,
        Method::ApprovalRespond => conversation::approval_respond(ctx, raw).await,
        Method::PresenceSet => presence::presence_set(ctx, raw).await,
        Method::InputRespond => shell::input_respond(ctx, raw).await,
        Method::ShellStatus => shell::status(ctx, raw).await,
        Method::ShellInterrupt => shell::interrupt(ctx, raw).await,
        Method::ConversationsList => conversation::conversations_list(ctx, raw).await,
        Method::ConversationsRecent => watch::conversations_recent(ctx, raw).await,
        Method::ConversationsSearch => search::conversations_search(ctx, raw).await,
        Method::ConversationSearch => search::conversation_search(ctx, raw).await,
        Method::ConversationDiff => conversation::diff(ctx, raw).await,
        Method::ConversationContext => conversation::context(ctx, raw).await,
        Method::ConversationCompact => conversation::compact(ctx, raw).await,
        Method::ConversationDelete => conversation::delete(ctx, raw).await,
        Method::ConversationResume => conversation::resume(ctx, raw).await,
        Method::ModelsList => no_params(raw).and_then(|()| admin::models_list(ctx)),
        Method::AdminStatus => {
            no_params(raw)?;
            admin::status(ctx).await
        }
        Method::AdminSandboxCheck => {
            no_params(raw)?;
            sandbox::sandbox_check(ctx).await
        }
        Method::SandboxExplain => sandbox::explain_path(ctx, raw).await,
        Method::SandboxExplainHost => sandbox::explain_host(ctx, raw).await,
        Method::SandboxSurfaceRespond => surface::surface_respond(ctx, raw).await,
        Method::AdminConfigReload => {
            no_params(raw)?;
            admin::config_reload(ctx).await
        }
        Method::ProjectsList => no_params(raw).and_then(|()| projects::list(ctx)),
        Method::AdminProjectAdd => projects::add(ctx, raw).await,
        Method::AdminProjectRemove => projects::remove(ctx, raw).await,
        Method::AdminLoginApiKey => admin::login_api_key(ctx, raw).await,
        Method::AdminLogout => admin::logout(ctx, raw),
        Method::AdminBackup => admin::backup(ctx, raw).await,
        Method::DevicePairConfirm => device::pair_confirm(ctx, raw).await,
        Method::DeviceEnroll => device::enroll(ctx, raw).await,
        Method::DeviceProve => device::prove(ctx, raw).await,
        Method::DeviceList => {
            no_params(raw)?;
            device::list(ctx).await
        }
        Method::DeviceRevoke => device::revoke(ctx, raw).await,
        _ => Err(not_served(method)),
    }
}

/// Checks the params of a method that takes none: absent, `null` or `{}`.
fn no_params(raw: Option<Value>) -> Result<(), ErrorBody> {
    match raw {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Object(map)) if map.is_empty() => Ok(()),
        Some(Value::Object(map)) => {
            let name = map.keys().next().map(String::as_str).unwrap_or_default();
            Err(ErrorBody::invalid(format!(
                "bad params: this method takes none, and got `{name}`"
            )))
        }
        Some(_) => Err(ErrorBody::invalid("bad params: must be an object")),
    }
}

/// Runs a stream method until it ends.
///
/// # Errors
/// The handler's error.
pub async fn stream(
    ctx: &RequestCtx,
    method: Method,
    raw: Option<Value>,
    sink: &mut StreamSink,
) -> Result<(), ErrorBody> {
    match method {
        Method::ConversationSubscribe => conversation::subscribe(ctx, raw, sink).await,
        Method::ConversationsWatch => watch::conversations_watch(ctx, raw, sink).await,
        Method::DevicePairStart => device::pair_start(ctx, raw, sink).await,
        _ => Err(not_served(method)),
    }
}
