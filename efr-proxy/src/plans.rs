//! The open plans: each a listening Unix socket whose connections are served under that plan's rules.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use efr_protocol::internal::proxy::{Closed, OpenPlan, Opened};
use efr_protocol::wire::BlockReason;
use tokio::net::UnixListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::plan::{Rules, Tally};
use crate::resolve::Resolver;
use crate::tunnel::{self, Context};

/// The most connections the proxy serves at once, all plans together; one more is closed at once and counted as
/// `limit`. Bounds the proxy's memory and descriptors (each tunnel holds two sockets, and a pipe (two descriptors)
/// for each direction while data flows: at most six).
pub const MAX_CONNECTIONS: usize = 4096;

/// How long closing a plan waits for its cut tunnels to end.
const CLOSE_TIME: Duration = Duration::from_secs(5);

/// Every open plan.
#[derive(Debug)]
pub struct Plans {
    sockets: PathBuf,
    resolver: Resolver,
    connections: Arc<Semaphore>,
    open: HashMap<u64, Open>,
    next: u64,
}

#[derive(Debug)]
struct Open {
    socket: PathBuf,
    tally: Arc<Tally>,
    cancel: CancellationToken,
    tasks: TaskTracker,
}

impl Plans {
    /// No plans yet; sockets are made in `sockets`.
    #[must_use]
    pub fn new(sockets: PathBuf, resolver: Resolver) -> Self {
        Self {
            sockets,
            resolver,
            connections: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
            open: HashMap::new(),
            next: 1,
        }
    }

    /// Opens a plan: its socket listens before this returns.
    ///
    /// # Errors
    /// Why the socket could not be made.
    pub fn open(&mut self, plan: &OpenPlan) -> Result<Opened, String> {
        let number = self.next;
        self.next += 1;
        let socket = self.sockets.join(format!("plan-{number}.sock"));
        // The umask set at start makes the socket 0600.
        let listener =
            UnixListener::bind(&socket).map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
        let tally = Arc::new(Tally::default());
        let context = Arc::new(Context {
            rules: Rules::new(plan),
            tally: Arc::clone(&tally),
            resolver: self.resolver.clone(),
        });
        let cancel = CancellationToken::new();
        let tasks = TaskTracker::new();
        tasks.spawn(accept(
            listener,
            context,
            Arc::clone(&self.connections),
            cancel.clone(),
            tasks.clone(),
        ));
        self.open.insert(
            number,
            Open {
                socket: socket.clone(),
                tally,
                cancel,
                tasks,
            },
        );
        Ok(Opened { plan: number, socket })
    }

    /// Closes a plan: its socket is removed, its tunnels cut, and its tally returned.
    ///
    /// # Errors
    /// The plan is not open.
    pub async fn close(&mut self, plan: u64) -> Result<Closed, String> {
        let open = self.open.remove(&plan).ok_or_else(|| format!("no open plan {plan}"))?;
        Ok(end(open).await)
    }

    /// Closes every plan (the proxy is ending).
    pub async fn close_all(&mut self) {
        for (_, open) in self.open.drain() {
            end(open).await;
        }
    }

    /// The folder of the sockets.
    #[must_use]
    pub fn sockets(&self) -> &Path {
        &self.sockets
    }
}

async fn end(open: Open) -> Closed {
    open.cancel.cancel();
    open.tasks.close();
    if tokio::time::timeout(CLOSE_TIME, open.tasks.wait()).await.is_err() {
        eprintln!("efr-proxy: a plan's tasks did not end within {CLOSE_TIME:?}");
    }
    if let Err(error) = std::fs::remove_file(&open.socket) {
        eprintln!("efr-proxy: cannot remove {}: {error}", open.socket.display());
    }
    open.tally.closed()
}

async fn accept(
    listener: UnixListener,
    context: Arc<Context>,
    connections: Arc<Semaphore>,
    cancel: CancellationToken,
    tasks: TaskTracker,
) {
    loop {
        let stream = tokio::select! {
            () = cancel.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of descriptors or memory: wait a little rather than spin.
                    eprintln!("efr-proxy: accept: {error}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = Arc::clone(&connections).try_acquire_owned() else {
            context.tally.refuse("", 0, BlockReason::Limit);
            continue;
        };
        let context = Arc::clone(&context);
        let cancel = cancel.clone();
        tasks.spawn(async move {
            tokio::select! {
                () = cancel.cancelled() => {}
                () = tunnel::serve(stream, &context) => {}
            }
            drop(permit);
        });
    }
}
