//! The supervisor of `efr-proxy`, the process that alone decides what contained calls reach on the network
//! (docs/network.md; the control messages are `efr_protocol::internal::proxy`).
//!
//! - **Start on first need.** [`ProxySupervisor::open`] starts the proxy when none runs: `efr-proxy --control-fd 3
//!   --sockets <runtime root>/proxy` (the folder made with mode 0700), with one end of a Unix socket pair as its fd
//!   3. efrd is threaded, so the child comes from `std::process::Command` (by way of tokio's), whose `pre_exec`
//!   hook only moves that end to fd 3 (`dup2`, async-signal-safe); both ends are made `SOCK_CLOEXEC`, so no other
//!   child inherits them.
//! - **Supervision.** A task waits for the child. When it ends, the instance is marked dead (its plans' calls fail
//!   at their close with [`ProxyError::Died`]: the proxy took their sockets and tunnels with it, so the network
//!   never stays open), the reason is kept as `last_error`, and the proxy is started again after a backoff
//!   ([`backoff`]: 250 ms doubling to 30 s; back to the start after a run of [`STABLE_RUN`]). A call that comes
//!   during the backoff waits for it (at most [`MAX_BACKOFF`]).
//! - **Not installed.** A program that is not a file is never started: [`ProxySupervisor::installed`] is false,
//!   auto's calls get no host grant (no network), and the status says `not_installed`.
//! - **Status.** [`ProxySupervisor::status`] for admin.status: the state, the pid, the restarts and the last error.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use efr_protocol::internal::proxy::{CLOSE, ClosePlan, Closed, OPEN, OpenPlan, Opened};
use efr_protocol::wire::{ProxyProcess, ProxyState};
use tokio::sync::Mutex as AsyncMutex;
use tokio_util::sync::CancellationToken;

use super::control::Control;

/// The first wait before a restart.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait before a restart.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A run at least this long resets the backoff.
pub const STABLE_RUN: Duration = Duration::from_secs(60);
/// How long an open or a close may take before the proxy is taken as stuck.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// The wait before restart number `failures` (1 for the first failure in a row).
#[must_use]
pub fn backoff(failures: u32) -> Duration {
    let factor = 1u32.checked_shl(failures.saturating_sub(1).min(16)).unwrap_or(u32::MAX);
    FIRST_BACKOFF.saturating_mul(factor).min(MAX_BACKOFF)
}

/// Why a plan could not be opened or closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyError {
    /// The program is not installed where efrd looks.
    #[error("efr-proxy is not installed at {0}")]
    NotInstalled(PathBuf),
    /// The proxy could not start.
    #[error("efr-proxy cannot start: {0}")]
    Start(String),
    /// The proxy answered with an error or did not answer.
    #[error("efr-proxy refused the request: {0}")]
    Control(String),
    /// The proxy that served the plan ended while the plan was open: the call's connections were cut.
    #[error("efr-proxy stopped while the call ran ({0}); its connections were cut")]
    Died(String),
}

/// The efr-proxy of one daemon. One per daemon, in an `Arc`.
#[derive(Debug)]
pub struct ProxySupervisor {
    program: PathBuf,
    sockets: PathBuf,
    state: Mutex<State>,
    /// Held while a proxy starts, so that callers that come at once share one start.
    starting: AsyncMutex<()>,
}

#[derive(Debug, Default)]
struct State {
    running: Option<Arc<Instance>>,
    /// Instances started so far (the first is not a restart).
    started: u64,
    last_error: Option<String>,
    /// Ends in a row without a stable run, for the backoff.
    failures: u32,
    /// No start before this instant (the backoff after an end).
    not_before: Option<Instant>,
}

/// One running proxy.
#[derive(Debug)]
struct Instance {
    pid: u32,
    control: Control,
    /// Fires when the process has ended or its control socket closed.
    dead: CancellationToken,
    /// Why it ended, once it has.
    ended: Mutex<Option<String>>,
}

/// An open plan of one call: close it with [`ProxySupervisor::close`] when the call ends.
#[derive(Debug, Clone)]
pub struct ProxyPlan {
    instance: Arc<Instance>,
    /// The plan's number in that proxy.
    pub plan: u64,
    /// The plan's listening socket (the launch plan's `proxy`).
    pub socket: PathBuf,
}

impl ProxySupervisor {
    /// A supervisor of `program` whose plan sockets go in `sockets`; nothing starts yet.
    #[must_use]
    pub fn new(program: PathBuf, sockets: PathBuf) -> Self {
        Self {
            program,
            sockets,
            state: Mutex::new(State::default()),
            starting: AsyncMutex::new(()),
        }
    }

    /// The program of the default setup: `$EFR_PROXY`, else `efr-proxy` next to the running efrd.
    #[must_use]
    pub fn default_program() -> PathBuf {
        std::env::var_os("EFR_PROXY").map(PathBuf::from).unwrap_or_else(|| {
            std::env::current_exe()
                .map(|exe| exe.with_file_name("efr-proxy"))
                .unwrap_or_else(|_| PathBuf::from("efr-proxy"))
        })
    }

    /// The program efrd starts.
    #[must_use]
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Whether the program is installed (a file at its path): without it, contained calls have no network.
    #[must_use]
    pub fn installed(&self) -> bool {
        self.program.is_file()
    }

    /// The state for admin.status.
    #[must_use]
    pub fn status(&self) -> ProxyProcess {
        let state = self.lock();
        let (state_name, pid) = match &state.running {
            _ if !self.installed() => (ProxyState::NotInstalled, None),
            Some(instance) if !instance.dead.is_cancelled() => (ProxyState::Running, Some(instance.pid)),
            _ if state.started == 0 => (ProxyState::NotStarted, None),
            _ => (ProxyState::Restarting, None),
        };
        let last_error = if state_name == ProxyState::NotInstalled {
            Some(ProxyError::NotInstalled(self.program.clone()).to_string())
        } else {
            state.last_error.clone()
        };
        ProxyProcess {
            state: state_name,
            pid,
            restarts: state.started.saturating_sub(1),
            last_error,
        }
    }

    /// Opens a plan for one call, starting the proxy first when none runs.
    ///
    /// # Errors
    /// [`ProxyError::NotInstalled`], [`ProxyError::Start`], or [`ProxyError::Control`] when the proxy refused the
    /// plan or did not answer in time.
    pub async fn open(self: &Arc<Self>, plan: &OpenPlan) -> Result<ProxyPlan, ProxyError> {
        let instance = self.running().await?;
        let opened: Opened = tokio::time::timeout(CONTROL_TIMEOUT, instance.control.call(OPEN, plan))
            .await
            .map_err(|_| ProxyError::Control("no answer to proxy.open in 10 s".into()))?
            .map_err(ProxyError::Control)?;
        Ok(ProxyPlan {
            instance,
            plan: opened.plan,
            socket: opened.socket,
        })
    }

    /// Closes a call's plan and returns what its connections did.
    ///
    /// # Errors
    /// [`ProxyError::Died`] when the proxy that served the plan ended while it was open (the call must fail: its
    /// connections were cut), [`ProxyError::Control`] when the proxy refused the close or did not answer.
    pub async fn close(&self, plan: &ProxyPlan) -> Result<Closed, ProxyError> {
        let instance = &plan.instance;
        if instance.dead.is_cancelled() {
            return Err(ProxyError::Died(instance.why_ended().await));
        }
        let closed = tokio::time::timeout(
            CONTROL_TIMEOUT,
            instance
                .control
                .call::<_, Closed>(CLOSE, &ClosePlan { plan: plan.plan }),
        )
        .await;
        match closed {
            Ok(Ok(closed)) => Ok(closed),
            // The answer may have failed because the proxy just died: say so rather than a bare socket error.
            Ok(Err(error)) => {
                let _ = tokio::time::timeout(Duration::from_millis(200), instance.dead.cancelled()).await;
                if instance.dead.is_cancelled() {
                    Err(ProxyError::Died(instance.why_ended().await))
                } else {
                    Err(ProxyError::Control(error))
                }
            }
            Err(_) => Err(ProxyError::Control("no answer to proxy.close in 10 s".into())),
        }
    }

    /// Starts the proxy now when none runs and none is being started (admin.sandbox_check's self-test and a
    /// restart after an end).
    ///
    /// # Errors
    /// As [`Self::open`] before the plan.
    async fn running(self: &Arc<Self>) -> Result<Arc<Instance>, ProxyError> {
        if !self.installed() {
            return Err(ProxyError::NotInstalled(self.program.clone()));
        }
        if let Some(instance) = self.alive() {
            return Ok(instance);
        }
        let _starting = self.starting.lock().await;
        if let Some(instance) = self.alive() {
            return Ok(instance);
        }
        let wait = self
            .lock()
            .not_before
            .map(|at| at.saturating_duration_since(Instant::now()));
        if let Some(wait) = wait.filter(|w| !w.is_zero()) {
            tokio::time::sleep(wait.min(MAX_BACKOFF)).await;
        }
        match self.spawn() {
            Ok(instance) => Ok(instance),
            Err(error) => {
                let mut state = self.lock();
                state.failures = state.failures.saturating_add(1);
                state.not_before = Some(Instant::now() + backoff(state.failures));
                state.last_error = Some(error.clone());
                Err(ProxyError::Start(error))
            }
        }
    }

    /// The running instance, when there is one that has not died.
    fn alive(&self) -> Option<Arc<Instance>> {
        self.lock().running.clone().filter(|i| !i.dead.is_cancelled())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts one proxy and the task that watches it.
    fn spawn(self: &Arc<Self>) -> Result<Arc<Instance>, String> {
        crate::config::ensure_private_dir(&self.sockets)
            .map_err(|e| format!("cannot make its sockets folder {}: {e}", self.sockets.display()))?;
        let (ours, theirs) = nix::sys::socket::socketpair(
            nix::sys::socket::AddressFamily::Unix,
            nix::sys::socket::SockType::Stream,
            None,
            nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        )
        .map_err(|e| format!("cannot make its control socket: {e}"))?;
        let mut command = tokio::process::Command::new(&self.program);
        command
            .arg("--control-fd")
            .arg("3")
            .arg("--sockets")
            .arg(&self.sockets)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let child = spawn_with_control(&mut command, &theirs).map_err(|e| e.to_string())?;
        drop(theirs);
        let pid = child.id().unwrap_or_default();
        let stream = std::os::unix::net::UnixStream::from(ours);
        stream.set_nonblocking(true).map_err(|e| e.to_string())?;
        let stream = tokio::net::UnixStream::from_std(stream).map_err(|e| e.to_string())?;
        let control = Control::start(stream);
        let instance = Arc::new(Instance {
            pid,
            dead: control.closed(),
            control,
            ended: Mutex::new(None),
        });
        {
            let mut state = self.lock();
            state.running = Some(Arc::clone(&instance));
            state.started += 1;
            state.not_before = None;
        }
        tracing::info!(pid, program = %self.program.display(), "efr-proxy started");
        tokio::spawn(watch(Arc::clone(self), Arc::clone(&instance), child));
        Ok(instance)
    }
}

/// Starts `command` with `control` as its fd 3.
fn spawn_with_control(
    command: &mut tokio::process::Command,
    control: &OwnedFd,
) -> std::io::Result<tokio::process::Child> {
    let fd = control.as_raw_fd();
    // SAFETY: the hook runs in the child between fork and exec and calls only async-signal-safe functions (dup2,
    // fcntl); it allocates nothing and touches no lock.
    unsafe {
        command.pre_exec(move || {
            if fd == 3 {
                // Already in place: only its close-on-exec flag must go.
                if libc::fcntl(3, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(fd, 3) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Waits for one proxy to end, records why, and starts the next after the backoff.
async fn watch(supervisor: Arc<ProxySupervisor>, instance: Arc<Instance>, mut child: tokio::process::Child) {
    let started = Instant::now();
    let ended = tokio::select! {
        status = child.wait() => Some(status),
        () = instance.dead.cancelled() => None,
    };
    // The control socket closes when the process ends, often a moment before its wait returns: give it a second
    // before taking the socket as broken.
    let ended = match ended {
        Some(status) => Some(status),
        None => tokio::time::timeout(Duration::from_secs(1), child.wait()).await.ok(),
    };
    let pid = instance.pid;
    let why = match ended {
        Some(Ok(status)) => format!("efr-proxy (pid {pid}) ended: {status}"),
        Some(Err(error)) => format!("efr-proxy (pid {pid}) could not be waited for: {error}"),
        None => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            format!("efr-proxy (pid {pid}) broke its control socket and was stopped")
        }
    };
    tracing::warn!(reason = %why, "efr-proxy ended; efrd starts it again");
    *instance.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(why.clone());
    instance.dead.cancel();
    let wait = {
        let mut state = supervisor.lock();
        if state.running.as_ref().is_some_and(|r| Arc::ptr_eq(r, &instance)) {
            state.running = None;
        }
        state.last_error = Some(why);
        state.failures = if started.elapsed() >= STABLE_RUN {
            1
        } else {
            state.failures.saturating_add(1)
        };
        let wait = backoff(state.failures);
        state.not_before = Some(Instant::now() + wait);
        wait
    };
    tokio::time::sleep(wait).await;
    // A restart nobody waits for; a failure is kept as last_error and the next call tries again.
    if let Err(error) = supervisor.running().await {
        tracing::warn!(%error, "efr-proxy did not start again");
    }
}

impl Instance {
    /// Why a dead instance ended: its watcher's words, which come up to a second after the socket closed.
    async fn why_ended(&self) -> String {
        for _ in 0..60 {
            if let Some(why) = self.ended.lock().unwrap_or_else(PoisonError::into_inner).clone() {
                return why;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        format!("efr-proxy (pid {}) closed its control socket", self.pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_its_limit() {
        assert_eq!(backoff(1), Duration::from_millis(250));
        assert_eq!(backoff(2), Duration::from_millis(500));
        assert_eq!(backoff(5), Duration::from_secs(4));
        assert_eq!(backoff(9), MAX_BACKOFF);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }

    #[tokio::test]
    async fn a_missing_program_is_not_installed_and_never_started() {
        let dir = tempfile::tempdir().unwrap();
        let supervisor = Arc::new(ProxySupervisor::new(
            dir.path().join("no-such-efr-proxy"),
            dir.path().join("proxy"),
        ));
        assert!(!supervisor.installed());
        let plan = OpenPlan {
            call: "c1".into(),
            allow: Vec::new(),
            deny: Vec::new(),
        };
        let error = supervisor.open(&plan).await.unwrap_err();
        assert_eq!(error, ProxyError::NotInstalled(dir.path().join("no-such-efr-proxy")));
        let status = supervisor.status();
        assert_eq!(status.state, ProxyState::NotInstalled);
        assert_eq!(status.restarts, 0);
        assert!(status.last_error.unwrap().contains("not installed"));
        assert!(
            !dir.path().join("proxy").exists(),
            "nothing was made for a proxy that cannot start"
        );
    }
}
