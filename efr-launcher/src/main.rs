//! `efr-launcher`: builds the sandbox of one contained call (bubblewrap, then Landlock and seccomp inside).
//!
//! Not built yet (issue "efr-launcher, the contained launch ..."). Until then it refuses every launch, so nothing can
//! mistake it for a working sandbox.

fn main() -> std::process::ExitCode {
    eprintln!("efr-launcher: the sandbox launcher is not built yet; no command was run");
    std::process::ExitCode::from(125)
}
