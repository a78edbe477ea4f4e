//! `efrd`: the efr daemon. Run by systemd (`efrd.socket`) or by hand; see the crate docs and `docs/`.
//!
//! Exit codes: 0 after a graceful stop (SIGTERM, SIGINT, or `[daemon] idle_exit_secs` without work), 1 for a start
//! failure, 3 when another efrd holds the runtime root ([`efrd::listen::EXIT_ALREADY_RUNNING`]), 4 for a
//! `config.toml` that cannot be read ([`efrd::config::EXIT_CONFIG_INVALID`]).

use std::process::ExitCode;
use std::time::Duration;

use efrd::config::{ConfigState, EXIT_CONFIG_INVALID, Roots};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!(
            "efrd {} (protocol {})",
            env!("CARGO_PKG_VERSION"),
            efr_protocol::PROTOCOL_VERSION
        );
        return ExitCode::SUCCESS;
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
