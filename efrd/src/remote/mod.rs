//! The phone over the tailnet: efrd's WebSocket listener on its Tailscale address (docs/remote.md,
//! docs/adr/0015-remote-devices.md, docs/protocol.md "Remote devices").
//!
//! - [`localapi`]: tailscaled's LocalAPI (status, whois).
//! - [`admission`]: the address range and whois rules, before a byte is read.
//! - [`handshake`]: the HTTP upgrade's rules.
//! - [`sniff`]: the reader that refuses fragmented messages.
//! - [`pairing`]: the open pairings of device.pair_start, in memory; [`prove`]: the device key and its signature.
//!
//! The listener itself and the WebSocket bridge are server code (`server::tailnet`, `server::websocket`): this
//! module imports nothing of the server or the daemon.

pub mod admission;
pub mod handshake;
pub mod localapi;
pub mod pairing;
pub mod prove;
pub mod sniff;

use std::collections::HashMap;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use efr_protocol::ids::DeviceId;
use tokio_util::sync::CancellationToken;

use self::admission::PeerFacts;
use self::localapi::SelfFacts;

/// What the listener does now (device.pair_start and admin.status read it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ListenerState {
    /// `[remote] enabled` is false.
    #[default]
    Off,
    /// Enabled, but tailscaled is not there, this node is not on a tailnet, or the port cannot be bound.
    NotListening,
    /// Listening on `addr`.
    Listening {
        /// The tailnet IPv4 address and the port.
        addr: SocketAddrV4,
        /// This node's facts.
        me: SelfFacts,
    },
}

/// The listener's shared state.
#[derive(Debug, Default)]
pub struct RemoteState {
    state: Mutex<ListenerState>,
    connections: AtomicUsize,
    /// The open pairings.
    pub pairings: pairing::Pairings,
    /// The connections of each proven device, for a revoke.
    proven: Mutex<HashMap<DeviceId, Vec<CancellationToken>>>,
}

impl RemoteState {
    /// What the listener does now.
    pub fn state(&self) -> ListenerState {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Records what the listener does now.
    pub fn set_state(&self, state: ListenerState) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = state;
    }

    /// How many WebSocket connections are open.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// Remembers that `kick` closes a connection of `device`.
    pub fn proven(&self, device: DeviceId, kick: CancellationToken) {
        let mut proven = self.proven.lock().unwrap_or_else(PoisonError::into_inner);
        let kicks = proven.entry(device).or_default();
        kicks.retain(|kick| !kick.is_cancelled());
        kicks.push(kick);
    }

    /// Closes every connection of `device` (with 1001, by their socket).
    pub fn kick_device(&self, device: DeviceId) {
        let kicks = self
            .proven
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&device);
        for kick in kicks.into_iter().flatten() {
            kick.cancel();
        }
    }

    /// Counts an open connection until the guard drops.
    pub fn connection(&self) -> ConnectionGuard<'_> {
        self.connections.fetch_add(1, Ordering::Relaxed);
        ConnectionGuard(self)
    }
}

/// Counts one open connection (see [`RemoteState::connection`]).
#[derive(Debug)]
pub struct ConnectionGuard<'a>(&'a RemoteState);

impl Drop for ConnectionGuard<'_> {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Who a tailnet connection's peer is, and where its proof stands.
#[derive(Debug)]
pub struct RemotePeer {
    /// What whois said of the peer.
    pub peer: PeerFacts,
    /// This node's facts when the connection was admitted.
    pub me: SelfFacts,
    /// The listener's address and port (the Origin rule).
    pub local: SocketAddrV4,
    /// The challenge of this connection's hello result: 144 random bits, base64url without padding.
    pub challenge: String,
    /// Closes this connection with 1001.
    pub kick: CancellationToken,
    proved: AtomicBool,
    refusals: AtomicU32,
}

impl RemotePeer {
    /// A peer that has not proved a device yet, with a fresh challenge.
    #[must_use]
    pub fn new(peer: PeerFacts, me: SelfFacts, local: SocketAddrV4, kick: CancellationToken) -> Self {
        Self {
            peer,
            me,
            local,
            challenge: random_token(),
            kick,
            proved: AtomicBool::new(false),
            refusals: AtomicU32::new(0),
        }
    }

    /// Counts a refused device.prove and returns how many there were.
    pub fn refused(&self) -> u32 {
        self.refusals.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Whether a device proved itself on this connection.
    pub fn proved(&self) -> bool {
        self.proved.load(Ordering::Acquire)
    }

    /// Records a proof; false when a device proved itself on this connection before.
    pub fn set_proved(&self) -> bool {
        !self.proved.swap(true, Ordering::AcqRel)
    }
}

/// 144 random bits as 24 characters of base64url without padding: a challenge or a pairing token.
#[must_use]
pub fn random_token() -> String {
    use base64::Engine as _;
    let bytes: [u8; 18] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_24_url_safe_characters_and_never_repeats() {
        let a = random_token();
        assert_eq!(a.len(), 24);
        assert!(a.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_ne!(a, random_token());
    }
}
