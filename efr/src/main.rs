//! `efr`: the command-line client of efrd.
//!
//! efr is a thin client (docs/architecture.md, "Processes and trust boundaries"): it sends a prompt with the terminal's
//! context, shows the turn as it streams, and asks the user what efrd asks; all state lives in efrd. Each other command
//! maps to one method.
//!
//! - [`cli`]: the command line (clap); [`args`]: flags in front of a command word, and `efr login`'s errors.
//! - [`out`]: stdout of the thin commands (a reader that left ends efr quietly, status 0).
//! - [`socket`]: where efrd's socket is; [`client`]: the connection; [`report`]: exit codes and failures.
//! - [`context`]: the terminal's context of a prompt; [`tty`]: terminal modes.
//! - [`turn`]: `efr "prompt"`, the turn's view and its questions.
//! - [`commands`]: status, models, login, logout, sandbox check, diff, shell.
//! - `shell_init`, `daemon_cmd`: `efr shell-init` and `efr daemon` (their own modules).
//! - [`generate`]: `efr completions` and the man pages; [`mistyped`]: a one-word prompt that looks like a
//!   mistyped command is refused.

mod args;
mod clean;
mod cli;
mod client;
mod commands;
mod context;
mod daemon_cmd;
mod generate;
mod mistyped;
mod out;
mod report;
mod shell_init;
mod socket;
mod tty;
mod turn;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, ConfigCommand, SandboxCommand, ShellCommand};

/// Prints clap's usage error with the arguments it quotes [`printable`](clean::printable): clap quotes a
/// refused argument as it came, and a control sequence in it would act on the terminal. The same command line with
/// each argument made printable gives the same error with clean quotes; when it does not (a mark made an argument
/// valid), the error's kind is said without quotes.
fn usage_error(error: &clap::Error, args: &[std::ffi::OsString]) {
    let shown = args::printable(args);
    if shown == args {
        let _ = error.print();
        return;
    }
    match Cli::try_parse_from(shown) {
        Err(clean) if clean.kind() == error.kind() => {
            let _ = clean.print();
        }
        _ => report::error(&format!(
            "{} (the argument is not shown: it holds control characters)",
            error.kind()
        )),
    }
}

fn main() -> ExitCode {
    let reordered = match args::reorder(std::env::args_os().collect()) {
        Ok(reordered) => reordered,
        Err(message) => {
            report::error(&message);
            return ExitCode::from(report::FAILED);
        }
    };
    let cli = match Cli::try_parse_from(&reordered.args) {
        Ok(cli) => cli,
        Err(error) if !error.use_stderr() => {
            // Help and version are not failures.
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            if reordered.command.as_deref() == Some("login") {
                // clap would quote the refused argument, which may be a key.
                eprintln!("{}", args::login_error(error.kind()));
            } else {
                usage_error(&error, &reordered.args);
            }
            // A usage error is bad input (1), never "efrd not running" (2).
            return ExitCode::from(report::FAILED);
        }
    };
    match cli.command {
        Some(Command::ShellInit { shell }) => {
            out::print_exact(&shell_init::script(shell));
            ExitCode::SUCCESS
        }
        Some(Command::Daemon { command }) => daemon_cmd::run(&command),
        Some(Command::Completions { shell }) => generate::completions(shell),
        Some(Command::ManPages { dir }) => generate::man_pages(&dir),
        command => {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(error) => {
                    report::error(&format!("cannot start the async runtime: {error}"));
                    return ExitCode::from(report::FAILED);
                }
            };
            let code = runtime.block_on(run(command, &cli.prompt));
            // The key reader may block in a read of stdin: do not wait for it.
            runtime.shutdown_background();
            code
        }
    }
}

async fn run(command: Option<Command>, root_prompt: &cli::PromptArgs) -> ExitCode {
    match command {
        None => match mistyped::intercept(root_prompt) {
            Some(code) => code,
            None => turn::run(root_prompt).await,
        },
        Some(Command::Prompt(args)) => turn::run(&args).await,
        Some(Command::Status(args)) => commands::status::run(args.json).await,
        Some(Command::Models(args)) => commands::models::run(args.json).await,
        Some(Command::Login(args)) => commands::login::login(&args).await,
        Some(Command::Logout(args)) => commands::login::logout(&args).await,
        Some(Command::Backup(args)) => commands::backup::run(&args.path, args.json).await,
        Some(Command::Device { command }) => commands::device::run(command).await,
        Some(Command::Sandbox {
            command: SandboxCommand::Check(args),
        }) => commands::sandbox::check(args.json).await,
        Some(Command::Sandbox {
            command: SandboxCommand::Host(args),
        }) => commands::sandbox_host::run(&args).await,
        Some(Command::Sandbox {
            command: SandboxCommand::SetupApparmor(args),
        }) => commands::apparmor::setup(args.print),
        Some(Command::Search(args)) => commands::search::run(&args).await,
        Some(Command::Diff(args)) => commands::diff::run(&args).await,
        Some(Command::Undo(args)) => commands::undo::run(&args, false).await,
        Some(Command::Redo(args)) => commands::undo::run(&args, true).await,
        Some(Command::Trash { command }) => commands::trash::run(command).await,
        Some(Command::Projects { command, args }) => commands::projects::run(command, args).await,
        Some(Command::Context(args)) => commands::context::run(&args).await,
        Some(Command::Compact(args)) => commands::compact::run(&args).await,
        Some(Command::Delete(args)) => commands::delete::run(&args).await,
        Some(Command::Resume(args)) => commands::resume::run(&args).await,
        Some(Command::Jobs { command, args }) => commands::jobs::run(command, args).await,
        Some(Command::Presence(args)) => commands::presence::run(&args).await,
        Some(Command::Shell { command, args }) => match command {
            None => commands::shell::run_status(&args).await,
            Some(ShellCommand::Status(args)) => commands::shell::run_status(&args).await,
            Some(ShellCommand::Stop(args)) => commands::shell::run_stop(&args).await,
        },
        Some(Command::Config {
            command: ConfigCommand::Reload(args),
        }) => commands::config::reload(args.json).await,
        // Handled before the runtime starts.
        Some(
            Command::ShellInit { .. } | Command::Daemon { .. } | Command::Completions { .. } | Command::ManPages { .. },
        ) => ExitCode::SUCCESS,
    }
}
