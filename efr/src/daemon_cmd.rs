//! `efr daemon install|uninstall|run`. Being built (issue 8, item 4).

use std::process::ExitCode;

/// The `efr daemon` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum DaemonCommand {
    /// Writes the systemd user units and enables efrd.socket.
    Install,
    /// Disables and removes the units.
    Uninstall,
    /// Runs efrd in the foreground, for debugging.
    Run,
}

/// Runs one `efr daemon` subcommand; what went wrong is printed to stderr.
pub fn run(command: &DaemonCommand) -> ExitCode {
    eprintln!("efr daemon {command:?}: not built yet");
    ExitCode::from(2)
}
