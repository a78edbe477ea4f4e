//! The sandbox probe behind `admin.sandbox_check` and the sandbox status of `admin.status` (issue 7, item 6).
//!
//! [`probe`] runs real contained commands through the real launcher, not a look at the system: a contained `true`
//! with the default masks (bubblewrap, user namespaces, Landlock and seccomp all have to work for it to exit 0), then
//! the launcher's `self-test net-view` under the `net_view` grant while the probe listens on an abstract socket in
//! the host's namespace (the self-test passes only if that socket stays out of reach). Around it, facts that explain
//! a failure: where bubblewrap is and its version, whether the kernel allows user namespaces.
//!
//! Blocking (it waits for child processes, about 20 ms): call it from a blocking thread. The caller caches the
//! result and probes again after a setup error.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use efr_protocol::internal::{LaunchPlan, LaunchReport, ReportTo, default_masks};
use efr_protocol::wire::{Grant, SandboxPaths, SandboxStatus};
use serde::Serialize;

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
    /// The kernel allows user namespaces (`/proc/sys/user/max_user_namespaces` above 0).
    pub user_namespaces: bool,
    /// Landlock was fully enforced in the contained `true` (at `status.landlock_abi`).
    pub landlock_enforced: bool,
    /// Abstract Unix sockets and signals were scoped (Landlock ABI 6).
    pub landlock_scoped: bool,
    /// The seccomp filters were loaded.
    pub seccomp: bool,
    /// The setup error of the contained `true`, as the launcher reported it.
    pub setup_error: Option<String>,
}

/// Runs the probe. Never fails: what went wrong is in `status.reason` (and `setup_error`).
pub fn probe(options: &ProbeOptions) -> Probe {
    let bwrap = match &options.bwrap {
        Some(path) => path.is_file().then(|| path.clone()),
        None => std::env::var_os("PATH").and_then(|path| find_program("bwrap", &path)),
    };
    let mut found = Probe {
        status: SandboxStatus {
            netview_off: options.netview_off,
            ..SandboxStatus::default()
        },
        paths: SandboxPaths {
            launcher: options.launcher.is_file().then(|| options.launcher.clone()),
            bwrap: bwrap.clone(),
            ..SandboxPaths::default()
        },
        bwrap_version: None,
        user_namespaces: user_namespaces(),
        landlock_enforced: false,
        landlock_scoped: false,
        seccomp: false,
        setup_error: None,
    };
    let Some(bwrap) = bwrap else {
        found.status.reason = Some(match &options.bwrap {
            Some(path) => format!("bubblewrap is not installed at {}", path.display()),
            None => "bubblewrap is not installed (no bwrap on PATH)".into(),
        });
        return found;
    };
    found.bwrap_version = bwrap_version(&bwrap);
    if found.bwrap_version.is_none() {
        found.status.reason = Some(format!("bubblewrap at {} does not run", bwrap.display()));
        return found;
    }
    if found.paths.launcher.is_none() {
        found.status.reason = Some(format!(
            "efr-launcher is not installed at {}",
            options.launcher.display()
        ));
        return found;
    }
    if !found.user_namespaces {
        found.status.reason = Some("the kernel allows no user namespaces (user.max_user_namespaces is 0)".into());
        return found;
    }
    let plan = base_plan(options, &bwrap, vec!["true".into()]);
    let report = match launch(&options.launcher, plan) {
        Ok(report) => report,
        Err(err) => {
            found.status.reason = Some(format!("cannot run efr-launcher: {err}"));
            return found;
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
            found.status.landlock_abi = Some(*landlock_abi);
            found.landlock_enforced = true;
            found.landlock_scoped = *scoped;
            found.seccomp = *seccomp;
        }
    }
    match LaunchReport::end(&report) {
        Some(LaunchReport::Exited { exit_code: 0, .. }) if found.landlock_enforced => {}
        Some(LaunchReport::SetupError { message, .. }) => {
            found.setup_error = Some(message.clone());
            found.status.reason = Some(format!("the sandbox cannot start: {message}"));
            return found;
        }
        other => {
            found.status.reason = Some(format!("a contained `true` did not succeed ({other:?})"));
            return found;
        }
    }
    found.status.available = true;
    found.status.netview = net_view_self_test(options, &bwrap);
    found
}

/// The probe's plan: the default masks, no roots, `/` as the working directory.
fn base_plan(options: &ProbeOptions, bwrap: &Path, argv: Vec<String>) -> LaunchPlan {
    let mut plan = LaunchPlan::new(bwrap, argv, "/");
    plan.env.insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
    plan.masks = default_masks(&options.home, &options.runtime_dir, &[], &[]);
    plan
}

/// The net_view self-test: passes when the launcher's `self-test net-view` exits 0 under the grant while this
/// process listens on the abstract socket it tries.
fn net_view_self_test(options: &ProbeOptions, bwrap: &Path) -> bool {
    let name = format!("efr-probe-{}-{}", std::process::id(), rand::random::<u64>());
    let Ok(addr) = SocketAddr::from_abstract_name(name.as_bytes()) else {
        return false;
    };
    let Ok(_listener) = UnixListener::bind_addr(&addr) else {
        return false;
    };
    let argv = vec![
        options.launcher.display().to_string(),
        "self-test".into(),
        "net-view".into(),
        "--abstract".into(),
        name,
    ];
    let mut plan = base_plan(options, bwrap, argv);
    plan.grants.push(Grant::NetView);
    matches!(
        launch(&options.launcher, plan).as_deref().map(LaunchReport::end),
        Ok(Some(LaunchReport::Exited { exit_code: 0, .. }))
    )
}

/// Runs one plan through the launcher (a one-time plan file and a report file in a private temporary folder) and
/// returns its report.
fn launch(launcher: &Path, mut plan: LaunchPlan) -> std::io::Result<Vec<LaunchReport>> {
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

fn user_namespaces() -> bool {
    std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .is_some_and(|max| max > 0)
}

/// The first executable `name` in the folders of `path` (a `PATH` value).
pub fn find_program(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path).map(|dir| dir.join(name)).find(|candidate| {
        std::fs::metadata(candidate).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}
