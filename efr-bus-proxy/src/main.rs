//! `efr-bus-proxy --control-fd N --sockets DIR`: the supervised proxy efrd starts (see the library's docs).
//!
//! `efr-bus-proxy --listen PATH --upstream ADDRESS [RULES]` serves one filtered socket by hand, unhardened, for
//! tests and for trying a policy: `--see NAME`, `--talk NAME`, `--own NAME`, `--call RULE`, `--broadcast RULE`,
//! `--fds NAME`, or `--default` for the session default (docs/bus.md, "Policy").

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use efr_bus_proxy::policy::{Level, NamePattern, Policy, Rule};
use efr_bus_proxy::report::Refusals;
use efr_bus_proxy::serve::{MAX_MESSAGE, Plan, serve};
use efr_protocol::wire::Bus;

const USAGE: &str = "usage: efr-bus-proxy --control-fd N --sockets DIR\n       efr-bus-proxy --listen PATH --upstream ADDRESS [--default] [--see|--talk|--own|--fds NAME] \
                     [--call|--broadcast NAME=INTERFACE.MEMBER@PATH]";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("efr-bus-proxy: {error}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, fd, sockets_flag, sockets] = args.as_slice()
        && flag == "--control-fd"
        && sockets_flag == "--sockets"
    {
        let fd = fd.parse().map_err(|_| format!("--control-fd {fd} is not a number"))?;
        return efr_bus_proxy::run(fd, std::path::Path::new(sockets));
    }
    let mut listen = None;
    let mut upstream = None;
    let mut policy = Policy::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--default" {
            let default = Policy::session_default();
            policy.names.extend(default.names);
            policy.fds.extend(default.fds);
            continue;
        }
        let value = args.next().ok_or_else(|| format!("{arg} needs a value"))?;
        let name = |value: &str| NamePattern::parse(value).map_err(|e| format!("{arg} {value}: {e}"));
        let rule = |value: &str| Rule::parse(value).map_err(|e| format!("{arg} {value}: {e}"));
        match arg.as_str() {
            "--listen" => listen = Some(PathBuf::from(value)),
            "--upstream" => upstream = Some(efr_bus_proxy::address::unix_path(&value)?),
            "--see" => policy.names.push((name(&value)?, Level::See)),
            "--talk" => policy.names.push((name(&value)?, Level::Talk)),
            "--own" => policy.names.push((name(&value)?, Level::Own)),
            "--fds" => policy.fds.push(name(&value)?),
            "--call" => policy.calls.push(rule(&value)?),
            "--broadcast" => policy.broadcasts.push(rule(&value)?),
            _ => return Err(format!("unknown argument {arg}")),
        }
    }
    let (Some(listen), Some(upstream)) = (listen, upstream) else {
        return Err("--listen and --upstream are required".to_owned());
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async move {
        let listener = tokio::net::UnixListener::bind(&listen)
            .map_err(|e| format!("cannot listen on {}: {e}", listen.display()))?;
        let plan = Plan {
            upstream,
            policy: Arc::new(policy),
            refusals: Arc::new(Refusals::new(Bus::Session)),
            max_message: MAX_MESSAGE,
            uid: nix::unistd::getuid().as_raw(),
            connections: std::sync::atomic::AtomicU64::new(0),
            clients: efr_bus_proxy::serve::Clients::default(),
        };
        serve(listener, Arc::new(plan)).await;
        Ok(())
    })
}
