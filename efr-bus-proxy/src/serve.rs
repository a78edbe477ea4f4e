//! Serving one plan: a listening socket whose every connection gets its own connection to the real bus, filtered.

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinSet;
use zbus::message::{Message, Type};

use crate::filter::{Action, DRIVER, Filter};
use crate::policy::Policy;
use crate::report::Refusals;
use crate::sasl;
use crate::wire::Conn;

/// The largest message either way, in bytes: far above what a notification or a portal call needs, far below
/// the 128 MiB the specification allows, so that a connection's buffer stays small.
pub const MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// The most connections one plan serves at once; one more is closed at once.
pub const MAX_CONNECTIONS: usize = 64;

/// The messages the bus may send before answering the proxy's Hello (NameAcquired and the like).
const MAX_BEFORE_HELLO: usize = 16;

/// What a plan's connections share.
#[derive(Debug)]
pub struct Plan {
    /// The real bus's socket.
    pub upstream: PathBuf,
    /// The call's policy.
    pub policy: Arc<Policy>,
    /// Where refusals are counted.
    pub refusals: Arc<Refusals>,
    /// The largest message either way, in bytes.
    pub max_message: usize,
    /// The uid the proxy logs in as (read before the proxy hardened itself: `getuid` is not in its allow-list).
    pub uid: u32,
    /// Connections accepted so far.
    pub connections: AtomicU64,
    /// The clients connected now, so that closing the plan cuts them at once.
    pub clients: Clients,
}

/// The client sockets of a plan's connections, held so that [`Clients::cut`] ends them before the plan's close is
/// answered. Aborting the plan's task is not enough on a multi-threaded runtime (the tests serve plans on one): a
/// connection's task stops only at its next await, and could still relay a message after efrd was told the plan is
/// closed.
#[derive(Debug, Default)]
pub struct Clients {
    inner: Mutex<ClientsInner>,
}

#[derive(Debug, Default)]
struct ClientsInner {
    /// Set by [`Clients::cut`]: a client registered after it is cut at once.
    cut: bool,
    next: u64,
    /// A duplicate of each client's descriptor, by registration number.
    sockets: HashMap<u64, OwnedFd>,
}

impl Clients {
    fn lock(&self) -> std::sync::MutexGuard<'_, ClientsInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Shuts every client's socket down both ways (neither side can read or write through it afterwards), and every
    /// client registered later at once. Returns when the sockets are cut, whatever the connections' tasks do.
    pub fn cut(&self) {
        let mut inner = self.lock();
        inner.cut = true;
        for (_, socket) in inner.sockets.drain() {
            shut_down(&socket);
        }
    }

    /// Registers a client; `None` (and the client cut) when the plan was cut, or its descriptor cannot be duplicated
    /// (then it could not be cut later either, so it is not served).
    fn register(&self, client: &UnixStream) -> Option<u64> {
        let mut inner = self.lock();
        let socket = match client.as_fd().try_clone_to_owned() {
            Ok(socket) if !inner.cut => socket,
            _ => {
                let _ = nix::sys::socket::shutdown(client.as_raw_fd(), nix::sys::socket::Shutdown::Both);
                return None;
            }
        };
        let number = inner.next;
        inner.next += 1;
        inner.sockets.insert(number, socket);
        Some(number)
    }

    fn forget(&self, number: u64) {
        self.lock().sockets.remove(&number);
    }
}

fn shut_down(socket: &OwnedFd) {
    // ENOTCONN (the client already left) is the only failure and changes nothing.
    let _ = nix::sys::socket::shutdown(socket.as_raw_fd(), nix::sys::socket::Shutdown::Both);
}

/// A registered client, forgotten when its connection ends however it ends.
struct Registered {
    plan: Arc<Plan>,
    number: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.plan.clients.forget(self.number);
    }
}

/// Accepts connections until the listener fails, serving each in a task of its own. Ending (or aborting) this
/// future ends every connection it serves: they are held in a [`JoinSet`].
pub async fn serve(listener: UnixListener, plan: Arc<Plan>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { break };
                if connections.len() >= MAX_CONNECTIONS {
                    continue;
                }
                plan.connections.fetch_add(1, Ordering::Relaxed);
                let Some(number) = plan.clients.register(&stream) else { continue };
                let plan = Arc::clone(&plan);
                connections.spawn(async move {
                    let _registered = Registered { plan: Arc::clone(&plan), number };
                    // A connection's end concerns only that client; a bad one is said on stderr, efrd's log.
                    if let Err(error) = connection(stream, &plan).await {
                        eprintln!("efr-bus-proxy: a connection ended: {error}");
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Serves one client until either side closes. When the bus is unreachable or ends the connection (a bus that
/// stops or restarts), the plan's refusals count it as `org.freedesktop.DBus` `Disconnected` at
/// `/org/freedesktop/DBus/Local` (the D-Bus specification's name for a connection's end), so the call's report says
/// its bus went away.
///
/// # Errors
/// Why the connection ended badly: the bus could not be reached or refused the login, the client broke the
/// authentication or the framing, or sent what ends a connection (a message over the limit, none but Hello first).
pub async fn connection(client: UnixStream, plan: &Plan) -> Result<(), String> {
    let served = relay(client, plan).await;
    if let Err(Ended::Bus(_)) = &served {
        plan.refusals
            .add(DRIVER, Some("Disconnected"), Some("/org/freedesktop/DBus/Local"));
    }
    served.map_err(Ended::into_message)
}

/// How a connection ended badly, by side.
enum Ended {
    /// The bus could not be reached, refused the login, or closed.
    Bus(String),
    /// The client, or what the filter makes of it.
    Client(String),
}

impl Ended {
    fn into_message(self) -> String {
        match self {
            Self::Bus(why) | Self::Client(why) => why,
        }
    }
}

async fn relay(client: UnixStream, plan: &Plan) -> Result<(), Ended> {
    let mut client = Conn::new(client, plan.max_message);
    let bus = UnixStream::connect(&plan.upstream)
        .await
        .map_err(|e| Ended::Bus(format!("cannot connect to the bus at {}: {e}", plan.upstream.display())))?;
    let mut bus = Conn::new(bus, plan.max_message);
    let (guid, _) = sasl::login(&mut bus, plan.uid).await.map_err(Ended::Bus)?;
    let unique = hello(&mut bus).await.map_err(Ended::Bus)?;
    let agreed = sasl::accept(&mut client, &guid).await.map_err(Ended::Client)?;
    let mut filter = Filter::new(
        Arc::clone(&plan.policy),
        Arc::clone(&plan.refusals),
        unique,
        agreed.unix_fds,
    );
    loop {
        let (from_client, read) = tokio::select! {
            read = client.read_message() => (true, read),
            read = bus.read_message() => (false, read),
        };
        let read = match read {
            Ok(read) => read,
            Err(e) if from_client => return Err(Ended::Client(format!("the client: {e}"))),
            Err(e) => return Err(Ended::Bus(format!("the bus: {e}"))),
        };
        let Some((message, fds)) = read else {
            return if from_client {
                Ok(())
            } else {
                Err(Ended::Bus("the bus closed the connection".to_owned()))
            };
        };
        let actions = if from_client {
            filter.from_client(&message, fds)
        } else {
            filter.from_bus(&message, fds)
        };
        for action in actions {
            match action {
                Action::ToClient(message) => client
                    .send_out(&message)
                    .await
                    .map_err(|e| Ended::Client(format!("the client: {e}")))?,
                Action::ToBus(message) => bus
                    .send_out(&message)
                    .await
                    .map_err(|e| Ended::Bus(format!("the bus: {e}")))?,
                Action::Close(why) => return Err(Ended::Client(why)),
            }
        }
    }
}

/// Says Hello to the bus (serial 1) and returns the unique name it gave.
async fn hello(bus: &mut Conn) -> Result<String, String> {
    let message = Message::method_call("/org/freedesktop/DBus", "Hello")
        .and_then(|b| b.destination(DRIVER))
        .and_then(|b| b.interface(DRIVER))
        .map(|b| b.serial(std::num::NonZeroU32::MIN))
        .and_then(|b| b.build(&()))
        .map_err(|e| format!("cannot build Hello: {e}"))?;
    bus.send(&message).await.map_err(|e| format!("the bus: {e}"))?;
    for _ in 0..MAX_BEFORE_HELLO {
        let Some((reply, _)) = bus.read_message().await.map_err(|e| format!("the bus: {e}"))? else {
            break;
        };
        if reply.reply_serial() != Some(std::num::NonZeroU32::MIN) {
            continue;
        }
        if reply.message_type() != Type::MethodReturn {
            return Err("the bus refused Hello".to_owned());
        }
        let reply = reply
            .parsed()
            .ok_or("the bus's answer to Hello is not a D-Bus message")?;
        return reply
            .body()
            .deserialize::<String>()
            .map_err(|e| format!("the bus's answer to Hello: {e}"));
    }
    Err("the bus did not answer Hello".to_owned())
}
