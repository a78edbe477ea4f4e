//! The thin commands: each maps to one method of efrd and prints its result, readable or, with `--json`, as the
//! result's JSON on one line.
//!
//! - [`status`]: `efr status` (admin.status).
//! - [`backup`]: `efr backup PATH` (admin.backup).
//! - [`device`]: `efr device add|list|revoke` (device.pair_start and device.pair_confirm, device.list, device.revoke).
//! - [`models`]: `efr models` (models.list).
//! - [`login`]: `efr login --api-key` (admin.login_api_key) and `efr logout` (admin.logout).
//! - [`sandbox`]: `efr sandbox check` (admin.sandbox_check).
//! - [`sandbox_host`]: `efr sandbox host HOST[:PORT]` (sandbox.explain_host).
//! - [`diff`]: `efr diff` (conversation.diff).
//! - [`context`]: `efr context` (conversation.context).
//! - [`compact`]: `efr compact [--focus TEXT]` (conversation.compact).
//! - [`delete`]: `efr delete ID [--force] [--stop]` (conversation.delete).
//! - [`resume`]: `efr resume [ID] [--take] [--print-dir]` (conversations.recent, conversation.resume), with its
//!   [`picker`] on a terminal.
//! - [`projects`]: `efr projects [add PATH|remove PATH]` (projects.list, admin.project_add, admin.project_remove).
//! - [`presence`]: `efr presence away|present [--conversation ID]` (presence.set).
//! - [`shell`]: `efr shell [status]` and `efr shell stop [--close]` (shell.status, shell.interrupt).
//!
//! efrd's errors print `efr: <message>` and exit 1; an efrd that cannot be reached exits 2 with how to start it.
//!
//! What the readable forms print, and the messages on stderr, hold text from efrd (its messages quote
//! config.toml), from the project's files (paths) and from the model (commands): they are printed through
//! [`crate::out::print`] and [`report::error`], which remove terminal control sequences and bidi overrides from it.
//! `--json` is printed as efrd sent it, control characters escaped ([`crate::out::println_json`]); `efr diff` has
//! its own rule (see [`diff`]).

pub mod apparmor;
pub mod backup;
pub mod compact;
pub mod config;
pub mod context;
pub mod delete;
pub mod device;
pub mod diff;
pub mod jobs;
pub mod login;
pub mod models;
pub mod picker;
pub mod presence;
pub mod projects;
pub mod resume;
pub mod sandbox;
pub mod sandbox_host;
pub mod search;
pub mod shell;
pub mod status;
pub mod trash;
pub mod undo;

use std::process::ExitCode;

use serde_json::Value;

use crate::client::Client;
use crate::report;

/// Calls `method` with `params` on a new connection and hands the result to `show`, or prints it as JSON with
/// `json`. Returns the command's exit code.
pub async fn run_unary(
    method: &str,
    params: Value,
    json: bool,
    tty: Option<String>,
    show: impl FnOnce(&Value) -> Result<(), String>,
) -> ExitCode {
    let client = match report::connect(tty).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    unary_on(&client, method, params, json, show).await
}

/// As [`run_unary`], on a connection that exists.
pub async fn unary_on(
    client: &Client,
    method: &str,
    params: Value,
    json: bool,
    show: impl FnOnce(&Value) -> Result<(), String>,
) -> ExitCode {
    match client.call_value(method, params).await {
        Ok(result) if json => {
            crate::out::println_json(&result.to_string());
            ExitCode::SUCCESS
        }
        Ok(result) => match show(&result) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                report::error(&message);
                ExitCode::from(report::FAILED)
            }
        },
        Err(error) => report::failure(&error),
    }
}

/// As [`unary_on`], for a command whose exit code follows its result (`efr sandbox check`, `efr sandbox host`):
/// the result is read as `T` (JSON or not, so the code is the same), printed as JSON with `json` or else by
/// `show`, and `code` gives the exit code. An efrd that does not serve `method` yet is said so in words.
pub async fn judged_on<T: serde::de::DeserializeOwned>(
    client: &Client,
    method: &str,
    params: Value,
    json: bool,
    show: impl FnOnce(&T),
    code: impl FnOnce(&T) -> ExitCode,
) -> ExitCode {
    match client.call_value(method, params).await {
        Ok(result) => match read::<T>(method, &result) {
            Ok(answer) => {
                if json {
                    crate::out::println_json(&result.to_string());
                } else {
                    show(&answer);
                }
                code(&answer)
            }
            Err(message) => {
                report::error(&message);
                ExitCode::from(report::FAILED)
            }
        },
        Err(error) => match error.daemon() {
            Some(body) if body.code == efr_protocol::ErrorCode::Invalid && body.message.contains("does not serve") => {
                report::error(&format!(
                    "this efrd does not serve {method} yet (efrd says: {})",
                    body.message
                ));
                ExitCode::from(report::FAILED)
            }
            _ => report::failure(&error),
        },
    }
}

/// Calls `method` with `params` and shows its result: printed as efrd sent it with `json`, else read as `T` and
/// given to `show`, whose exit code is the command's. A result that does not read as `T` is an error that names the
/// method; an error of the call goes to `failed`, which says it (and what to do about it) and gives the exit code.
pub async fn call_and_show<T: serde::de::DeserializeOwned>(
    client: &Client,
    method: &str,
    params: Value,
    json: bool,
    failed: impl FnOnce(&crate::client::ClientError) -> ExitCode,
    show: impl FnOnce(T) -> ExitCode,
) -> ExitCode {
    let value = match client.call_value(method, params).await {
        Ok(value) => value,
        Err(error) => return failed(&error),
    };
    if json {
        crate::out::println_json(&value.to_string());
        return ExitCode::SUCCESS;
    }
    match read::<T>(method, &value) {
        Ok(result) => show(result),
        Err(message) => {
            report::error(&message);
            ExitCode::from(report::FAILED)
        }
    }
}

/// Reads a method's result as its protocol type, for the readable form.
///
/// # Errors
/// A message that names the method when the result does not read as `T` (an efrd of another version).
pub fn read<T: serde::de::DeserializeOwned>(method: &str, value: &Value) -> Result<T, String> {
    serde_json::from_value(value.clone()).map_err(|e| format!("cannot read the result of {method}: {e}"))
}

/// How long ago `at` was, from `now`, in the largest whole unit: `now`, `5m ago`, `2h ago`, `3d ago`.
#[must_use]
pub fn ago(at: efr_protocol::ids::Timestamp, now: efr_protocol::ids::Timestamp) -> String {
    let secs = (now.as_millis() - at.as_millis()).max(0) / 1000;
    match secs {
        s if s < 60 => "now".to_owned(),
        s if s < 3600 => format!("{}m ago", s / 60),
        s if s < 86_400 => format!("{}h ago", s / 3600),
        s => format!("{}d ago", s / 86_400),
    }
}

/// A duration in seconds as `3h 4m`, `4m 5s` or `5s`.
#[must_use]
pub fn human_secs(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {s}s")
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(human_secs(5), "5s");
        assert_eq!(human_secs(245), "4m 5s");
        assert_eq!(human_secs(3 * 3600 + 4 * 60 + 9), "3h 4m");
    }
}
