//! The hosts that the user's credential files and helpers can give a token for: efrd denies each of them to every
//! contained call unless the config's `allow` names it exactly (docs/network.md). The sandbox masks the files
//! themselves; this keeps a call from reaching such a host at all, so a token that leaks by another way (a helper
//! over a socket, a cache) has nowhere to go.
//!
//! The sources, each under the user's home:
//!
//! | source | hosts |
//! |---|---|
//! | `.netrc` | each `machine` |
//! | `.git-credentials` | each URL's host (and port) |
//! | git's credential helpers | `git config --get-regexp '^credential\.'`: the files of each `store` helper (`--file`, or `~/.git-credentials` and `$XDG_CONFIG_HOME/git/credentials`), and the URL of each `credential.<url>.*` section |
//! | `.npmrc` | each `//host/…:_authToken`, `_auth`, `_password` or `username`; a top-level `_auth`/`_authToken` names `registry` (default `registry.npmjs.org`) |
//! | `.cargo/credentials.toml`, `.cargo/credentials` | `[registry]` → `crates.io`; `[registries.<name>]` → the host of that registry's `index` in `.cargo/config.toml` |
//! | `.pypirc` | each repository section: `pypi` → `upload.pypi.org`, `testpypi` → `test.pypi.org`, others the host of `repository` |
//! | `.docker/config.json` | each key of `auths` and `credHelpers`; Docker Hub's (`index.docker.io`, `docker.io`) → `index.docker.io`, `registry-1.docker.io`, `auth.docker.io` |
//!
//! Secrets are never logged or kept: each reader keeps host names only, and a file that does not parse is skipped
//! with a debug log that names the file, never its content. git runs through [`efr_git::command`], so no program
//! that a config names starts (its own `-c credential.helper=` entry, scope `command`, is left out of the list).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use efr_protocol::internal::host::{DEFAULT_PORT, HostPattern};

/// The largest credential file read; a bigger one is skipped (a credential file is a few KiB).
const MAX_FILE: u64 = 1024 * 1024;

/// Where a credential host was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// A credential file (`~/.netrc`, a `store` helper's file, ...).
    File(PathBuf),
    /// A `credential.<url>` section of git's config: a helper gives a token for that URL.
    GitConfig,
}

impl fmt::Display for CredentialSource {
    /// The file's path, or `git credential helper`: what `sandbox.explain_host` reports as `credential_file`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::GitConfig => f.write_str("git credential helper"),
        }
    }
}

/// One credential host and where it was first found (the sources in the module docs' order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialHost {
    /// The host, an exact pattern (a `credential.<url>` section may give a wildcard one).
    pub host: HostPattern,
    /// Where it was found.
    pub source: CredentialSource,
}

/// The credential hosts of the user whose home is `home`, as exact patterns (a `credential.<url>` section may give
/// a wildcard one), sorted and without repeats.
#[must_use]
pub fn credential_hosts(home: &Path) -> Vec<HostPattern> {
    credential_entries(home).into_iter().map(|entry| entry.host).collect()
}

/// [`credential_hosts`] with where each was found, in the same order.
#[must_use]
pub fn credential_entries(home: &Path) -> Vec<CredentialHost> {
    let mut found = Found::default();
    netrc(&mut found, &home.join(".netrc"));
    git_credentials(&mut found, &home.join(".git-credentials"));
    git_helpers(&mut found, home);
    npmrc(&mut found, &home.join(".npmrc"));
    cargo(&mut found, home);
    pypirc(&mut found, &home.join(".pypirc"));
    docker(&mut found, &home.join(".docker/config.json"));
    found.into_iter().collect()
}

/// The patterns found so far, ordered by their written form, each with the first source that gave it; and the
/// source being read.
struct Found {
    hosts: BTreeMap<Written, CredentialSource>,
    reading: CredentialSource,
}

impl Default for Found {
    fn default() -> Self {
        Self {
            hosts: BTreeMap::new(),
            reading: CredentialSource::GitConfig,
        }
    }
}

/// A pattern ordered by its written form (`HostPattern` has no order of its own).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Written(HostPattern);

impl Ord for Written {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.to_string().cmp(&other.0.to_string())
    }
}

impl PartialOrd for Written {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl IntoIterator for Found {
    type Item = CredentialHost;
    type IntoIter = std::iter::Map<
        std::collections::btree_map::IntoIter<Written, CredentialSource>,
        fn((Written, CredentialSource)) -> CredentialHost,
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.hosts
            .into_iter()
            .map(|(host, source)| CredentialHost { host: host.0, source })
    }
}

impl Found {
    /// Names the source of the hosts added next.
    fn reading(&mut self, source: CredentialSource) {
        self.reading = source;
    }

    /// Adds `host` (a name, or a `*.` pattern) on `port`; an address or a name that does not parse is left out
    /// (the proxy refuses every address anyway).
    fn add(&mut self, host: &str, port: Option<u16>) {
        let host = host.trim();
        if host.is_empty() {
            return;
        }
        let written = match port.filter(|p| *p != DEFAULT_PORT) {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        if let Ok(pattern) = HostPattern::from_str(&written) {
            self.hosts
                .entry(Written(pattern))
                .or_insert_with(|| self.reading.clone());
        }
    }

    /// Adds the host and port of `url` (`https://user:token@host:port/path`); a URL without a scheme is read as
    /// `https://`. `*` in the host is kept (git's `credential.<url>` takes `https://*.example.com`).
    fn add_url(&mut self, url: &str) {
        if let Some((host, port)) = url_host(url) {
            self.add(&host, port);
        }
    }
}

/// The host and explicit port of a URL as written, without parsing its user part into anything kept.
fn url_host(url: &str) -> Option<(String, Option<u16>)> {
    let url = url.trim();
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    if host_port.starts_with('[') {
        // An address; the proxy refuses addresses, so there is nothing to deny.
        return None;
    }
    match host_port.rsplit_once(':') {
        Some((host, port)) if !port.is_empty() => Some((host.to_owned(), Some(port.parse().ok()?))),
        Some((host, _)) => Some((host.to_owned(), None)),
        None => Some((host_port.to_owned(), None)),
    }
}

/// The text of a credential file, or `None` (absent, too big, not UTF-8: the last two with a debug log).
fn read(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.len() > MAX_FILE {
        tracing::debug!(file = %path.display(), "a credential file is too large to read; skipped");
        return None;
    }
    match std::fs::read(path).map(String::from_utf8) {
        Ok(Ok(text)) => Some(text),
        Ok(Err(_)) => {
            tracing::debug!(file = %path.display(), "a credential file is not UTF-8; skipped");
            None
        }
        Err(error) => {
            tracing::debug!(file = %path.display(), kind = ?error.kind(), "a credential file cannot be read; skipped");
            None
        }
    }
}

fn skipped(path: &Path, what: &str) {
    tracing::debug!(file = %path.display(), "a credential file does not parse ({what}); skipped");
}

/// `.netrc`: the tokens after each `machine`. A `macdef` body (up to an empty line) is skipped.
fn netrc(found: &mut Found, path: &Path) {
    let Some(text) = read(path) else { return };
    found.reading(CredentialSource::File(path.to_owned()));
    let mut in_macro = false;
    for line in text.lines() {
        if in_macro {
            in_macro = !line.trim().is_empty();
            continue;
        }
        let mut words = line.split_whitespace();
        while let Some(word) = words.next() {
            match word {
                "machine" => {
                    if let Some(host) = words.next() {
                        found.add(host, None);
                    }
                }
                "macdef" => {
                    in_macro = true;
                    break;
                }
                // The value after these is a secret or a name; skip it so it is never read as a keyword.
                "login" | "password" | "account" => {
                    words.next();
                }
                _ => {}
            }
        }
    }
}

/// `.git-credentials` (and any `store` helper's file): one URL a line.
fn git_credentials(found: &mut Found, path: &Path) {
    let Some(text) = read(path) else { return };
    found.reading(CredentialSource::File(path.to_owned()));
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        found.add_url(line);
    }
}

/// git's credential config: the files of `store` helpers and the URLs of `credential.<url>.*` sections.
fn git_helpers(found: &mut Found, home: &Path) {
    let output = efr_git::command()
        .args(["config", "--show-scope", "-z", "--get-regexp", r"^credential\."])
        .current_dir("/")
        .env("HOME", home)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let output = match output {
        Ok(output) => output,
        Err(error) => {
            tracing::debug!(%error, "git cannot run; its credential helpers are not read");
            return;
        }
    };
    // Exit 1: no such key.
    if !output.status.success() {
        return;
    }
    let Ok(text) = String::from_utf8(output.stdout) else {
        tracing::debug!("git's credential config is not UTF-8; skipped");
        return;
    };
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| home.join(".config"));
    let mut helpers: Vec<String> = Vec::new();
    found.reading(CredentialSource::GitConfig);
    let mut records = text.split('\0');
    while let Some(scope) = records.next() {
        let Some(entry) = records.next() else { break };
        // efrd's own `-c credential.helper=`.
        if scope == "command" {
            continue;
        }
        let (key, value) = entry.split_once('\n').unwrap_or((entry, ""));
        let Some(rest) = key.strip_prefix("credential.") else {
            continue;
        };
        match rest.rsplit_once('.') {
            // `credential.<url>.<var>`: the URL's host is one the user holds a credential for.
            Some((url, var)) => {
                found.add_url(url);
                if var == "helper" {
                    helpers.push(value.to_owned());
                }
            }
            None if rest == "helper" => {
                // An empty value clears the list before it.
                if value.is_empty() {
                    helpers.clear();
                } else {
                    helpers.push(value.to_owned());
                }
            }
            None => {}
        }
    }
    for helper in helpers {
        for file in store_files(&helper, home, &config_home) {
            git_credentials(found, &file);
        }
    }
}

/// The files of a `store` helper (`store`, `store --file=F`, `store --file F`); none for another helper.
fn store_files(helper: &str, home: &Path, config_home: &Path) -> Vec<PathBuf> {
    let mut words = helper.split_whitespace();
    if words.next() != Some("store") {
        return Vec::new();
    }
    let mut files = Vec::new();
    while let Some(word) = words.next() {
        let file = match word.strip_prefix("--file=") {
            Some(file) => Some(file.to_owned()),
            None if word == "--file" => words.next().map(str::to_owned),
            None => None,
        };
        if let Some(file) = file {
            files.push(match file.strip_prefix("~/") {
                Some(rest) => home.join(rest),
                None => PathBuf::from(file),
            });
        }
    }
    if files.is_empty() {
        files.push(home.join(".git-credentials"));
        files.push(config_home.join("git/credentials"));
    }
    files
}

/// `.npmrc`: `//host[:port]/path/:_authToken=…` (and `_auth`, `_password`, `username`), and a top-level `_auth` or
/// `_authToken`, which is sent to `registry`.
fn npmrc(found: &mut Found, path: &Path) {
    let Some(text) = read(path) else { return };
    found.reading(CredentialSource::File(path.to_owned()));
    let mut registry = "https://registry.npmjs.org/".to_owned();
    let mut top_level_auth = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with(['#', ';']) {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if let Some(scoped) = key.strip_prefix("//") {
            let Some((url, setting)) = scoped.rsplit_once(':') else {
                continue;
            };
            if matches!(setting, "_authToken" | "_auth" | "_password" | "username") {
                found.add_url(url);
            }
        } else if key == "registry" {
            value.trim().clone_into(&mut registry);
        } else if matches!(key, "_auth" | "_authToken") {
            top_level_auth = true;
        }
    }
    if top_level_auth {
        found.add_url(&registry);
    }
}

/// `.cargo/credentials.toml` or `.cargo/credentials`: crates.io's token and each named registry's, whose host
/// is its `index` in `.cargo/config.toml` (or `.cargo/config`).
fn cargo(found: &mut Found, home: &Path) {
    let dir = home.join(".cargo");
    for name in ["credentials.toml", "credentials"] {
        let path = dir.join(name);
        let Some(text) = read(&path) else { continue };
        found.reading(CredentialSource::File(path.clone()));
        let Ok(table) = text.parse::<toml::Table>() else {
            skipped(&path, "not TOML");
            continue;
        };
        if table.get("registry").and_then(toml::Value::as_table).is_some() {
            found.add("crates.io", None);
        }
        let Some(registries) = table.get("registries").and_then(toml::Value::as_table) else {
            continue;
        };
        let config = ["config.toml", "config"]
            .iter()
            .filter_map(|name| read(&dir.join(name)))
            .find_map(|text| text.parse::<toml::Table>().ok());
        for registry in registries.keys() {
            let index = config
                .as_ref()
                .and_then(|c| c.get("registries"))
                .and_then(|r| r.get(registry))
                .and_then(|r| r.get("index"))
                .and_then(toml::Value::as_str);
            match index {
                // `sparse+https://…` and `https://…git`.
                Some(index) => found.add_url(index.trim_start_matches("sparse+")),
                None => tracing::debug!(
                    registry,
                    "a cargo registry with a token has no index in .cargo/config.toml"
                ),
            }
        }
    }
}

/// `.pypirc`: each section but `[distutils]`.
fn pypirc(found: &mut Found, path: &Path) {
    let Some(text) = read(path) else { return };
    found.reading(CredentialSource::File(path.to_owned()));
    let mut section: Option<String> = None;
    let mut repository: Option<String> = None;
    let finish =
        |section: Option<String>, repository: Option<String>, found: &mut Found| match (section.as_deref(), repository)
        {
            (None | Some("distutils"), _) => {}
            (_, Some(url)) => found.add_url(&url),
            (Some("pypi"), None) => found.add("upload.pypi.org", None),
            (Some("testpypi"), None) => found.add("test.pypi.org", None),
            (Some(_), None) => {}
        };
    for line in text.lines().map(str::trim) {
        if line.starts_with(['#', ';']) || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            finish(section.take(), repository.take(), found);
            section = Some(name.trim().to_owned());
            continue;
        }
        let Some((key, _)) = line.split_once(['=', ':']) else {
            continue;
        };
        if key.trim() == "repository" {
            // `repository: https://host/…` splits at its first `:`, so the value is the rest of the line.
            repository = Some(line[key.len() + 1..].trim().to_owned());
        }
    }
    finish(section, repository, found);
}

/// `.docker/config.json`: the keys of `auths` and `credHelpers`.
fn docker(found: &mut Found, path: &Path) {
    let Some(text) = read(path) else { return };
    found.reading(CredentialSource::File(path.to_owned()));
    let Ok(config) = serde_json::from_str::<serde_json::Value>(&text) else {
        skipped(path, "not JSON");
        return;
    };
    for member in ["auths", "credHelpers"] {
        let Some(entries) = config.get(member).and_then(serde_json::Value::as_object) else {
            continue;
        };
        for registry in entries.keys() {
            let Some((host, port)) = url_host(registry) else {
                continue;
            };
            if matches!(host.as_str(), "index.docker.io" | "docker.io" | "registry-1.docker.io") {
                for hub in ["index.docker.io", "registry-1.docker.io", "auth.docker.io"] {
                    found.add(hub, None);
                }
            } else {
                found.add(&host, port);
            }
        }
    }
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;
