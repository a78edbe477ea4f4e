//! A job's cgroup (docs/jobs.md, "Cgroups"; ADR 0021): a transient scope of the systemd user manager, a child of
//! efrd's own cgroup when that one is delegated to efrd, or none (`off`, with why).
//!
//! The job's first process waits at its gate until efrd has seen it in its cgroup, so nothing it forks can start
//! outside it. efrd puts it there itself: a scope is asked of the manager over the session bus ([`super::scope`],
//! `StartTransientUnit` with the pid), a delegated child is made and the pid written to its `cgroup.procs`.
//!
//! The numbers: `memory.current` and `cpu.stat`'s `usage_usec` of a cgroup v2 directory; where the cgroup has no
//! such files (a v1 hierarchy, or v2 without the memory controller), the sums over its processes' `/proc` files
//! (resident memory, user plus system time). A stop is `cgroup.kill` (v2), or the manager's `KillUnit` with SIGKILL.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long the manager may take to move the first process into its scope.
const PLACE_TIMEOUT: Duration = Duration::from_secs(3);

/// Where a job's processes are kept together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// A transient scope of the systemd user manager.
    Scope {
        /// The unit's name (`efr-job-<conversation>-<job>.scope`).
        unit: String,
        /// The session bus's socket (`$XDG_RUNTIME_DIR/bus`), where the manager answers.
        bus: PathBuf,
        /// The scope's cgroup folder (found once the pid is in it).
        dir: Option<PathBuf>,
    },
    /// A child of efrd's own cgroup v2 folder, which efrd may write.
    Delegated {
        /// The folder.
        dir: PathBuf,
    },
    /// No cgroup of its own: a stop ends the job's process group.
    Off {
        /// Why, for `cgroup.off`.
        reason: String,
    },
}

impl Placement {
    /// Chooses where a job named `name` (a unit-safe word) goes: a scope of the user manager when the session bus
    /// that reaches it exists (`$XDG_RUNTIME_DIR/bus`, opened by systemd's `dbus.socket` user unit), else a delegated
    /// child when efrd's own cgroup v2 folder is writable, else off.
    #[must_use]
    pub fn choose(runtime_dir: Option<&Path>, name: &str) -> Self {
        if let Some(runtime_dir) = runtime_dir
            && runtime_dir.join("systemd/private").exists()
            && runtime_dir.join("bus").exists()
        {
            return Self::Scope {
                unit: format!("{name}.scope"),
                bus: runtime_dir.join("bus"),
                dir: None,
            };
        }
        match own_v2_dir() {
            Some(own) if writable(&own) => Self::Delegated { dir: own.join(name) },
            Some(_) => Self::Off {
                reason: "no systemd user manager with a session bus, and efrd's cgroup is not delegated to it"
                    .to_owned(),
            },
            None => Self::Off {
                reason: "no systemd user manager with a session bus, and no cgroup v2 hierarchy".to_owned(),
            },
        }
    }

    /// Why the job has no cgroup, for `cgroup.off`.
    #[must_use]
    pub fn off_reason(&self) -> Option<&str> {
        match self {
            Self::Off { reason } => Some(reason),
            _ => None,
        }
    }

    /// Puts `pid` (waiting at its gate) into the cgroup. `Err` says why it is not: the caller then runs the job
    /// without a cgroup of its own.
    pub async fn place(&mut self, pid: u32) -> Result<(), String> {
        let outcome = match self {
            Self::Scope { unit, bus, dir } => match super::scope::start(bus, unit, pid).await {
                Ok(()) => match wait_in_unit(pid, unit).await {
                    Some(found) => {
                        *dir = Some(found);
                        Ok(())
                    }
                    None => Err(format!("the user manager did not move the job into {unit}")),
                },
                Err(why) => Err(format!("the user manager did not make {unit}: {why}")),
            },
            Self::Delegated { dir } => std::fs::create_dir(&*dir)
                .and_then(|()| std::fs::write(dir.join("cgroup.procs"), pid.to_string()))
                .map_err(|e| format!("cannot make the job's cgroup {}: {e}", dir.display())),
            Self::Off { .. } => Ok(()),
        };
        if let Err(reason) = &outcome {
            tracing::warn!(%reason, "a job runs without a cgroup of its own");
            self.remove();
        }
        outcome
    }

    /// The cgroup's folder, once placed.
    #[must_use]
    pub fn dir(&self) -> Option<&Path> {
        match self {
            Self::Scope { dir, .. } => dir.as_deref(),
            Self::Delegated { dir } => Some(dir),
            Self::Off { .. } => None,
        }
    }

    /// The pids in the cgroup now (empty without one).
    #[must_use]
    pub fn pids(&self) -> Vec<u32> {
        self.dir().map(pids_in).unwrap_or_default()
    }

    /// Memory in bytes: `memory.current`, or the resident memory of its processes.
    #[must_use]
    pub fn memory_bytes(&self) -> Option<u64> {
        let dir = self.dir()?;
        read_u64(&dir.join("memory.current")).or_else(|| Some(pids_in(dir).iter().filter_map(|p| rss_bytes(*p)).sum()))
    }

    /// CPU time in microseconds: `cpu.stat` `usage_usec`, or the time of its processes now.
    #[must_use]
    pub fn cpu_usec(&self) -> Option<u64> {
        let dir = self.dir()?;
        usage_usec(dir).or_else(|| Some(pids_in(dir).iter().filter_map(|p| cpu_usec_of(*p)).sum()))
    }

    /// Ends every process of the cgroup with SIGKILL. `Err` says why it could not (the caller then ends the process
    /// group).
    pub async fn kill(&self) -> Result<(), String> {
        match self {
            Self::Off { reason } => Err(reason.clone()),
            Self::Delegated { dir } => kill_v2(dir),
            Self::Scope { unit, bus, dir } => {
                if let Some(dir) = dir
                    && dir.join("cgroup.kill").exists()
                {
                    return kill_v2(dir);
                }
                super::scope::kill(bus, unit)
                    .await
                    .map_err(|e| format!("systemd could not kill {unit}: {e}"))
            }
        }
    }

    /// Removes a delegated cgroup's folder (empty once its processes ended); systemd collects its scopes itself.
    pub fn remove(&self) {
        if let Self::Delegated { dir } = self {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Whether efrd may make a child cgroup in `dir` and move a process into it.
fn writable(dir: &Path) -> bool {
    nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok()
        && nix::unistd::access(&dir.join("cgroup.procs"), nix::unistd::AccessFlags::W_OK).is_ok()
}

/// The cgroup v2 mount point (from `/proc/self/mountinfo`).
fn v2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mount = left.split_whitespace().nth(4)?;
        (right.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(mount))
    })
}

/// efrd's own cgroup v2 folder.
fn own_v2_dir() -> Option<PathBuf> {
    let mount = v2_mount()?;
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = text.lines().find_map(|line| line.strip_prefix("0::"))?;
    Some(mount.join(path.trim_start_matches('/')))
}

/// The cgroup folder of `pid` whose last part is `unit`, in the v2 hierarchy or the v1 `name=systemd` one.
fn unit_dir(pid: u32, unit: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if !path.ends_with(&format!("/{unit}")) {
            continue;
        }
        let base = match controllers {
            "" => v2_mount(),
            "name=systemd" => Some(PathBuf::from("/sys/fs/cgroup/systemd")),
            _ => None,
        };
        if let Some(dir) = base.map(|b| b.join(path.trim_start_matches('/')))
            && dir.is_dir()
        {
            return Some(dir);
        }
    }
    None
}

/// The cgroup v2 folder of `pid` when it is a job's (its last part starts with `efr-job-`).
pub(super) fn job_dir_of(pid: u32) -> Option<PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = text.lines().find_map(|line| line.strip_prefix("0::"))?;
    let last = path.rsplit('/').next()?;
    if !last.starts_with("efr-job-") {
        return None;
    }
    Some(v2_mount()?.join(path.trim_start_matches('/')))
}

async fn wait_in_unit(pid: u32, unit: &str) -> Option<PathBuf> {
    let start = Instant::now();
    loop {
        if let Some(dir) = unit_dir(pid, unit) {
            return Some(dir);
        }
        if start.elapsed() > PLACE_TIMEOUT {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn kill_v2(dir: &Path) -> Result<(), String> {
    std::fs::write(dir.join("cgroup.kill"), "1").map_err(|e| format!("cannot write {}/cgroup.kill: {e}", dir.display()))
}

fn pids_in(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn usage_usec(dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join("cpu.stat")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("usage_usec ")?.trim().parse().ok())
}

fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The user and system time of `pid` in microseconds (`/proc/<pid>/stat` fields 14 and 15, in clock ticks).
fn cpu_usec_of(pid: u32) -> Option<u64> {
    let fields = stat_fields(pid)?;
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let hz = u64::try_from(nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??).ok()?;
    Some(ticks * 1_000_000 / hz.max(1))
}

/// The fields of `/proc/<pid>/stat` after the command's name (field 3 is index 0).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    Some(after.split_whitespace().map(str::to_owned).collect())
}

/// The start time of `pid` in clock ticks since boot (`/proc/<pid>/stat` field 22).
#[must_use]
pub fn start_ticks(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_manager_socket_the_choice_is_delegated_or_off_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        match Placement::choose(Some(dir.path()), "efr-job-t") {
            Placement::Delegated { dir } => assert!(dir.ends_with("efr-job-t")),
            Placement::Off { reason } => assert!(reason.contains("no systemd user manager"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_manager_without_a_session_bus_makes_no_scope_and_one_with_it_does() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("systemd")).unwrap();
        std::fs::write(dir.path().join("systemd/private"), "").unwrap();
        assert!(!matches!(
            Placement::choose(Some(dir.path()), "efr-job-t"),
            Placement::Scope { .. }
        ));
        std::fs::write(dir.path().join("bus"), "").unwrap();
        assert_eq!(
            Placement::choose(Some(dir.path()), "efr-job-t"),
            Placement::Scope {
                unit: "efr-job-t.scope".into(),
                bus: dir.path().join("bus"),
                dir: None
            }
        );
    }

    #[tokio::test]
    async fn a_scope_that_the_bus_cannot_make_says_why_and_leaves_the_job_off() {
        let dir = tempfile::tempdir().unwrap();
        let mut placement = Placement::Scope {
            unit: "efr-job-t.scope".into(),
            bus: dir.path().join("bus"),
            dir: None,
        };
        let why = placement.place(std::process::id()).await.unwrap_err();
        assert!(
            why.contains("did not make efr-job-t.scope") && why.contains("session bus"),
            "{why}"
        );
    }

    #[test]
    fn the_start_time_of_this_process_is_read() {
        let ticks = start_ticks(std::process::id()).unwrap();
        assert!(ticks > 0);
        assert_eq!(start_ticks(std::process::id()), Some(ticks));
    }
}
