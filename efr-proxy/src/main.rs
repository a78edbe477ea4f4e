//! `efr-proxy`: the network egress proxy of contained calls (HTTP CONNECT, SNI checked, allow/deny lists).
//!
//! Not built yet. Until then it refuses to start, so no call can get a network path through it.

fn main() -> std::process::ExitCode {
    eprintln!("efr-proxy: the egress proxy is not built yet");
    std::process::ExitCode::from(125)
}
