//! The device methods: pairing a phone (device.pair_start, device.pair_confirm, device.enroll), its proof
//! (device.prove), and the list and revoke of paired devices.
//!
//! Source: docs/protocol.md, "Remote devices" and the changelog entry "remote devices". None of these methods has a
//! command id. device.pair_start and device.pair_confirm, device.list and device.revoke need the admin scope and are
//! served only on the Unix socket; device.enroll and device.prove are served only on the tailnet listener.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{DeviceId, PairingId, Timestamp};
use crate::macros::wire_enum;
use crate::methods::Scope;
use crate::secret::SecretText;

wire_enum! {
    /// Why a pairing ended (`reason` of the item `ended`).
    pub enum PairEnd {
        /// The user answered no at the terminal.
        Refused = "refused",
        /// The token expired, or the phone closed its request before the answer.
        Expired = "expired",
        /// Too many wrong tokens.
        Attempts = "attempts",
    }
    unknown
}

/// device.pair_start params (scope admin, a stream, no command id).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DevicePairStartParams {
    /// The name the terminal proposes for the device; absent: the name the phone sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One item of a device.pair_start stream, tagged by `kind`: `started` first, then `pending` when a phone enrolls,
/// then `paired` or `ended`, after which the stream ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PairStartItem {
    /// The pairing is open: show `qr` as a QR code, and its text under it.
    Started {
        /// The pairing.
        pairing_id: PairingId,
        /// When the token stops being good (5 minutes after the start).
        expires_at: Timestamp,
        /// The `efr://pair` URL (see [`crate::device::pairing_qr_url`]); it holds the token.
        qr: SecretText,
    },
    /// A phone enrolled with the token: the terminal shows these facts and asks the user.
    Pending {
        /// The pairing.
        pairing_id: PairingId,
        /// The device's name.
        device_name: String,
        /// The phone's Tailscale node name.
        node_name: String,
        /// The phone's Tailscale user login.
        user_login: String,
        /// The key fingerprint ([`crate::device::key_fingerprint`]).
        key_fingerprint: String,
        /// The phone's OS as Tailscale reports it; absent when not known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        os: Option<String>,
    },
    /// The user said yes: the device is paired.
    Paired {
        /// The pairing.
        pairing_id: PairingId,
        /// The new device.
        device_id: DeviceId,
    },
    /// The pairing ended without a device.
    Ended {
        /// The pairing.
        pairing_id: PairingId,
        /// Why.
        reason: PairEnd,
    },
    /// A kind that this reader does not know. Never sent.
    #[serde(other)]
    Unknown,
}

/// device.pair_confirm params (scope admin, no command id): the user's answer to `pending`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DevicePairConfirmParams {
    /// The pairing.
    pub pairing_id: PairingId,
    /// Yes or no.
    pub accept: bool,
}

/// device.pair_confirm result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DevicePairConfirmResult {
    /// The new device; absent for a no.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_id: Option<DeviceId>,
}

/// device.enroll params (scope read, tailnet listener only, no command id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceEnrollParams {
    /// The token of the QR payload.
    pub token: SecretText,
    /// The device's name.
    pub name: String,
    /// The 65-byte uncompressed P-256 point, standard base64.
    pub public_key: String,
}

/// device.enroll result, after the user's yes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceEnrollResult {
    /// The new device.
    pub device_id: DeviceId,
    /// The scopes it holds.
    pub scopes: Vec<Scope>,
}

/// device.prove params (scope read, tailnet listener only, no command id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceProveParams {
    /// The device.
    pub device_id: DeviceId,
    /// ECDSA P-256 with SHA-256 over [`crate::device::prove_message`], DER, standard base64.
    pub signature: String,
}

/// device.prove result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceProveResult {
    /// The scopes the connection now holds; never admin or terminal.
    pub scopes: Vec<Scope>,
}

/// device.list params (scope admin, no params).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceListParams {}

/// One paired device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceInfo {
    /// The device.
    pub device_id: DeviceId,
    /// Its name.
    pub name: String,
    /// Its key fingerprint ([`crate::device::key_fingerprint`]).
    pub key_fingerprint: String,
    /// The Tailscale node that paired it.
    pub node: String,
    /// The scopes it holds.
    pub scopes: Vec<Scope>,
    /// When it paired.
    pub created_at: Timestamp,
    /// When it last proved; absent when never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen_at: Option<Timestamp>,
    /// When it was revoked; absent while it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Timestamp>,
}

/// device.list result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceListResult {
    /// Every device, revoked ones included, oldest first.
    pub devices: Vec<DeviceInfo>,
}

/// device.revoke params (scope admin, no command id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceRevokeParams {
    /// The device.
    pub device_id: DeviceId,
}

/// device.revoke result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceRevokeResult {
    /// When it was revoked (the first revoke's time for a second one).
    pub revoked_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_or_reason_this_reader_does_not_know_reads_as_unknown() {
        let item: PairStartItem = serde_json::from_str(r#"{"kind":"waiting","pairing_id":"x"}"#).unwrap();
        assert_eq!(item, PairStartItem::Unknown);
        let reason: PairEnd = serde_json::from_str(r#""lost""#).unwrap();
        assert_eq!(reason, PairEnd::Unknown);
    }

    #[test]
    fn a_no_has_no_device_id() {
        let result = DevicePairConfirmResult { device_id: None };
        assert_eq!(serde_json::to_string(&result).unwrap(), "{}");
    }
}
