//! The filter of one proxied connection: each message from the client or from the bus is checked against the
//! policy and forwarded, answered with a synthetic error, or dropped (docs/bus.md, "What the filter checks").
//!
//! Serials are renumbered both ways: the bus sees the proxy's serials and the client sees the proxy's serials, so a
//! reply is forwarded only when it answers a call that went the other way through this filter, and a client cannot
//! forge a reply to another peer's call. A message that passes is the bytes it came as, renumbered in place
//! ([`crate::header`]): nothing the filter did not read reaches the other side, and nothing is written twice. The
//! filter does no I/O: it turns one message into [`Action`]s. The calls to the bus driver, its replies and its signals
//! are `driver.rs`.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use zbus::message::{Builder, Message, Type};

use crate::policy::{Level, Policy};
use crate::report::Refusals;
use crate::wire::{Incoming, Outgoing};

mod driver;

/// The bus driver's name.
pub const DRIVER: &str = "org.freedesktop.DBus";

/// The most calls in flight one way (the client's awaiting replies, or the bus's awaiting the client's). A client
/// over it gets LimitsExceeded: the tables stay bounded whatever it sends.
pub const MAX_PENDING: usize = 4096;

/// The most peers (unique names) the filter remembers as owners of names the client may see.
pub const MAX_PEERS: usize = 1024;

const ACCESS_DENIED: &str = "org.freedesktop.DBus.Error.AccessDenied";
const SERVICE_UNKNOWN: &str = "org.freedesktop.DBus.Error.ServiceUnknown";
const NAME_HAS_NO_OWNER: &str = "org.freedesktop.DBus.Error.NameHasNoOwner";
const LIMITS_EXCEEDED: &str = "org.freedesktop.DBus.Error.LimitsExceeded";
const FAILED: &str = "org.freedesktop.DBus.Error.Failed";

/// What to do with a message.
#[derive(Debug)]
pub enum Action {
    /// Send to the client.
    ToClient(Outgoing),
    /// Send to the bus.
    ToBus(Outgoing),
    /// End the connection, for this reason.
    Close(String),
}

/// A call of the client that awaits the bus's reply.
#[derive(Debug)]
struct Pending {
    client_serial: NonZeroU32,
    kind: ReplyKind,
    /// The call's destination, member and path, which a refused reply is counted under.
    call: (String, Option<String>, Option<String>),
}

/// What the filter does with a reply besides renumbering it.
#[derive(Debug)]
enum ReplyKind {
    Plain,
    /// The call went to this well-known name: its sender owns it.
    Learn(String),
    /// A GetNameOwner of this name: the returned unique name owns it.
    NameOwner(String),
    /// ListNames or ListActivatableNames: only names the client may see stay in it.
    ListNames,
}

/// The state of one connection's filter.
#[derive(Debug)]
pub struct Filter {
    policy: Arc<Policy>,
    refusals: Arc<Refusals>,
    /// The unique name the bus gave the proxy's connection, which the client gets as its own.
    unique: String,
    /// Whether the client agreed to pass descriptors.
    client_fds: bool,
    hello: bool,
    next_bus: u32,
    next_client: u32,
    /// The bus serial of a client's call → the client's serial.
    to_bus: HashMap<u32, Pending>,
    /// The client serial of a bus peer's call → its serial on the bus and its caller.
    to_client: HashMap<u32, (NonZeroU32, String)>,
    /// Unique names → the well-known names (that the client may see) they own.
    peers: HashMap<String, Vec<String>>,
}

impl Filter {
    /// A filter for a client whose bus connection is `unique`; `first_bus_serial` is the last serial the proxy
    /// used on the bus (its Hello).
    #[must_use]
    pub fn new(policy: Arc<Policy>, refusals: Arc<Refusals>, unique: String, client_fds: bool) -> Self {
        Self {
            policy,
            refusals,
            unique,
            client_fds,
            hello: false,
            next_bus: 1,
            next_client: 0,
            to_bus: HashMap::new(),
            to_client: HashMap::new(),
            peers: HashMap::new(),
        }
    }

    /// The calls in flight both ways (for tests of memory bounds).
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.to_bus.len() + self.to_client.len()
    }

    /// Checks a message from the client.
    pub fn from_client(&mut self, message: &Incoming, fds: Vec<OwnedFd>) -> Vec<Action> {
        if !self.hello {
            return if message.message_type() == Type::MethodCall && is_driver(message, "Hello") {
                self.hello = true;
                let unique = self.unique.clone();
                let mut actions = self.driver_reply(message, &(unique.as_str(),));
                // As dbus-daemon does: the reply, then NameAcquired for the unique name.
                let serial = self.client_serial();
                let acquired = Message::signal("/org/freedesktop/DBus", DRIVER, "NameAcquired")
                    .and_then(|b| b.sender(DRIVER))
                    .and_then(|b| b.destination(unique.as_str()))
                    .map(|b| b.serial(serial))
                    .and_then(|b| b.build(&(unique.as_str(),)));
                actions.extend(acquired.map(|m| Action::ToClient(m.into())));
                actions
            } else {
                vec![Action::Close("the client's first message was not Hello".to_owned())]
            };
        }
        if !fds.is_empty() && !self.client_fds {
            return vec![Action::Close("descriptors without NEGOTIATE_UNIX_FD".to_owned())];
        }
        let destination = message.destination();
        match message.message_type() {
            Type::MethodCall => match destination {
                Some(DRIVER) => self.driver_call(message, fds),
                Some(name) if name == self.unique => self.forward_call(message, fds, ReplyKind::Plain),
                Some(name) => self.client_call(message, fds, name),
                None => self.refuse(message, "", ACCESS_DENIED, "a method call needs a destination"),
            },
            Type::MethodReturn | Type::Error => self.client_reply(message, fds),
            Type::Signal => match destination {
                // A broadcast: its sender is the proxy's unique name, so it cannot pass for another peer's.
                None => self.forward(message, fds, Side::Bus),
                Some(name) if self.level_of(name) >= Level::Talk => self.forward(message, fds, Side::Bus),
                Some(name) => {
                    self.report(message, name);
                    Vec::new()
                }
            },
        }
    }

    /// Checks a message from the bus.
    pub fn from_bus(&mut self, message: &Incoming, fds: Vec<OwnedFd>) -> Vec<Action> {
        let sender = message.sender().unwrap_or_default();
        let reply_serial = message.reply_serial();
        if !self.hello {
            // Nothing reaches the client before its Hello is answered (sd-bus takes anything else as an error); the
            // bus's NameAcquired for the proxy's connection is made again after the reply.
            return Vec::new();
        }
        // A reply comes from the owner of the name the client called (the bus routes only expected replies), which
        // the filter may not have learnt yet: its descriptors pass when that name may pass them.
        let called = match message.message_type() {
            Type::MethodReturn | Type::Error => reply_serial
                .and_then(|serial| self.to_bus.get(&serial.get()))
                .map(|pending| pending.call.0.as_str()),
            _ => None,
        };
        let fds_allowed = self.fds_allowed(sender) || called.is_some_and(|name| self.fds_allowed(name));
        if !(fds.is_empty() || self.client_fds && fds_allowed) {
            // Descriptors the client may not get: the descriptors are closed, and a reply is answered with an error
            // (counted in bus_refused) so the client's call ends now, not at its timeout.
            drop(fds);
            return self.refuse_descriptors(message, reply_serial);
        }
        match message.message_type() {
            Type::MethodReturn | Type::Error => {
                let Some(pending) = reply_serial.and_then(|serial| self.to_bus.remove(&serial.get())) else {
                    return Vec::new();
                };
                self.bus_reply(message, fds, sender, pending)
            }
            Type::Signal if sender == DRIVER => self.driver_signal(message, fds),
            Type::Signal => {
                let (interface, member, path) = names(message);
                let mine = self.peers.get(sender).cloned().unwrap_or_default();
                let allowed = self.level_of(sender) >= Level::Talk
                    || mine
                        .iter()
                        .any(|name| self.policy.may_receive(name, interface, member, path));
                if allowed {
                    self.forward(message, fds, Side::Client)
                } else {
                    Vec::new()
                }
            }
            Type::MethodCall => {
                if self.level_of(sender) >= Level::Talk && self.to_client.len() < MAX_PENDING {
                    let serial = message.layout().serial();
                    let actions = self.forward(message, fds, Side::Client);
                    if !no_reply(message) {
                        self.to_client.insert(self.next_client, (serial, sender.to_owned()));
                    }
                    actions
                } else if no_reply(message) {
                    Vec::new()
                } else {
                    let serial = self.bus_serial();
                    let error = error_to(message, ACCESS_DENIED)
                        .map(|b| b.serial(serial))
                        .and_then(|b| b.build(&("the call's bus filter does not let this peer call it",)));
                    error.map(|m| Action::ToBus(m.into())).into_iter().collect()
                }
            }
        }
    }

    /// A message from the bus whose descriptors the client may not receive: a reply to a call of the client becomes
    /// an AccessDenied error for that call, counted under the call's destination; a call from a peer is answered on
    /// the bus with AccessDenied; a signal is dropped.
    fn refuse_descriptors(&mut self, message: &Incoming, reply_serial: Option<NonZeroU32>) -> Vec<Action> {
        const TEXT: &str = "the call's bus filter does not let descriptors pass from this peer";
        match message.message_type() {
            Type::MethodReturn | Type::Error => {
                let Some(pending) = reply_serial.and_then(|serial| self.to_bus.remove(&serial.get())) else {
                    return Vec::new();
                };
                let (name, member, path) = &pending.call;
                self.refusals.add(name, member.as_deref(), path.as_deref());
                let serial = self.client_serial();
                error_to(message, ACCESS_DENIED)
                    .and_then(|b| b.sender(DRIVER))
                    .and_then(|b| b.destination(self.unique.as_str()))
                    .map(|b| b.serial(serial).reply_serial(Some(pending.client_serial)))
                    .and_then(|b| b.build(&(TEXT,)))
                    .map(|m| Action::ToClient(m.into()))
                    .into_iter()
                    .collect()
            }
            Type::MethodCall if !no_reply(message) => {
                let serial = self.bus_serial();
                error_to(message, ACCESS_DENIED)
                    .map(|b| b.serial(serial))
                    .and_then(|b| b.build(&(TEXT,)))
                    .map(|m| Action::ToBus(m.into()))
                    .into_iter()
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    fn client_call(&mut self, message: &Incoming, fds: Vec<OwnedFd>, name: &str) -> Vec<Action> {
        let (interface, member, path) = names(message);
        let level = self.level_of(name);
        let owned = self.names_of(name);
        let allowed = level >= Level::Talk || owned.iter().any(|n| self.policy.may_call(n, interface, member, path));
        if !allowed {
            let error = if self.visible(name) {
                ACCESS_DENIED
            } else if name.starts_with(':') {
                NAME_HAS_NO_OWNER
            } else {
                SERVICE_UNKNOWN
            };
            return self.refuse(
                message,
                name,
                error,
                &format!("the call's bus filter does not let it call {name}"),
            );
        }
        if !fds.is_empty() && !self.fds_allowed(name) {
            return self.refuse(
                message,
                name,
                ACCESS_DENIED,
                &format!("descriptors may not pass to {name}"),
            );
        }
        let kind = if name.starts_with(':') {
            ReplyKind::Plain
        } else {
            ReplyKind::Learn(name.to_owned())
        };
        self.forward_call(message, fds, kind)
    }

    fn client_reply(&mut self, message: &Incoming, fds: Vec<OwnedFd>) -> Vec<Action> {
        let Some(serial) = message.reply_serial() else {
            return Vec::new();
        };
        // A reply to no call the bus made to the client through this filter (a forgery, or a second reply): dropped.
        let Some((bus_serial, caller)) = self.to_client.remove(&serial.get()) else {
            return Vec::new();
        };
        if !fds.is_empty() && !self.fds_allowed(&caller) {
            return Vec::new();
        }
        let serial = self.bus_serial();
        renumbered(message, serial, Some(bus_serial), Some(&caller), fds)
            .map(Action::ToBus)
            .into_iter()
            .collect()
    }

    /// Forwards a client's call to the bus, remembering it for its reply.
    fn forward_call(&mut self, message: &Incoming, fds: Vec<OwnedFd>, kind: ReplyKind) -> Vec<Action> {
        let no_reply = no_reply(message);
        if !no_reply && self.to_bus.len() >= MAX_PENDING {
            return self.refuse_quietly(message, LIMITS_EXCEEDED, "too many calls awaiting replies");
        }
        let client_serial = message.layout().serial();
        let actions = self.forward(message, fds, Side::Bus);
        if !no_reply && !actions.is_empty() {
            let call = (
                message.destination().unwrap_or_default().to_owned(),
                message.member().map(ToOwned::to_owned),
                message.path().map(ToOwned::to_owned),
            );
            self.to_bus.insert(
                self.next_bus,
                Pending {
                    client_serial,
                    kind,
                    call,
                },
            );
        }
        actions
    }

    /// Forwards a message to `side` with the next serial of that side, its reply serial (if any) kept.
    fn forward(&mut self, message: &Incoming, fds: Vec<OwnedFd>, side: Side) -> Vec<Action> {
        match side {
            Side::Bus => {
                let serial = self.bus_serial();
                renumbered(message, serial, None, None, fds).map(Action::ToBus)
            }
            Side::Client => {
                let serial = self.client_serial();
                renumbered(message, serial, None, None, fds).map(Action::ToClient)
            }
        }
        .into_iter()
        .collect()
    }

    /// A refusal that is reported in `bus_refused`, with its synthetic error.
    fn refuse(&mut self, message: &Incoming, name: &str, error: &str, text: &str) -> Vec<Action> {
        self.report(message, name);
        self.refuse_quietly(message, error, text)
    }

    fn report(&self, message: &Incoming, name: &str) {
        let (_, member, path) = names(message);
        self.refusals.add(name, member, path);
    }

    /// A synthetic error from the bus driver to the client's call (none when it expects no reply).
    fn refuse_quietly(&mut self, message: &Incoming, error: &str, text: &str) -> Vec<Action> {
        if no_reply(message) {
            return Vec::new();
        }
        let serial = self.client_serial();
        error_to(message, error)
            .and_then(|b| b.sender(DRIVER))
            .and_then(|b| b.destination(self.unique.as_str()))
            .map(|b| b.serial(serial))
            .and_then(|b| b.build(&(text,)))
            .map(|m| Action::ToClient(m.into()))
            .into_iter()
            .collect()
    }

    /// A reply from the bus driver, made by the filter.
    fn driver_reply<B>(&mut self, message: &Incoming, body: &B) -> Vec<Action>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        if no_reply(message) {
            return Vec::new();
        }
        let serial = self.client_serial();
        parsed(message)
            .and_then(|m| Message::method_return(&m.header()))
            .and_then(|b| b.sender(DRIVER))
            .and_then(|b| b.destination(self.unique.as_str()))
            .map(|b| b.serial(serial))
            .and_then(|b| b.build(body))
            .map(|m| Action::ToClient(m.into()))
            .into_iter()
            .collect()
    }

    fn learn(&mut self, unique: &str, name: &str) {
        if !unique.starts_with(':') || unique == self.unique || !self.policy.mentions(name) {
            return;
        }
        if !self.peers.contains_key(unique) && self.peers.len() >= MAX_PEERS {
            return;
        }
        let names = self.peers.entry(unique.to_owned()).or_default();
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }

    /// The well-known names a destination stands for: itself, or the names its unique name owns.
    fn names_of(&self, name: &str) -> Vec<String> {
        if name.starts_with(':') {
            self.peers.get(name).cloned().unwrap_or_default()
        } else {
            vec![name.to_owned()]
        }
    }

    fn level_of(&self, name: &str) -> Level {
        if name == DRIVER || name == self.unique {
            return Level::Talk;
        }
        let level = self
            .names_of(name)
            .iter()
            .map(|n| self.policy.level(n))
            .max()
            .unwrap_or(Level::None);
        if level == Level::None && self.visible(name) {
            Level::See
        } else {
            level
        }
    }

    fn visible(&self, name: &str) -> bool {
        if name == DRIVER || name == self.unique {
            return true;
        }
        if name.starts_with(':') {
            return self.peers.get(name).is_some_and(|names| !names.is_empty());
        }
        self.policy.mentions(name)
    }

    fn fds_allowed(&self, name: &str) -> bool {
        self.names_of(name).iter().any(|n| self.policy.fds_allowed(n))
    }

    fn bus_serial(&mut self) -> NonZeroU32 {
        next(&mut self.next_bus)
    }

    fn client_serial(&mut self) -> NonZeroU32 {
        next(&mut self.next_client)
    }
}

#[derive(Debug, Clone, Copy)]
enum Side {
    Bus,
    Client,
}

fn next(counter: &mut u32) -> NonZeroU32 {
    *counter = counter.wrapping_add(1);
    if *counter == 0 {
        *counter = 1;
    }
    NonZeroU32::new(*counter).unwrap_or(NonZeroU32::MIN)
}

fn no_reply(message: &Incoming) -> bool {
    message.layout().no_reply()
}

fn is_driver(message: &Incoming, member: &str) -> bool {
    message.destination() == Some(DRIVER)
        && message.interface().is_none_or(|i| i == DRIVER)
        && message.member() == Some(member)
}

fn names(message: &Incoming) -> (Option<&str>, Option<&str>, Option<&str>) {
    (message.interface(), message.member(), message.path())
}

/// zbus's parse of the whole message, for what its header does not say (its body, or the header of an answer the
/// filter makes); an error when zbus refuses the bytes, so that nothing is made or forwarded from them.
fn parsed(message: &Incoming) -> zbus::Result<&Message> {
    message
        .parsed()
        .ok_or_else(|| zbus::Error::Failure("a message zbus cannot parse".to_owned()))
}

/// The body of `message`, when zbus reads it as a `T`.
fn body<T>(message: &Incoming) -> Option<T>
where
    T: for<'de> zbus::zvariant::DynamicDeserialize<'de>,
{
    parsed(message).ok()?.body().deserialize::<T>().ok()
}

/// An error answering `message`, from the driver's point of view (the caller sets the sender and destination).
fn error_to<'e>(message: &Incoming, name: &'e str) -> zbus::Result<Builder<'e>> {
    parsed(message).and_then(|m| Message::error(&m.header(), name))
}

/// The message renumbered for the other side: its own bytes with `serial` (and `reply_serial`, when given) written in
/// place, so what passes is exactly what the filter read and checked, at no cost of writing it again. A reply serial
/// to add or a destination to change (a reply of the client's addressed to another than its caller) is written anew
/// by zbus's builder instead.
fn renumbered(
    message: &Incoming,
    serial: NonZeroU32,
    reply_serial: Option<NonZeroU32>,
    destination: Option<&str>,
    fds: Vec<OwnedFd>,
) -> zbus::Result<Outgoing> {
    if (reply_serial.is_none() || message.reply_serial().is_some())
        && destination.is_none_or(|d| message.destination() == Some(d))
    {
        let mut bytes = message.bytes().to_vec();
        message.layout().renumber(&mut bytes, serial, reply_serial);
        return Ok(Outgoing::Forwarded { bytes, fds });
    }
    let reply_serial = reply_serial.or_else(|| message.reply_serial());
    rebuild(message, serial, reply_serial, destination, fds).map(Outgoing::Made)
}

/// The message written anew with new serials (and a new destination), carrying `fds`.
fn rebuild(
    message: &Incoming,
    serial: NonZeroU32,
    reply_serial: Option<NonZeroU32>,
    destination: Option<&str>,
    fds: Vec<OwnedFd>,
) -> zbus::Result<Message> {
    let message = parsed(message)?;
    let body = message.body();
    let mut builder = Builder::from(message.header())
        .serial(serial)
        .reply_serial(reply_serial);
    if let Some(destination) = destination {
        builder = builder.destination(destination)?;
    }
    let fds = fds.into_iter().map(zbus::zvariant::OwnedFd::from).collect();
    // SAFETY: the body's bytes are those of a message zbus parsed, in its endianness and with its signature; the
    // descriptors are the ones that came with it, in order, so its indices name the same descriptors.
    unsafe { builder.build_raw_body(body.data().bytes(), body.signature().clone(), fds) }
}
