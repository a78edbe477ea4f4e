//! The supervisor of one helper process (`efr-proxy`, `efr-bus-proxy`): both take `--control-fd 3 --sockets DIR`
//! and speak the control framing of [`super::control`].
//!
//! - **Start on first need.** [`Supervisor::call`] starts the helper when none runs: `PROGRAM --control-fd 3
//!   --sockets DIR` (the folder made with mode 0700), with one end of a Unix socket pair as its fd 3
//!   ([`efr_helper::spawn::HelperCommand`]: the child comes from `std::process::Command`, whose `pre_exec` hook
//!   only does async-signal-safe work, as efrd is threaded; no other child inherits either end). The helper
//!   hardens itself before it serves (docs/network.md, "The proxy itself").
//! - **Supervision.** A task waits for the child. When it ends, the instance is marked dead (requests about what
//!   it served fail with [`HelperError::Died`]: the helper took its sockets with it, so nothing stays open), the
//!   reason is kept as `last_error`, and the helper is started again after a backoff ([`backoff`]: 250 ms doubling
//!   to 30 s; back to the start after a run of [`STABLE_RUN`]). A call that comes during the backoff waits for it
//!   (at most [`MAX_BACKOFF`]).
//! - **Not installed.** A program that is not a file is never started: [`Supervisor::installed`] is false.
//! - **Status.** [`Supervisor::status`]: the state, the pid, the restarts and the last error.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use efr_helper::spawn::HelperCommand;
use efr_protocol::wire::{ProxyProcess, ProxyState};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::Mutex as AsyncMutex;
use tokio_util::sync::CancellationToken;

use super::control::Control;

/// The first wait before a restart.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait before a restart.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A run at least this long resets the backoff.
pub const STABLE_RUN: Duration = Duration::from_secs(60);
/// How long a request may take before the helper is taken as stuck.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// The wait before restart number `failures` (1 for the first failure in a row).
#[must_use]
pub fn backoff(failures: u32) -> Duration {
    let factor = 1u32.checked_shl(failures.saturating_sub(1).min(16)).unwrap_or(u32::MAX);
    FIRST_BACKOFF.saturating_mul(factor).min(MAX_BACKOFF)
}

/// Why a request to a helper failed. Each variant names the helper (its program name, such as `efr-proxy`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelperError {
    /// The program is not installed where efrd looks.
    #[error("{name} is not installed at {}", program.display())]
    NotInstalled {
        /// The helper's name.
        name: &'static str,
        /// Where efrd looked.
        program: PathBuf,
    },
    /// The helper could not start.
    #[error("{name} cannot start: {why}")]
    Start {
        /// The helper's name.
        name: &'static str,
        /// Why.
        why: String,
    },
    /// The helper answered with an error or did not answer.
    #[error("{name} refused the request: {why}")]
    Control {
        /// The helper's name.
        name: &'static str,
        /// Its answer, or that it gave none in time.
        why: String,
    },
    /// The helper that served the request's plan ended while the plan was open: the call's connections were cut.
    #[error("{name} stopped while the call ran ({why}); its connections were cut")]
    Died {
        /// The helper's name.
        name: &'static str,
        /// How it ended.
        why: String,
    },
}

/// One helper of one daemon, in an `Arc`.
#[derive(Debug)]
pub struct Supervisor {
    name: &'static str,
    program: PathBuf,
    sockets: PathBuf,
    state: Mutex<State>,
    /// Held while a helper starts, so that callers that come at once share one start.
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

/// One running helper process: what a request answered by it keeps, to ask it again about the same plan.
#[derive(Debug)]
pub struct Instance {
    name: &'static str,
    pid: u32,
    control: Control,
    /// Fires when the process has ended or its control socket closed.
    dead: CancellationToken,
    /// Why it ended, once it has.
    ended: Mutex<Option<String>>,
}

impl Supervisor {
    /// A supervisor of `program` (named `name` in messages) whose sockets go in `sockets`; nothing starts yet.
    #[must_use]
    pub fn new(name: &'static str, program: PathBuf, sockets: PathBuf) -> Self {
        Self {
            name,
            program,
            sockets,
            state: Mutex::new(State::default()),
            starting: AsyncMutex::new(()),
        }
    }

    /// The program of the default setup: `$<variable>` when set, else [`beside`] the running efrd.
    #[must_use]
    pub fn default_program(name: &str, variable: &str) -> PathBuf {
        std::env::var_os(variable).map(PathBuf::from).unwrap_or_else(|| {
            std::env::current_exe()
                .map(|exe| beside(&exe, name))
                .unwrap_or_else(|_| PathBuf::from(name))
        })
    }

    /// The helper's name, such as `efr-proxy`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The program efrd starts.
    #[must_use]
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Whether the program is installed (a file at its path).
    #[must_use]
    pub fn installed(&self) -> bool {
        self.program.is_file()
    }

    /// The state for admin.status (or the log).
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
            Some(self.not_installed().to_string())
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

    fn not_installed(&self) -> HelperError {
        HelperError::NotInstalled {
            name: self.name,
            program: self.program.clone(),
        }
    }

    /// Sends `method` with `params`, starting the helper first when none runs, and returns its answer with the
    /// instance that gave it (for [`Self::call_on`] about the same plan).
    ///
    /// # Errors
    /// [`HelperError::NotInstalled`], [`HelperError::Start`], or [`HelperError::Control`] when the helper refused
    /// the request or did not answer in time.
    pub async fn call<P: Serialize, T: DeserializeOwned>(
        self: &Arc<Self>,
        method: &str,
        params: &P,
    ) -> Result<(Arc<Instance>, T), HelperError> {
        let instance = self.running().await?;
        let answer = tokio::time::timeout(CONTROL_TIMEOUT, instance.control.call(method, params))
            .await
            .map_err(|_| self.control(format!("no answer to {method} in 10 s")))?
            .map_err(|why| self.control(why))?;
        Ok((instance, answer))
    }

    /// Sends `method` with `params` to `instance`, the helper that served an earlier request (a plan's close).
    ///
    /// # Errors
    /// [`HelperError::Died`] when that helper has ended (what it served is gone with it), [`HelperError::Control`]
    /// when it refused the request or did not answer.
    pub async fn call_on<P: Serialize, T: DeserializeOwned>(
        &self,
        instance: &Instance,
        method: &str,
        params: &P,
    ) -> Result<T, HelperError> {
        let died = |why| HelperError::Died { name: self.name, why };
        if instance.dead.is_cancelled() {
            return Err(died(instance.why_ended().await));
        }
        let answer = tokio::time::timeout(CONTROL_TIMEOUT, instance.control.call::<_, T>(method, params)).await;
        match answer {
            Ok(Ok(answer)) => Ok(answer),
            // The answer may have failed because the helper just died: say so rather than a bare socket error.
            Ok(Err(error)) => {
                let _ = tokio::time::timeout(Duration::from_millis(200), instance.dead.cancelled()).await;
                if instance.dead.is_cancelled() {
                    Err(died(instance.why_ended().await))
                } else {
                    Err(self.control(error))
                }
            }
            Err(_) => Err(self.control(format!("no answer to {method} in 10 s"))),
        }
    }

    fn control(&self, why: String) -> HelperError {
        HelperError::Control { name: self.name, why }
    }

    /// The running helper, started now when none runs and none is being started (a first need, the probe's
    /// self-test, a restart after an end).
    ///
    /// # Errors
    /// [`HelperError::NotInstalled`] or [`HelperError::Start`].
    pub async fn running(self: &Arc<Self>) -> Result<Arc<Instance>, HelperError> {
        if !self.installed() {
            return Err(self.not_installed());
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
            Err(why) => {
                let mut state = self.lock();
                state.failures = state.failures.saturating_add(1);
                state.not_before = Some(Instant::now() + backoff(state.failures));
                state.last_error = Some(why.clone());
                Err(HelperError::Start { name: self.name, why })
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

    /// Starts one helper and the task that watches it.
    fn spawn(self: &Arc<Self>) -> Result<Arc<Instance>, String> {
        crate::config::ensure_private_dir(&self.sockets)
            .map_err(|e| format!("cannot make its sockets folder {}: {e}", self.sockets.display()))?;
        let (child, stream) = HelperCommand::new(&self.program, &self.sockets)
            .stdout(Stdio::null())
            .spawn_tokio()
            .map_err(|e| e.to_string())?;
        let pid = child.id().unwrap_or_default();
        let control = Control::start(self.name, stream);
        let instance = Arc::new(Instance {
            name: self.name,
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
        tracing::info!(pid, program = %self.program.display(), "{} started", self.name);
        tokio::spawn(watch(Arc::clone(self), Arc::clone(&instance), child));
        Ok(instance)
    }
}

/// Waits for one helper to end, records why, and starts the next after the backoff.
async fn watch(supervisor: Arc<Supervisor>, instance: Arc<Instance>, mut child: tokio::process::Child) {
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
    let (name, pid) = (instance.name, instance.pid);
    let why = match ended {
        Some(Ok(status)) => format!("{name} (pid {pid}) ended: {status}"),
        Some(Err(error)) => format!("{name} (pid {pid}) could not be waited for: {error}"),
        None => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            format!("{name} (pid {pid}) broke its control socket and was stopped")
        }
    };
    tracing::warn!(reason = %why, "{name} ended; efrd starts it again");
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
        tracing::warn!(%error, "{name} did not start again");
    }
}

impl Instance {
    /// The process id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Why a dead instance ended: its watcher's words, which come up to a second after the socket closed.
    async fn why_ended(&self) -> String {
        for _ in 0..60 {
            if let Some(why) = self.ended.lock().unwrap_or_else(PoisonError::into_inner).clone() {
                return why;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        format!("{} (pid {}) closed its control socket", self.name, self.pid)
    }
}

/// The folder of efr's helper programs beside a program folder: `/usr/bin` → `/usr/libexec/efr` (the package's
/// layout, as the FHS puts programs that only other programs run).
pub const LIBEXEC: &str = "libexec/efr";

/// Where a helper `name` is for the efrd at `exe`: next to it (`cargo install`, a build folder), else in
/// [`LIBEXEC`] beside efrd's folder (`/usr/bin/efrd` → `/usr/libexec/efr/NAME`), else next to it again, so a
/// missing helper is reported at the path a user would look first.
#[must_use]
pub fn beside(exe: &Path, name: &str) -> PathBuf {
    let next = exe.with_file_name(name);
    if next.is_file() {
        return next;
    }
    exe.parent()
        .and_then(Path::parent)
        .map(|prefix| prefix.join(LIBEXEC).join(name))
        .filter(|packaged| packaged.is_file())
        .unwrap_or(next)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_helper_is_found_next_to_efrd_else_in_libexec() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        let libexec = dir.path().join("libexec/efr");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&libexec).unwrap();
        let efrd = bin.join("efrd");
        assert_eq!(
            super::beside(&efrd, "efr-proxy"),
            bin.join("efr-proxy"),
            "none: next to efrd"
        );
        std::fs::write(libexec.join("efr-proxy"), "").unwrap();
        assert_eq!(super::beside(&efrd, "efr-proxy"), libexec.join("efr-proxy"));
        std::fs::write(bin.join("efr-proxy"), "").unwrap();
        assert_eq!(
            super::beside(&efrd, "efr-proxy"),
            bin.join("efr-proxy"),
            "next to efrd wins"
        );
    }

    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_its_limit() {
        assert_eq!(backoff(1), Duration::from_millis(250));
        assert_eq!(backoff(2), Duration::from_millis(500));
        assert_eq!(backoff(5), Duration::from_secs(4));
        assert_eq!(backoff(9), MAX_BACKOFF);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }
}
