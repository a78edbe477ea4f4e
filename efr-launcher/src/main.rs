//! `efr-launcher`: runs one contained call. See the library docs (`efr_launcher`) for the stages, the command line,
//! the plan and the report.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use efr_launcher::argv::{self, Common};
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

impl Cli {
    /// The launch clap read, in the fast reading's terms ([`Common`]); another stage, or none, as it is.
    fn common(self) -> Result<Common, Option<Stage>> {
        match (self.stage, self.plan_fd, self.plan_file) {
            (
                Some(Stage::Inner {
                    spec_fd,
                    status_fd,
                    stderr_fd,
                    bridge_fd,
                }),
                _,
                _,
            ) => Ok(Common::Inner(InnerFds {
                spec: spec_fd,
                status: status_fd,
                stderr: stderr_fd,
                bridge: bridge_fd,
            })),
            (None, Some(fd), _) => Ok(Common::PlanFd(fd)),
            (None, None, Some(path)) => Ok(Common::PlanFile(path)),
            (stage, _, _) => Err(stage),
        }
    }
}

/// Runs a contained call's stage, however its command line was read.
fn launch(common: Common) -> ExitCode {
    match common {
        Common::Inner(fds) => inner::run(fds),
        Common::PlanFile(path) => outer::run(&PlanSource::File(path)),
        Common::PlanFd(fd) => outer::run(&PlanSource::Fd(fd)),
    }
}

fn main() -> ExitCode {
    // Every contained call's two command lines skip clap's start (docs/adr/0031-contained-true-breakdown.md).
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some(common) = argv::common(&args) {
        return launch(common);
    }
    match Cli::parse().common() {
        Ok(common) => launch(common),
        Err(Some(Stage::SelfTest {
            test: SelfTest::NetView { name },
        })) => selftest::run_net_view(&name),
        Err(Some(Stage::Sockets { pid })) => efr_launcher::sockets::run(pid),
        // `Stage::Inner` is always a launch; without a stage, clap has already asked for the plan.
        Err(_) => {
            eprintln!("efr-launcher: give the plan with --plan-fd or --plan-file");
            ExitCode::from(efr_protocol::internal::SETUP_ERROR_EXIT)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

    use super::*;

    /// What clap makes of `args`, in [`Common`]'s terms (`None` for another command or an error).
    fn by_clap(args: &[&str]) -> Option<Common> {
        let cli = Cli::try_parse_from(std::iter::once("efr-launcher").chain(args.iter().copied())).ok()?;
        cli.common().ok()
    }

    fn quick(args: &[&str]) -> Option<Common> {
        let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        argv::common(&args)
    }

    #[test]
    fn the_quick_reading_agrees_with_clap_where_it_reads() {
        for args in [
            &["--plan-file", "/run/user/1000/efr/plan-7.json"][..],
            &["--plan-file", "a plan with spaces"],
            &["--plan-fd", "5"],
            &["inner", "--spec-fd", "11", "--status-fd", "14", "--stderr-fd", "15"],
            &[
                "inner",
                "--spec-fd",
                "3",
                "--status-fd",
                "4",
                "--stderr-fd",
                "5",
                "--bridge-fd",
                "6",
            ],
        ] {
            let read = quick(args);
            assert!(read.is_some(), "{args:?} not read");
            assert_eq!(read, by_clap(args), "{args:?}");
        }
    }

    #[test]
    fn every_other_command_line_goes_to_clap() {
        for args in [
            &[][..],
            &["--plan-file=/tmp/p"],
            &["--plan-file", "--plan-fd"],
            &["--plan-file", ""],
            &["--plan-fd", "five"],
            &["--plan-fd", "5", "--plan-file", "/tmp/p"],
            &["--help"],
            &["inner", "--status-fd", "14", "--spec-fd", "11", "--stderr-fd", "15"],
            &["inner", "--spec-fd", "11", "--status-fd", "14"],
            &["inner", "--spec-fd", "x", "--status-fd", "14", "--stderr-fd", "15"],
            &[
                "inner",
                "--spec-fd",
                "11",
                "--status-fd",
                "14",
                "--stderr-fd",
                "15",
                "--bridge-fd",
            ],
            &[
                "inner",
                "--spec-fd",
                "11",
                "--status-fd",
                "14",
                "--stderr-fd",
                "15",
                "extra",
                "6",
            ],
            &["self-test", "net-view", "--abstract", "x"],
            &["sockets", "--pid", "12"],
        ] {
            assert_eq!(quick(args), None, "{args:?}");
        }
        // What clap then makes of some of them: the same launch, or its own error.
        assert_eq!(
            by_clap(&["--plan-file=/tmp/p"]),
            Some(Common::PlanFile("/tmp/p".into()))
        );
        assert_eq!(by_clap(&["--plan-fd", "five"]), None);
    }
}
