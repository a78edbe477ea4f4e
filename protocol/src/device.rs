//! Device helpers with the spec's vectors: the key fingerprint, the device proof message and the pairing QR URL.
//!
//! Source: the spec's section "Remote devices". A phone in another language must produce exactly these bytes, so the
//! fixtures `device_prove_message.json` and `pairing_qr_url.json` freeze one example of each
//! ([`ProveMessageVector`], [`PairingUrlVector`]).
//!
//! - [`key_fingerprint`]: `SHA256:` and the first 8 bytes of the SHA-256 of the 65-byte P-256 point, lowercase hex.
//! - [`prove_message`]: the seven fields that a device signs (ECDSA P-256 with SHA-256, DER) for device.prove, each
//!   its UTF-8 after its length as a 4-byte big-endian number.
//! - [`pairing_qr_url`]: `efr://pair?v=..&d=..&h=..&p=..&f=..&t=..`, in that order, each value percent-encoded.

use std::fmt::Write as _;
use std::net::Ipv4Addr;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ids::{DaemonId, DeviceId};
use crate::secret::SecretText;

/// The length of an uncompressed P-256 public key: `04`, then X and Y of 32 bytes each.
pub const PUBLIC_KEY_LEN: usize = 65;

/// The first field of the proof message.
pub const PROVE_DOMAIN_TAG: &str = "efr-device-prove-v1";

/// Why a device helper could not do its work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// A field of the proof message is longer than a 4-byte length can say.
    #[error("the field `{field}` of the proof message has {len} bytes, more than a 4-byte length can say")]
    FieldTooLong {
        /// The field's name.
        field: &'static str,
        /// Its length in bytes.
        len: usize,
    },
}

/// The fingerprint of a device key that the terminal and the phone both show: `SHA256:` and the first 8 bytes of
/// the SHA-256 of the 65 bytes of the key, in lowercase hex, such as `SHA256:0ed3a6ab957ff6f5`.
#[must_use]
pub fn key_fingerprint(public_key: &[u8; PUBLIC_KEY_LEN]) -> String {
    let digest = Sha256::digest(public_key);
    format!("SHA256:{}", lower_hex(&digest[..8]))
}

/// Bytes as lowercase hex, two digits each.
#[must_use]
pub fn lower_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        // Writing to a String cannot fail.
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The inputs of the proof message, named as the spec names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProveInputs {
    /// The hello result's `challenge`, as efrd sent it.
    pub challenge: String,
    /// The hello result's `daemon_id`.
    pub daemon_id: DaemonId,
    /// The protocol version of the hello result, written in decimal.
    pub protocol: u32,
    /// The device's id from device.enroll.
    pub device_id: DeviceId,
    /// The hello result's `prove.peer_node`.
    pub peer_node: String,
    /// The hello result's `prove.daemon_tailnet`.
    pub daemon_tailnet: String,
}

/// The message a device signs for device.prove: seven fields in this order, each its UTF-8 after its length in
/// bytes as a 4-byte big-endian number: the domain tag `efr-device-prove-v1`, challenge, daemon_id, protocol (in
/// decimal), device_id, prove.peer_node, prove.daemon_tailnet. Ids are in lowercase hyphenated form.
///
/// # Errors
/// [`DeviceError::FieldTooLong`] for a field of 4 GiB or more.
pub fn prove_message(inputs: &ProveInputs) -> Result<Vec<u8>, DeviceError> {
    let fields: [(&'static str, String); 7] = [
        ("domain_tag", PROVE_DOMAIN_TAG.to_owned()),
        ("challenge", inputs.challenge.clone()),
        ("daemon_id", inputs.daemon_id.to_string()),
        ("protocol", inputs.protocol.to_string()),
        ("device_id", inputs.device_id.to_string()),
        ("peer_node", inputs.peer_node.clone()),
        ("daemon_tailnet", inputs.daemon_tailnet.clone()),
    ];
    let mut message = Vec::with_capacity(fields.iter().map(|(_, text)| 4 + text.len()).sum());
    for (field, text) in &fields {
        message.extend_from_slice(&length_prefix(field, text.len())?);
        message.extend_from_slice(text.as_bytes());
    }
    Ok(message)
}

/// A field's length as 4 bytes, big-endian.
fn length_prefix(field: &'static str, len: usize) -> Result<[u8; 4], DeviceError> {
    u32::try_from(len)
        .map(u32::to_be_bytes)
        .map_err(|_| DeviceError::FieldTooLong { field, len })
}

/// A set of inputs and the message they give, in hex (the fixture `device_prove_message.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProveMessageVector {
    /// The inputs.
    pub inputs: ProveInputs,
    /// [`prove_message`] of the inputs, in lowercase hex.
    pub message_hex: String,
}

/// The members of the pairing QR payload (the first item of device.pair_start).
///
/// `Debug` does not show the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PairingPayload {
    /// `v`: the protocol version the phone must find in the hello result.
    pub protocol: u32,
    /// `d`: the daemon's id, which the phone checks after hello.
    pub daemon_id: DaemonId,
    /// `h`: the tailnet IPv4 address that efrd listens on; the phone dials it.
    pub host: Ipv4Addr,
    /// `p`: the port.
    pub port: u16,
    /// `f`: the MagicDNS name, for display only (a client never dials it); absent when efrd has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fqdn: Option<String>,
    /// `t`: the pairing token (144 random bits), good for one device.enroll and 5 minutes.
    pub token: SecretText,
}

/// The bytes that stay as they are in a QR value: ASCII letters, digits, `-`, `.`, `_` and `~`.
const QR_VALUE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The text of the pairing QR code: `efr://pair?v=1&d=<daemon_id>&h=<tailnet IPv4>&p=<port>&f=<fqdn>&t=<token>`.
///
/// The members come in this order; `f` is absent when the payload has no fqdn. Each value is percent-encoded: every
/// byte that is not an ASCII letter, a digit, `-`, `.`, `_` or `~` becomes `%` and two uppercase hex digits.
#[must_use]
pub fn pairing_qr_url(payload: &PairingPayload) -> String {
    let protocol = payload.protocol.to_string();
    let daemon_id = payload.daemon_id.to_string();
    let host = payload.host.to_string();
    let port = payload.port.to_string();
    let mut members: Vec<(&str, &str)> = vec![("v", &protocol), ("d", &daemon_id), ("h", &host), ("p", &port)];
    if let Some(fqdn) = &payload.fqdn {
        members.push(("f", fqdn));
    }
    members.push(("t", payload.token.expose()));
    let mut url = String::from("efr://pair");
    for (i, (name, value)) in members.iter().enumerate() {
        url.push(if i == 0 { '?' } else { '&' });
        url.push_str(name);
        url.push('=');
        url.extend(utf8_percent_encode(value, QR_VALUE));
    }
    url
}

/// A payload and its URL (the fixture `pairing_qr_url.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PairingUrlVector {
    /// The payload.
    pub payload: PairingPayload,
    /// [`pairing_qr_url`] of the payload.
    pub url: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's key: 04, then the bytes 01 to 40 (hex).
    fn spec_key() -> [u8; PUBLIC_KEY_LEN] {
        let mut key = [0_u8; PUBLIC_KEY_LEN];
        key[0] = 0x04;
        for (i, byte) in key[1..].iter_mut().enumerate() {
            *byte = u8::try_from(i + 1).unwrap();
        }
        key
    }

    #[test]
    fn the_spec_key_has_the_spec_fingerprint() {
        let key = spec_key();
        assert_eq!(key[64], 0x40);
        assert_eq!(key_fingerprint(&key), "SHA256:0ed3a6ab957ff6f5");
        let mut other = key;
        other[64] = 0x41;
        assert_ne!(key_fingerprint(&other), "SHA256:0ed3a6ab957ff6f5");
    }

    #[test]
    fn the_proof_message_is_seven_length_prefixed_fields() {
        let inputs = ProveInputs {
            challenge: "ch".into(),
            daemon_id: "0F8FAD5B-D9CB-469F-A165-70867728950E".parse().unwrap(),
            protocol: 1,
            device_id: "7c9e6679-7425-40de-944b-e07fc1f90ae7".parse().unwrap(),
            peer_node: "nödé".into(),
            daemon_tailnet: "".into(),
        };
        // Written out by hand from the spec's definition, independent of the code under test.
        let mut expected = Vec::new();
        expected.extend_from_slice(b"\x00\x00\x00\x13efr-device-prove-v1");
        expected.extend_from_slice(b"\x00\x00\x00\x02ch");
        expected.extend_from_slice(b"\x00\x00\x00\x240f8fad5b-d9cb-469f-a165-70867728950e");
        expected.extend_from_slice(b"\x00\x00\x00\x011");
        expected.extend_from_slice(b"\x00\x00\x00\x247c9e6679-7425-40de-944b-e07fc1f90ae7");
        expected.extend_from_slice(b"\x00\x00\x00\x06n\xc3\xb6d\xc3\xa9");
        expected.extend_from_slice(b"\x00\x00\x00\x00");
        assert_eq!(prove_message(&inputs).unwrap(), expected);
    }

    #[test]
    fn a_field_of_4_gib_is_refused() {
        assert_eq!(length_prefix("challenge", 5).unwrap(), [0, 0, 0, 5]);
        assert_eq!(length_prefix("challenge", 0xffff_ffff).unwrap(), [0xff; 4]);
        assert_eq!(
            length_prefix("challenge", 1 << 32),
            Err(DeviceError::FieldTooLong {
                field: "challenge",
                len: 1 << 32
            })
        );
    }

    fn payload(fqdn: Option<&str>) -> PairingPayload {
        PairingPayload {
            protocol: 1,
            daemon_id: "0f8fad5b-d9cb-469f-a165-70867728950e".parse().unwrap(),
            host: Ipv4Addr::new(100, 101, 102, 103),
            port: 8765,
            fqdn: fqdn.map(str::to_owned),
            token: SecretText::new("Ab-._~+/= ü"),
        }
    }

    #[test]
    fn the_qr_url_has_its_members_in_order_and_percent_encodes_values() {
        assert_eq!(
            pairing_qr_url(&payload(Some("laptop.tail-net.ts.net"))),
            "efr://pair?v=1&d=0f8fad5b-d9cb-469f-a165-70867728950e&h=100.101.102.103&p=8765\
             &f=laptop.tail-net.ts.net&t=Ab-._~%2B%2F%3D%20%C3%BC"
        );
        assert_eq!(
            pairing_qr_url(&payload(None)),
            "efr://pair?v=1&d=0f8fad5b-d9cb-469f-a165-70867728950e&h=100.101.102.103&p=8765\
             &t=Ab-._~%2B%2F%3D%20%C3%BC"
        );
    }

    #[test]
    fn the_payload_never_prints_its_token() {
        assert!(!format!("{:?}", payload(None)).contains("Ab-._~"));
    }

    #[test]
    fn hex_is_lowercase_two_digits() {
        assert_eq!(lower_hex(&[0x00, 0x0a, 0xff]), "000aff");
        assert_eq!(lower_hex(&[]), "");
    }
}
