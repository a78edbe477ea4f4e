//! The device methods: pairing (device.pair_start, device.pair_confirm, device.enroll), the proof (device.prove), and
//! device.list and device.revoke. The rules live in `crate::remote` (pairing, prove) and the store (devices).

use std::time::Duration;

use efr_protocol::device::{PairingPayload, ProveInputs, key_fingerprint, pairing_qr_url, prove_message};
use efr_protocol::ids::{DeviceId, PairingId, Timestamp};
use efr_protocol::methods::Scope;
use efr_protocol::secret::SecretText;
use efr_protocol::wire::{
    DeviceEnrollParams, DeviceEnrollResult, DeviceInfo, DeviceListResult, DevicePairConfirmParams,
    DevicePairConfirmResult, DevicePairStartParams, DeviceProveParams, DeviceProveResult, DeviceRevokeParams,
    DeviceRevokeResult, PairEnd, PairStartItem,
};
use efr_protocol::{ErrorBody, ErrorCode, PROTOCOL_VERSION};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{params, result};
use crate::remote::pairing::{EnrollOutcome, Enrollment, Pairings, StreamEvent};
use crate::remote::{ListenerState, RemotePeer, prove, random_token};
use crate::server::{RequestCtx, StreamSink};
use efr_store::{DeviceRow, Inserted};

/// The scopes of a paired phone: never admin or terminal (docs/protocol.md, "Remote devices").
pub const PHONE_SCOPES: [Scope; 3] = [Scope::Read, Scope::Operate, Scope::Approve];

/// The one message of every refused proof, so that a refusal tells nothing of why.
const NOT_PROVEN: &str = "the device could not be proven";

/// After this many refused proofs, the connection closes.
const MAX_REFUSALS: u32 = 3;

fn store_error(error: &efr_store::StoreError) -> ErrorBody {
    ErrorBody::new(ErrorCode::Busy, format!("the device store cannot answer now: {error}"))
        .with_data(json!({"starting": true, "retry_after_secs": 1}))
}

/// Removes a pairing when its stream ends, however it ends (a cancel, a closed connection, its last item).
struct CloseOnDrop<'a>(&'a Pairings, PairingId);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.close(self.1);
    }
}

/// device.pair_start: opens a pairing and reports it until it pairs or ends.
///
/// # Errors
/// `conflict` with `{"remote": "off"}` when `[remote] enabled` is false; `busy` with `{"remote": "not_listening"}`
/// while the listener does not run, or when 4 pairings are open.
pub async fn pair_start(ctx: &RequestCtx, raw: Option<Value>, sink: &mut StreamSink) -> Result<(), ErrorBody> {
    let params: DevicePairStartParams = params(raw)?;
    let daemon = &ctx.daemon;
    let (addr, me) = match daemon.remote.state() {
        ListenerState::Off => {
            return Err(ErrorBody::new(
                ErrorCode::Conflict,
                "the tailnet listener is off: set `enabled = true` in [remote] of config.toml and restart efrd",
            )
            .with_data(json!({"remote": "off"})));
        }
        ListenerState::NotListening => {
            return Err(ErrorBody::new(
                ErrorCode::Busy,
                "the tailnet listener does not listen: is tailscaled running and this machine on a tailnet?",
            )
            .with_data(json!({"remote": "not_listening"})));
        }
        ListenerState::Listening { addr, me } => (addr, me),
    };
    let pairings = &daemon.remote.pairings;
    let token = random_token();
    let pairing_id = PairingId::new();
    let (tx, mut rx) = mpsc::unbounded_channel();
    // `[remote]` keeps the value efrd started with until a restart.
    let lifetime = Duration::from_secs(daemon.config().remote.token_lifetime_secs);
    pairings
        .open(pairing_id, &token, params.name, lifetime, tx)
        .map_err(|_| ErrorBody::new(ErrorCode::Busy, "4 pairings are open: finish or cancel one first"))?;
    let _close = CloseOnDrop(pairings, pairing_id);
    let lifetime = i64::try_from(lifetime.as_millis()).unwrap_or(i64::MAX);
    let expires_at =
        Timestamp::from_millis(Timestamp::now().as_millis().saturating_add(lifetime)).unwrap_or_else(Timestamp::now);
    let qr = pairing_qr_url(&PairingPayload {
        protocol: PROTOCOL_VERSION,
        daemon_id: daemon.daemon_id,
        host: *addr.ip(),
        port: addr.port(),
        fqdn: me.fqdn,
        token: SecretText::new(token),
    });
    let started = PairStartItem::Started {
        pairing_id,
        expires_at,
        qr: SecretText::new(qr),
    };
    if sink.item(result(&started)?).await.is_err() {
        return Ok(());
    }
    loop {
        let expiry = pairings.expiry(pairing_id);
        let event = tokio::select! {
            event = rx.recv() => event,
            () = sleep_until(expiry) => {
                pairings.end(pairing_id, PairEnd::Expired);
                continue;
            }
        };
        let (item, last) = match event {
            None => return Ok(()),
            Some(StreamEvent::Pending(enrollment)) => (
                PairStartItem::Pending {
                    pairing_id,
                    device_name: enrollment.name,
                    node_name: enrollment.peer.node_name,
                    user_login: enrollment.peer.user_login,
                    key_fingerprint: enrollment.key_fingerprint,
                    os: enrollment.peer.os,
                },
                false,
            ),
            Some(StreamEvent::Paired(device_id)) => (PairStartItem::Paired { pairing_id, device_id }, true),
            Some(StreamEvent::Ended(reason)) => (PairStartItem::Ended { pairing_id, reason }, true),
        };
        if sink.item(result(&item)?).await.is_err() || last {
            return Ok(());
        }
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Ends the pairing with `expired` when the phone's request goes before the answer.
struct ExpireOnDrop<'a> {
    pairings: &'a Pairings,
    id: PairingId,
    armed: bool,
}

impl Drop for ExpireOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.pairings.end(self.id, PairEnd::Expired);
        }
    }
}

fn remote(ctx: &RequestCtx) -> Result<&RemotePeer, ErrorBody> {
    ctx.session
        .remote
        .as_ref()
        .ok_or_else(|| ErrorBody::new(ErrorCode::Forbidden, "only the tailnet listener serves this method"))
}

/// device.enroll: the phone's key for a pairing's token; answers after the terminal's answer.
///
/// # Errors
/// `unauthorized` for a wrong token, `invalid` for a key that is not a P-256 point, `conflict` for a key a device
/// holds (the token stays good for both), `forbidden` after a no, an end of the pairing or no answer in time.
pub async fn enroll(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: DeviceEnrollParams = params(raw)?;
    let remote = remote(ctx)?;
    let pairings = &ctx.daemon.remote.pairings;
    let (pairing_id, name) = pairings
        .find(params.token.expose())
        .map_err(|_| ErrorBody::new(ErrorCode::Unauthorized, "the token is not good"))?;
    let key = prove::parse_public_key(&params.public_key).map_err(|e| ErrorBody::invalid(e.to_string()))?;
    match ctx.daemon.store.device_key_held(key.to_vec()).await {
        Ok(false) => {}
        Ok(true) => {
            return Err(ErrorBody::new(
                ErrorCode::Conflict,
                "a paired device holds this key: make a new key and enroll again",
            ));
        }
        Err(error) => return Err(store_error(&error)),
    }
    let enrollment = Enrollment {
        name: name.unwrap_or(params.name),
        public_key: key.to_vec(),
        key_fingerprint: key_fingerprint(&key),
        peer: remote.peer.clone(),
        tailnet: remote.me.tailnet.clone(),
    };
    let waiting = pairings
        .enroll(pairing_id, enrollment)
        .ok_or_else(|| ErrorBody::new(ErrorCode::Unauthorized, "the token is not good"))?;
    let mut guard = ExpireOnDrop {
        pairings,
        id: pairing_id,
        armed: true,
    };
    let outcome = tokio::select! {
        outcome = waiting.outcome => outcome.ok(),
        () = tokio::time::sleep_until(waiting.deadline) => None,
    };
    guard.armed = false;
    match outcome {
        Some(EnrollOutcome::Paired(device_id)) => result(&DeviceEnrollResult {
            device_id,
            scopes: PHONE_SCOPES.to_vec(),
        }),
        Some(EnrollOutcome::Refused) => Err(ErrorBody::new(ErrorCode::Forbidden, "the user refused the pairing")),
        None => {
            pairings.end(pairing_id, PairEnd::Expired);
            Err(ErrorBody::new(
                ErrorCode::Forbidden,
                "the pairing ended without an answer",
            ))
        }
    }
}

/// device.pair_confirm: the terminal's answer to `pending`.
///
/// # Errors
/// `not_found` when no phone waits in the pairing; `conflict` when another device took the key meanwhile.
pub async fn pair_confirm(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: DevicePairConfirmParams = params(raw)?;
    let (enrollment, answer) = ctx
        .daemon
        .remote
        .pairings
        .take_enrollment(params.pairing_id)
        .ok_or_else(|| ErrorBody::new(ErrorCode::NotFound, "no phone waits for an answer in this pairing"))?;
    if !params.accept {
        answer.send(EnrollOutcome::Refused);
        return result(&DevicePairConfirmResult { device_id: None });
    }
    let device = DeviceRow {
        id: DeviceId::new(),
        name: enrollment.name,
        public_key: enrollment.public_key,
        key_fingerprint: enrollment.key_fingerprint,
        node: enrollment.peer.node,
        user_id: enrollment.peer.user_id,
        tailnet: enrollment.tailnet,
        scopes: PHONE_SCOPES.to_vec(),
        created_at: Timestamp::now(),
        last_seen_at: None,
        revoked_at: None,
    };
    let device_id = device.id;
    match ctx.daemon.store.insert_device(device).await {
        Ok(Inserted::Stored) => {
            answer.send(EnrollOutcome::Paired(device_id));
            result(&DevicePairConfirmResult {
                device_id: Some(device_id),
            })
        }
        Ok(Inserted::KeyHeld) => {
            answer.send(EnrollOutcome::Refused);
            Err(ErrorBody::new(
                ErrorCode::Conflict,
                "another device took this key meanwhile",
            ))
        }
        Err(error) => {
            answer.send(EnrollOutcome::Refused);
            Err(ErrorBody::internal(format!("cannot store the device: {error}")))
        }
    }
}

/// device.prove: the device signs the connection's challenge and Tailscale facts.
///
/// # Errors
/// `unauthorized` (always `NOT_PROVEN`; with `re_pair` data only after a valid signature), `conflict` for a second
/// proof, `busy` with `starting` when the store cannot answer. The third refusal closes the connection.
pub async fn prove(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: DeviceProveParams = params(raw)?;
    let remote = remote(ctx)?;
    if remote.proved() {
        return Err(ErrorBody::new(
            ErrorCode::Conflict,
            "a device proved itself on this connection already",
        ));
    }
    let device = ctx
        .daemon
        .store
        .device(params.device_id)
        .await
        .map_err(|e| store_error(&e))?;
    let refuse = |data: Option<Value>| {
        if remote.refused() >= MAX_REFUSALS {
            // Closed after the answer has gone out.
            let kick = remote.kick.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                kick.cancel();
            });
        }
        let error = ErrorBody::new(ErrorCode::Unauthorized, NOT_PROVEN);
        match data {
            Some(data) => error.with_data(data),
            None => error,
        }
    };
    let Some(device) = device.filter(|device| device.revoked_at.is_none()) else {
        return Err(refuse(None));
    };
    let message = prove_message(&ProveInputs {
        challenge: remote.challenge.clone(),
        daemon_id: ctx.daemon.daemon_id,
        protocol: PROTOCOL_VERSION,
        device_id: device.id,
        peer_node: remote.peer.node.clone(),
        daemon_tailnet: remote.me.tailnet.clone(),
    })
    .map_err(|e| ErrorBody::invalid(e.to_string()))?;
    if !prove::verify(&device.public_key, &message, &params.signature) {
        return Err(refuse(None));
    }
    if device.user_id != remote.peer.user_id || device.tailnet != remote.me.tailnet {
        return Err(refuse(None));
    }
    if device.node != remote.peer.node {
        return Err(refuse(Some(json!({"re_pair": true, "device_id": device.id}))));
    }
    if !remote.set_proved() {
        return Err(ErrorBody::new(
            ErrorCode::Conflict,
            "a device proved itself on this connection already",
        ));
    }
    ctx.session.grant(&device.scopes);
    ctx.daemon.remote.proven(device.id, remote.kick.clone());
    if let Err(error) = ctx.daemon.store.touch_device(device.id, Timestamp::now()).await {
        tracing::warn!(%error, "cannot record the device's proof time");
    }
    result(&DeviceProveResult {
        scopes: ctx.session.scopes(),
    })
}

/// device.list: every device, revoked ones included.
///
/// # Errors
/// `internal` when the store cannot be read.
pub async fn list(ctx: &RequestCtx) -> Result<Value, ErrorBody> {
    let devices = ctx
        .daemon
        .store
        .devices()
        .await
        .map_err(|e| ErrorBody::internal(format!("cannot read the devices: {e}")))?;
    result(&DeviceListResult {
        devices: devices
            .into_iter()
            .map(|device| DeviceInfo {
                device_id: device.id,
                name: device.name,
                key_fingerprint: device.key_fingerprint,
                node: device.node,
                scopes: device.scopes,
                created_at: device.created_at,
                last_seen_at: device.last_seen_at,
                revoked_at: device.revoked_at,
            })
            .collect(),
    })
}

/// device.revoke: the device can no longer prove itself, and its connections close with 1001.
///
/// # Errors
/// `not_found` for a device that never paired.
pub async fn revoke(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: DeviceRevokeParams = params(raw)?;
    let revoked_at = ctx
        .daemon
        .store
        .revoke_device(params.device_id, Timestamp::now())
        .await
        .map_err(|e| ErrorBody::internal(format!("cannot revoke the device: {e}")))?
        .ok_or_else(|| ErrorBody::new(ErrorCode::NotFound, "no device has this id"))?;
    ctx.daemon.remote.kick_device(params.device_id);
    result(&DeviceRevokeResult { revoked_at })
}
