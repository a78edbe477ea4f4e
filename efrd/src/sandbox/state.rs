//! The daemon's view of the sandbox: the cached result of the [probe](mod@super::probe), shared by `admin.status`,
//! `admin.sandbox_check` and the turns of auto mode (which fall back to cautious when it says the sandbox cannot run).
//!
//! The probe runs once, on first need, on a blocking thread; [`SandboxState::invalidate`] (after a contained call's
//! setup error) makes the next [`SandboxState::current`] probe again, as does [`SandboxState::recheck`].
//!
//! The cache sits behind a plain lock that is only held to copy an `Arc`, so a reader that must not wait for a
//! probe (admin.status: [`SandboxState::peek`]) never does; a second lock makes probes run one at a time, so
//! callers that arrive while one runs share its result instead of starting their own.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Mutex as AsyncMutex;

use super::probe::{Probe, ProbeOptions, probe};
use crate::bus::BusSupervisor;
use crate::network::ProxySupervisor;

/// The sandbox as this daemon sees it. One per daemon, in an `Arc`.
#[derive(Debug)]
pub struct SandboxState {
    options: ProbeOptions,
    /// The daemon's `efr-proxy`: the probe's proxy self-test and the network of contained calls.
    proxy: Arc<ProxySupervisor>,
    /// The daemon's `efr-bus-proxy`: the probe's bus self-test and the D-Bus of contained calls.
    bus: Arc<BusSupervisor>,
    /// The last probe; `None` before the first one and after [`Self::invalidate`].
    cached: Mutex<Option<Arc<Probe>>>,
    /// Held while a probe runs.
    probing: AsyncMutex<()>,
}

impl SandboxState {
    /// A state that has not probed yet; its probe tests `proxy` and `bus` too.
    #[must_use]
    pub fn new(options: ProbeOptions, proxy: Arc<ProxySupervisor>, bus: Arc<BusSupervisor>) -> Self {
        Self {
            options,
            proxy,
            bus,
            cached: Mutex::new(None),
            probing: AsyncMutex::new(()),
        }
    }

    /// The options of the default setup: `efr-launcher` next to the running efrd or in `../libexec/efr/` beside it (or `$EFR_LAUNCHER`), bubblewrap
    /// from `$EFR_BWRAP` or `PATH`, the user's home as given ([`crate::config::Roots::home`]; `/` without one) and
    /// the runtime folder from the environment.
    #[must_use]
    pub fn default_options(home: Option<&Path>) -> ProbeOptions {
        let launcher = crate::helper_process::Supervisor::default_program("efr-launcher", "EFR_LAUNCHER");
        let home = home.map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
        let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").map_or_else(
            || PathBuf::from(format!("/run/user/{}", nix::unistd::getuid())),
            PathBuf::from,
        );
        ProbeOptions {
            launcher,
            bwrap: std::env::var_os("EFR_BWRAP").map(PathBuf::from),
            home,
            runtime_dir,
            netview_off: false,
            bus_off: false,
            kernel: Default::default(),
        }
    }

    /// What the probe uses (the launcher's path, bubblewrap's, the home and runtime folders).
    #[must_use]
    pub fn options(&self) -> &ProbeOptions {
        &self.options
    }

    /// The daemon's `efr-proxy`.
    #[must_use]
    pub fn proxy(&self) -> &Arc<ProxySupervisor> {
        &self.proxy
    }

    /// The daemon's `efr-bus-proxy`.
    #[must_use]
    pub fn bus(&self) -> &Arc<BusSupervisor> {
        &self.bus
    }

    /// The cached probe, probing first when there is none. Callers that come while a probe runs wait for it and
    /// share its result.
    pub async fn current(&self) -> Arc<Probe> {
        if let Some(found) = self.peek() {
            return found;
        }
        let _probing = self.probing.lock().await;
        // Another caller may have probed while this one waited.
        if let Some(found) = self.peek() {
            return found;
        }
        let found = self.run().await;
        *self.slot() = Some(Arc::clone(&found));
        found
    }

    /// The cached probe without probing (`None` before the first probe).
    pub async fn cached(&self) -> Option<Arc<Probe>> {
        self.peek()
    }

    /// The cached probe without probing and without waiting for a probe that runs (`None` before the first probe
    /// and after [`Self::invalidate`]). For admin.status, which must not wait ~20 ms or more for a probe.
    #[must_use]
    pub fn peek(&self) -> Option<Arc<Probe>> {
        self.slot().clone()
    }

    /// Starts a probe on the runtime when none is cached and none runs, and returns at once; the next
    /// [`Self::peek`] after it ends sees the result.
    pub fn probe_in_background(self: &Arc<Self>) {
        if self.peek().is_some() || self.probing.try_lock().is_err() {
            return;
        }
        let state = Arc::clone(self);
        tokio::spawn(async move {
            state.current().await;
        });
    }

    /// Probes again and caches the result (admin.sandbox_check).
    pub async fn recheck(&self) -> Arc<Probe> {
        let _probing = self.probing.lock().await;
        let found = self.run().await;
        *self.slot() = Some(Arc::clone(&found));
        found
    }

    /// Forgets the cached probe (after a setup error): the next [`Self::current`] probes again.
    pub async fn invalidate(&self) {
        *self.slot() = None;
    }

    /// The cache slot. A poisoned lock still holds a whole `Option<Arc<_>>` (it is only ever replaced), so it is
    /// used as it is.
    fn slot(&self) -> MutexGuard<'_, Option<Arc<Probe>>> {
        self.cached.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn run(&self) -> Arc<Probe> {
        let options = self.options.clone();
        match tokio::task::spawn_blocking(move || probe(&options)).await {
            Ok(mut found) => {
                super::proxy_test::add_proxy_test(&mut found, &self.options, &self.proxy).await;
                super::bus_test::add_bus_test(&mut found, &self.options, &self.bus).await;
                Arc::new(found)
            }
            Err(err) => {
                let mut found = probe(&ProbeOptions {
                    launcher: PathBuf::from("/nonexistent"),
                    bwrap: Some(PathBuf::from("/nonexistent")),
                    ..self.options.clone()
                });
                found.status.reason = Some(format!("the sandbox probe failed: {err}"));
                Arc::new(found)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A state whose probe ends at once: bubblewrap is not where it looks.
    fn without_bwrap() -> Arc<SandboxState> {
        Arc::new(SandboxState::new(
            ProbeOptions {
                launcher: PathBuf::from("/nonexistent/efr-launcher"),
                bwrap: Some(PathBuf::from("/nonexistent/bwrap")),
                home: PathBuf::from("/nonexistent/home"),
                runtime_dir: PathBuf::from("/nonexistent/run"),
                netview_off: false,
                bus_off: false,
                kernel: Default::default(),
            },
            Arc::new(ProxySupervisor::new(
                PathBuf::from("/nonexistent/efr-proxy"),
                PathBuf::from("/nonexistent/run/proxy"),
            )),
            Arc::new(BusSupervisor::new(
                PathBuf::from("/nonexistent/efr-bus-proxy"),
                PathBuf::from("/nonexistent/run/bus"),
            )),
        ))
    }

    #[tokio::test]
    async fn the_cache_fills_on_first_need_and_empties_on_invalidate() {
        let state = without_bwrap();
        assert!(state.peek().is_none() && state.cached().await.is_none());
        let found = state.current().await;
        assert!(!found.status.available);
        assert!(Arc::ptr_eq(&state.peek().unwrap(), &found));
        // The same probe again, not a new one.
        assert!(Arc::ptr_eq(&state.current().await, &found));
        // recheck probes anew.
        assert!(!Arc::ptr_eq(&state.recheck().await, &found));
        state.invalidate().await;
        assert!(state.peek().is_none());
    }

    #[tokio::test]
    async fn a_background_probe_fills_the_cache_without_a_waiting_caller() {
        let state = without_bwrap();
        state.probe_in_background();
        let mut waited = Duration::ZERO;
        while state.peek().is_none() {
            assert!(waited < Duration::from_secs(10), "the background probe never ended");
            tokio::time::sleep(Duration::from_millis(5)).await;
            waited += Duration::from_millis(5);
        }
        let found = state.peek().unwrap();
        assert_eq!(
            found.status.reason.as_deref(),
            Some("bubblewrap is not installed at /nonexistent/bwrap")
        );
        // A cached result is kept: no second probe starts.
        state.probe_in_background();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(Arc::ptr_eq(&state.peek().unwrap(), &found));
    }
}
