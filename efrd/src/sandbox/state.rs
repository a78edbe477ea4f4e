//! The daemon's view of the sandbox: the cached result of the [probe](super::probe), shared by `admin.status`,
//! `admin.sandbox_check` and the turns of auto mode (which fall back to cautious when it says the sandbox cannot run).
//!
//! The probe runs once, on first need, on a blocking thread; [`SandboxState::invalidate`] (after a contained call's
//! setup error) makes the next [`SandboxState::current`] probe again, as does [`SandboxState::recheck`].

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::Mutex;

use super::probe::{Probe, ProbeOptions, probe};

/// The sandbox as this daemon sees it. One per daemon, in an `Arc`.
#[derive(Debug)]
pub struct SandboxState {
    options: ProbeOptions,
    cached: Mutex<Option<Arc<Probe>>>,
}

impl SandboxState {
    /// A state that has not probed yet.
    #[must_use]
    pub fn new(options: ProbeOptions) -> Self {
        Self {
            options,
            cached: Mutex::new(None),
        }
    }

    /// The options of the default setup: `efr-launcher` next to the running efrd (or `$EFR_LAUNCHER`), bubblewrap
    /// from `$EFR_BWRAP` or `PATH`, the user's home and runtime folder from the environment.
    #[must_use]
    pub fn default_options() -> ProbeOptions {
        let launcher = std::env::var_os("EFR_LAUNCHER").map(PathBuf::from).unwrap_or_else(|| {
            std::env::current_exe()
                .map(|exe| exe.with_file_name("efr-launcher"))
                .unwrap_or_else(|_| PathBuf::from("efr-launcher"))
        });
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from);
        let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR")
            .map_or_else(|| PathBuf::from(format!("/run/user/{}", nix::unistd::getuid())), PathBuf::from);
        ProbeOptions {
            launcher,
            bwrap: std::env::var_os("EFR_BWRAP").map(PathBuf::from),
            home,
            runtime_dir,
            netview_off: false,
        }
    }

    /// What the probe uses (the launcher's path, bubblewrap's, the home and runtime folders).
    #[must_use]
    pub fn options(&self) -> &ProbeOptions {
        &self.options
    }

    /// The cached probe, probing first when there is none.
    pub async fn current(&self) -> Arc<Probe> {
        let mut cached = self.cached.lock().await;
        if let Some(found) = cached.as_ref() {
            return Arc::clone(found);
        }
        let found = self.run().await;
        *cached = Some(Arc::clone(&found));
        found
    }

    /// The cached probe without probing (`None` before the first probe).
    pub async fn cached(&self) -> Option<Arc<Probe>> {
        self.cached.lock().await.clone()
    }

    /// Probes again and caches the result.
    pub async fn recheck(&self) -> Arc<Probe> {
        let mut cached = self.cached.lock().await;
        let found = self.run().await;
        *cached = Some(Arc::clone(&found));
        found
    }

    /// Forgets the cached probe (after a setup error): the next [`Self::current`] probes again.
    pub async fn invalidate(&self) {
        *self.cached.lock().await = None;
    }

    async fn run(&self) -> Arc<Probe> {
        let options = self.options.clone();
        match tokio::task::spawn_blocking(move || probe(&options)).await {
            Ok(found) => Arc::new(found),
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
