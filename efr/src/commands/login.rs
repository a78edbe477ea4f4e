//! `efr login --api-key [--provider P]` (admin.login_api_key) and `efr logout [--provider P]` (admin.logout).
//!
//! The key is read from stdin when stdin is not a terminal (`pass show openai | efr login --api-key`), else asked
//! for with echo off. It is never taken from the command line (argv shows in `ps` and in shell history) and never
//! printed: efr shows only the daemon's key_hint (`sk-proj-...a1b2`).

use std::io::Read;
use std::process::ExitCode;

use efr_protocol::secret::SecretText;
use efr_protocol::wire::{
    AdminLoginApiKeyParams, AdminLoginApiKeyResult, AdminLogoutParams, AdminLogoutResult, AdminStatusResult,
};
use serde_json::json;

use super::{read, unary_on};
use crate::cli::{LoginArgs, LogoutArgs};
use crate::report;
use crate::tty;

/// Why no key could be read.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Nothing but white space was given.
    #[error("no key given (pipe it on stdin, or type it at the prompt)")]
    Empty,
    /// A key holds white space inside or a control character, so it is not one key.
    #[error("the key holds white space or a control character; give one key")]
    NotOneKey,
    /// stdin could not be read.
    #[error("cannot read the key: {0}")]
    Io(#[from] std::io::Error),
}

/// The key from what was read: trimmed, one token, not empty.
///
/// # Errors
/// [`KeyError::Empty`] or [`KeyError::NotOneKey`].
pub fn key_from(text: &str) -> Result<SecretText, KeyError> {
    let key = text.trim();
    if key.is_empty() {
        return Err(KeyError::Empty);
    }
    if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(KeyError::NotOneKey);
    }
    Ok(SecretText::new(key))
}

fn read_key(provider: &str) -> Result<SecretText, KeyError> {
    let text = if tty::stdin_is_tty() {
        tty::read_hidden_line(&format!("API key for {provider} (not shown): "))?
    } else {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    };
    key_from(&text)
}

/// Runs `efr login`.
pub async fn login(args: &LoginArgs) -> ExitCode {
    let provider = args.provider.as_str();
    let key = match read_key(provider) {
        Ok(key) => key,
        Err(error) => {
            report::error(&error.to_string());
            return ExitCode::from(report::FAILED);
        }
    };
    let client = match report::connect(None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let params = AdminLoginApiKeyParams {
        provider: provider.to_owned(),
        key,
        check: !args.no_check,
    };
    let params = match serde_json::to_value(&params) {
        Ok(params) => params,
        Err(error) => {
            report::error(&format!("cannot encode the login: {error}"));
            return ExitCode::from(report::FAILED);
        }
    };
    unary_on(&client, "admin.login_api_key", params, args.json, |value| {
        let done: AdminLoginApiKeyResult = read("admin.login_api_key", value)?;
        let checked = if done.checked { "checked" } else { "not checked" };
        let active = if done.active {
            ", active for new conversations"
        } else {
            ""
        };
        crate::out::println(&format!(
            "logged in to {} with {} ({checked}{active})",
            done.provider, done.key_hint
        ));
        Ok(())
    })
    .await
}

/// Runs `efr logout`; without `--provider` it logs out of the active provider.
pub async fn logout(args: &LogoutArgs) -> ExitCode {
    let client = match report::connect(None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let provider = match args.provider {
        Some(provider) => provider.as_str().to_owned(),
        None => match client.call::<_, AdminStatusResult>("admin.status", &json!({})).await {
            Ok(status) => match status.providers.into_iter().find(|p| p.active) {
                Some(active) => active.provider,
                None => {
                    report::error("no provider is active; name one with --provider");
                    return ExitCode::from(report::FAILED);
                }
            },
            Err(error) => return report::failure(&error),
        },
    };
    let params = json!(AdminLogoutParams { provider });
    unary_on(&client, "admin.logout", params, args.json, |value| {
        let done: AdminLogoutResult = read("admin.logout", value)?;
        if done.logged_out {
            let active = if done.active {
                " (it is the active provider: its turns fail until a new login)"
            } else {
                ""
            };
            crate::out::println(&format!("logged out of {}{active}", done.provider));
        } else {
            crate::out::println(&format!("{} had no stored login", done.provider));
        }
        Ok(())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_one_trimmed_token() {
        assert_eq!(key_from("  sk-proj-abc\n").unwrap().expose(), "sk-proj-abc");
        assert!(matches!(key_from(" \n"), Err(KeyError::Empty)));
        assert!(matches!(key_from("sk-a sk-b"), Err(KeyError::NotOneKey)));
        assert!(!format!("{:?}", key_from("sk-proj-secret").unwrap()).contains("secret"));
    }
}
