//! A real `systemd --user` manager for tests and the demo, started as root with the recipe of docs/architecture.md,
//! "Testing".
//!
//! The machines that run efr's tests have no systemd as pid 1, so a user manager is made to believe it runs under
//! one:
//!
//! 1. `unshare -m --propagation private`: a mount namespace of its own, so the next step touches nobody else;
//! 2. a folder holding an empty `system/` is bind-mounted over `/run/systemd` (what `sd_booted(3)` checks);
//! 3. the shell that will exec the manager moves itself into a cgroup of its own (under `/sys/fs/cgroup/systemd`
//!    and `/sys/fs/cgroup/unified` on a hybrid hierarchy, under `/sys/fs/cgroup` on a pure cgroup2 one), which the
//!    manager then owns and splits for its units;
//! 4. `exec systemd --user` with `XDG_RUNTIME_DIR`, `HOME` and the XDG base folders all inside the test's folder.
//!
//! The manager copies its own environment into every unit it starts, so efrd (started by `efrd.socket`) sees the
//! same `XDG_*` folders as the test: its socket is `%t/efr/daemon.sock` = `$XDG_RUNTIME_DIR/efr/daemon.sock`, its
//! data under `$XDG_DATA_HOME/efr`, and `efr daemon install` writes units to `$XDG_CONFIG_HOME/systemd/user`, a folder
//! of the manager's `UnitPath`. `systemctl --user` reaches it from outside the namespace through
//! `$XDG_RUNTIME_DIR/systemd/private` ([`UserManager::systemctl`] sets the variables).
//!
//! [`UserManager::stop`] (and drop) sends SIGTERM to the manager by its pid, which stops its units; after a bounded
//! wait it sends SIGKILL, then kills what is left in its cgroup (processes it started) and removes the cgroups.
//!
//! ```no_run
//! # fn demo() -> anyhow::Result<()> {
//! use efr_test_support::systemd::UserManager;
//!
//! let dir = std::path::Path::new("/var/tmp/efr-test"); // not a private /tmp
//! let manager = UserManager::start(dir)?;
//! manager.systemctl_ok(&["daemon-reload"])?;
//! let status = manager.systemctl_ok(&["show", "-p", "SystemState", "--value"])?;
//! # Ok(()) }
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// How long [`UserManager::start`] waits for the manager to come up.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long [`UserManager::stop`] waits after SIGTERM before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// The systemd binary (Debian puts it in `/lib/systemd`, others in `/usr/lib/systemd`).
const SYSTEMD_BINARIES: [&str; 2] = ["/lib/systemd/systemd", "/usr/lib/systemd/systemd"];

/// Run by `unshare` in the new mount namespace: `$1` the folder with `system/`, `$2`... the cgroup folders, then
/// `--`, the systemd binary. `$$` is this shell, which becomes the manager through exec.
const START_SCRIPT: &str = r#"set -eu
mount --bind "$1" /run/systemd
shift
while [ "$1" != -- ]; do
    mkdir -p "$1"
    echo $$ > "$1/cgroup.procs"
    shift
done
exec "$2" --user
"#;

/// Fails unless this process is root, with a message that says why a `systemd --user` manager needs it; a test calls
/// it first, so that a run without root fails for that reason and not for a later one.
///
/// # Errors
/// When the effective uid is not 0.
pub fn require_root() -> Result<()> {
    if nix::unistd::geteuid().is_root() {
        return Ok(());
    }
    bail!(
        "a systemd --user manager for tests needs root (unshare -m, a bind mount over /run/systemd and a cgroup of \
         its own; docs/architecture.md, \"Testing\"); run this test as root, as CI does"
    )
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A running `systemd --user` manager in its own mount namespace and cgroup, with its folders under one root.
#[derive(Debug)]
pub struct UserManager {
    child: Option<Child>,
    root: PathBuf,
    cgroups: Vec<PathBuf>,
}

impl UserManager {
    /// Starts a manager whose runtime, home and XDG folders live under `root` (created when missing; it must not be
    /// on a private `/tmp` if other processes should see it), and waits until it reports `running` (or `degraded`).
    ///
    /// # Errors
    /// When not root (the message says so), when systemd, unshare or a cgroup hierarchy is missing, or when the
    /// manager does not come up within [`START_TIMEOUT`] (the error holds its log).
    pub fn start(root: &Path) -> Result<Self> {
        require_root()?;
        let systemd = SYSTEMD_BINARIES
            .iter()
            .map(Path::new)
            .find(|path| path.is_file())
            .context(
                "no systemd binary at /lib/systemd/systemd or /usr/lib/systemd/systemd (apt-get install systemd)",
            )?;
        let name = format!(
            "efr-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let cgroups = cgroup_folders(&name)?;
        let root = std::path::absolute(root)?;
        let run_systemd = root.join("run-systemd");
        std::fs::create_dir_all(run_systemd.join("system"))?;
        for dir in ["run", "home", "config", "data", "state", "cache"] {
            std::fs::create_dir_all(root.join(dir))?;
        }
        // The runtime folder must be private, as logind makes /run/user/$UID.
        std::fs::set_permissions(root.join("run"), std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        let log = std::fs::File::create(root.join("manager.log"))?;

        let mut command = Command::new("unshare");
        command
            .args([
                "-m",
                "--propagation",
                "private",
                "sh",
                "-c",
                START_SCRIPT,
                "efr-systemd-user",
            ])
            .arg(&run_systemd)
            .args(&cgroups)
            .arg("--")
            .arg(systemd)
            .env_clear()
            .envs(Self::envs_of(&root))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = command
            .spawn()
            .context("cannot start unshare (apt-get install util-linux)")?;
        let mut manager = Self {
            child: Some(child),
            root,
            cgroups,
        };
        manager.wait_running()?;
        Ok(manager)
    }

    fn wait_running(&mut self) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        let mut last = String::new();
        loop {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                self.child = None;
                bail!("systemd --user exited at start ({status}); its log:\n{}", self.log());
            }
            if self.runtime_dir().join("systemd").join("private").exists() {
                let output = self.systemctl(&["show", "--property=SystemState", "--value"])?;
                last = String::from_utf8_lossy(&output.stdout).trim().to_owned();
                if last == "running" || last == "degraded" {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                bail!(
                    "systemd --user did not come up within {START_TIMEOUT:?} (state {last:?}); its log:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The variables the manager runs with (and passes to its units): `PATH` and `LANG` from this process, `HOME`,
    /// `XDG_RUNTIME_DIR`, `XDG_CONFIG_HOME`, `XDG_DATA_HOME`, `XDG_STATE_HOME` and `XDG_CACHE_HOME` under the root.
    fn envs_of(root: &Path) -> Vec<(&'static str, OsString)> {
        let mut envs = vec![
            ("HOME", root.join("home").into_os_string()),
            ("XDG_RUNTIME_DIR", root.join("run").into_os_string()),
            ("XDG_CONFIG_HOME", root.join("config").into_os_string()),
            ("XDG_DATA_HOME", root.join("data").into_os_string()),
            ("XDG_STATE_HOME", root.join("state").into_os_string()),
            ("XDG_CACHE_HOME", root.join("cache").into_os_string()),
        ];
        for name in ["PATH", "LANG"] {
            if let Some(value) = std::env::var_os(name) {
                envs.push((name, value));
            }
        }
        envs
    }

    /// The variables a client of this manager needs (`systemctl --user`, `efr daemon install`, `efr status`): the
    /// manager's own, see [`Self::start`]. Give them after `env_clear` or over the test's own.
    #[must_use]
    pub fn envs(&self) -> Vec<(&'static str, OsString)> {
        Self::envs_of(&self.root)
    }

    /// `$XDG_RUNTIME_DIR` of the manager (`%t` in units).
    #[must_use]
    pub fn runtime_dir(&self) -> PathBuf {
        self.root.join("run")
    }

    /// `$XDG_CONFIG_HOME` of the manager; user units go to its `systemd/user`.
    #[must_use]
    pub fn config_home(&self) -> PathBuf {
        self.root.join("config")
    }

    /// The root folder given to [`Self::start`].
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The manager's pid, while it runs.
    #[must_use]
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// What the manager wrote to stdout and stderr so far.
    #[must_use]
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.join("manager.log")).unwrap_or_default()
    }

    /// Runs `systemctl --user ARGS...` against this manager and returns its output, whatever its status.
    ///
    /// # Errors
    /// When systemctl cannot be started.
    pub fn systemctl(&self, args: &[&str]) -> Result<Output> {
        Command::new("systemctl")
            .arg("--user")
            .args(args)
            .envs(self.envs())
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .stdin(Stdio::null())
            .output()
            .context("cannot start systemctl")
    }

    /// Runs `systemctl --user ARGS...` and returns its stdout; fails with its stderr when it fails.
    ///
    /// # Errors
    /// When systemctl cannot be started or exits non-zero.
    pub fn systemctl_ok(&self, args: &[&str]) -> Result<String> {
        let output = self.systemctl(args)?;
        if !output.status.success() {
            bail!(
                "systemctl --user {} failed ({}): {}{}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr),
                String::from_utf8_lossy(&output.stdout)
            );
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// One property of a unit (`systemctl --user show -p NAME --value UNIT`).
    ///
    /// # Errors
    /// As [`Self::systemctl_ok`].
    pub fn property(&self, unit: &str, name: &str) -> Result<String> {
        let value = self.systemctl_ok(&["show", "-p", name, "--value", unit])?;
        Ok(value.trim().to_owned())
    }

    /// Waits until `unit`'s `ActiveState` is `state` (`active`, `inactive`, ...), at most `timeout`.
    ///
    /// # Errors
    /// When it does not get there in time (the error holds `systemctl status` and the manager's log).
    pub fn wait_state(&self, unit: &str, state: &str, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let now = self.property(unit, "ActiveState")?;
            if now == state {
                return Ok(());
            }
            if Instant::now() > deadline {
                let status = self.systemctl(&["status", "--no-pager", unit])?;
                bail!(
                    "{unit} is {now}, not {state}, after {timeout:?}:\n{}\nmanager log:\n{}",
                    String::from_utf8_lossy(&status.stdout),
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the manager: SIGTERM (it stops its units and exits), SIGKILL after [`STOP_TIMEOUT`], then SIGKILL to
    /// whatever is left in its cgroups, which are removed. Does nothing the second time.
    ///
    /// # Errors
    /// When the manager needed SIGKILL (it still is stopped and cleaned up) or a cgroup cannot be removed.
    pub fn stop(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let pid = Pid::from_raw(i32::try_from(child.id())?);
        let _ = kill(pid, Signal::SIGTERM);
        let deadline = Instant::now() + STOP_TIMEOUT;
        let mut graceful = true;
        while child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                graceful = false;
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let cleaned = self.clean_cgroups();
        if !graceful {
            bail!("systemd --user did not stop within {STOP_TIMEOUT:?} of SIGTERM; it was killed");
        }
        cleaned
    }

    /// Kills what is left in the manager's cgroups (processes it started) and removes them, deepest first.
    fn clean_cgroups(&self) -> Result<()> {
        let mut failed = Vec::new();
        for top in &self.cgroups {
            let mut dirs = Vec::new();
            collect_dirs(top, &mut dirs);
            // Children before parents: a cgroup with sub-cgroups cannot be removed.
            dirs.reverse();
            for dir in &dirs {
                let deadline = Instant::now() + Duration::from_secs(5);
                loop {
                    let pids = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                    let pids: Vec<i32> = pids.lines().filter_map(|line| line.trim().parse().ok()).collect();
                    for pid in &pids {
                        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
                    }
                    if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                        break;
                    }
                    if Instant::now() > deadline {
                        failed.push(dir.clone());
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            bail!("cannot remove the cgroups {failed:?}")
        }
    }
}

impl Drop for UserManager {
    fn drop(&mut self) {
        if let Err(error) = self.stop() {
            eprintln!("efr-test-support: {error:#}");
        }
    }
}

/// `dir` and every folder below it, parents first.
fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    if !dir.is_dir() {
        return;
    }
    out.push(dir.to_owned());
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                collect_dirs(&entry.path(), out);
            }
        }
    }
}

/// The cgroup folders named `name` for the manager: the named `systemd` hierarchy and the cgroup2 one of a hybrid
/// layout, or the one cgroup2 hierarchy.
fn cgroup_folders(name: &str) -> Result<Vec<PathBuf>> {
    let base = Path::new("/sys/fs/cgroup");
    if base.join("unified").is_dir() && base.join("systemd").is_dir() {
        Ok(vec![base.join("systemd").join(name), base.join("unified").join(name)])
    } else if base.join("cgroup.controllers").is_file() {
        Ok(vec![base.join(name)])
    } else {
        bail!(
            "no cgroup hierarchy for systemd --user: neither /sys/fs/cgroup/systemd with /sys/fs/cgroup/unified \
             (hybrid) nor a cgroup2 /sys/fs/cgroup"
        )
    }
}
