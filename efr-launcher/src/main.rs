//! `efr-launcher`: runs one contained call. See the library docs (`efr_launcher`) for the stages, the command line,
//! the plan and the report.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use efr_launcher::inner::{self, InnerFds};
use efr_launcher::outer::{self, PlanSource};
use efr_launcher::selftest;

/// Runs one command in efr's sandbox, as a launch plan says.
#[derive(Debug, Parser)]
#[command(name = "efr-launcher", version, args_conflicts_with_subcommands = true)]
struct Cli {
    /// Read the plan from this inherited descriptor.
    #[arg(long, value_name = "FD", conflicts_with = "plan_file", required_unless_present_any = ["plan_file"])]
    plan_fd: Option<i32>,
    /// Read the plan from this one-time file, then remove it.
    #[arg(long, value_name = "PATH")]
    plan_file: Option<PathBuf>,
    #[command(subcommand)]
    stage: Option<Stage>,
}

#[derive(Debug, Subcommand)]
enum Stage {
    /// The inner stage, as bubblewrap's child (not for direct use).
    #[command(hide = true)]
    Inner {
        #[arg(long)]
        spec_fd: i32,
        #[arg(long)]
        status_fd: i32,
        #[arg(long)]
        stderr_fd: i32,
        #[arg(long)]
        bridge_fd: Option<i32>,
    },
    /// Makes TCP sockets in the network namespace of a contained job's process PID for efrd's port forwards, one
    /// for each byte `4` or `6` read on standard input (a Unix socket), sent back on it (not for direct use).
    #[command(hide = true)]
    Sockets {
        #[arg(long)]
        pid: u32,
    },
    /// Checks run inside a sandbox by efrd's probe.
    SelfTest {
        #[command(subcommand)]
        test: SelfTest,
    },
}

#[derive(Debug, Subcommand)]
enum SelfTest {
    /// The net_view checks: no AF_INET, AF_UNIX and AF_NETLINK work, the abstract socket NAME is out of reach.
    NetView {
        /// An abstract socket the prober listens on outside.
        #[arg(long = "abstract", value_name = "NAME")]
        name: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match (cli.stage, cli.plan_fd, cli.plan_file) {
        (
            Some(Stage::Inner {
                spec_fd,
                status_fd,
                stderr_fd,
                bridge_fd,
            }),
            _,
            _,
        ) => inner::run(InnerFds {
            spec: spec_fd,
            status: status_fd,
            stderr: stderr_fd,
            bridge: bridge_fd,
        }),
        (
            Some(Stage::SelfTest {
                test: SelfTest::NetView { name },
            }),
            _,
            _,
        ) => selftest::run_net_view(&name),
        (Some(Stage::Sockets { pid }), _, _) => efr_launcher::sockets::run(pid),
        (None, Some(fd), _) => outer::run(&PlanSource::Fd(fd)),
        (None, None, Some(path)) => outer::run(&PlanSource::File(path)),
        (None, None, None) => {
            eprintln!("efr-launcher: give the plan with --plan-fd or --plan-file");
            ExitCode::from(efr_protocol::internal::SETUP_ERROR_EXIT)
        }
    }
}
