//! Name resolution: hickory-resolver, configured from `/etc/resolv.conf` and `/etc/hosts` read once at start
//! (ADR 0010, "Resolution").
//!
//! The files are read before the proxy hardens itself, so that Landlock can then forbid every file. Each tunnel
//! resolves its name once, gets every address (A and AAAA), and the caller checks all of them before connecting to
//! one; the proxy never resolves the name again for that tunnel, so a second answer (DNS rebinding) cannot change
//! where it connects.

use std::net::IpAddr;
use std::time::Duration;

use hickory_resolver::config::{LookupIpStrategy, ResolveHosts, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::Name;
use hickory_resolver::{Hosts, TokioResolver};

/// How long one name may take to resolve, all attempts included.
pub const RESOLVE_TIME: Duration = Duration::from_secs(10);

/// The resolver's configuration, read from the system's files.
#[derive(Debug)]
pub struct SystemConfig {
    config: ResolverConfig,
    options: ResolverOpts,
    hosts: Hosts,
}

impl SystemConfig {
    /// Reads `/etc/resolv.conf` (no name servers when it is missing: the hosts file alone answers) and
    /// `/etc/hosts` (empty when missing).
    ///
    /// # Errors
    /// A sentence naming the file that exists but does not parse or read.
    pub fn read() -> Result<Self, String> {
        let (config, mut options) = match std::fs::read("/etc/resolv.conf") {
            Ok(bytes) => hickory_resolver::system_conf::parse_resolv_conf(bytes)
                .map_err(|e| format!("cannot use /etc/resolv.conf: {e}"))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (ResolverConfig::default(), ResolverOpts::default()),
            Err(e) => return Err(format!("cannot read /etc/resolv.conf: {e}")),
        };
        let hosts = match std::fs::File::open("/etc/hosts") {
            Ok(file) => {
                let mut hosts = Hosts::default();
                hosts
                    .read_hosts_conf(file)
                    .map_err(|e| format!("cannot read /etc/hosts: {e}"))?;
                hosts
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Hosts::default(),
            Err(e) => return Err(format!("cannot read /etc/hosts: {e}")),
        };
        // Both families, so that every address of the name is checked; the hosts file as read now, never again.
        options.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
        options.use_hosts_file = ResolveHosts::Never;
        options.timeout = options.timeout.min(Duration::from_secs(3));
        options.attempts = options.attempts.min(2);
        Ok(Self { config, options, hosts })
    }
}

/// The proxy's resolver.
#[derive(Clone)]
pub struct Resolver {
    inner: TokioResolver,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resolver")
    }
}

/// Why a name has no addresses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot resolve {name}: {why}")]
pub struct ResolveError {
    /// The name.
    pub name: String,
    /// The resolver's message.
    pub why: String,
}

impl Resolver {
    /// A resolver on the current tokio runtime.
    ///
    /// # Errors
    /// hickory's error when the resolver cannot be built.
    pub fn new(system: SystemConfig) -> Result<Self, String> {
        let SystemConfig { config, options, hosts } = system;
        let mut builder = TokioResolver::builder_with_config(config, TokioRuntimeProvider::default());
        *builder.options_mut() = options;
        let mut inner = builder.build().map_err(|e| format!("cannot build the resolver: {e}"))?;
        inner.set_hosts(std::sync::Arc::new(hosts));
        Ok(Self { inner })
    }

    /// Every address of `host` (a name in normal form), looked up as a fully qualified name (no search domains).
    ///
    /// # Errors
    /// [`ResolveError`] when the name has no address, resolution failed, or it took over [`RESOLVE_TIME`].
    pub async fn lookup(&self, host: &str) -> Result<Vec<IpAddr>, ResolveError> {
        let error = |why: String| ResolveError {
            name: host.to_owned(),
            why,
        };
        let mut name = Name::from_ascii(host).map_err(|e| error(e.to_string()))?;
        name.set_fqdn(true);
        let lookup = tokio::time::timeout(RESOLVE_TIME, self.inner.lookup_ip(name))
            .await
            .map_err(|_| error("timed out".into()))?
            .map_err(|e| error(e.to_string()))?;
        let addresses: Vec<IpAddr> = lookup.iter().collect();
        if addresses.is_empty() {
            return Err(error("no address".into()));
        }
        Ok(addresses)
    }
}
