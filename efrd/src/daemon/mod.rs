//! The daemon as a whole: its shared state ([`Daemon`]) and its life from start to graceful stop ([`run`]).
//!
//! Start: roots → config → lock and socket → store → restart recovery → READY=1 → serve. Stop (SIGTERM or SIGINT):
//! STOPPING=1, no new connection, every stream ends with `end`, every actor drains, the store flushes, exit 0 —
//! within 5 seconds.

pub mod models;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use efr_protocol::events::{DaemonEvent, DaemonEventBody};
use efr_protocol::ids::{DaemonId, Timestamp};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use self::models::Models;
use crate::config::{ConfigState, Roots};
use crate::conversation::{Conversations, Deps, recovery};
use crate::listen::{Listener, Notifier};
use crate::model::{EnvKeys, KeyStore};
use crate::sandbox::SandboxState;
use crate::server;
use crate::snapshot::SnapshotStore;
use crate::store::Store;

/// The exit code of a start that failed for a reason other than the ones with their own code.
pub const EXIT_FAILURE: i32 = 1;

/// How many daemon events (login_completed, logout_completed) a watcher may fall behind.
const DAEMON_EVENTS: usize = 64;

/// The daemon's shared state, one per process.
#[derive(Debug)]
pub struct Daemon {
    /// The daemon's identity, stable across restarts (kept in the state root).
    pub daemon_id: DaemonId,
    /// When this process started.
    pub started_at: Timestamp,
    started: Instant,
    /// The four roots.
    pub roots: Roots,
    /// The event store.
    pub store: Store,
    /// Providers, keys, catalog and config.
    pub models: Arc<Models>,
    /// The live conversations.
    pub conversations: Conversations,
    /// The turns' snapshots of their projects (`$state/snapshots`).
    pub snapshots: Arc<SnapshotStore>,
    /// The sandbox of contained calls: the cached probe.
    pub sandbox: Arc<SandboxState>,
    /// Events that belong to no conversation (login_completed, logout_completed), for watchers.
    pub daemon_events: broadcast::Sender<Arc<DaemonEvent>>,
    /// Changes of conversations' rows, for conversations.watch.
    pub rows: Arc<crate::conversation::watch::RowChanges>,
    daemon_seq: std::sync::atomic::AtomicU64,
    connections: AtomicUsize,
}

impl Daemon {
    /// How long this process has run.
    #[must_use]
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// What conversation actors need.
    #[must_use]
    pub fn deps(&self) -> Deps {
        Deps {
            store: self.store.clone(),
            models: Arc::clone(&self.models),
            shell_root: self.roots.runtime.path.join("shells"),
            snapshots: Arc::clone(&self.snapshots),
            sandbox: Arc::clone(&self.sandbox),
            roots: self.roots.clone(),
            rows: Arc::clone(&self.rows),
        }
    }

    /// A connection opened.
    pub fn connection_opened(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
    }

    /// A connection ended.
    pub fn connection_closed(&self, _session: &server::session::Session) {
        self.connections.fetch_sub(1, Ordering::Relaxed);
    }

    /// Whether a connection is open or a turn runs (what keeps an idle efrd from exiting).
    #[must_use]
    pub fn busy(&self) -> bool {
        self.connections.load(Ordering::Relaxed) > 0 || self.models.running_turns() > 0
    }

    /// Numbers an event that belongs to no conversation and sends it to every watcher of the daemon's events.
    /// The daemon's log lives in memory: its seq restarts with the process (see docs/protocol.md, "Daemon events").
    pub fn record_daemon_event(&self, body: DaemonEventBody) -> Arc<DaemonEvent> {
        let seq = self.daemon_seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let event = Arc::new(DaemonEvent {
            seq,
            at: Timestamp::now(),
            body,
        });
        info!(seq, kind = event.body.kind(), "daemon event");
        // No watcher is not an error.
        let _ = self.daemon_events.send(Arc::clone(&event));
        event
    }
}

/// A start failure: the message for the log and the exit code.
#[derive(Debug)]
pub struct StartError {
    /// What failed.
    pub message: String,
    /// The process's exit code.
    pub code: i32,
}

fn fail(code: i32) -> impl FnOnce(String) -> StartError {
    move |message| StartError { message, code }
}

/// The daemon id kept in `$state/daemon_id`, created at the first start.
fn daemon_id(roots: &Roots) -> Result<DaemonId, String> {
    let path = roots.state.path.join("daemon_id");
    match std::fs::read_to_string(&path) {
        Ok(text) => text
            .trim()
            .parse()
            .map_err(|e| format!("{} does not hold a daemon id: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let id = DaemonId::new();
            std::fs::write(&path, format!("{id}\n")).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            Ok(id)
        }
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Runs efrd until SIGTERM or SIGINT. Returns the exit code.
pub async fn run(roots: Roots, config: ConfigState) -> i32 {
    match start_and_serve(roots, config).await {
        Ok(()) => 0,
        Err(error) => {
            error!("{}", error.message);
            eprintln!("efrd: {}", error.message);
            error.code
        }
    }
}

async fn start_and_serve(roots: Roots, config: ConfigState) -> Result<(), StartError> {
    let notifier = Arc::new(Notifier::from_env().map_err(|e| fail(EXIT_FAILURE)(e.to_string()))?);
    roots.create_all().map_err(|e| fail(EXIT_FAILURE)(e.to_string()))?;
    // Hidden shells keep their private command files here (each shell makes its own folder below).
    crate::config::ensure_private_dir(&roots.runtime.path.join("shells"))
        .map_err(|e| fail(EXIT_FAILURE)(e.to_string()))?;
    let listener = Listener::acquire(&roots).map_err(|e| StartError {
        code: e.exit_code(),
        message: e.to_string(),
    })?;
    // Under the lock, before any shell of ours: the folders of an earlier efrd's shells, which ended with it.
    let left = crate::tools::shell::remove_leftovers(&roots.runtime.path.join("shells"));
    if left > 0 {
        info!(
            folders = left,
            "removed the hidden shells' folders an earlier efrd left"
        );
    }
    let store = Store::open(roots.data.path.join("efr.db"))
        .await
        .map_err(|e| fail(EXIT_FAILURE)(e.to_string()))?;
    let snapshots = SnapshotStore::open(&roots.state.path.join("snapshots"))
        .map_err(|e| fail(EXIT_FAILURE)(format!("cannot open the snapshot store: {e}")))?;
    let keys = Arc::new(KeyStore::open(&roots.state.path, EnvKeys::from_process()));
    let models = Models::new(Arc::new(config), keys, &roots.state.path).map_err(|e| fail(EXIT_FAILURE)(e.message))?;
    // A watcher may fall as far behind as a subscriber (`[daemon] subscriber_queue`).
    let row_queue = models.config().daemon.subscriber_queue;
    let daemon = Arc::new(Daemon {
        daemon_id: daemon_id(&roots).map_err(fail(EXIT_FAILURE))?,
        started_at: Timestamp::now(),
        started: Instant::now(),
        roots,
        store,
        models: Arc::new(models),
        conversations: Conversations::default(),
        snapshots: Arc::new(snapshots),
        sandbox: Arc::new(SandboxState::new(SandboxState::default_options())),
        daemon_events: broadcast::channel(DAEMON_EVENTS).0,
        rows: Arc::new(crate::conversation::watch::RowChanges::new(row_queue)),
        daemon_seq: std::sync::atomic::AtomicU64::new(0),
        connections: AtomicUsize::new(0),
    });

    let (interrupted, recovered) = recovery::close_open_turns(&daemon.store)
        .await
        .map_err(|e| fail(EXIT_FAILURE)(e.message))?;
    if recovered > 0 {
        info!(turns = recovered, "recorded the turns a previous efrd left open");
    }
    // Before any new turn can change the projects: what the interrupted turns changed, for conversation.diff.
    for turn_id in interrupted {
        crate::turn::snapshots::close_after_restart(&daemon.snapshots, turn_id).await;
    }
    // The first admin.status and the first auto turn then find the sandbox's state cached.
    daemon.sandbox.probe_in_background();

    let shutdown = CancellationToken::new();
    spawn_signal_handler(shutdown.clone()).map_err(|e| fail(EXIT_FAILURE)(format!("cannot watch signals: {e}")))?;
    let _watchdog = notifier.spawn_watchdog();
    if let Err(e) = notifier.ready(&format!("listening on {}", listener.path().display())) {
        warn!(error = %e, "cannot notify systemd");
    }
    info!(path = %listener.path().display(), daemon_id = %daemon.daemon_id, "efrd ready");

    // The catalog is fetched in the background: a slow provider must not delay readiness.
    let refresh = Arc::clone(&daemon);
    tokio::spawn(async move {
        refresh.models.refresh_catalog().await;
    });

    let stopping = Arc::clone(&notifier);
    let signalled = shutdown.clone();
    tokio::spawn(async move {
        signalled.cancelled().await;
        let _ = stopping.stopping("stopping: ending streams and flushing the event log");
    });

    if let Some(secs) = daemon.models.config().daemon.idle_exit_secs {
        tokio::spawn(exit_when_idle(
            Arc::clone(&daemon),
            Duration::from_secs(secs),
            shutdown.clone(),
        ));
    }
    server::serve(listener.listener(), Arc::clone(&daemon), shutdown.clone()).await;

    daemon.conversations.clear();
    if let Err(e) = daemon.store.close().await {
        warn!(error = %e, "the event store did not close cleanly");
    }
    drop(listener);
    info!("efrd stopped");
    Ok(())
}

/// Stops efrd after `idle` with no connection and no running turn (`[daemon] idle_exit_secs`): socket activation
/// starts it again on the next connection.
async fn exit_when_idle(daemon: Arc<Daemon>, idle: Duration, shutdown: CancellationToken) {
    let tick = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    let mut idle_since = Instant::now();
    loop {
        tokio::select! {
            () = tokio::time::sleep(tick) => {}
            () = shutdown.cancelled() => return,
        }
        if daemon.busy() {
            idle_since = Instant::now();
        } else if idle_since.elapsed() >= idle {
            info!(secs = idle.as_secs(), "idle: stopping");
            shutdown.cancel();
            return;
        }
    }
}

fn spawn_signal_handler(shutdown: CancellationToken) -> std::io::Result<()> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => info!("SIGTERM: stopping"),
            _ = int.recv() => info!("SIGINT: stopping"),
        }
        shutdown.cancel();
    });
    Ok(())
}
