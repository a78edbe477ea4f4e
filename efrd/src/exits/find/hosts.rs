//! Hosts as a line names them: the host of a URL, of an ssh or scp target, and of a git remote's URL. Normalized as
//! the wire's host facts are (lowercase, no trailing dot); a user name or password is never kept.

use std::net::IpAddr;

/// A host that a line names: its name and port (`None`: the scheme's default, 443 for https).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedHost {
    /// Lowercase, no trailing dot, no brackets around an IPv6 literal.
    pub host: String,
    /// The port as the line gives it or the scheme implies it; `None` for 443.
    pub port: Option<u16>,
    /// The URL's scheme is not TLS (`http://`, `ws://`, `git://`, `ftp://`, `rsync://`): the proxy carries only
    /// TLS (docs/network.md), so only `open_network` reaches it.
    pub plain: bool,
}

impl NamedHost {
    /// The port, 443 when absent.
    #[must_use]
    pub fn port_or_default(&self) -> u16 {
        self.port.unwrap_or(443)
    }

    /// An IP address in any form, or a name of the host itself (`localhost`): the proxy refuses both, so only
    /// `open_network` reaches them.
    #[must_use]
    pub fn literal_or_local(&self) -> bool {
        self.host.parse::<IpAddr>().is_ok()
            || self.host == "localhost"
            || self.host.ends_with(".localhost")
            || self.host.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            || self.host.starts_with("0x")
    }
}

impl NamedHost {
    /// A host named alone (`example.org`, `example.org:8080`, `10.0.0.1`), as `ping` or `nc` take it.
    #[must_use]
    pub fn plain(word: &str) -> Option<Self> {
        authority(word, None)
    }
}

/// Lowercase without a trailing dot, or `None` for what cannot be a host name.
fn normalize(host: &str) -> Option<String> {
    let host = host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
    let ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':'));
    ok.then(|| host.to_ascii_lowercase())
}

/// The host of `authority` (`user:pw@host:port`), with `default_port` when it names none.
fn authority(authority: &str, default_port: Option<u16>) -> Option<NamedHost> {
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if let Some(rest) = hostport.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') => (host, Some(port)),
            _ => (hostport, None),
        }
    };
    let port = match port {
        Some("") | None => default_port,
        Some(p) => Some(p.parse().ok()?),
    };
    Some(NamedHost {
        host: normalize(host)?,
        port: port.filter(|p| *p != 443),
        plain: false,
    })
}

/// The host of a URL with a scheme (`https://user@Host:8443/x` is `host`, port 8443); `None` for any other word.
/// The default ports: 443 for https and wss, 80 for http, ws and git, 22 for ssh and sftp, 21 for ftp.
#[must_use]
pub fn url_host(word: &str) -> Option<NamedHost> {
    let (scheme, rest) = word.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let plain = matches!(scheme.as_str(), "http" | "ws" | "git" | "ftp" | "rsync");
    let default = match scheme.as_str() {
        "https" | "wss" | "git+https" => None,
        "http" | "ws" | "git" => Some(80),
        "ssh" | "git+ssh" | "sftp" | "scp" => Some(22),
        "ftp" | "ftps" => Some(21),
        "rsync" => Some(873),
        _ => return None,
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    authority(&rest[..end], default).map(|host| NamedHost { plain, ..host })
}

/// The host of an scp-like target (`git@github.com:org/repo`, `host:path`, `user@host:`): a `:` before any `/`.
#[must_use]
pub fn scp_host(word: &str) -> Option<NamedHost> {
    if word.contains("://") {
        return url_host(word);
    }
    let (before, _) = word.split_once(':')?;
    if before.is_empty() || before.contains('/') {
        return None;
    }
    authority(before, Some(22))
}

/// The host of an ssh destination (`user@host`, `ssh://user@host:2222`), with `port` from `-p` when given.
#[must_use]
pub fn ssh_host(word: &str, port: Option<u16>) -> Option<NamedHost> {
    if word.contains("://") {
        return url_host(word);
    }
    let host = word.rsplit_once('@').map_or(word, |(_, h)| h);
    Some(NamedHost {
        host: normalize(host)?,
        port: Some(port.unwrap_or(22)),
        plain: false,
    })
}

/// The hosts of the remotes of one git config file's text (`[remote "x"]` sections' `url` and `pushurl`), lowercase,
/// without repeats, in the order found. https, ssh:// and scp-like (`git@host:path`) URLs are read; a local path or
/// `file://` has no host. The user name and password of a URL are never kept.
#[must_use]
pub fn remote_hosts(git_config_text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut in_remote = false;
    for line in git_config_text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let header = line.trim_start_matches('[');
            let section = header.split([' ', ']', '.', '"']).next().unwrap_or_default();
            in_remote = section.eq_ignore_ascii_case("remote");
            continue;
        }
        if !in_remote || line.starts_with(['#', ';']) {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        if key != "url" && key != "pushurl" {
            continue;
        }
        let value = value.trim().trim_matches('"');
        let host = if value.contains("://") {
            url_host(value)
        } else {
            scp_host(value)
        };
        if let Some(host) = host
            && !out.contains(&host.host)
        {
            out.push(host.host);
        }
    }
    out
}
