//! The daemon's life from start to graceful stop ([`run`]).
//!
//! Start: roots → config → lock and socket → store → restart recovery → READY=1 → serve. Stop (SIGTERM or SIGINT):
//! STOPPING=1, no new connection, every stream ends with `end`, every actor drains, the store flushes, exit 0 —
//! within 5 seconds. An idle efrd (`[daemon] idle_exit_secs`) stops the same way.

use std::sync::Arc;
use std::time::{Duration, Instant};

use efr_protocol::ids::DaemonId;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::bus::BusSupervisor;
use crate::config::{ConfigState, Roots};
use crate::conversation::recovery;
use crate::daemon::Daemon;
use crate::listen::{Listener, Notifier};
use crate::models::Models;
use crate::network::ProxySupervisor;
use crate::sandbox::SandboxState;
use crate::server;
use efr_model::{EnvKeys, KeyStore};
use efr_snapshot::SnapshotStore;
use efr_store::Store;

/// The exit code of a start that failed for a reason other than the ones with their own code.
pub const EXIT_FAILURE: i32 = 1;

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
    let daemon = build(roots, config).await?;
    recover(&daemon).await?;
    let shutdown = CancellationToken::new();
    spawn_signal_handler(shutdown.clone()).map_err(|e| fail(EXIT_FAILURE)(format!("cannot watch signals: {e}")))?;
    let _watchdog = notifier.spawn_watchdog();
    if let Err(e) = notifier.ready(&format!("listening on {}", listener.path().display())) {
        warn!(error = %e, "cannot notify systemd");
    }
    info!(path = %listener.path().display(), daemon_id = %daemon.daemon_id, "efrd ready");

    spawn_background(&daemon, &notifier, &shutdown);
    serve_until_stopped(&daemon, &listener, &shutdown).await;
    // Jobs end with efrd (docs/jobs.md): each stop is recorded before the log closes.
    let jobs = daemon.jobs.stop_all(efr_protocol::wire::JobStopBy::DaemonStop);
    if tokio::time::timeout(Duration::from_secs(3), jobs).await.is_err() {
        warn!("the background jobs did not all stop within 3 s");
    }
    daemon.conversations.clear();
    if let Err(e) = daemon.store.close().await {
        warn!(error = %e, "the event store did not close cleanly");
    }
    drop(listener);
    info!("efrd stopped");
    Ok(())
}

/// Builds the daemon's shared state: the event store, the snapshot store, the keys and models, the sandbox with its
/// helper supervisors.
async fn build(roots: Roots, config: ConfigState) -> Result<Arc<Daemon>, StartError> {
    let options = efr_store::StoreOptions {
        index: config.current().daemon.search_index,
    };
    let store = Store::open_with(roots.data.path.join("efr.db"), options)
        .await
        .map_err(|e| fail(EXIT_FAILURE)(e.to_string()))?;
    let snapshots = SnapshotStore::open(&roots.state.path.join("snapshots"))
        .map_err(|e| fail(EXIT_FAILURE)(format!("cannot open the snapshot store: {e}")))?;
    let undo = &config.current().undo;
    snapshots.set_bounds(undo.undo_bounds(), undo.trash_bounds());
    let keys = Arc::new(KeyStore::open(&roots.state.path, EnvKeys::from_process()));
    let config = Arc::new(config);
    // A reload warns of the always rules that a floor disables (admin.config_reload's `warnings`).
    let floors = crate::exits::always::RuleFloors {
        home: roots.home.clone(),
        efr_dirs: roots.efr_dirs(),
    };
    config.set_rule_warnings(Arc::new(move |config: &crate::config::Config| {
        crate::exits::always::warnings(&config.auto.always, &floors)
    }));
    let models =
        Models::new(Arc::clone(&config), keys, &roots.state.path).map_err(|e| fail(EXIT_FAILURE)(e.message))?;
    let daemon_id = daemon_id(&roots).map_err(fail(EXIT_FAILURE))?;
    let mut probe_options = SandboxState::default_options(roots.home.as_deref());
    probe_options.netview_off = !config.current().network.netview;
    probe_options.bus_off = !config.current().bus.enabled;
    let proxy = Arc::new(ProxySupervisor::new(
        ProxySupervisor::default_program(),
        roots.runtime.path.join("proxy"),
    ));
    let bus = Arc::new(BusSupervisor::new(
        BusSupervisor::default_program(),
        roots.runtime.path.join("bus"),
    ));
    let sandbox = SandboxState::new(probe_options, proxy, bus);
    Ok(Arc::new(Daemon::new(
        daemon_id, roots, store, config, models, snapshots, sandbox,
    )))
}

/// What a previous efrd left: its open turns recorded as ended and their changes closed; then the sandbox probed in
/// the background. Old snapshots are collected after READY=1 (`collect_while_running`), so start-up never waits for
/// them.
async fn recover(daemon: &Arc<Daemon>) -> Result<(), StartError> {
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
    Ok(())
}

/// The tasks beside the server: the catalog's fetch, the search index's rebuild, the collection, memory given back
/// when quiet, systemd's "stopping", the idle exit.
fn spawn_background(daemon: &Arc<Daemon>, notifier: &Arc<Notifier>, shutdown: &CancellationToken) {
    // The catalog is fetched in the background: a slow provider must not delay readiness.
    let refresh = Arc::clone(daemon);
    tokio::spawn(async move {
        refresh.models.refresh_catalog().await;
        // The rules that need the fetched list (`[auto] classifier_model` in models.list): a break is logged at its
        // place, and the turns skip that classifier (the turn's model judges).
        if let Err(e) = refresh.config.recheck() {
            warn!(line = ?e.line, column = ?e.column, key = ?e.key, "config.toml: {}", e.message);
        }
    });

    // The search index of a log older than it: built in the background, so start-up never waits for it.
    tokio::spawn(crate::search::rebuild::run(daemon.store.clone()));

    // A reload that turns full mode off stops the jobs that full mode's calls started (docs/adr/0029-full-mode.md).
    tokio::spawn(stop_full_jobs_when_off(Arc::clone(daemon)));

    // The collection while efrd runs: a daemon that runs for months must not grow until it restarts.
    tokio::spawn(collect_while_running(Arc::clone(daemon), shutdown.clone()));

    // The pages of start-up's code, and of each busy stretch's, go back once efrd is quiet.
    let quiet = Arc::clone(daemon);
    tokio::spawn(crate::lean::release_when_quiet(
        daemon.store.clone(),
        move || quiet.running_turns() > 0,
        shutdown.clone(),
    ));

    let stopping = Arc::clone(notifier);
    let signalled = shutdown.clone();
    tokio::spawn(async move {
        signalled.cancelled().await;
        let _ = stopping.stopping("stopping: ending streams and flushing the event log");
    });

    if let Some(secs) = daemon.config().daemon.idle_exit_secs {
        tokio::spawn(exit_when_idle(
            Arc::clone(daemon),
            Duration::from_secs(secs),
            shutdown.clone(),
        ));
    }
}

/// Watches the config: each one applied in which full mode is off (`permissions.allow_full` false, or a refusal of
/// the config's own: undo off, zsh) stops the running jobs of full mode, recorded `full_off`.
async fn stop_full_jobs_when_off(daemon: Arc<Daemon>) {
    let mut configs = daemon.config.subscribe();
    let snapshots = daemon.roots.state.path.join("snapshots");
    while configs.changed().await.is_ok() {
        let config = configs.borrow_and_update().clone();
        let facts = crate::config::full::FullFacts::of_process(&snapshots);
        if crate::config::full::status(&config, facts)
            != (efr_protocol::wire::full::FullModeStatus {
                allowed: true,
                refused: None,
            })
        {
            info!("full mode is off now: stopping the jobs its calls started");
            daemon.jobs.stop_full().await;
        }
    }
}

/// Serves the socket (and the tailnet listener when `[remote]` is on) until the shutdown.
async fn serve_until_stopped(daemon: &Arc<Daemon>, listener: &Listener, shutdown: &CancellationToken) {
    let remote = daemon.config().remote.clone();
    let tailnet = remote.enabled.then(|| {
        daemon.remote.set_state(crate::remote::ListenerState::NotListening);
        tokio::spawn(crate::server::tailnet::run(
            Arc::clone(daemon),
            crate::server::tailnet::Options {
                port: remote.port,
                tailscaled_socket: remote.tailscaled_socket,
            },
            shutdown.clone(),
        ))
    });
    server::serve(listener.listener(), Arc::clone(daemon), shutdown.clone()).await;
    if let Some(tailnet) = tailnet {
        let _ = tailnet.await;
    }
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

/// How long a pass of the collection waits for the snapshot store's holds (walks, saves, undos) to end before it
/// leaves its turn to the next pass; a turn that begins a walk meanwhile waits at most this long and the pass.
const COLLECT_WAIT: Duration = Duration::from_secs(2);

/// How long one pass of the collection may run (each step checks it; see `undo::collect`).
const COLLECT_BUDGET: Duration = Duration::from_secs(1);

/// The pause before the next pass when a pass was cut (its deadline, its count of turns, a busy store).
const COLLECT_AGAIN: Duration = Duration::from_secs(1);

/// Runs a pass of the collection at once (what a previous efrd left), then every `[undo] collect_secs`, sooner after
/// a pass that was cut, until the shutdown ([`collect_pass`]).
async fn collect_while_running(daemon: Arc<Daemon>, shutdown: CancellationToken) {
    loop {
        let cut = collect_pass(&daemon).await;
        let every = Duration::from_secs(daemon.config().undo.collect_secs.max(1));
        let pause = if cut { every.min(COLLECT_AGAIN) } else { every };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = shutdown.cancelled() => return,
        }
    }
}

/// One pass of the collection while efrd runs (`undo::collect::pass`): the snapshots of turns past `[undo]
/// keep_turns` (never of a turn that has not ended), their journals, the `$SCRATCH` folders of conversations that
/// no longer exist, the trash past its age. A failure is logged: it costs disk, never a turn. Returns whether the pass
/// left work for the next (cut, or the store stayed busy).
async fn collect_pass(daemon: &Arc<Daemon>) -> bool {
    let started = Instant::now();
    let store = &daemon.store;
    let (turns, open) = match (
        store.turns_of_kind("turn_started").await,
        store.open_turns(&["turn_started"], recovery::TERMINAL_KINDS).await,
    ) {
        (Ok(turns), Ok(open)) => (turns, open.into_iter().map(|t| t.turn_id).collect()),
        (Err(error), _) | (_, Err(error)) => {
            warn!(%error, "cannot list the turns: nothing is collected this time");
            return false;
        }
    };
    let scratch_root = daemon.roots.state.path.join(efr_policy::floors::SCRATCH_FOLDER);
    let orphan_scratch = orphan_scratch(store, &scratch_root).await;
    let Some(alone) = daemon.snapshots.exclusive(COLLECT_WAIT).await else {
        info!("the snapshot store stayed busy: the collection waits for its next pass");
        return true;
    };
    let snapshots = Arc::clone(&daemon.snapshots);
    let keep_turns = daemon.config().undo.keep_turns;
    let collected = tokio::task::spawn_blocking(move || {
        let input = crate::undo::collect::PassInput {
            turns: &turns,
            open: &open,
            keep_turns,
            orphan_scratch: &orphan_scratch,
            deadline: Instant::now() + COLLECT_BUDGET,
        };
        let collected = crate::undo::collect::pass(&snapshots, &input);
        drop(alone);
        collected
    })
    .await;
    let ms = started.elapsed().as_millis();
    match collected {
        Ok(Ok(c)) if c == crate::undo::collect::Collected::default() => false,
        Ok(Ok(c)) => {
            info!(
                snapshots = c.snapshots,
                contents = c.contents,
                journals = c.journals,
                scratch = c.scratch,
                trash = c.trash,
                cut = c.cut,
                ms,
                "collected old snapshots, journals, scratch and trash"
            );
            c.cut
        }
        Ok(Err(error)) => {
            warn!(%error, "old snapshots were not collected");
            false
        }
        Err(error) => {
            warn!(%error, "the collection did not finish");
            false
        }
    }
}

/// The `$SCRATCH` folders under `root` whose conversation the store does not have (deleted, or never committed).
async fn orphan_scratch(store: &Store, root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let named: Vec<(efr_protocol::ids::ConversationId, std::path::PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| Some((entry.file_name().to_str()?.parse().ok()?, entry.path())))
        .collect();
    let mut orphans = Vec::new();
    for chunk in named.chunks(efr_store::MAX_PAGE as usize) {
        let ids = chunk.iter().map(|(id, _)| *id).collect();
        let Ok(found) = store.conversations(ids).await else {
            return Vec::new();
        };
        let found: std::collections::HashSet<_> = found.iter().map(|s| s.id).collect();
        orphans.extend(
            chunk
                .iter()
                .filter(|(id, _)| !found.contains(id))
                .map(|(_, path)| path.clone()),
        );
    }
    orphans
}
