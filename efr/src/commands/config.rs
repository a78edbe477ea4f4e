//! `efr config reload`: admin.config_reload — efrd reads `config.toml` again.
//!
//! ```text
//! config.toml applied
//! restart efrd for: daemon.log_level
//! note: unknown key `model.mood` (ignored)
//! ```
//!
//! A file that does not parse is not applied (efrd keeps the config it runs with): efr prints where it is wrong and
//! exits 1.

use std::fmt::Write as _;
use std::process::ExitCode;

use efr_protocol::wire::AdminConfigReloadResult;
use serde_json::json;

use super::{read, run_unary};

/// Runs `efr config reload`.
pub async fn reload(json: bool) -> ExitCode {
    let mut applied = true;
    let code = run_unary("admin.config_reload", json!({}), json, None, |value| {
        let result: AdminConfigReloadResult = read("admin.config_reload", value)?;
        applied = result.applied;
        crate::out::print(&render(&result));
        Ok(())
    })
    .await;
    if applied {
        code
    } else {
        ExitCode::from(crate::report::FAILED)
    }
}

/// The readable form of a reload's result.
#[must_use]
pub fn render(result: &AdminConfigReloadResult) -> String {
    let mut out = String::new();
    match &result.error {
        None if result.applied => out.push_str("config.toml applied\n"),
        None => out.push_str("config.toml not applied\n"),
        Some(error) => {
            let place = match (error.line, error.column) {
                (Some(line), Some(column)) => format!(" at line {line}, column {column}"),
                (Some(line), None) => format!(" at line {line}"),
                _ => String::new(),
            };
            let key = error.key.as_deref().map(|k| format!(" ({k})")).unwrap_or_default();
            let _ = writeln!(
                out,
                "config.toml not applied{place}{key}: {}\nefrd keeps the config it runs with",
                error.message
            );
        }
    }
    if !result.restart_needed.is_empty() {
        let _ = writeln!(out, "restart efrd for: {}", result.restart_needed.join(", "));
    }
    for warning in &result.warnings {
        let _ = writeln!(out, "note: {warning}");
    }
    out
}

#[cfg(test)]
mod tests {
    use efr_protocol::wire::ConfigError;

    use super::*;

    #[test]
    fn an_applied_reload_lists_restarts_and_warnings() {
        let result = AdminConfigReloadResult {
            applied: true,
            error: None,
            restart_needed: vec!["daemon.log_level".into()],
            warnings: vec!["unknown key `model.mood`".into()],
        };
        assert_eq!(
            render(&result),
            "config.toml applied\nrestart efrd for: daemon.log_level\nnote: unknown key `model.mood`\n"
        );
    }

    #[test]
    fn a_broken_file_says_where() {
        let result = AdminConfigReloadResult {
            applied: false,
            error: Some(ConfigError {
                message: "unknown variant `fish`".into(),
                line: Some(2),
                column: Some(11),
                key: Some("shell.program".into()),
            }),
            restart_needed: Vec::new(),
            warnings: Vec::new(),
        };
        assert_eq!(
            render(&result),
            "config.toml not applied at line 2, column 11 (shell.program): unknown variant `fish`\n\
             efrd keeps the config it runs with\n"
        );
    }
}
