//! The daemon's shared state ([`Daemon`]): what every connection and every conversation's actor reach, one per
//! process. Its life from start to stop is [`crate::lifecycle`]'s.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use efr_protocol::events::{DaemonEvent, DaemonEventBody};
use efr_protocol::ids::{DaemonId, Timestamp};
use tokio::sync::broadcast;
use tracing::info;

use crate::config::{Config, ConfigState, Roots};
use crate::conversation::{Conversations, Deps};
use crate::models::Models;
use crate::sandbox::SandboxState;
use efr_snapshot::SnapshotStore;
use efr_store::Store;

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
    /// The config: the one in force, reload, status.
    pub config: Arc<ConfigState>,
    /// Providers, keys and the catalog.
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
    /// The tailnet listener's state (`crate::remote`).
    pub remote: crate::remote::RemoteState,
    daemon_seq: AtomicU64,
    connections: AtomicUsize,
    running_turns: Arc<AtomicUsize>,
    project_turns: Arc<crate::turn::overlap::ProjectTurns>,
    call_texts: Arc<crate::turn::call_snapshots::CallTextPool>,
    /// The background jobs (`$state/jobs` holds their output files).
    pub jobs: Arc<crate::jobs::Jobs>,
    /// The project registry (`projects.toml` in the config root).
    pub projects: Arc<crate::projects::Projects>,
    /// The terminals and their slots (routing by scope).
    pub terminals: Arc<crate::routing::Terminals>,
}

impl Daemon {
    /// The shared state of a daemon that starts now, with no connection, no live conversation and no running turn.
    #[must_use]
    pub fn new(
        daemon_id: DaemonId,
        roots: Roots,
        store: Store,
        config: Arc<ConfigState>,
        models: Models,
        snapshots: SnapshotStore,
        sandbox: SandboxState,
    ) -> Self {
        let wakes_config = Arc::clone(&config);
        let jobs = Arc::new(
            crate::jobs::Jobs::new(
                roots.state.path.join("jobs"),
                std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from),
            )
            .with_wakes(Arc::new(move || wakes_config.current().jobs.wakes)),
        );
        // A watcher may fall as far behind as a subscriber (`[daemon] subscriber_queue`).
        let row_queue = config.current().daemon.subscriber_queue;
        let projects = Arc::new(crate::projects::Projects::new(&roots.config.path));
        Self {
            daemon_id,
            started_at: Timestamp::now(),
            started: Instant::now(),
            roots,
            store,
            config,
            models: Arc::new(models),
            conversations: Conversations::default(),
            snapshots: Arc::new(snapshots),
            sandbox: Arc::new(sandbox),
            daemon_events: broadcast::channel(DAEMON_EVENTS).0,
            rows: Arc::new(crate::conversation::watch::RowChanges::new(row_queue)),
            remote: crate::remote::RemoteState::default(),
            daemon_seq: AtomicU64::new(0),
            connections: AtomicUsize::new(0),
            running_turns: Arc::default(),
            project_turns: Arc::default(),
            call_texts: Arc::default(),
            jobs,
            projects,
            terminals: Arc::default(),
        }
    }

    /// The config in force.
    #[must_use]
    pub fn config(&self) -> Arc<Config> {
        self.config.current()
    }

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
            config: Arc::clone(&self.config),
            models: Arc::clone(&self.models),
            shell_root: self.roots.runtime.path.join("shells"),
            snapshots: Arc::clone(&self.snapshots),
            sandbox: Arc::clone(&self.sandbox),
            roots: self.roots.clone(),
            rows: Arc::clone(&self.rows),
            running_turns: Arc::clone(&self.running_turns),
            project_turns: Arc::clone(&self.project_turns),
            call_texts: Arc::clone(&self.call_texts),
            jobs: Arc::clone(&self.jobs),
        }
    }

    /// A connection opened.
    pub fn connection_opened(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
    }

    /// A connection ended.
    pub fn connection_closed(&self) {
        self.connections.fetch_sub(1, Ordering::Relaxed);
    }

    /// How many turns run now.
    #[must_use]
    pub fn running_turns(&self) -> usize {
        self.running_turns.load(Ordering::Relaxed)
    }

    /// Whether a connection is open or a turn runs (what keeps an idle efrd from exiting).
    #[must_use]
    pub fn busy(&self) -> bool {
        self.connections.load(Ordering::Relaxed) > 0 || self.running_turns.load(Ordering::Relaxed) > 0
    }

    /// Numbers an event that belongs to no conversation and sends it to every watcher of the daemon's events.
    /// The daemon's log lives in memory: its seq restarts with the process (see docs/protocol.md, "Daemon events").
    pub fn record_daemon_event(&self, body: DaemonEventBody) -> Arc<DaemonEvent> {
        let seq = self.daemon_seq.fetch_add(1, Ordering::Relaxed) + 1;
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
