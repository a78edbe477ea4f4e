//! The open plans: each a listening Unix socket whose connections are filtered under that plan's policy.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use efr_protocol::internal::bus_proxy::{ClosedBus, OpenBusPlan, OpenedBus};
use tokio::net::UnixListener;
use tokio::task::JoinHandle;

use crate::policy::{Level, NamePattern, Policy, Rule};
use crate::report::Refusals;
use crate::serve::{Clients, MAX_MESSAGE, Plan, serve};

/// Every open plan.
#[derive(Debug)]
pub struct Plans {
    sockets: PathBuf,
    uid: u32,
    open: HashMap<u64, Open>,
    next: u64,
}

#[derive(Debug)]
struct Open {
    socket: PathBuf,
    plan: Arc<Plan>,
    task: JoinHandle<()>,
}

impl Plans {
    /// No plans yet; sockets are made in `sockets`, and the bus is logged in to as `uid`.
    #[must_use]
    pub fn new(sockets: PathBuf, uid: u32) -> Self {
        Self {
            sockets,
            uid,
            open: HashMap::new(),
            next: 1,
        }
    }

    /// Opens a plan: its socket listens before this returns.
    ///
    /// # Errors
    /// A bad rule (which one and where), a bad address, or why the socket could not be made.
    pub fn open(&mut self, request: &OpenBusPlan) -> Result<OpenedBus, String> {
        let policy = policy_of(request)?;
        let upstream = crate::address::unix_path(&request.upstream)?;
        let number = self.next;
        self.next += 1;
        let socket = self.sockets.join(format!("bus-{number}.sock"));
        // The umask set at start makes the socket 0600.
        let listener =
            UnixListener::bind(&socket).map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
        let plan = Arc::new(Plan {
            upstream,
            policy: Arc::new(policy),
            refusals: Arc::new(Refusals::new(request.bus)),
            max_message: MAX_MESSAGE,
            uid: self.uid,
            connections: AtomicU64::new(0),
            clients: Clients::default(),
        });
        let task = tokio::spawn(serve(listener, Arc::clone(&plan)));
        self.open.insert(
            number,
            Open {
                socket: socket.clone(),
                plan,
                task,
            },
        );
        Ok(OpenedBus { plan: number, socket })
    }

    /// Closes a plan: removes its socket, cuts its connections, and returns its refusals.
    ///
    /// # Errors
    /// No open plan has that number.
    pub fn close(&mut self, number: u64) -> Result<ClosedBus, String> {
        let open = self
            .open
            .remove(&number)
            .ok_or_else(|| format!("no open bus plan {number}"))?;
        // Cut the clients first: the task's abort takes effect only at its next await.
        open.plan.clients.cut();
        open.task.abort();
        let _ = std::fs::remove_file(&open.socket);
        let (bus_refused, bus_refused_more) = open.plan.refusals.snapshot();
        Ok(ClosedBus {
            bus_refused,
            bus_refused_more,
            connections: open.plan.connections.load(Ordering::Relaxed),
        })
    }

    /// Closes every plan (the control socket ended).
    pub fn close_all(&mut self) {
        let numbers: Vec<u64> = self.open.keys().copied().collect();
        for number in numbers {
            let _ = self.close(number);
        }
    }
}

/// The policy of a plan's request; a bad name or rule says which field, which entry and where in it.
///
/// # Errors
/// The first bad entry.
pub fn policy_of(request: &OpenBusPlan) -> Result<Policy, String> {
    let mut policy = Policy::default();
    let names = |field: &str, list: &[String], level: Option<Level>, policy: &mut Policy| -> Result<(), String> {
        for (index, text) in list.iter().enumerate() {
            let pattern = NamePattern::parse(text).map_err(|e| format!("{field}[{index}] {text:?}: {e}"))?;
            match level {
                Some(level) => policy.names.push((pattern, level)),
                None => policy.fds.push(pattern),
            }
        }
        Ok(())
    };
    names("see", &request.see, Some(Level::See), &mut policy)?;
    names("talk", &request.talk, Some(Level::Talk), &mut policy)?;
    names("own", &request.own, Some(Level::Own), &mut policy)?;
    names("fds", &request.fds, None, &mut policy)?;
    for (field, list, into) in [
        ("call_rules", &request.call_rules, &mut policy.calls),
        ("broadcast_rules", &request.broadcast_rules, &mut policy.broadcasts),
    ] {
        for (index, text) in list.iter().enumerate() {
            into.push(Rule::parse(text).map_err(|e| format!("{field}[{index}] {text:?}: {e}"))?);
        }
    }
    Ok(policy)
}
