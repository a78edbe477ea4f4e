//! What a connection is allowed to do: its transport, its scopes and where its hello stands.

use std::sync::Mutex;

use efr_protocol::methods::{Method, Scope, Transport};
use efr_protocol::{ErrorBody, ErrorCode};

use super::peer::Peer;
use crate::remote::RemotePeer;

/// Where a connection's hello stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelloState {
    /// No hello yet: only hello may run.
    Waiting,
    /// Hello succeeded.
    Done,
    /// The hello named another protocol version: nothing else runs.
    Mismatched,
}

/// What the client said in its hello that later requests use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HelloInfo {
    /// The client's terminal (tty path), when it sits at one.
    pub tty: Option<String>,
    /// The client's name, for logs.
    pub client: Option<String>,
}

/// One connection's identity and permissions.
#[derive(Debug)]
pub struct Session {
    /// The listener it came through.
    pub transport: Transport,
    /// The peer's credentials (Unix socket only).
    pub peer: Option<Peer>,
    /// Who the peer is on the tailnet, and its proof (tailnet listener only).
    pub remote: Option<RemotePeer>,
    scopes: Mutex<Vec<Scope>>,
    hello: Mutex<(HelloState, HelloInfo)>,
}

impl Session {
    /// A local peer of efrd's own uid: it holds all five scopes.
    #[must_use]
    pub fn local(peer: Peer) -> Self {
        Self {
            transport: Transport::Local,
            peer: Some(peer),
            remote: None,
            scopes: Mutex::new(Scope::LOCAL.to_vec()),
            hello: Mutex::new((HelloState::Waiting, HelloInfo::default())),
        }
    }

    /// A connection of the tailnet listener: no scope until its device proves itself.
    #[must_use]
    pub fn remote(remote: RemotePeer) -> Self {
        Self {
            transport: Transport::Remote,
            peer: None,
            remote: Some(remote),
            scopes: Mutex::new(Vec::new()),
            hello: Mutex::new((HelloState::Waiting, HelloInfo::default())),
        }
    }

    /// Gives the connection the scopes of its proven device; admin and terminal are never given to a phone.
    pub fn grant(&self, scopes: &[Scope]) {
        let granted = scopes
            .iter()
            .copied()
            .filter(|scope| self.transport == Transport::Local || !matches!(scope, Scope::Admin | Scope::Terminal))
            .collect();
        *self.scopes.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = granted;
    }

    /// Where the hello stands.
    pub fn hello_state(&self) -> HelloState {
        self.hello.lock().map_or(HelloState::Mismatched, |h| h.0)
    }

    /// What the hello said (default before it).
    pub fn hello_info(&self) -> HelloInfo {
        self.hello.lock().map(|h| h.1.clone()).unwrap_or_default()
    }

    /// Records the outcome of a hello.
    pub fn set_hello(&self, state: HelloState, info: HelloInfo) {
        if let Ok(mut hello) = self.hello.lock() {
            *hello = (state, info);
        }
    }

    /// Whether the connection holds `scope`.
    pub fn holds(&self, scope: Scope) -> bool {
        self.scopes().contains(&scope)
    }

    /// The scopes the connection holds.
    pub fn scopes(&self) -> Vec<Scope> {
        self.scopes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Whether this is a tailnet connection whose device has not proved itself yet.
    pub fn awaits_proof(&self) -> bool {
        self.remote.as_ref().is_some_and(|remote| !remote.proved())
    }

    /// Checks the method table's transport and scope for `method` (before the handler runs:
    /// docs/architecture.md, "The request lifecycle").
    ///
    /// # Errors
    /// `forbidden` naming the method and the missing scope or the transport.
    pub fn check_allowed(&self, method: Method) -> Result<(), ErrorBody> {
        let spec = method.spec();
        // Before the proof, a tailnet connection may call only hello, device.enroll and device.prove
        // (docs/protocol.md, "Remote devices": the answers of the tailnet listener), and every other method is
        // `unauthorized`, even one the tailnet never serves: an unproven peer learns nothing of the method table.
        if self.awaits_proof() && !matches!(method, Method::Hello | Method::DeviceEnroll | Method::DeviceProve) {
            return Err(ErrorBody::new(
                ErrorCode::Unauthorized,
                format!("`{}` needs a proven device: call device.prove first", spec.name),
            ));
        }
        if !spec.transports.allows(self.transport) {
            let on = match self.transport {
                Transport::Local => "the Unix socket",
                Transport::Remote => "the tailnet listener",
            };
            return Err(ErrorBody::new(
                ErrorCode::Forbidden,
                format!("`{}` is not served on {on}", spec.name),
            ));
        }
        if matches!(method, Method::DeviceEnroll | Method::DeviceProve) {
            return Ok(());
        }
        if !self.holds(spec.scope) {
            return Err(ErrorBody::new(
                ErrorCode::Forbidden,
                format!("`{}` needs the scope `{}`", spec.name, spec.scope.as_str()),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> Session {
        Session::local(Peer { pid: 1, uid: 0, gid: 0 })
    }

    #[test]
    fn a_local_peer_holds_every_scope_but_not_remote_only_methods() {
        let session = local();
        assert!(session.check_allowed(Method::AdminStatus).is_ok());
        assert!(session.check_allowed(Method::InputRespond).is_ok());
        let error = session.check_allowed(Method::DeviceProve).unwrap_err();
        assert_eq!(error.code, ErrorCode::Forbidden);
        assert!(error.message.contains("Unix socket"));
    }

    #[test]
    fn a_missing_scope_is_forbidden_and_named() {
        let session = local();
        session.grant(&[Scope::Read]);
        let error = session.check_allowed(Method::PromptSend).unwrap_err();
        assert_eq!(error.code, ErrorCode::Forbidden);
        assert!(error.message.contains("operate"), "{}", error.message);
        assert!(session.check_allowed(Method::ModelsList).is_ok());
    }
}
