//! `hello`: the protocol version check and what the daemon tells a new client.

use efr_protocol::hello::{Capabilities, HelloParams, HelloPaths, HelloResult, Prove};
use efr_protocol::{ErrorBody, ErrorCode, PROTOCOL_VERSION};
use serde_json::Value;

use super::{params, result};
use crate::daemon::Daemon;
use crate::server::session::{HelloInfo, HelloState, Session};

/// Answers a hello. A second hello on a connection is `conflict` (the spec's probe for clients that cannot see
/// pongs); a protocol other than [`PROTOCOL_VERSION`] is `protocol_mismatch`, after which every request of the
/// connection is refused the same way.
///
/// # Errors
/// `invalid` for bad params, `protocol_mismatch`, `conflict`.
pub fn hello(daemon: &Daemon, session: &Session, raw: Option<Value>) -> Result<Value, ErrorBody> {
    match session.hello_state() {
        HelloState::Waiting => {}
        HelloState::Done => {
            return Err(ErrorBody::new(
                ErrorCode::Conflict,
                "this connection already said hello",
            ));
        }
        HelloState::Mismatched => {
            return Err(ErrorBody::new(
                ErrorCode::ProtocolMismatch,
                "this connection's hello named another protocol",
            ));
        }
    }
    let hello: HelloParams = params(raw)?;
    if hello.protocol != PROTOCOL_VERSION {
        session.set_hello(HelloState::Mismatched, HelloInfo::default());
        return Err(ErrorBody::new(
            ErrorCode::ProtocolMismatch,
            format!(
                "the client speaks protocol {}, efrd speaks {PROTOCOL_VERSION}",
                hello.protocol
            ),
        )
        .with_data(serde_json::json!({"protocol": PROTOCOL_VERSION})));
    }
    // A remote device sits at no terminal of this computer: its tty is ignored (docs/protocol.md, "Remote devices").
    let tty = if session.remote.is_some() { None } else { hello.tty };
    session.set_hello(
        HelloState::Done,
        HelloInfo {
            tty,
            client: Some(hello.client.name),
        },
    );
    if let Some(remote) = &session.remote {
        return result(&HelloResult {
            daemon_id: daemon.daemon_id,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            protocol: PROTOCOL_VERSION,
            capabilities: Capabilities {
                conversations_watch: true,
                approval_local_only: true,
                device_prove: true,
                search: true,
                ..Capabilities::default()
            },
            paths: HelloPaths::default(),
            challenge: Some(remote.challenge.clone()),
            prove: Some(Prove {
                peer_node: remote.peer.node.clone(),
                daemon_node: remote.me.node.clone(),
                daemon_tailnet: remote.me.tailnet.clone(),
            }),
        });
    }
    let roots = &daemon.roots;
    result(&HelloResult {
        daemon_id: daemon.daemon_id,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        protocol: PROTOCOL_VERSION,
        // Only what this efrd really does is announced.
        capabilities: Capabilities {
            conversations_watch: true,
            search: true,
            // efrd sets local_only in approval_requested and refuses a phone's answer to such a question.
            approval_local_only: true,
            ..Capabilities::default()
        },
        paths: HelloPaths {
            socket: Some(roots.socket_path()),
            config: Some(roots.config.path.clone()),
            data: Some(roots.data.path.clone()),
            state: Some(roots.state.path.clone()),
            runtime: Some(roots.runtime.path.clone()),
        },
        challenge: None,
        prove: None,
    })
}
