//! Exit codes, and how a failure is told to the user: `efr: <message>` on stderr, with a hint when one helps.
//! The message is printed [`printable`] ([`error`]): it may quote efrd, a command, a path or a config value, whose
//! control sequences must not reach the terminal.
//!
//! | code | when |
//! |------|------|
//! | 0    | done; a turn completed; the reader of stdout left (`efr status \| head -1`, see [`crate::out`]) |
//! | 1    | efrd answered with an error, a turn failed, bad input (usage errors too), efrd closed the connection |
//! | 2    | efrd cannot be reached (the message says how to start it) |
//! | 130  | a turn was interrupted, or the user left with a second Ctrl+C |

use std::process::ExitCode;

use crate::clean::printable;
use crate::client::{Client, ClientError};

/// Done; a turn completed.
pub const OK: u8 = 0;
/// efrd answered with an error, a turn failed, or the input was bad.
pub const FAILED: u8 = 1;
/// efrd cannot be reached.
pub const NOT_RUNNING: u8 = 2;
/// A turn was interrupted, or the user left with a second Ctrl+C (128 + SIGINT, as shells report it).
pub const INTERRUPTED: u8 = 130;

/// How to start efrd, shown when its socket is missing or refuses.
pub const START_HINT: &str = "start it with one of:\n  \
     efr daemon install                  (systemd user units; efrd then starts on demand)\n  \
     systemctl --user start efrd.socket  (when the units are installed)\n  \
     efr daemon run                      (in the foreground, for debugging)";

/// Shown when the socket took the connection but closed it before hello's answer: a socket-activated efrd that
/// exits at once (a broken config.toml, say) does that, and its own message is only in its log.
pub const START_FAILED_HINT: &str = "efrd may have failed to start; see why with:\n  \
     journalctl --user -u efrd   (efrd run by systemd)\n  \
     efr daemon run              (runs efrd in the foreground and prints its error)";

/// How to log in, shown when a turn or prompt.send says no provider has a key.
pub const LOGIN_HINT: &str = "log in with: efr login --api-key --provider openai-api   (or --provider anthropic-api)";

/// Whether an error message of efrd is its "log in" message (no key, or a refused key).
#[must_use]
pub fn wants_login(message: &str) -> bool {
    efr_protocol::error::login::asks_to_log_in(message)
}

/// Prints `efr: <message>` on stderr, [`printable`] (see the module doc).
pub fn error(message: &str) {
    eprintln!("efr: {}", printable(message));
}

/// Prints a failure and returns its exit code: 2 with [`START_HINT`] when efrd is not running, else 1 (with
/// [`LOGIN_HINT`] after a "log in" message).
#[must_use]
pub fn failure(error: &ClientError) -> ExitCode {
    // efrd's message may quote a command or a model's words.
    self::error(&error.to_string());
    match error {
        ClientError::NotRunning { .. } => {
            eprintln!("{START_HINT}");
            ExitCode::from(NOT_RUNNING)
        }
        ClientError::Daemon(body) => {
            if wants_login(&body.message) {
                eprintln!("{LOGIN_HINT}");
            }
            ExitCode::from(FAILED)
        }
        ClientError::Connection(_) => ExitCode::from(FAILED),
    }
}

/// Connects to efrd at the socket of the environment, saying hello with `tty`.
///
/// # Errors
/// The exit code after the failure was printed: 2 when efrd cannot be reached or the socket path is bad; 1 when
/// the connection closed before hello's answer (with [`START_FAILED_HINT`]) or hello failed.
pub async fn connect(tty: Option<String>) -> Result<Client, ExitCode> {
    let socket = match crate::socket::socket_path() {
        Ok(socket) => socket,
        Err(error) => {
            self::error(&format!("cannot find efrd's socket: {error}"));
            return Err(ExitCode::from(NOT_RUNNING));
        }
    };
    Client::connect(&socket, tty).await.map_err(|e| {
        let code = failure(&e);
        if matches!(e, ClientError::Connection(_)) {
            // Connected, then closed or broken before hello's answer.
            eprintln!("{START_FAILED_HINT}");
        }
        code
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daemons_login_messages_are_recognised() {
        use efr_protocol::error::login;
        // The messages as efrd builds them.
        assert!(wants_login(&login::no_api_key("openai-api")));
        assert!(wants_login(&login::key_refused("anthropic-api", "invalid x-api-key")));
        assert!(!wants_login("the model is busy"));
        assert!(!wants_login("rate limited: slow down"));
    }
}
