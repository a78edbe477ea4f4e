//! `efr-bus-proxy`: the filtering D-Bus proxy of contained calls (SEE/TALK/OWN rules).
//!
//! Not built yet. Until then it refuses to start, so no call can get a bus path through it.

fn main() -> std::process::ExitCode {
    eprintln!("efr-bus-proxy: the bus proxy is not built yet");
    std::process::ExitCode::from(125)
}
