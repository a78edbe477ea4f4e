//! The device key and its proof, with the p256 crate: a public key is a point of P-256, and device.prove's signature
//! is ECDSA P-256 with SHA-256, DER, over [`efr_protocol::device::prove_message`].

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use efr_protocol::device::PUBLIC_KEY_LEN;
use p256::ecdsa::signature::Verifier as _;
use p256::ecdsa::{Signature, VerifyingKey};

/// Why a public key was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Not standard base64.
    #[error("public_key is not standard base64")]
    Base64,
    /// Not 65 bytes starting with 04.
    #[error("public_key is not a 65-byte uncompressed point (04, X, Y)")]
    Shape,
    /// Not a point of the curve.
    #[error("public_key is not a point of the P-256 curve")]
    NotOnCurve,
}

/// Reads device.enroll's `public_key`: standard base64 of the 65-byte uncompressed point, on the P-256 curve.
///
/// # Errors
/// [`KeyError`] naming what is wrong.
pub fn parse_public_key(text: &str) -> Result<[u8; PUBLIC_KEY_LEN], KeyError> {
    let bytes = STANDARD.decode(text).map_err(|_| KeyError::Base64)?;
    let key: [u8; PUBLIC_KEY_LEN] = bytes.try_into().map_err(|_| KeyError::Shape)?;
    if key[0] != 0x04 {
        return Err(KeyError::Shape);
    }
    VerifyingKey::from_sec1_bytes(&key).map_err(|_| KeyError::NotOnCurve)?;
    Ok(key)
}

/// Whether `signature` (standard base64 of a DER ECDSA signature) signs `message` with `public_key`.
#[must_use]
pub fn verify(public_key: &[u8], message: &[u8], signature: &str) -> bool {
    let Ok(key) = VerifyingKey::from_sec1_bytes(public_key) else {
        return false;
    };
    let Ok(der) = STANDARD.decode(signature) else {
        return false;
    };
    let Ok(signature) = Signature::from_der(&der) else {
        return false;
    };
    key.verify(message, &signature).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::SigningKey;
    use p256::ecdsa::signature::Signer as _;

    fn key() -> SigningKey {
        SigningKey::from_slice(&[7; 32]).unwrap()
    }

    fn public(key: &SigningKey) -> String {
        STANDARD.encode(key.verifying_key().to_encoded_point(false).as_bytes())
    }

    #[test]
    fn a_der_signature_of_the_message_verifies_and_nothing_else_does() {
        let key = key();
        let point = parse_public_key(&public(&key)).unwrap();
        let signature: Signature = key.sign(b"message");
        let der = STANDARD.encode(signature.to_der().as_bytes());
        assert!(verify(&point, b"message", &der));
        assert!(!verify(&point, b"messagE", &der));
        assert!(
            !verify(&point, b"message", &STANDARD.encode(signature.to_bytes())),
            "raw r||s is not DER"
        );
        let other = SigningKey::from_slice(&[8; 32]).unwrap();
        let other_point = parse_public_key(&public(&other)).unwrap();
        assert!(!verify(&other_point, b"message", &der));
    }

    #[test]
    fn a_key_off_the_curve_or_of_another_shape_is_refused() {
        // The spec's fingerprint vector: 04, then 01..40, is not a point of the curve.
        let mut bytes = vec![4_u8];
        bytes.extend(1..=64_u8);
        assert_eq!(parse_public_key(&STANDARD.encode(&bytes)), Err(KeyError::NotOnCurve));
        let compressed = STANDARD.encode(key().verifying_key().to_encoded_point(true).as_bytes());
        assert_eq!(parse_public_key(&compressed), Err(KeyError::Shape));
        assert_eq!(parse_public_key("not base64!"), Err(KeyError::Base64));
    }
}
