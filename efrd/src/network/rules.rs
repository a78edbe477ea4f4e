//! The config's `[network]` lists made into what one contained call gets (docs/network.md):
//!
//! - its host grants ([`host_grants`]): one `host` grant per `allow` entry, in auto mode, when `efr-proxy` is
//!   installed; none otherwise (no allow list, or no proxy: no network, as before the proxy);
//! - its proxy plan ([`CallNetwork::open_plan`]): `allow` from the call's host grants, `deny` the config's list plus
//!   the credential hosts ([`super::credentials`]) that `allow` does not name exactly. The proxy checks `deny`
//!   first, so deny wins.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use efr_protocol::internal::host::{DEFAULT_PORT, HostMatch, HostPattern};
use efr_protocol::internal::proxy::OpenPlan;
use efr_protocol::wire::Grant;

use super::credentials::credential_hosts;
use super::proxy::ProxySupervisor;

/// The network rules of a turn's contained calls, as the config had them when the turn started (a reload applies
/// to the next turn), and the proxy that enforces them.
#[derive(Debug, Clone)]
pub struct CallNetwork {
    /// `[network] allow`.
    pub allow: Vec<HostPattern>,
    /// `[network] deny`.
    pub deny: Vec<HostPattern>,
    /// The user's home, where the credential files are; `None`: no credential hosts are read.
    pub home: Option<PathBuf>,
    /// The daemon's proxy.
    pub proxy: Arc<ProxySupervisor>,
}

impl CallNetwork {
    /// The host grants of an auto contained call: [`host_grants`] of `allow`, or none when `efr-proxy` is not
    /// installed (the call then has no network, and admin.status says why).
    #[must_use]
    pub fn grants(&self) -> Vec<Grant> {
        if self.proxy.installed() {
            host_grants(&self.allow)
        } else {
            Vec::new()
        }
    }

    /// The proxy plan of a call with `grants` (`None` when they hold no `host` grant: the call gets no proxy).
    /// Reads the credential files and runs git: call it off the async runtime.
    #[must_use]
    pub fn open_plan(&self, call: &str, grants: &[Grant]) -> Option<OpenPlan> {
        let allow = grant_patterns(grants);
        if allow.is_empty() {
            return None;
        }
        let credentials = self.home.as_deref().map(credential_hosts).unwrap_or_default();
        Some(OpenPlan {
            call: call.to_owned(),
            deny: deny_list(&self.deny, &allow, credentials),
            allow,
        })
    }
}

/// One `host` grant per pattern: its host as written (`*.example.com` stays a pattern) and its port when it is not
/// 443.
#[must_use]
pub fn host_grants(allow: &[HostPattern]) -> Vec<Grant> {
    allow
        .iter()
        .map(|pattern| {
            let written = HostPattern {
                host: pattern.host.clone(),
                port: None,
            };
            Grant::Host {
                host: written.to_string(),
                port: Some(pattern.allow_port()).filter(|port| *port != DEFAULT_PORT),
            }
        })
        .collect()
}

/// The patterns of the `host` grants among `grants`; a grant whose host does not parse is left out (it opens
/// nothing).
#[must_use]
pub fn grant_patterns(grants: &[Grant]) -> Vec<HostPattern> {
    grants
        .iter()
        .filter_map(|grant| match grant {
            Grant::Host { host, port } => {
                let pattern = HostPattern::from_str(host).ok()?;
                // A grant opens one port: the one it names, else 443.
                Some(HostPattern {
                    port: port.filter(|port| *port != DEFAULT_PORT),
                    ..pattern
                })
            }
            _ => None,
        })
        .collect()
}

/// The deny list of a plan: `deny`, then each credential host that is not in it and that `allow` does not name
/// exactly (the same name and port: a wildcard such as `*` or `**.github.com` does not open a credential host). A
/// credential host without a port is denied on every port, unless `allow` names it on 443.
#[must_use]
pub fn deny_list(deny: &[HostPattern], allow: &[HostPattern], credentials: Vec<HostPattern>) -> Vec<HostPattern> {
    let mut out = deny.to_vec();
    for host in credentials {
        let named = matches!(host.host, HostMatch::Exact(_))
            && allow
                .iter()
                .any(|entry| entry.host == host.host && entry.allow_port() == host.allow_port());
        if !named && !out.contains(&host) {
            out.push(host);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(list: &[&str]) -> Vec<HostPattern> {
        list.iter().map(|p| p.parse().unwrap()).collect()
    }

    #[test]
    fn each_allow_entry_is_one_host_grant_that_reads_back_as_its_pattern() {
        let allow = patterns(&["crates.io", "*.example.com", "**.pypi.org:8443", "*"]);
        let grants = host_grants(&allow);
        assert_eq!(
            grants,
            vec![
                Grant::Host {
                    host: "crates.io".into(),
                    port: None
                },
                Grant::Host {
                    host: "*.example.com".into(),
                    port: None
                },
                Grant::Host {
                    host: "**.pypi.org".into(),
                    port: Some(8443)
                },
                Grant::Host {
                    host: "*".into(),
                    port: None
                },
            ]
        );
        assert_eq!(grant_patterns(&grants), allow);
        assert!(grant_patterns(&[Grant::OpenNetwork, Grant::NetView]).is_empty());
    }

    #[test]
    fn credential_hosts_are_denied_unless_allow_names_them_exactly() {
        let deny = patterns(&["gist.github.com"]);
        let credentials = patterns(&["github.com", "registry.npmjs.org", "gist.github.com", "ghcr.io:8443"]);
        // `**.npmjs.org` and `*` do not name registry.npmjs.org; `github.com` does; `ghcr.io` is another port.
        let allow = patterns(&["github.com", "**.npmjs.org", "*", "ghcr.io"]);
        assert_eq!(
            deny_list(&deny, &allow, credentials),
            patterns(&["gist.github.com", "registry.npmjs.org", "ghcr.io:8443"])
        );
    }
}
