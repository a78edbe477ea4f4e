//! `efr-proxy --control-fd N --sockets DIR`: the egress proxy of contained calls (see the library's docs).

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: efr-proxy --control-fd N --sockets DIR";

fn main() -> ExitCode {
    let mut control_fd = None;
    let mut sockets = None;
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--control-fd") => control_fd = args.next().and_then(|v| v.to_str()?.parse::<i32>().ok()),
            Some("--sockets") => sockets = args.next().map(PathBuf::from),
            _ => {
                eprintln!("efr-proxy: unknown argument {arg:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let (Some(control_fd), Some(sockets)) = (control_fd, sockets) else {
        eprintln!("efr-proxy: --control-fd (a number) and --sockets are required\n{USAGE}");
        return ExitCode::from(2);
    };
    match efr_proxy::run(control_fd, &sockets) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("efr-proxy: {error}");
            ExitCode::FAILURE
        }
    }
}
