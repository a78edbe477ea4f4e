//! The efr wire protocol: what efrd and its clients say to each other.
//!
//! - [`codec`]: the byte framing (4-byte big-endian length + one JSON object, 16 MiB by default).
//! - [`frame`]: client and server frames and the request lifecycle.
//! - [`error`]: the closed set of error codes.
//! - [`methods`]: the method table (scope, shape, write, transports).
//! - [`ids`]: ids and times; [`secret`]: keys and tokens that never print; [`mask`]: secrets found in free text.
//! - [`hello`]: the first request of every connection.
//! - [`wire`]: the params and results of the methods, one module per family, and the pieces they share.
//! - [`events`]: the event envelope and every event kind.
//! - [`device`]: the key fingerprint, the device proof message and the pairing QR URL, with the spec's vectors.
//! - [`fixtures`]: the registry of the frozen examples in `protocol/fixtures/v1/`; [`schema`]: the JSON Schema.
//!
//! The contract is the spec's protocol page; `docs/protocol.md` says the same in this project's words, and
//! `protocol/fixtures/v1/` freezes one example of every wire type, compared byte for byte in both directions.

mod macros;

pub mod codec;
pub mod device;
pub mod error;
pub mod events;
pub mod fixtures;
pub mod frame;
pub mod hello;
pub mod ids;
pub mod internal;
pub mod mask;
pub mod methods;
pub mod schema;
pub mod secret;
pub mod streams;
pub mod wire;

pub use error::{ErrorBody, ErrorCode};

/// The version of the protocol that this build speaks. Both sides send it in `hello`; a mismatch is
/// `protocol_mismatch`. Additive changes do not bump it (docs/protocol.md, "Summary").
pub const PROTOCOL_VERSION: u32 = 1;
