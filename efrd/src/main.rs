//! `efrd`: the efr daemon. Run by systemd (`efrd.socket`) or by hand; see the crate docs and `docs/`.
//!
//! Exit codes: 0 after a graceful stop (SIGTERM, SIGINT, or `[daemon] idle_exit_secs` without work), 1 for a start
//! failure, 3 when another efrd holds the runtime root ([`efrd::listen::EXIT_ALREADY_RUNNING`]), 4 for a
//! `config.toml` that cannot be read ([`efrd::config::EXIT_CONFIG_INVALID`]).

use std::process::ExitCode;
use std::time::Duration;

use efrd::config::{ConfigState, EXIT_CONFIG_INVALID, Roots};
use tracing_subscriber::EnvFilter;

/// What efrd(8) and `efrd --help` say after the options.
const AFTER_HELP: &str = "\
efrd is started by systemd through the user unit efrd.socket (installed for every user by the efr package, or by \
`efr daemon install`) on the first connection to its socket, or by hand with `efr daemon run`.

Environment:
  EFR_HOME             one folder for config, data, state and the socket (H/config, H/data, H/state, H/run)
  EFR_CONFIG_DIR       the config folder (default $XDG_CONFIG_HOME/efr, ~/.config/efr): config.toml
  EFR_DATA_DIR         the data folder (default $XDG_DATA_HOME/efr, ~/.local/share/efr): efr.db, the event log
  EFR_STATE_DIR        the state folder (default $XDG_STATE_HOME/efr, ~/.local/state/efr): snapshots, scratch
  EFR_RUNTIME_DIR      the runtime folder (default $XDG_RUNTIME_DIR/efr): daemon.sock, the hidden shells
  EFR_LOG              the log filter in tracing's syntax (EFR_LOG=efrd=debug); wins over [daemon] log_level
  EFR_LAUNCHER, EFR_PROXY, EFR_BUS_PROXY
                       the helper programs; default: next to efrd, else ../libexec/efr/ beside its folder
  EFR_BWRAP            bubblewrap (default: bwrap on PATH)

Exit codes: 0 after a graceful stop, 1 a start failure, 3 another efrd holds the runtime folder, 4 config.toml \
cannot be read.

Logs go to stderr (journald under systemd: journalctl --user -u efrd). See efr(1).";

/// efrd: the efr agent daemon; it runs the conversations of one user.
#[derive(Debug, clap::Parser)]
#[command(name = "efrd", disable_version_flag = true, after_help = AFTER_HELP)]
struct Args {
    /// Print the version of efrd and of its protocol, then exit.
    #[arg(long, short = 'V')]
    version: bool,
    /// Write the man page efrd(8) to stdout (the package builds it so).
    #[arg(long, hide = true)]
    man_page: bool,
}

fn main() -> ExitCode {
    let args = match <Args as clap::Parser>::try_parse() {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            // Help is not a failure; a usage error is a start failure (1).
            return if error.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if args.version {
        println!(
            "efrd {} (protocol {})",
            env!("CARGO_PKG_VERSION"),
            efr_protocol::PROTOCOL_VERSION
        );
        return ExitCode::SUCCESS;
    }
    if args.man_page {
        let page = clap_mangen::Man::new(<Args as clap::CommandFactory>::command())
            .section("8")
            .source(format!("efrd {}", env!("CARGO_PKG_VERSION")))
            .manual("efr manual");
        let mut text = Vec::new();
        if let Err(error) = page.render(&mut text) {
            eprintln!("efrd: cannot render the man page: {error}");
            return ExitCode::from(1);
        }
        return match std::io::Write::write_all(&mut std::io::stdout(), &text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(1),
        };
    }
    let roots = match Roots::from_process_env() {
        Ok(roots) => roots,
        Err(error) => {
            eprintln!("efrd: {error}");
            return ExitCode::from(1);
        }
    };
    // The config comes first: its `[daemon] log_level` sets up the logs.
    let (config, warnings) = match ConfigState::load(&roots.config_file()) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("efrd: {}: {error}", roots.config_file().display());
            return ExitCode::from(u8::try_from(EXIT_CONFIG_INVALID).unwrap_or(1));
        }
    };
    // Logs go to stderr, which journald reads under systemd. `EFR_LOG` (tracing's filter syntax) wins over the
    // config. No colours unless stderr is a terminal: journald and log files get plain text.
    let filter =
        EnvFilter::try_from_env("EFR_LOG").unwrap_or_else(|_| EnvFilter::new(&config.current().daemon.log_level));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(ansi)
        .init();
    for warning in warnings {
        tracing::warn!("config.toml: {warning}");
    }
    raise_fd_limit();

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("efrd: cannot start the async runtime: {error}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(efrd::lifecycle::run(roots, config));
    runtime.shutdown_timeout(Duration::from_secs(1));
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Raises the soft limit of open files to the hard one. systemd starts services with a soft limit of 1024 (and a hard
/// one of 524288) and expects those that need more to raise it; efrd's connections
/// ([`efrd::server::MAX_CONNECTIONS`]), hidden shells and snapshots together can pass 1024.
fn raise_fd_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => {
            if let Err(error) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
                tracing::warn!(%error, soft, hard, "cannot raise the limit of open files");
            }
        }
        Ok(_) => {}
        Err(error) => tracing::warn!(%error, "cannot read the limit of open files"),
    }
}
