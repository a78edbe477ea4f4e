//! Setup errors are told apart from exit codes (docs/architecture.md, "The sandbox"): a broken bubblewrap setup, a bad
//! plan and an inner refusal each report `setup_error` with their own message and exit 125, while the command's own
//! statuses (125 included) pass through as `exited`. Also the plan and report channels: an inherited fd and a one-time
//! file.

// The battery's bodies are shared by the #[test] functions of each user and panic like them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::process::Command;
use std::time::Duration;

use efr_protocol::internal::{LaunchReport, RlimitResource, SETUP_ERROR_EXIT, SetupStage, Writable, WritableSource};
use efr_protocol::wire::Grant;
use support::{Fixture, User, launcher, run_bounded};

fn setup_error(run: &support::Run) -> Option<(SetupStage, &str)> {
    match run.end() {
        Some(LaunchReport::SetupError { stage, message }) => Some((*stage, message.as_str())),
        _ => None,
    }
}

#[test]
fn a_broken_bubblewrap_setup_is_a_setup_error_with_its_message() {
    let fx = Fixture::new(User::Root);
    let mut plan = fx.plan(&format!("touch {}/ran", fx.project.display()));
    let missing = fx.base.join("no-such-root");
    plan.writable.push(Writable {
        path: missing.clone(),
        source: WritableSource::Project,
    });
    let run = fx.run(&plan);
    let (stage, message) = setup_error(&run).unwrap_or_else(|| panic!("{}", run.describe()));
    assert_eq!(stage, SetupStage::Bwrap);
    assert!(
        message.contains("Can't find source path") && message.contains("no-such-root"),
        "{message}"
    );
    assert_eq!(run.code, Some(i32::from(SETUP_ERROR_EXIT)));
    assert!(
        !run.report.iter().any(|l| matches!(l, LaunchReport::Sandboxed { .. })),
        "{}",
        run.describe()
    );
    assert!(!fx.project.join("ran").exists(), "the command ran");
    assert!(run.stderr.contains("setup error (bubblewrap)"), "{}", run.describe());
    assert!(
        matches!(run.report[0], LaunchReport::Launched { launcher_pid, launcher_start } if launcher_pid > 0 && launcher_start > 0)
    );
}

#[test]
fn the_commands_own_statuses_pass_through() {
    let fx = Fixture::new(User::Nobody);
    for (line, code) in [("exit 7", 7), ("exit 125", 125), ("exit 0", 0), ("kill -KILL $$", 137)] {
        let run = fx.run(&fx.plan(line));
        assert_eq!(run.exited(), Some(code), "{line}: {}", run.describe());
        assert_eq!(run.code, Some(code), "{line}: {}", run.describe());
        assert!(setup_error(&run).is_none());
    }
    // A program that is not there: the shell's 127, with the reason.
    let mut plan = fx.plan("");
    plan.command = efr_protocol::internal::LaunchCommand::Argv {
        argv: vec!["no-such-program-efr".into()],
    };
    let run = fx.run(&plan);
    assert_eq!(run.exited(), Some(127), "{}", run.describe());
    assert!(
        matches!(run.end(), Some(LaunchReport::Exited { exec_error: Some(e), .. }) if e.contains("no-such-program-efr"))
    );
}

#[test]
fn bad_plans_are_refused_before_anything_runs() {
    let fx = Fixture::new(User::Root);
    // A grant without a plan step.
    let mut plan = fx.plan(&format!("touch {}/ran", fx.project.display()));
    plan.grants.push(Grant::Bus {
        bus: efr_protocol::wire::Bus::Session,
    });
    let run = fx.run(&plan);
    let (stage, message) = setup_error(&run).unwrap_or_else(|| panic!("{}", run.describe()));
    assert_eq!(
        (stage, message.starts_with("the bus grant is refused")),
        (SetupStage::Plan, true),
        "{message}"
    );
    // A host grant without the proxy socket to reach it through.
    plan.grants = vec![Grant::Host {
        host: "example.com".into(),
        port: None,
    }];
    let run = fx.run(&plan);
    let (stage, message) = setup_error(&run).unwrap_or_else(|| panic!("{}", run.describe()));
    assert_eq!(
        (stage, message.contains("proxy socket")),
        (SetupStage::Plan, true),
        "{message}"
    );
    // A bubblewrap that is not there.
    let mut plan = fx.plan("true");
    plan.bwrap = "/nonexistent/bwrap".into();
    let run = fx.run(&plan);
    let (stage, message) = setup_error(&run).unwrap_or_else(|| panic!("{}", run.describe()));
    assert_eq!(stage, SetupStage::Bwrap);
    assert!(
        message.contains("cannot run bubblewrap at /nonexistent/bwrap"),
        "{message}"
    );
    assert!(!fx.project.join("ran").exists());
    // A plan that does not parse (no report channel known yet: the report line goes to stderr).
    let path = fx.base.join("broken.json");
    std::fs::write(&path, "{\"bwrap\": 3}").unwrap();
    let mut command = Command::new(launcher());
    command.arg("--plan-file").arg(&path);
    let output = run_bounded(command, Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines = LaunchReport::parse_lines(&stderr).unwrap();
    assert!(
        matches!(LaunchReport::end(&lines), Some(LaunchReport::SetupError { stage: SetupStage::Plan, message }) if message.contains("does not parse")),
        "{stderr}"
    );
    assert_eq!(output.status.code(), Some(i32::from(SETUP_ERROR_EXIT)));
    // No plan at all.
    let output = run_bounded(Command::new(launcher()), Duration::from_secs(20));
    assert_ne!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--plan-fd"));
}

#[test]
fn an_inner_refusal_is_a_setup_error_of_the_inner_stage() {
    let fx = Fixture::new(User::Nobody);
    // A hard limit above the kernel's maximum (fs.nr_open) cannot be set, even by root.
    let mut plan = fx.plan(&format!("touch {}/ran", fx.project.display()));
    plan.rlimits.push(efr_protocol::internal::Rlimit {
        resource: RlimitResource::Nofile,
        soft: 1 << 40,
        hard: 1 << 40,
    });
    let run = fx.run(&plan);
    let (stage, message) = setup_error(&run).unwrap_or_else(|| panic!("{}", run.describe()));
    assert_eq!(stage, SetupStage::Inner);
    assert!(message.contains("Nofile"), "{message}");
    assert!(!fx.project.join("ran").exists());
    // A limit that can be set is in force.
    let mut plan = fx.plan("ulimit -n");
    plan.rlimits.push(efr_protocol::internal::Rlimit {
        resource: RlimitResource::Nofile,
        soft: 77,
        hard: 77,
    });
    let run = fx.run(&plan);
    assert_eq!((run.exited(), run.stdout.trim()), (Some(0), "77"), "{}", run.describe());
}

#[test]
fn the_plan_and_report_can_come_on_inherited_descriptors() {
    let fx = Fixture::new(User::Root);
    let mut plan = fx.plan("echo inside");
    plan.report = efr_protocol::internal::ReportTo::Fd { fd: 4 };
    let plan_path = fx.base.join("fd-plan.json");
    let report_path = fx.base.join("fd-report");
    std::fs::write(&plan_path, serde_json::to_vec(&plan).unwrap()).unwrap();
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg("exec \"$0\" --plan-fd 3 3<\"$1\" 4>\"$2\"")
        .arg(launcher())
        .arg(&plan_path)
        .arg(&report_path);
    let output = run_bounded(command, Duration::from_secs(20));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "inside\n");
    let report = LaunchReport::parse_lines(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    assert_eq!(
        LaunchReport::end(&report),
        Some(&LaunchReport::Exited {
            exit_code: 0,
            exec_error: None
        })
    );
    // The one-time file is removed after reading; the fd's plan file is the caller's.
    assert!(plan_path.exists());
    let run = fx.run(&fx.plan("true"));
    assert!(!run.plan_left, "the one-time plan file was left behind");
    // A plan fd that is not open.
    let output = run_bounded(
        {
            let mut c = Command::new(launcher());
            c.args(["--plan-fd", "9"]);
            c
        },
        Duration::from_secs(20),
    );
    assert_eq!(output.status.code(), Some(i32::from(SETUP_ERROR_EXIT)));
    assert!(String::from_utf8_lossy(&output.stderr).contains("the plan fd 9 is not open"));
}

/// A plan larger than a pipe's buffer still reaches bubblewrap and the inner stage whole; a string longer than an
/// exec takes is refused with the kernel's limit before anything runs.
#[test]
fn a_large_plan_arrives_whole() {
    let fx = Fixture::new(User::Root);
    let mut plan = fx.plan("echo $((${#BIG1} + ${#BIG2} + ${#BIG3}))");
    for name in ["BIG1", "BIG2", "BIG3"] {
        plan.env.insert(name.into(), "x".repeat(100_000));
    }
    let run = fx.run(&plan);
    assert_eq!(
        (run.exited(), run.stdout.as_str()),
        (Some(0), "300000\n"),
        "{}",
        run.describe()
    );
    plan.env.insert("BIG1".into(), "x".repeat(200_000));
    let run = fx.run(&plan);
    let (stage, message) = setup_error(&run).unwrap_or_else(|| panic!("{}", run.describe()));
    assert_eq!(stage, SetupStage::Plan);
    assert!(
        message.contains("environment variable BIG1 is 200005 bytes"),
        "{message}"
    );
}
