//! `efr`: the command-line client of efrd.
//!
//! Not built yet (issue "The efr CLI, shell integration, systemd units ..."). It says so and exits non-zero rather
//! than pretend to send anything.

fn main() -> std::process::ExitCode {
    eprintln!(
        "efr {}: the command-line client is not built yet (protocol {})",
        env!("CARGO_PKG_VERSION"),
        efr_protocol::PROTOCOL_VERSION
    );
    std::process::ExitCode::from(2)
}
