//! `efrd`: the efr daemon. Run by systemd (`efrd.socket`) or by hand; see the crate docs and `docs/`.
//!
//! Exit codes: 0 after a graceful stop, 1 for a start failure, 3 when another efrd holds the runtime root
//! ([`efrd::listen::EXIT_ALREADY_RUNNING`]), 4 for a `config.toml` that cannot be read
//! ([`efrd::config::EXIT_CONFIG_INVALID`]).

use std::process::ExitCode;
use std::time::Duration;

use efrd::config::Roots;
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
    // Logs go to stderr, which journald reads under systemd. `EFR_LOG` takes tracing's filter syntax.
    let filter = EnvFilter::try_from_env("EFR_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    // No colours unless stderr is a terminal: journald and log files get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(ansi)
        .init();

    let roots = match Roots::from_process_env() {
        Ok(roots) => roots,
        Err(error) => {
            eprintln!("efrd: {error}");
            return ExitCode::from(1);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("efrd: cannot start the async runtime: {error}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(efrd::daemon::run(roots));
    runtime.shutdown_timeout(Duration::from_secs(1));
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
