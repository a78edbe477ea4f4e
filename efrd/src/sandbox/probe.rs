//! The sandbox probe behind `admin.sandbox_check` and the sandbox status of `admin.status`
//! (docs/protocol.md, "The sandbox check and explain").
//!
//! [`probe`] runs real contained commands through the real launcher, not a look at the system: a contained `true`
//! with the default masks (bubblewrap, user namespaces, Landlock and seccomp all have to work for it to exit 0), then
//! the launcher's `self-test net-view` under the `net_view` grant while the probe listens on an abstract socket in
//! the host's namespace (the self-test passes only if that socket stays out of reach). Around it, facts that explain
//! a failure: where bubblewrap is and its version, whether the kernel allows user namespaces.
//!
//! Each step's outcome is kept ([`Probe::steps`], in [`ProbeName`]'s order) for `admin.sandbox_check`: the facts
//! (bubblewrap, the launcher, user namespaces) are each checked on their own, and the steps that need a contained run
//! are "not checked" when a fact they need is missing.
//!
//! Blocking (it waits for child processes, about 20 ms): call it from a blocking thread. The caller caches the
//! result and probes again after a setup error.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use efr_protocol::internal::{Containment, LaunchPlan, LaunchReport, ReportTo, SHM_SIZE, default_masks};
use efr_protocol::wire::{Grant, ProbeName, SandboxPaths, SandboxProbe, SandboxStatus};
use serde::Serialize;

use super::diagnosis::{
    Finding, KernelFacts, KernelPaths, bwrap_missing_fix, bwrap_problem, file_mode, setup_error_cause,
    user_namespaces_problem,
};

/// What the probe needs to know.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// The efr-launcher program.
    pub launcher: PathBuf,
    /// bubblewrap; `None`: searched on `PATH`.
    pub bwrap: Option<PathBuf>,
    /// The user's home (for the default masks of the probe's plan).
    pub home: PathBuf,
    /// The user's runtime folder (`/run/user/$UID`).
    pub runtime_dir: PathBuf,
    /// The user's `network.netview` is false (reported as `netview_off`; the self-test still runs).
    pub netview_off: bool,
    /// The user's `bus.enabled` is false (reported as `bus_proxy_off: config`; the bus self-test does not run).
    pub bus_off: bool,
    /// Where the kernel's facts are read (`/proc/sys` and the LSM list).
    pub kernel: KernelPaths,
}

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    /// The wire status (`available`, `reason`, `landlock_abi`, `netview`, `netview_off`).
    pub status: SandboxStatus,
    /// The wire paths (`launcher`, `bwrap`).
    pub paths: SandboxPaths,
    /// bubblewrap's version, such as `0.8.0`.
    pub bwrap_version: Option<String>,
    /// The kernel allows user namespaces to this user (`user.max_user_namespaces` is not 0, nor Debian's
    /// `kernel.unprivileged_userns_clone`).
    pub user_namespaces: bool,
    /// Landlock was fully enforced in the contained `true` (at `status.landlock_abi`).
    pub landlock_enforced: bool,
    /// Abstract Unix sockets and signals were scoped (Landlock ABI 6).
    pub landlock_scoped: bool,
    /// The seccomp filters were loaded.
    pub seccomp: bool,
    /// The setup error of the contained `true`, as the launcher reported it.
    pub setup_error: Option<String>,
    /// Every step, in [`ProbeName`]'s order, passed or not and why.
    pub steps: Vec<SandboxProbe>,
    /// bubblewrap cannot start, but a `true` ran contained by Landlock and seccomp alone: cautious's reads run that
    /// way (docs/adr/0020-landlock-only-reads.md). `false` when the sandbox is available.
    pub landlock_only: bool,
}

impl Probe {
    /// Fits `plan` to the bubblewrap found (see [`fit_to_bwrap`]).
    pub fn fit(&self, plan: &mut LaunchPlan) {
        fit_to_bwrap(plan, self.bwrap_version.as_deref());
    }

    pub(crate) fn step(&mut self, name: ProbeName, failed: Option<String>, detail: Option<String>) {
        self.steps.push(SandboxProbe {
            name,
            passed: failed.is_none(),
            detail,
            reason: failed,
            fix: None,
        });
    }

    /// A failed step with the cause's fix.
    fn failed(&mut self, name: ProbeName, finding: Finding, detail: Option<String>) {
        self.steps.push(SandboxProbe {
            name,
            passed: false,
            detail,
            reason: Some(finding.reason),
            fix: Some(finding.fix),
        });
    }

    /// Ends the probe at a failure: `reason` becomes the status's reason, and every step not taken yet is "not
    /// checked" for it.
    /// The status's fix is that of the step that failed with `reason`.
    fn stop(mut self, reason: String) -> Self {
        self.status.fix = self
            .steps
            .iter()
            .find(|step| step.reason.as_ref() == Some(&reason))
            .and_then(|step| step.fix.clone());
        for &name in ProbeName::ALL {
            if name != ProbeName::Unknown && !self.steps.iter().any(|step| step.name == name) {
                self.step(name, Some(format!("not checked: {reason}")), None);
            }
        }
        self.status.reason = Some(reason);
        self
    }
}

/// What the status's reason adds when cautious's reads run contained by Landlock and seccomp alone.
pub const LANDLOCK_ONLY: &str = "cautious's read-only commands run contained by Landlock and seccomp alone";

/// Runs the probe. Never fails: what went wrong is in `status.reason` (the first failure), `setup_error` and each
/// step of `steps`. When bubblewrap cannot start, a `true` contained by Landlock and seccomp alone says whether
/// cautious's reads can run that way ([`Probe::landlock_only`]); its `landlock` and `seccomp` steps then pass and
/// say so (`efr sandbox check` shows them), in place of "not checked".
pub fn probe(options: &ProbeOptions) -> Probe {
    let mut found = probe_bubblewrap(options);
    if !found.status.available && found.paths.launcher.is_some() && landlock_true(options) {
        found.landlock_only = true;
        for step in &mut found.steps {
            if matches!(step.name, ProbeName::Landlock | ProbeName::Seccomp) {
                step.passed = true;
                step.reason = None;
                step.fix = None;
                step.detail = Some(format!("without bubblewrap: {LANDLOCK_ONLY}"));
            }
        }
    }
    found
}

/// A `true` with the default masks contained by Landlock and seccomp alone: ran, exited 0, and the launcher said
/// so.
fn landlock_true(options: &ProbeOptions) -> bool {
    let bwrap = options.bwrap.clone().unwrap_or_else(|| PathBuf::from("/usr/bin/bwrap"));
    let mut plan = base_plan(options, &bwrap, vec!["true".into()], None);
    plan.containment = Containment::Landlock;
    let Ok(report) = launch(&options.launcher, plan) else {
        return false;
    };
    let contained = report.iter().any(|line| {
        matches!(
            line,
            LaunchReport::Sandboxed {
                containment: Containment::Landlock,
                ..
            }
        )
    });
    contained
        && matches!(
            LaunchReport::end(&report),
            Some(LaunchReport::Exited { exit_code: 0, .. })
        )
}

/// The probe of bubblewrap's sandbox (see [`probe`]).
fn probe_bubblewrap(options: &ProbeOptions) -> Probe {
    let bwrap = match &options.bwrap {
        Some(path) => path.is_file().then(|| path.clone()),
        None => std::env::var_os("PATH").and_then(|path| find_program("bwrap", &path)),
    };
    let launcher = options.launcher.is_file().then(|| options.launcher.clone());
    let facts = KernelFacts::read(&options.kernel);
    let mut found = Probe {
        status: SandboxStatus {
            netview_off: options.netview_off,
            ..SandboxStatus::default()
        },
        paths: SandboxPaths {
            launcher: launcher.clone(),
            bwrap: bwrap.clone(),
            ..SandboxPaths::default()
        },
        bwrap_version: None,
        user_namespaces: user_namespaces_problem(&facts).is_none(),
        landlock_enforced: false,
        landlock_scoped: false,
        seccomp: false,
        setup_error: None,
        steps: Vec::new(),
        landlock_only: false,
    };
    // The facts, each on its own, so the check names every one that is missing.
    let bwrap_failed = found.check_bwrap(options, bwrap.as_deref());
    let launcher_failed = found.check_launcher(options, launcher.as_deref());
    let userns_failed = found.check_user_namespaces(&facts);
    let failed = bwrap_failed.or(launcher_failed).or(userns_failed);
    // A missing bubblewrap is always a failure, so `failed` holds a reason whenever this returns.
    let Some(bwrap) = bwrap.filter(|_| failed.is_none()) else {
        return found.stop(failed.unwrap_or_default());
    };
    let version = found.bwrap_version.clone();
    if let Some(reason) = found.contained_true(options, &bwrap, &facts) {
        return found.stop(reason);
    }
    found.contained_steps();
    found.status.available = true;
    let net_view = net_view_self_test(options, &bwrap, version.as_deref());
    found.status.netview = net_view.is_ok();
    found.step(ProbeName::NetView, net_view.err(), None);
    found
}

/// The probe's steps, one fact each; each returns why it failed.
impl Probe {
    /// A step that failed with a finding, else passed: the finding's reason.
    fn found(&mut self, name: ProbeName, finding: Option<Finding>, detail: Option<String>) -> Option<String> {
        match finding {
            Some(finding) => {
                let reason = finding.reason.clone();
                self.failed(name, finding, detail);
                Some(reason)
            }
            None => {
                self.step(name, None, detail);
                None
            }
        }
    }

    /// Bubblewrap: found, runs, and installed so that it can start a sandbox; its version.
    fn check_bwrap(&mut self, options: &ProbeOptions, bwrap: Option<&Path>) -> Option<String> {
        let finding = match bwrap {
            None => Some(Finding {
                cause: super::diagnosis::Cause::BwrapMissing,
                reason: match &options.bwrap {
                    Some(path) => format!("bubblewrap is not installed at {}", path.display()),
                    None => "bubblewrap is not installed (no bwrap on PATH)".into(),
                },
                fix: bwrap_missing_fix(),
            }),
            Some(path) => {
                self.bwrap_version = bwrap_version(path);
                match &self.bwrap_version {
                    None => Some(Finding {
                        cause: super::diagnosis::Cause::BwrapMissing,
                        reason: format!("bubblewrap at {} does not run", path.display()),
                        fix: bwrap_missing_fix(),
                    }),
                    Some(_) => bwrap_problem(path, file_mode(path)),
                }
            }
        };
        let detail = bwrap
            .zip(self.bwrap_version.as_ref())
            .map(|(path, version)| format!("{version} at {}", path.display()));
        self.found(ProbeName::Bwrap, finding, detail)
    }

    /// The launcher is installed.
    fn check_launcher(&mut self, options: &ProbeOptions, launcher: Option<&Path>) -> Option<String> {
        let failed = launcher
            .is_none()
            .then(|| format!("efr-launcher is not installed at {}", options.launcher.display()));
        let detail = launcher.map(|path| path.display().to_string());
        self.step(ProbeName::Launcher, failed.clone(), detail);
        failed
    }

    /// Unprivileged user namespaces are allowed.
    fn check_user_namespaces(&mut self, facts: &KernelFacts) -> Option<String> {
        self.found(ProbeName::UserNamespaces, user_namespaces_problem(facts), None)
    }

    /// A real contained `true`: bubblewrap, user namespaces, Landlock and seccomp all have to work. Takes what the
    /// launcher reports of Landlock and seccomp.
    fn contained_true(&mut self, options: &ProbeOptions, bwrap: &Path, facts: &KernelFacts) -> Option<String> {
        let plan = base_plan(options, bwrap, vec!["true".into()], self.bwrap_version.as_deref());
        let report = match launch(&options.launcher, plan) {
            Ok(report) => report,
            Err(err) => {
                let reason = format!("cannot run efr-launcher: {err}");
                self.step(ProbeName::ContainedRun, Some(reason.clone()), None);
                return Some(reason);
            }
        };
        for line in &report {
            if let LaunchReport::Sandboxed {
                landlock_abi,
                scoped,
                seccomp,
                ..
            } = line
            {
                self.status.landlock_abi = Some(*landlock_abi);
                self.landlock_enforced = true;
                self.landlock_scoped = *scoped;
                self.seccomp = *seccomp;
            }
        }
        let run_failed = match LaunchReport::end(&report) {
            Some(LaunchReport::Exited { exit_code: 0, .. }) if self.landlock_enforced => None,
            Some(LaunchReport::SetupError { message, .. }) => {
                self.setup_error = Some(message.clone());
                Some(format!("the sandbox cannot start: {message}"))
            }
            other => Some(format!("a contained `true` did not succeed ({other:?})")),
        };
        // The cause of a setup error, when a known one explains it: the step keeps the launcher's words as its
        // reason (they are what a search finds) and gets the cause's fix.
        let cause = self
            .setup_error
            .as_deref()
            .and_then(|m| setup_error_cause(m, self.bwrap_version.as_deref(), facts));
        match (run_failed, cause) {
            (Some(reason), Some(finding)) => {
                let reason = format!("{reason}; {}", finding.reason);
                self.found(ProbeName::ContainedRun, Some(Finding { reason, ..finding }), None)
            }
            (run_failed, _) => {
                self.step(ProbeName::ContainedRun, run_failed.clone(), None);
                run_failed
            }
        }
    }

    /// What the contained `true` reported: Landlock, its scoping, seccomp.
    fn contained_steps(&mut self) {
        let abi = self.status.landlock_abi.unwrap_or_default();
        self.step(ProbeName::Landlock, None, Some(format!("ABI {abi}")));
        let scope_failed = (!self.landlock_scoped)
            .then(|| format!("Landlock ABI {abi} cannot scope abstract Unix sockets and signals (ABI 6 can)"));
        self.step(ProbeName::LandlockScope, scope_failed, None);
        let seccomp_failed = (!self.seccomp).then(|| "the seccomp filters were not loaded".to_owned());
        self.step(ProbeName::Seccomp, seccomp_failed, None);
    }
}

/// The probe's plan: the default masks, no roots, `/` as the working directory.
pub(crate) fn base_plan(options: &ProbeOptions, bwrap: &Path, argv: Vec<String>, version: Option<&str>) -> LaunchPlan {
    let mut plan = LaunchPlan::new(bwrap, argv, "/");
    fit_to_bwrap(&mut plan, version);
    plan.env.insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
    plan.masks = default_masks(&options.home, &options.runtime_dir, &[], &[]);
    plan
}

/// The net_view self-test: passes when the launcher's `self-test net-view` exits 0 under the grant while this
/// process listens on the abstract socket it tries.
///
/// # Errors
/// Why it did not pass, one sentence.
fn net_view_self_test(options: &ProbeOptions, bwrap: &Path, version: Option<&str>) -> Result<(), String> {
    let name = format!("efr-probe-{}-{}", std::process::id(), rand::random::<u64>());
    let addr =
        SocketAddr::from_abstract_name(name.as_bytes()).map_err(|e| format!("cannot name an abstract socket: {e}"))?;
    let _listener = UnixListener::bind_addr(&addr).map_err(|e| format!("cannot listen on an abstract socket: {e}"))?;
    let argv = vec![
        options.launcher.display().to_string(),
        "self-test".into(),
        "net-view".into(),
        "--abstract".into(),
        name,
    ];
    let mut plan = base_plan(options, bwrap, argv, version);
    plan.grants.push(Grant::NetView);
    let report = launch(&options.launcher, plan).map_err(|e| format!("cannot run efr-launcher: {e}"))?;
    match LaunchReport::end(&report) {
        Some(LaunchReport::Exited { exit_code: 0, .. }) => Ok(()),
        Some(LaunchReport::Exited { exit_code, .. }) => Err(format!(
            "the self-test failed (exit {exit_code}): under net_view, an inet socket opened, a Unix or netlink socket \
             did not, or the host's abstract socket was reachable"
        )),
        Some(LaunchReport::SetupError { message, .. }) => {
            Err(format!("the sandbox refused the net_view grant: {message}"))
        }
        other => Err(format!("the self-test did not end ({other:?})")),
    }
}

/// Runs one plan through the launcher (a one-time plan file and a report file in a private temporary folder) and
/// returns its report.
pub(crate) fn launch(launcher: &Path, mut plan: LaunchPlan) -> std::io::Result<Vec<LaunchReport>> {
    let dir = tempfile::Builder::new().prefix("efr-probe-").tempdir()?;
    let report_path = dir.path().join("report");
    let plan_path = dir.path().join("plan.json");
    plan.report = ReportTo::File {
        path: report_path.clone(),
    };
    std::fs::write(&plan_path, serde_json::to_vec(&plan)?)?;
    Command::new(launcher)
        .arg("--plan-file")
        .arg(&plan_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    let text = std::fs::read_to_string(&report_path).unwrap_or_default();
    LaunchReport::parse_lines(&text).map_err(std::io::Error::other)
}

/// Fits `plan` to bubblewrap `version` (`None`, or a version that does not read as numbers: the newest is assumed):
/// the bound of `/dev/shm` needs 0.7 (`--size`; [`LaunchPlan::shm_size`]), `--disable-userns` 0.8
/// ([`LaunchPlan::disable_userns`]). An older bubblewrap runs without them (docs/adr/0004-contained-calls.md,
/// decision 10). A version taken as new that lacks one fails the probe's contained `true` with bubblewrap's words.
pub fn fit_to_bwrap(plan: &mut LaunchPlan, version: Option<&str>) {
    let at_least = |wanted: (u64, u64)| version.and_then(version_numbers).is_none_or(|found| found >= wanted);
    plan.shm_size = at_least((0, 7)).then_some(SHM_SIZE);
    plan.disable_userns = at_least((0, 8));
}

/// `0.8.0` → (0, 8); `None` when it does not read as numbers.
fn version_numbers(version: &str) -> Option<(u64, u64)> {
    let mut numbers = version.split('.').map(|part| part.parse::<u64>().ok());
    Some((numbers.next().flatten()?, numbers.next().flatten()?))
}

/// `bwrap --version` → `0.8.0`.
fn bwrap_version(bwrap: &Path) -> Option<String> {
    let output = Command::new(bwrap)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let version = text.split_whitespace().last()?.to_owned();
    Some(version)
}

/// The first executable `name` in the folders of `path` (a `PATH` value).
pub fn find_program(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path).map(|dir| dir.join(name)).find(|candidate| {
        std::fs::metadata(candidate).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_came_with_bubblewrap_0_7_and_disable_userns_with_0_8() {
        for (version, size, disable_userns) in [
            (Some("0.6.1"), false, false),
            (Some("0.4.0"), false, false),
            (Some("0.7.0"), true, false),
            (Some("0.8.0"), true, true),
            (Some("0.11.0"), true, true),
            (Some("1.0"), true, true),
            (Some("git"), true, true),
            (None, true, true),
        ] {
            let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/");
            fit_to_bwrap(&mut plan, version);
            assert_eq!(plan.shm_size.is_some(), size, "{version:?}");
            assert_eq!(plan.disable_userns, disable_userns, "{version:?}");
        }
    }
}
