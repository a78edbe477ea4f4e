//! `efr sandbox check`: admin.sandbox_check, the admins' view of the sandbox probe.
//!
//! ```text
//! sandbox: available · landlock ABI 6 · network view · proxy · bus proxy
//! bubblewrap 0.8.0
//!   pass  bwrap            0.9.0 at /usr/bin/bwrap
//!   FAIL  contained_run    the sandbox cannot start: bwrap: loopback: Failed RTM_NEWADDR: ...; AppArmor keeps ...
//!         fix: run `sudo efr sandbox setup-apparmor`: it installs an AppArmor profile that ...
//! ```
//!
//! A failed step whose cause efrd knows shows its fix under it (docs/modes.md, "When the sandbox cannot start").
//! The last line is efr's own look at AppArmor on this machine ([`super::apparmor::status_line`]): whether it runs
//! and whether efr's profile, the packaged one or one `setup-apparmor` wrote, is loaded (not in `--json`, which is
//! efrd's answer as it is).
//!
//! The exit status tells scripts the answer: 0 when the sandbox is available, 1 when it is not (with `--json` too),
//! so `efr sandbox check && ...` runs only where auto mode can contain calls. An efrd that does not serve the method
//! yet answers `invalid ... does not serve`; efr says so in its own words.

use std::fmt::Write as _;
use std::process::ExitCode;

use efr_protocol::wire::AdminSandboxCheckResult;
use serde_json::json;

use super::status::sandbox_line;
use crate::report;

/// The exit code of a check: 0 when the sandbox is available, 1 when it is not.
#[must_use]
pub fn exit_code(check: &AdminSandboxCheckResult) -> ExitCode {
    if check.sandbox.available {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(report::FAILED)
    }
}

/// Runs `efr sandbox check`; exits 1 when the sandbox is not available (see the module doc).
pub async fn check(json: bool) -> ExitCode {
    let client = match report::connect(None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    super::judged_on(
        &client,
        "admin.sandbox_check",
        json!({}),
        json,
        |check: &AdminSandboxCheckResult| {
            let apparmor = super::apparmor::status_line(&super::apparmor::AppArmorFacts::read());
            crate::out::print(&format!("{}{apparmor}\n", render(check)));
        },
        exit_code,
    )
    .await
}

/// The readable form of a check: the status line, then one line per probe with pass or FAIL and why.
#[must_use]
pub fn render(check: &AdminSandboxCheckResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "sandbox: {}", sandbox_line(&check.sandbox));
    if let Some(version) = &check.bwrap_version {
        let _ = writeln!(out, "bubblewrap {version}");
    }
    for probe in &check.probes {
        let name = serde_json::to_value(probe.name)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "unknown".to_owned());
        let (mark, why) = if probe.passed {
            ("pass", probe.detail.as_deref().unwrap_or(""))
        } else {
            ("FAIL", probe.reason.as_deref().unwrap_or("no reason given"))
        };
        // A probe that passed without a detail has no reason column (no trailing blanks).
        let line = format!("  {mark}  {name:<16} {why}");
        let _ = writeln!(out, "{}", line.trim_end());
        // The fix of a known cause, under its step.
        if let Some(fix) = probe.fix.as_deref().filter(|_| !probe.passed) {
            let _ = writeln!(out, "        fix: {fix}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> AdminSandboxCheckResult {
        let path = format!("{}/../protocol/fixtures/v1/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn every_probe_shows_with_pass_or_fail_and_why() {
        let out = render(&fixture("admin_sandbox_check_result_unavailable.json"));
        assert!(
            out.starts_with("sandbox: unavailable: bubblewrap is not installed"),
            "{out}"
        );
        assert!(
            out.contains("FAIL  bwrap            bubblewrap is not installed"),
            "{out}"
        );
        assert!(
            out.contains("pass  launcher         /usr/lib/efr/efr-launcher"),
            "{out}"
        );
        assert_eq!(
            out.lines()
                .filter(|l| l.starts_with("  ") && !l.contains("fix:"))
                .count(),
            8,
            "{out}"
        );
        // The failing step's fix, under it.
        let lines: Vec<&str> = out.lines().collect();
        let bwrap = lines.iter().position(|l| l.contains("FAIL  bwrap")).unwrap();
        assert!(
            lines[bwrap + 1].starts_with("        fix: install bubblewrap 0.8.0 or newer"),
            "{out}"
        );
    }

    #[test]
    fn apparmors_restriction_shows_the_setup_command_under_the_run() {
        let out = render(&fixture("admin_sandbox_check_result_apparmor.json"));
        let lines: Vec<&str> = out.lines().collect();
        let run = lines.iter().position(|l| l.contains("FAIL  contained_run")).unwrap();
        assert!(
            lines[run].contains("Failed RTM_NEWADDR") && lines[run].contains("AppArmor"),
            "{out}"
        );
        assert!(
            lines[run + 1].starts_with("        fix: run `sudo efr sandbox setup-apparmor`"),
            "{out}"
        );
        assert_eq!(
            out.matches("fix:").count(),
            1,
            "only the failing step with a known cause: {out}"
        );
    }

    #[test]
    fn a_working_sandbox_lists_its_layers() {
        let out = render(&fixture("admin_sandbox_check_result.json"));
        assert!(out.contains("landlock ABI 6"), "{out}");
        assert!(out.contains("bubblewrap 0.8.0"), "{out}");
        assert!(!out.contains("FAIL"), "{out}");
        assert!(out.lines().all(|l| l == l.trim_end()), "no trailing blanks: {out:?}");
    }

    #[test]
    fn only_an_available_sandbox_exits_0() {
        assert_eq!(
            exit_code(&fixture("admin_sandbox_check_result.json")),
            ExitCode::SUCCESS
        );
        assert_eq!(
            exit_code(&fixture("admin_sandbox_check_result_unavailable.json")),
            ExitCode::from(report::FAILED)
        );
    }
}
