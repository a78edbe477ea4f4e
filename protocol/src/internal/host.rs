//! Host names and host patterns, as efr's network rules compare them: the config's `[network]` lists, the `host`
//! grants of a launch, and `efr-proxy`'s checks of each CONNECT (docs/network.md).
//!
//! # Normal form
//!
//! Every rule compares the normal form of a name ([`normalise`]): lowercase, without one trailing dot, IDNA-mapped
//! to ASCII (UTS #46, the `idna` crate), so `GitHub.COM.`, `github.com` and a Unicode spelling that maps to it are
//! one host.
//!
//! # IP literals
//!
//! [`is_ip_literal`] says whether a host is an address in any form a client library might accept: dotted IPv4,
//! one to four numbers in decimal, octal (`0177`) or hex (`0x7f`), a bracketed or bare IPv6 address (with a zone id
//! or a mapped IPv4 tail). Its rule is the WHATWG URL standard's "ends in a number" check, widened to every label
//! form: a host whose last label is a number in any base is an address, whatever its other labels are.
//!
//! # Patterns
//!
//! A [`HostPattern`] is written as in the config:
//!
//! | pattern            | matches                                          |
//! |--------------------|--------------------------------------------------|
//! | `example.com`      | `example.com` only                               |
//! | `*.example.com`    | its subdomains (`a.example.com`, `a.b.example.com`), not `example.com` |
//! | `**.example.com`   | both                                             |
//! | `*`                | every host                                       |
//!
//! followed by an optional `:port` (1–65535; [`DEFAULT_PORT`] when absent). The name is normalised like a host; a
//! pattern that is an IP literal, has an empty label or a `*` anywhere else is a [`PatternError`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The port of a pattern or grant that names none: HTTPS.
pub const DEFAULT_PORT: u16 = 443;

/// Why a host name has no normal form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// The name was empty (or only a dot).
    #[error("the host name is empty")]
    Empty,
    /// IDNA refused the name (a forbidden code point, a bad punycode label, a label or name too long).
    #[error("the host name {0:?} is not a valid domain name")]
    Invalid(String),
}

/// Why a host pattern does not parse. The message names the pattern; the caller adds where it was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// Nothing was written.
    #[error("a host pattern is empty")]
    Empty,
    /// A `*` stood somewhere other than a leading `*.` or `**.` label, or alone.
    #[error("{0:?}: `*` may only stand alone or as a leading `*.` or `**.` label")]
    Wildcard(String),
    /// The pattern named an address; efr's rules take names only.
    #[error("{0:?} is an IP address; host patterns take names only")]
    IpLiteral(String),
    /// The port was not a number from 1 to 65535.
    #[error("{0:?}: the port must be a number from 1 to 65535")]
    Port(String),
    /// The name has no normal form.
    #[error("{pattern:?}: {error}")]
    Host {
        /// The pattern as written.
        pattern: String,
        /// Why its name does not normalise.
        error: HostError,
    },
}

/// Which hosts a [`HostPattern`] names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostMatch {
    /// `name`: this host only.
    Exact(String),
    /// `*.name`: hosts below `name`, not `name` itself.
    Subdomains(String),
    /// `**.name`: `name` and the hosts below it.
    NameAndSubdomains(String),
    /// `*`: every host.
    Any,
}

/// One entry of an allow or deny list: which hosts, and the port. See the module docs for the syntax.
/// Serialized as its written form (`"**.example.com:8443"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPattern {
    /// The hosts.
    pub host: HostMatch,
    /// The port ([`DEFAULT_PORT`] when the pattern named none).
    pub port: u16,
}

/// The normal form of a host name: lowercase, one trailing dot removed, IDNA-mapped to ASCII.
///
/// # Errors
/// [`HostError`] when the name is empty or IDNA refuses it.
pub fn normalise(host: &str) -> Result<String, HostError> {
    let _ = host;
    todo!("efr-proxy's host rules")
}

/// Whether `host` (as the client wrote it, or normalised) is an IP address in any form: see the module docs.
#[must_use]
pub fn is_ip_literal(host: &str) -> bool {
    let _ = host;
    todo!("efr-proxy's host rules")
}

impl HostPattern {
    /// Whether the pattern names `host` (in normal form) on `port`.
    #[must_use]
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let _ = (host, port);
        todo!("efr-proxy's host rules")
    }
}

impl FromStr for HostPattern {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let _ = text;
        todo!("efr-proxy's host rules")
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostMatch::Exact(name) => write!(f, "{name}")?,
            HostMatch::Subdomains(name) => write!(f, "*.{name}")?,
            HostMatch::NameAndSubdomains(name) => write!(f, "**.{name}")?,
            HostMatch::Any => write!(f, "*")?,
        }
        if self.port == DEFAULT_PORT {
            Ok(())
        } else {
            write!(f, ":{}", self.port)
        }
    }
}

impl Serialize for HostPattern {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HostPattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
