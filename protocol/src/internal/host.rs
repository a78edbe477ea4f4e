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
//! followed by an optional `:port` (1–65535). A pattern without a port means [`DEFAULT_PORT`] in an allow list
//! ([`HostPattern::matches`]) and every port in a deny list ([`HostPattern::denies`]): `deny = ["*"]` refuses every
//! host on every port. The name is normalised like a host; a pattern that is an IP literal, has an empty label or a
//! `*` anywhere else is a [`PatternError`].

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
    /// The port as written; `None` when the pattern named none ([`DEFAULT_PORT`] as an allow entry, every port as a
    /// deny entry).
    pub port: Option<u16>,
}

/// The normal form of a host name: lowercase, one trailing dot removed, IDNA-mapped to ASCII.
///
/// The mapping is UTS #46 non-transitional processing with the WHATWG URL standard's forbidden code points
/// (`%#/:<>?@[\]^|`, spaces and controls) and DNS lengths checked (labels of 1 to 63 bytes, 253 in all), so the
/// result is a name a resolver can look up, or an error.
///
/// # Errors
/// [`HostError`] when the name is empty or IDNA refuses it.
pub fn normalise(host: &str) -> Result<String, HostError> {
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.is_empty() {
        return Err(HostError::Empty);
    }
    let ascii = idna::uts46::Uts46::new()
        .to_ascii(
            name.as_bytes(),
            idna::uts46::AsciiDenyList::URL,
            idna::uts46::Hyphens::Allow,
            idna::uts46::DnsLength::Verify,
        )
        .map_err(|_| HostError::Invalid(host.to_owned()))?;
    // The mapping can itself end in a dot (a full stop spelled U+3002): one is removed, as from the name written.
    let ascii = ascii.strip_suffix('.').unwrap_or(&ascii);
    if ascii.is_empty() || ascii.split('.').any(str::is_empty) {
        return Err(HostError::Invalid(host.to_owned()));
    }
    Ok(ascii.to_owned())
}

/// Whether `host` (as the client wrote it, or normalised) is an IP address in any form: see the module docs.
#[must_use]
pub fn is_ip_literal(host: &str) -> bool {
    if let Some(inner) = host.strip_prefix('[') {
        return inner.strip_suffix(']').is_some_and(is_ipv6);
    }
    if host.contains(':') {
        return is_ipv6(host);
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    name.rsplit('.').next().is_some_and(is_number)
}

/// An IPv6 address, with or without a zone id (`%25lo` as a URL writes it, `%lo` as `getaddrinfo` takes it).
fn is_ipv6(text: &str) -> bool {
    let address = text.split_once('%').map_or(text, |(address, _zone)| address);
    address.parse::<std::net::Ipv6Addr>().is_ok()
}

/// One label of an IPv4 address in any base the WHATWG IPv4 number parser or `inet_aton` takes: decimal, octal
/// (leading 0) or hex (`0x`, digits optional as in WHATWG). Digits only is enough: `08` is not octal but is still
/// an address to a lenient parser, and a name never ends in one.
fn is_number(label: &str) -> bool {
    if label.is_empty() {
        return false;
    }
    if let Some(hex) = label.strip_prefix("0x").or_else(|| label.strip_prefix("0X")) {
        return hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    label.bytes().all(|b| b.is_ascii_digit())
}

/// Why efr-proxy refuses a `CONNECT` target's host before it reads any list (docs/network.md, "The rules, in
/// order", rule 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetRefusal {
    /// An address in any form (`ip_literal`): the host as written, or its normal form when only that is an
    /// address (a Unicode spelling of one). The proxy counts the refusal under this host.
    IpLiteral(String),
    /// A name with no normal form (`bad_request`).
    NoNormalForm(HostError),
}

/// The host of a `CONNECT` target as efr-proxy checks it, in its order: an address as written, then the normal
/// form ([`normalise`]), then an address once normalised (a Unicode spelling of one). `efr-proxy` and efrd's
/// `sandbox.explain_host` both call this, so what explain says is what the proxy does.
///
/// # Errors
/// [`TargetRefusal`]: the host is an address, or has no normal form.
pub fn target_host(written: &str) -> Result<String, TargetRefusal> {
    if is_ip_literal(written) {
        return Err(TargetRefusal::IpLiteral(written.to_owned()));
    }
    let host = normalise(written).map_err(TargetRefusal::NoNormalForm)?;
    if is_ip_literal(&host) {
        return Err(TargetRefusal::IpLiteral(host));
    }
    Ok(host)
}

impl HostPattern {
    /// The port an allow entry opens: the one written, else [`DEFAULT_PORT`].
    #[must_use]
    pub fn allow_port(&self) -> u16 {
        self.port.unwrap_or(DEFAULT_PORT)
    }

    /// Whether the pattern, as an allow entry, names `host` (in normal form) on `port`: a pattern without a port
    /// names [`DEFAULT_PORT`] only.
    #[must_use]
    pub fn matches(&self, host: &str, port: u16) -> bool {
        port == self.allow_port() && self.names(host)
    }

    /// Whether the pattern, as a deny entry, refuses `host` (in normal form) on `port`: a pattern without a port
    /// refuses every port (a user who denies a host means the host, not its HTTPS port).
    #[must_use]
    pub fn denies(&self, host: &str, port: u16) -> bool {
        self.port.is_none_or(|own| own == port) && self.names(host)
    }

    /// Whether the pattern's host part names `host` (in normal form), on any port.
    #[must_use]
    pub fn names(&self, host: &str) -> bool {
        match &self.host {
            HostMatch::Exact(name) => host == name,
            HostMatch::Subdomains(name) => is_below(host, name),
            HostMatch::NameAndSubdomains(name) => host == name || is_below(host, name),
            HostMatch::Any => true,
        }
    }
}

/// Whether `host` is a proper subdomain of `name` (`a.example.com` of `example.com`, not `badexample.com`).
fn is_below(host: &str, name: &str) -> bool {
    host.len() > name.len() + 1 && host.ends_with(name) && host.as_bytes()[host.len() - name.len() - 1] == b'.'
}

impl FromStr for HostPattern {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        if is_ip_literal(text) {
            return Err(PatternError::IpLiteral(text.to_owned()));
        }
        let (name, port) = match text.rsplit_once(':') {
            Some((name, port)) => {
                let valid = !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
                match port.parse::<u16>() {
                    Ok(port) if valid && port != 0 => (name, Some(port)),
                    _ => return Err(PatternError::Port(text.to_owned())),
                }
            }
            None => (text, None),
        };
        if name == "*" {
            return Ok(Self {
                host: HostMatch::Any,
                port,
            });
        }
        let (make, rest): (fn(String) -> HostMatch, &str) = if let Some(rest) = name.strip_prefix("**.") {
            (HostMatch::NameAndSubdomains, rest)
        } else if let Some(rest) = name.strip_prefix("*.") {
            (HostMatch::Subdomains, rest)
        } else {
            (HostMatch::Exact, name)
        };
        if rest.contains('*') {
            return Err(PatternError::Wildcard(text.to_owned()));
        }
        if rest.is_empty() {
            return Err(PatternError::Empty);
        }
        if is_ip_literal(rest) {
            return Err(PatternError::IpLiteral(text.to_owned()));
        }
        let normal = normalise(rest).map_err(|error| PatternError::Host {
            pattern: text.to_owned(),
            error,
        })?;
        if is_ip_literal(&normal) {
            return Err(PatternError::IpLiteral(text.to_owned()));
        }
        Ok(Self {
            host: make(normal),
            port,
        })
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
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn normal_form_is_lowercase_ascii_without_the_trailing_dot() {
        assert_eq!(normalise("GitHub.COM.").unwrap(), "github.com");
        assert_eq!(normalise("bücher.example").unwrap(), "xn--bcher-kva.example");
        // Fullwidth letters and the ideographic full stop map to their ASCII forms.
        assert_eq!(normalise("ｅｘａｍｐｌｅ。com").unwrap(), "example.com");
        assert_eq!(normalise("_acme.example").unwrap(), "_acme.example");
        assert_eq!(normalise(""), Err(HostError::Empty));
        assert_eq!(normalise("."), Err(HostError::Empty));
        for bad in [
            "a..b",
            "a b",
            "a/b",
            "a@b",
            "a%2eb",
            "[::1]",
            "a:1",
            &"a".repeat(64),
            "a..",
        ] {
            assert!(
                matches!(normalise(bad), Err(HostError::Invalid(_))),
                "{bad:?} normalised"
            );
        }
    }

    #[test]
    fn every_address_form_is_an_ip_literal() {
        for literal in [
            "1.1.1.1",
            "1.1.1.1.",
            "16843009",
            "0x01010101",
            "0X7F.1",
            "0177.0.0.1",
            "127.1",
            "0x7f.1",
            "127.0.1",
            "0x",
            "08",
            "a.b.0x1",
            "foo.123",
            "[::1]",
            "::1",
            "[::ffff:127.0.0.1]",
            "::ffff:7f00:1",
            "[fe80::1%25lo]",
            "fe80::1%lo",
            "[64:ff9b::7f00:1]",
            "[::127.0.0.1]",
        ] {
            assert!(is_ip_literal(literal), "{literal:?} is an address");
        }
        for name in [
            "example.com",
            "1password.com",
            "0x.example",
            "localhost",
            "a.b.c",
            "[nope]",
            "x:y",
            "123.example",
        ] {
            assert!(!is_ip_literal(name), "{name:?} is a name");
        }
        // A Unicode spelling of an address is one once normalised.
        assert!(is_ip_literal(&normalise("１２７.０.０.１").unwrap()));
    }

    #[test]
    fn a_target_host_is_a_name_in_normal_form() {
        assert_eq!(target_host("GitHub.COM."), Ok("github.com".to_owned()));
        assert_eq!(target_host("127.1"), Err(TargetRefusal::IpLiteral("127.1".into())));
        assert_eq!(
            target_host("127.0.0.1."),
            Err(TargetRefusal::IpLiteral("127.0.0.1.".into()))
        );
        assert_eq!(target_host("[::1]"), Err(TargetRefusal::IpLiteral("[::1]".into())));
        // An address only once normalised.
        assert_eq!(
            target_host("１２７.０.０.１"),
            Err(TargetRefusal::IpLiteral("127.0.0.1".into()))
        );
        assert!(matches!(target_host("a..b"), Err(TargetRefusal::NoNormalForm(_))));
        assert_eq!(target_host(""), Err(TargetRefusal::NoNormalForm(HostError::Empty)));
    }

    #[test]
    fn patterns_parse_and_match() {
        let exact: HostPattern = "Example.COM".parse().unwrap();
        assert_eq!(exact.host, HostMatch::Exact("example.com".into()));
        assert_eq!((exact.port, exact.allow_port()), (None, DEFAULT_PORT));
        assert!(exact.matches("example.com", 443));
        assert!(!exact.matches("example.com", 80));
        assert!(!exact.matches("a.example.com", 443));

        let sub: HostPattern = "*.example.com:8443".parse().unwrap();
        assert!(sub.matches("a.example.com", 8443));
        assert!(sub.matches("a.b.example.com", 8443));
        assert!(!sub.matches("example.com", 8443));
        assert!(!sub.matches("badexample.com", 8443));
        assert!(!sub.matches("a.example.com", 443));

        let both: HostPattern = "**.example.com".parse().unwrap();
        assert!(both.matches("example.com", 443));
        assert!(both.matches("a.example.com", 443));
        assert!(!both.matches("xexample.com", 443));

        let any: HostPattern = "*".parse().unwrap();
        assert!(any.matches("anything.at.all", 443));
        assert!(!any.matches("anything.at.all", 22));
        assert_eq!("*:22".parse::<HostPattern>().unwrap().port, Some(22));
    }

    #[test]
    fn a_deny_entry_without_a_port_refuses_every_port() {
        let any: HostPattern = "*".parse().unwrap();
        for port in [443, 80, 22, 8443, 1] {
            assert!(any.denies("anything.at.all", port), "port {port}");
        }
        let host: HostPattern = "**.example.com".parse().unwrap();
        assert!(host.denies("a.example.com", 22) && host.denies("example.com", 80));
        assert!(!host.denies("example.org", 22));
        // A port written, 443 included, is that port only, and reads back as written.
        let https: HostPattern = "example.com:443".parse().unwrap();
        assert!(https.denies("example.com", 443) && !https.denies("example.com", 80));
        assert_eq!(https.to_string(), "example.com:443");
        let alt: HostPattern = "*:8443".parse().unwrap();
        assert!(alt.denies("a.b", 8443) && !alt.denies("a.b", 443));
    }

    #[test]
    fn bad_patterns_say_why() {
        assert_eq!("".parse::<HostPattern>(), Err(PatternError::Empty));
        for wildcard in [
            "a.*.com",
            "*example.com",
            "***.example.com",
            "*.*.example.com",
            "ex*ample.com",
        ] {
            assert!(
                matches!(
                    wildcard.parse::<HostPattern>(),
                    Err(PatternError::Wildcard(_) | PatternError::Host { .. })
                ),
                "{wildcard:?}"
            );
        }
        for literal in ["1.1.1.1", "[::1]", "[::1]:443", "::1", "127.1:8080", "0x7f.1"] {
            assert!(
                matches!(literal.parse::<HostPattern>(), Err(PatternError::IpLiteral(_))),
                "{literal:?}"
            );
        }
        for port in [
            "example.com:",
            "example.com:0",
            "example.com:65536",
            "example.com:+1",
            "example.com:x",
        ] {
            assert!(
                matches!(port.parse::<HostPattern>(), Err(PatternError::Port(_))),
                "{port:?}"
            );
        }
        assert!(matches!("a..b".parse::<HostPattern>(), Err(PatternError::Host { .. })));
        assert!(matches!("*.".parse::<HostPattern>(), Err(PatternError::Empty)));
        let error = "exa mple.com".parse::<HostPattern>().unwrap_err();
        assert!(error.to_string().contains("exa mple.com"), "{error}");
    }

    #[test]
    fn patterns_serialize_as_written() {
        let pattern: HostPattern = "**.Example.com:8443".parse().unwrap();
        assert_eq!(serde_json::to_string(&pattern).unwrap(), r#""**.example.com:8443""#);
        assert_eq!(
            serde_json::from_str::<HostPattern>(r#""**.example.com:8443""#).unwrap(),
            pattern
        );
        assert!(serde_json::from_str::<HostPattern>(r#""10.0.0.1""#).is_err());
    }

    fn label() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z][a-z0-9-]{0,10}[a-z0-9]",
            "[a-zA-Z]{1,8}",
            "[a-zäöüßéñ]{1,8}",
            "[a-z_]{1,5}",
        ]
    }

    fn name() -> impl Strategy<Value = String> {
        (prop::collection::vec(label(), 1..4), "[a-zA-Z]{2,6}", any::<bool>()).prop_map(|(labels, tld, dot)| {
            let mut name = labels.join(".");
            name.push('.');
            name.push_str(&tld);
            if dot {
                name.push('.');
            }
            name
        })
    }

    proptest! {
        #[test]
        fn the_normal_form_is_idempotent(host in name()) {
            if let Ok(normal) = normalise(&host) {
                prop_assert_eq!(normalise(&normal), Ok(normal.clone()));
                prop_assert!(normal.is_ascii());
                prop_assert_eq!(normal.to_ascii_lowercase(), normal);
            }
        }

        #[test]
        fn display_then_parse_round_trips(host in name(), kind in 0_u8..4, port in prop::option::of(1_u16..)) {
            let written = match kind {
                0 => host,
                1 => format!("*.{host}"),
                2 => format!("**.{host}"),
                _ => "*".to_owned(),
            };
            let written = match port {
                Some(port) => format!("{written}:{port}"),
                None => written,
            };
            if let Ok(pattern) = written.parse::<HostPattern>() {
                let again: HostPattern = pattern.to_string().parse().unwrap();
                prop_assert_eq!(again, pattern);
            }
        }
    }
}
